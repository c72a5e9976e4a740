//! `replay:` — how a replay of this task's recordings compares results.

use serde::Deserialize;

/// `replay: { ignore: [...] }`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplaySpec {
    /// Regular expressions of volatile output, masked in both the recorded and the
    /// replayed result before they are compared (besides drover's built-in masks).
    #[serde(default)]
    pub ignore: Vec<String>,
}
