//! What a model's tokens cost, so a run can report its spend and stop at `max_cost_usd`.
//!
//! Prices are USD per million tokens in four classes, matching the four counts of
//! [`Usage`]: uncached input, output, cache writes and cache reads. The built-in table
//! holds the providers' published list prices; `model.pricing` in a spec overrides it
//! (for negotiated prices, gateways, local servers, or to give script runs a price).

use crate::message::Usage;
use crate::spec::Pricing;

/// Anthropic's scheme: a 5-minute cache write costs 1.25× input, a cache read 0.1×.
const fn anthropic(input: f64, output: f64) -> Pricing {
    Pricing::new(input, output, input * 1.25, input / 10.0)
}

/// OpenAI's scheme: caching is automatic, writes cost what input costs, and cached
/// input has its own (discounted) price.
const fn openai(input: f64, cached: f64, output: f64) -> Pricing {
    Pricing::new(input, output, input, cached)
}

/// The cost in USD of `usage` at `pricing`.
pub(crate) fn cost(usage: &Usage, pricing: &Pricing) -> f64 {
    // u64 → f64 loses precision only beyond 2^53 tokens, far past any real run.
    let tokens = |count: u64| count as f64;
    (tokens(usage.input_tokens) * pricing.input
        + tokens(usage.output_tokens) * pricing.output
        + tokens(usage.cache_creation_input_tokens) * pricing.cache_write
        + tokens(usage.cache_read_input_tokens) * pricing.cache_read)
        / 1_000_000.0
        + tokens(usage.web_search_requests) * pricing.web_search
}

/// The price of a run's tokens: the spec's `model.pricing` when given; nothing for the
/// models that spend nothing (script, replay); else the table's price for `model`, or
/// None when the table does not know it (its cost is then unknown, not zero).
pub(crate) fn resolve(provider: &str, model: &str, custom: Option<&Pricing>) -> Option<Pricing> {
    if let Some(custom) = custom {
        return Some(*custom);
    }
    match provider {
        "anthropic" | "openai" => lookup(model),
        _ => Some(Pricing::FREE),
    }
}

/// The table's price for a model name: by exact name, else with a date or `-latest`
/// suffix removed (`claude-sonnet-4-5-20250929` → `claude-sonnet-4-5`,
/// `gpt-4o-2024-08-06` → `gpt-4o`).
pub(crate) fn lookup(model: &str) -> Option<Pricing> {
    let model = model.trim();
    find(model).or_else(|| find(strip_version(model)?))
}

fn find(name: &str) -> Option<Pricing> {
    TABLE
        .iter()
        .find(|(known, _)| known.eq_ignore_ascii_case(name))
        .map(|(_, pricing)| *pricing)
}

/// The name without its release suffix: `-YYYYMMDD`, `@YYYYMMDD`, `-YYYY-MM-DD` or
/// `-latest`. Only these are removed, so `gpt-4o-mini` never falls back to `gpt-4o`.
fn strip_version(model: &str) -> Option<&str> {
    if let Some(base) = model.strip_suffix("-latest") {
        return Some(base);
    }
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if let Some((base, date)) = model.rsplit_once(['-', '@'])
        && date.len() == 8
        && digits(date)
    {
        return Some(base);
    }
    // -YYYY-MM-DD: three dash-separated numeric parts at the end.
    let mut parts = model.rsplitn(4, '-');
    let (day, month, year, base) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let dated = [(year, 4), (month, 2), (day, 2)]
        .iter()
        .all(|(part, len)| part.len() == *len && digits(part));
    dated.then_some(base)
}

/// List prices in USD per million tokens, as published by Anthropic and OpenAI in
/// November 2025 (standard tier, prompts under any long-context threshold). Update
/// when prices change; a spec's `model.pricing` always wins.
const TABLE: &[(&str, Pricing)] = &[
    // Anthropic: input, output (cache write 1.25×, cache read 0.1× input).
    ("claude-opus-4-5", anthropic(5.0, 25.0)),
    ("claude-opus-4-1", anthropic(15.0, 75.0)),
    ("claude-opus-4-0", anthropic(15.0, 75.0)),
    ("claude-opus-4", anthropic(15.0, 75.0)),
    ("claude-sonnet-4-5", anthropic(3.0, 15.0)),
    ("claude-sonnet-4-0", anthropic(3.0, 15.0)),
    ("claude-sonnet-4", anthropic(3.0, 15.0)),
    ("claude-3-7-sonnet", anthropic(3.0, 15.0)),
    ("claude-3-5-sonnet", anthropic(3.0, 15.0)),
    ("claude-haiku-4-5", anthropic(1.0, 5.0)),
    ("claude-3-5-haiku", anthropic(0.80, 4.0)),
    ("claude-3-haiku", anthropic(0.25, 1.25)),
    ("claude-3-opus", anthropic(15.0, 75.0)),
    // OpenAI: input, cached input, output.
    ("gpt-5.1", openai(1.25, 0.125, 10.0)),
    ("gpt-5", openai(1.25, 0.125, 10.0)),
    ("gpt-5-codex", openai(1.25, 0.125, 10.0)),
    ("gpt-5-chat-latest", openai(1.25, 0.125, 10.0)),
    ("gpt-5-mini", openai(0.25, 0.025, 2.0)),
    ("gpt-5-nano", openai(0.05, 0.005, 0.40)),
    ("gpt-4.1", openai(2.0, 0.50, 8.0)),
    ("gpt-4.1-mini", openai(0.40, 0.10, 1.60)),
    ("gpt-4.1-nano", openai(0.10, 0.025, 0.40)),
    ("gpt-4o", openai(2.50, 1.25, 10.0)),
    ("gpt-4o-mini", openai(0.15, 0.075, 0.60)),
    ("o3", openai(2.0, 0.50, 8.0)),
    ("o3-mini", openai(1.10, 0.55, 4.40)),
    ("o4-mini", openai(1.10, 0.275, 4.40)),
    ("o1", openai(15.0, 7.50, 60.0)),
];

#[cfg(test)]
#[path = "pricing_tests.rs"]
mod tests;
