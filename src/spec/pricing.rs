//! `model.pricing`: what a model's tokens cost, as the spec writes it (USD per million
//! tokens in the four classes of a model's usage). Plain figures: the model layer holds
//! the built-in table and does the arithmetic.

use super::types::InvalidValue;
use serde::{Deserialize, Serialize};

/// USD per million tokens for each of the four usage counts.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "PricingFields")]
pub(crate) struct Pricing {
    pub input: f64,
    pub output: f64,
    pub cache_write: f64,
    pub cache_read: f64,
}

impl Pricing {
    /// What script and replay models spend: nothing.
    pub(crate) const FREE: Pricing = Pricing::new(0.0, 0.0, 0.0, 0.0);

    pub(crate) const fn new(input: f64, output: f64, cache_write: f64, cache_read: f64) -> Self {
        Pricing {
            input,
            output,
            cache_write,
            cache_read,
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
}

impl TryFrom<PricingFields> for Pricing {
    type Error = InvalidValue;
    fn try_from(fields: PricingFields) -> Result<Self, Self::Error> {
        let pricing = Pricing {
            input: fields.input,
            output: fields.output,
            cache_write: fields.cache_write.unwrap_or(fields.input),
            cache_read: fields.cache_read.unwrap_or(fields.input),
        };
        let prices = [
            ("input", pricing.input),
            ("output", pricing.output),
            ("cache_write", pricing.cache_write),
            ("cache_read", pricing.cache_read),
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
