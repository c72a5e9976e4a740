//! `model.pricing`: what a model's tokens cost, as the spec writes it (USD per million
//! tokens in the four classes of a model's usage). Plain figures: the model layer holds
//! the built-in table and does the arithmetic.

use super::values::InvalidValue;
use serde::{Deserialize, Serialize};

/// USD per million tokens for each of the four usage counts.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "PricingFields")]
pub struct Pricing {
    pub input: f64,
    pub output: f64,
    pub cache_write: f64,
    pub cache_read: f64,
    /// USD per web search (Anthropic's server tool: $10 per 1,000 searches).
    pub web_search: f64,
}

/// What one web search costs on Anthropic's API.
pub(crate) const WEB_SEARCH_USD: f64 = 0.01;

impl Pricing {
    /// What script and replay models spend: nothing.
    pub const FREE: Pricing = Pricing {
        web_search: 0.0,
        ..Pricing::new(0.0, 0.0, 0.0, 0.0)
    };

    pub const fn new(input: f64, output: f64, cache_write: f64, cache_read: f64) -> Self {
        Pricing {
            input,
            output,
            cache_write,
            cache_read,
            web_search: WEB_SEARCH_USD,
        }
    }
}

/// `model.pricing` as written; the cache prices default to the input price, which
/// never under-counts a cache read.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PricingFields {
    input: f64,
    output: f64,
    #[serde(default)]
    cache_write: Option<f64>,
    #[serde(default)]
    cache_read: Option<f64>,
    /// USD per web search (not per million).
    #[serde(default)]
    web_search: Option<f64>,
}

impl TryFrom<PricingFields> for Pricing {
    type Error = InvalidValue;
    fn try_from(fields: PricingFields) -> Result<Self, Self::Error> {
        let pricing = Pricing {
            input: fields.input,
            output: fields.output,
            cache_write: fields.cache_write.unwrap_or(fields.input),
            cache_read: fields.cache_read.unwrap_or(fields.input),
            web_search: fields.web_search.unwrap_or(WEB_SEARCH_USD),
        };
        let prices = [
            ("input", pricing.input),
            ("output", pricing.output),
            ("cache_write", pricing.cache_write),
            ("cache_read", pricing.cache_read),
            ("web_search", pricing.web_search),
        ];
        for (field, price) in prices {
            if !(price.is_finite() && price >= 0.0) {
                return Err(InvalidValue(format!(
                    "model.pricing.{field} must be a non-negative number of USD per million tokens, not {price}"
                )));
            }
        }
        Ok(pricing)
    }
}
