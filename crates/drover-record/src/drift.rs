//! How a replay drifted from its recording: what reports say about it, and the short
//! diff shown for a result that differs.

use serde::{Deserialize, Serialize};

/// A replay's drift, for summary.json, summary.md and JUnit: how many results differed
/// and the first that did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DriftReport {
    /// Results that differed from the recording (volatile spans masked).
    pub count: u32,
    /// The first divergent call's number in the replay, from 1.
    pub call: u32,
    pub tool: String,
    pub tool_use_id: String,
    /// Its short unified diff, recorded → replayed.
    pub diff: String,
}

/// Lines of a drift diff shown at most (the whole results are in the transcript).
const MAX_DIFF_LINES: usize = 40;
/// Characters of a drift diff shown at most.
const MAX_DIFF_CHARS: usize = 4000;

/// A unified diff of `recorded` → `replayed` with two lines of context, cut to
/// [`MAX_DIFF_LINES`] lines and [`MAX_DIFF_CHARS`] characters with a note.
pub fn short_diff(recorded: &str, replayed: &str) -> String {
    let text = similar::TextDiff::from_lines(recorded, replayed)
        .unified_diff()
        .context_radius(2)
        .header("recorded", "replayed")
        .to_string();
    let text = if text.trim().is_empty() {
        // Same text, other flag or images: say what differs.
        "(the text is the same; the error flag or the images differ)\n".to_string()
    } else {
        text
    };
    let lines: Vec<&str> = text.lines().collect();
    let mut out: String = lines
        .iter()
        .take(MAX_DIFF_LINES)
        .map(|line| format!("{line}\n"))
        .collect();
    if out.chars().count() > MAX_DIFF_CHARS {
        out = out.chars().take(MAX_DIFF_CHARS).collect();
        out.push('\n');
    }
    if lines.len() > MAX_DIFF_LINES || text.chars().count() > MAX_DIFF_CHARS {
        out.push_str(
            "… (diff cut; the whole results are in the transcript's replay_drift event)\n",
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_diff_shows_the_changed_lines_with_context() {
        let recorded = "a\nb\nc\nd\ne\nf\n";
        let replayed = "a\nb\nc\nD\ne\nf\n";
        let diff = short_diff(recorded, replayed);
        assert!(diff.starts_with("--- recorded\n+++ replayed\n"), "{diff}");
        assert!(diff.contains("-d\n+D\n"), "{diff}");
        assert!(!diff.contains(" a\n"), "only two lines of context: {diff}");
    }

    #[test]
    fn a_long_diff_is_cut_with_a_note() {
        let recorded: String = (0..200).map(|i| format!("line {i}\n")).collect();
        let replayed: String = (0..200).map(|i| format!("LINE {i}\n")).collect();
        let diff = short_diff(&recorded, &replayed);
        assert!(diff.lines().count() <= MAX_DIFF_LINES + 1, "{diff}");
        assert!(diff.ends_with("replay_drift event)\n"), "{diff}");
        assert!(short_diff("same", "same").contains("error flag"));
    }
}
