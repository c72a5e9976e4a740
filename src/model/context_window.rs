//! How many tokens a model's request may hold, so the loop can keep a long run inside
//! it (`limits.context`). `limits.context.window` overrides the table (a gateway's
//! smaller limit, a local model, a 1M-token beta).

/// The window assumed for a model the table does not know: small enough that most
/// models in use hold it. A server that holds less answers "prompt is too long", which
/// the loop recovers from once by compacting.
pub(crate) const UNKNOWN_MODEL_WINDOW: u64 = 128_000;

/// Windows by model family, matched as prefixes of the lower-cased name (longest first
/// wins where two match): the providers' published input limits, as of November 2025.
const TABLE: &[(&str, u64)] = &[
    ("claude-", 200_000),
    ("gpt-5", 272_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
];

/// The window of `model`: the table's, or [`UNKNOWN_MODEL_WINDOW`].
pub(crate) fn window(model: &str) -> u64 {
    let name = model.trim().to_ascii_lowercase();
    TABLE
        .iter()
        .filter(|(prefix, _)| name.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map_or(UNKNOWN_MODEL_WINDOW, |(_, tokens)| *tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_families_have_their_windows_and_others_the_cautious_default() {
        assert_eq!(window("claude-sonnet-4-5-20250929"), 200_000);
        assert_eq!(window("Claude-Opus-4-1"), 200_000);
        assert_eq!(window("gpt-4.1-mini"), 1_047_576);
        assert_eq!(window("gpt-4o-2024-08-06"), 128_000);
        assert_eq!(window("gpt-5-codex"), 272_000);
        assert_eq!(window("o3-mini"), 200_000);
        assert_eq!(window("llama-3.1-8b"), UNKNOWN_MODEL_WINDOW);
        assert_eq!(window("script"), UNKNOWN_MODEL_WINDOW);
    }
}
