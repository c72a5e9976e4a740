// Test-only module: its parent includes it under #[cfg(test)].
use super::*;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-12
}

#[test]
fn exact_names_are_found() {
    let sonnet = lookup("claude-sonnet-4-5").unwrap();
    assert_eq!(sonnet, Pricing::new(3.0, 15.0, 3.75, 0.30));
    let mini = lookup("gpt-4.1-mini").unwrap();
    assert_eq!(mini, Pricing::new(0.40, 1.60, 0.40, 0.10));
    assert_eq!(lookup("o3").unwrap().output, 8.0);
    assert_eq!(
        lookup("GPT-4o").unwrap().input,
        2.50,
        "case does not matter"
    );
}

#[test]
fn dated_names_fall_back_to_their_base_name() {
    assert_eq!(
        lookup("claude-sonnet-4-5-20250929"),
        lookup("claude-sonnet-4-5")
    );
    assert_eq!(lookup("claude-opus-4-20250514"), lookup("claude-opus-4"));
    assert_eq!(
        lookup("claude-haiku-4-5@20251001"),
        lookup("claude-haiku-4-5")
    );
    assert_eq!(
        lookup("claude-3-7-sonnet-latest"),
        lookup("claude-3-7-sonnet")
    );
    assert_eq!(lookup("gpt-4o-2024-08-06"), lookup("gpt-4o"));
    assert_eq!(lookup("gpt-4.1-nano-2025-04-14"), lookup("gpt-4.1-nano"));
    assert!(lookup("claude-sonnet-4-5-20250929").is_some());
}

#[test]
fn unknown_names_have_no_price() {
    assert_eq!(lookup("llama-3.1-70b"), None);
    assert_eq!(lookup(""), None);
    // Only a date is stripped: an unknown variant never borrows its family's price.
    assert_eq!(lookup("gpt-4o-turbo-preview"), None);
    assert_eq!(lookup("claude-sonnet-4-5-extended"), None);
    assert_eq!(lookup("claude-sonnet-4-5-2025"), None);
    // gpt-4o-mini keeps its own price rather than gpt-4o's.
    assert_eq!(lookup("gpt-4o-mini-2024-07-18").unwrap().input, 0.15);
}

#[test]
fn resolve_prefers_the_spec_then_the_table_and_script_is_free() {
    let custom = Pricing::new(1.0, 2.0, 3.0, 4.0);
    assert_eq!(resolve("anthropic", "nope", Some(&custom)), Some(custom));
    assert_eq!(resolve("script", "script", Some(&custom)), Some(custom));
    assert_eq!(resolve("script", "script", None), Some(Pricing::FREE));
    assert_eq!(
        resolve("replay:anthropic", "claude-sonnet-4-5", None),
        Some(Pricing::FREE)
    );
    assert_eq!(resolve("openai", "gpt-5", None), lookup("gpt-5"));
    assert_eq!(resolve("openai", "my-local-llama", None), None);
}

#[test]
fn cost_counts_cached_tokens_at_their_own_prices() {
    // claude-sonnet-4-5: $3 in, $15 out, $3.75 cache write, $0.30 cache read per MTok.
    let usage = Usage {
        input_tokens: 1_000,
        output_tokens: 200,
        cache_creation_input_tokens: 2_000,
        cache_read_input_tokens: 10_000,
        web_search_requests: 0,
        estimated: false,
    };
    // 1000×3 + 200×15 + 2000×3.75 + 10000×0.30 = 3000 + 3000 + 7500 + 3000 = 16500
    // → 16500 / 1e6 = $0.0165
    let sonnet = lookup("claude-sonnet-4-5").unwrap();
    assert!(
        close(cost(&usage, &sonnet), 0.0165),
        "{}",
        cost(&usage, &sonnet)
    );
    // gpt-4.1: $2 in, $8 out, writes at $2, cached reads at $0.50.
    // 1000×2 + 200×8 + 2000×2 + 10000×0.5 = 2000 + 1600 + 4000 + 5000 = 12600 → $0.0126
    let gpt = lookup("gpt-4.1").unwrap();
    assert!(close(cost(&usage, &gpt), 0.0126), "{}", cost(&usage, &gpt));
    assert_eq!(cost(&usage, &Pricing::FREE), 0.0);
    assert_eq!(cost(&Usage::default(), &sonnet), 0.0);
}

fn parse(yaml: &str) -> Result<Pricing, String> {
    serde_saphyr::from_str::<Pricing>(yaml).map_err(|e| e.to_string())
}

#[test]
fn spec_pricing_is_validated() {
    let full = parse("{ input: 3.0, output: 15.0, cache_write: 3.75, cache_read: 0.30 }").unwrap();
    assert_eq!(full, Pricing::new(3.0, 15.0, 3.75, 0.30));
    let short = parse("{ input: 2, output: 8 }").unwrap();
    assert_eq!(
        short,
        Pricing::new(2.0, 8.0, 2.0, 2.0),
        "cache prices default to input"
    );
    assert!(parse("{ input: 0, output: 0 }").is_ok(), "free is a price");
    let negative = parse("{ input: -1, output: 8 }").unwrap_err();
    assert!(negative.contains("model.pricing.input"), "{negative}");
    assert!(negative.contains("non-negative"), "{negative}");
    let infinite = parse("{ input: 1, output: .inf }").unwrap_err();
    assert!(infinite.contains("model.pricing.output"), "{infinite}");
    let nan = parse("{ input: 1, output: 1, cache_read: .nan }").unwrap_err();
    assert!(nan.contains("model.pricing.cache_read"), "{nan}");
    let unknown = parse("{ input: 1, output: 1, cache_hit: 1 }").unwrap_err();
    assert!(unknown.contains("cache_hit"), "{unknown}");
    assert!(parse("{ input: 1 }").unwrap_err().contains("output"));
}
