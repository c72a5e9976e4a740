//! What a run records about keeping its conversation inside the model's window: each
//! compaction (the `compaction` transcript event), and a task's tally for its report.

use std::fmt::Write;

use drover_message::Usage;
use serde::{Deserialize, Serialize};

/// One compaction: what was done before the request of turn `turn + 1`. A replay applies
/// the recorded ones at the same places (a summary is taken from here, never asked for
/// again), so it rebuilds the same requests; `kept` lets it check that it did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Compaction {
    /// Model turns before it.
    pub turn: u32,
    /// `clear_tool_results`, `summarize` or `server` (the API's own editing).
    pub strategy: String,
    /// `threshold` (the request would have passed it), `refused` (the API answered that
    /// the prompt is too long) or `server` (the API reports edits it made).
    pub trigger: String,
    /// The window in tokens, as the run took it.
    pub window: u64,
    /// The request's tokens before and after, as drover estimates them (or, for
    /// `server`, as the API reports what it cleared).
    pub tokens_before: u64,
    pub tokens_after: u64,
    /// The request's size in bytes before and after, as drover sends it.
    pub bytes_before: u64,
    pub bytes_after: u64,
    /// A fingerprint of what the conversation kept: its turns by tool call id, which
    /// results were cleared, whether a summary stands for the rest. A replay that
    /// rebuilds a different conversation reports drift.
    #[serde(default)]
    pub kept: String,
    /// Tool results replaced by a placeholder naming their call.
    #[serde(default)]
    pub cleared_results: u64,
    /// The oldest exchanges (a model turn and its results) taken out whole.
    #[serde(default)]
    pub removed_turns: u64,
    /// `summarize`: the summary that replaced the conversation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// `summarize`: what the summary request used and cost (counted in the budgets).
    #[serde(default, skip_serializing_if = "Usage::is_zero")]
    pub usage: Usage,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Why the strategy asked for was not used and drover cleared results instead (the
    /// summary request failed, the server refused its context editing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
}

/// A task's compactions together (absent from the report when there were none).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ContextTally {
    /// The strategy in force (`clear_tool_results`, `summarize`, `server`).
    pub strategy: String,
    pub window: u64,
    pub compactions: u32,
    /// Of them, made because the API refused a request as too long.
    #[serde(default)]
    pub refused: u32,
    /// Summaries written (`summarize`).
    #[serde(default)]
    pub summaries: u32,
    pub cleared_results: u64,
    pub removed_turns: u64,
    /// Estimated tokens the compactions took out of the requests that followed them.
    pub tokens_saved: u64,
    /// The largest request the run sent, in estimated tokens.
    pub peak_request_tokens: u64,
}

impl ContextTally {
    /// Count one compaction.
    /// Saturating: a replay adds the figures of a recording, which may be forged.
    pub fn add(&mut self, compaction: &Compaction) {
        self.compactions = self.compactions.saturating_add(1);
        if compaction.trigger == "refused" {
            self.refused = self.refused.saturating_add(1);
        }
        if compaction.summary.is_some() {
            self.summaries = self.summaries.saturating_add(1);
        }
        self.cleared_results = self
            .cleared_results
            .saturating_add(compaction.cleared_results);
        self.removed_turns = self.removed_turns.saturating_add(compaction.removed_turns);
        self.tokens_saved = self.tokens_saved.saturating_add(
            compaction
                .tokens_before
                .saturating_sub(compaction.tokens_after),
        );
    }

    /// summary.md's lines for the task: what was compacted, how often, and why.
    pub fn summary_section(&self) -> String {
        let mut out = String::new();
        let _ = write!(
            out,
            "{} compaction{} ({}, window {} tokens)",
            self.compactions,
            if self.compactions == 1 { "" } else { "s" },
            self.strategy,
            self.window
        );
        let mut parts = Vec::new();
        if self.summaries > 0 {
            parts.push(format!("{} summarized", self.summaries));
        }
        if self.cleared_results > 0 {
            parts.push(format!("{} tool results cleared", self.cleared_results));
        }
        if self.removed_turns > 0 {
            parts.push(format!("{} old turns removed", self.removed_turns));
        }
        if self.refused > 0 {
            parts.push(format!(
                "{} after the API refused a request as too long",
                self.refused
            ));
        }
        parts.push(format!(
            "~{} tokens taken out, peak request ~{} tokens",
            self.tokens_saved, self.peak_request_tokens
        ));
        let _ = write!(out, ": {}", parts.join(", "));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compaction(trigger: &str, summary: Option<&str>) -> Compaction {
        Compaction {
            turn: 12,
            strategy: "clear_tool_results".into(),
            trigger: trigger.into(),
            window: 32_000,
            tokens_before: 23_000,
            tokens_after: 15_000,
            bytes_before: 92_000,
            bytes_after: 60_000,
            kept: "3f2a".into(),
            cleared_results: 9,
            removed_turns: 0,
            summary: summary.map(str::to_string),
            usage: Usage::default(),
            cost_usd: None,
            fallback: None,
        }
    }

    #[test]
    fn a_tally_counts_each_kind_and_says_it_in_one_line() {
        let mut tally = ContextTally {
            strategy: "clear_tool_results".into(),
            window: 32_000,
            peak_request_tokens: 22_400,
            ..ContextTally::default()
        };
        tally.add(&compaction("threshold", None));
        tally.add(&compaction("refused", Some("done: a, b")));
        assert_eq!(tally.compactions, 2);
        assert_eq!(tally.refused, 1);
        assert_eq!(tally.summaries, 1);
        assert_eq!(tally.cleared_results, 18);
        assert_eq!(tally.tokens_saved, 16_000);
        let line = tally.summary_section();
        assert!(
            line.starts_with("2 compactions (clear_tool_results, window 32000 tokens)"),
            "{line}"
        );
        assert!(line.contains("18 tool results cleared"), "{line}");
        assert!(line.contains("1 after the API refused"), "{line}");
        let json = serde_json::to_value(compaction("threshold", None)).unwrap();
        assert!(json.get("summary").is_none(), "{json}");
        assert_eq!(json["bytes_after"], 60_000);
    }
}
