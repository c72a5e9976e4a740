//! Diagnosing a failed Edit: when old_string is not in the file, say why in a way the
//! model can act on (a pasted Read line-number prefix, whitespace that differs, or text
//! that is nearly the same).

use std::time::{Duration, Instant};

use similar::TextDiff;

/// How similar (0..=1, `similar`'s ratio over characters) a window of the file must be to
/// old_string to be shown as a near match.
pub(super) const NEAR_MATCH_THRESHOLD: f32 = 0.8;
/// The search for a near match gives up after this long (huge files, long old_strings).
const NEAR_MATCH_BUDGET: Duration = Duration::from_millis(300);
/// Files with more lines than this are not searched for near matches.
const NEAR_MATCH_MAX_LINES: usize = 50_000;

/// If every non-empty line of `s` starts with a Read line-number prefix (optional spaces,
/// digits, a TAB), `s` without those prefixes.
pub(super) fn strip_line_number_prefixes(s: &str) -> Option<String> {
    let mut any = false;
    let mut out = Vec::new();
    for line in s.split('\n') {
        if line.trim().is_empty() {
            out.push(line);
            continue;
        }
        let rest = line.trim_start_matches(' ');
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits == 0 {
            return None;
        }
        let after = &rest[digits..];
        let stripped = after
            .strip_prefix('\t')
            .or_else(|| after.strip_prefix('→'))?;
        any = true;
        out.push(stripped);
    }
    any.then(|| out.join("\n"))
}

/// Collapse every run of whitespace to one space and trim the ends.
fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The text in `content` that equals `wanted` except for whitespace (indentation, spaces,
/// line breaks inside lines), as whole lines of the file. None when nothing matches.
pub(super) fn whitespace_insensitive_match(content: &str, wanted: &str) -> Option<String> {
    let target = squash(wanted);
    if target.is_empty() {
        return None;
    }
    let lines: Vec<&str> = content.split('\n').collect();
    let wanted_lines = wanted.trim().split('\n').count().max(1);
    // Try windows of the same number of lines first, then one line more or less (a line
    // break added or removed by the model).
    for span in [
        wanted_lines,
        wanted_lines + 1,
        wanted_lines.saturating_sub(1),
    ] {
        if span == 0 || span > lines.len() {
            continue;
        }
        for start in 0..=lines.len() - span {
            let window = lines[start..start + span].join("\n");
            let squashed = squash(&window);
            let hit = if span == 1 {
                squashed.contains(&target)
            } else {
                squashed == target
            };
            if hit {
                return Some(
                    lines[start..start + span]
                        .iter()
                        .map(|l| l.strip_suffix('\r').unwrap_or(l))
                        .collect::<Vec<_>>()
                        .join("\n"),
                );
            }
        }
    }
    None
}

/// Text of the file nearly equal to an old_string that is not in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct NearMatch {
    /// 1-based, inclusive.
    pub first_line: usize,
    pub last_line: usize,
    pub percent: u32,
    /// The file's lines, `\r` removed.
    pub text: String,
}

/// The window of whole lines of `content` (as many lines as `wanted` has) most similar
/// to `wanted`, if its similarity ratio reaches [`NEAR_MATCH_THRESHOLD`].
pub(super) fn near_match(content: &str, wanted: &str) -> Option<NearMatch> {
    let wanted = wanted.replace("\r\n", "\n");
    let wanted = wanted.trim_matches('\n');
    if wanted.trim().is_empty() {
        return None;
    }
    let lines: Vec<&str> = content
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    let span = wanted.split('\n').count();
    if span > lines.len() || lines.len() > NEAR_MATCH_MAX_LINES {
        return None;
    }
    let wanted_chars = wanted.chars().count();
    let deadline = Instant::now() + NEAR_MATCH_BUDGET;
    let mut best: Option<(f32, usize)> = None;
    for start in 0..=lines.len() - span {
        if Instant::now() > deadline {
            break;
        }
        let window = lines[start..start + span].join("\n");
        // ratio = 2·matches / (len_a + len_b) ≤ 2·min / (len_a + len_b): skip windows whose
        // length alone rules them out (or cannot beat the best so far).
        let window_chars = window.chars().count();
        let bound = 2.0 * window_chars.min(wanted_chars) as f32
            / (window_chars + wanted_chars).max(1) as f32;
        let floor = best.map_or(NEAR_MATCH_THRESHOLD, |(ratio, _)| ratio);
        if bound < floor {
            continue;
        }
        let ratio = TextDiff::configure()
            .deadline(deadline)
            .diff_chars(window.as_str(), wanted)
            .ratio();
        if ratio >= floor && best.is_none_or(|(b, _)| ratio > b) {
            best = Some((ratio, start));
        }
    }
    let (ratio, start) = best?;
    Some(NearMatch {
        first_line: start + 1,
        last_line: start + span,
        percent: (ratio * 100.0).floor() as u32,
        text: lines[start..start + span].join("\n"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_read_prefixes() {
        assert_eq!(
            strip_line_number_prefixes("12\tfn a() {\n13\t    x\n").as_deref(),
            Some("fn a() {\n    x\n")
        );
        assert_eq!(
            strip_line_number_prefixes("     7→let x = 1;").as_deref(),
            Some("let x = 1;")
        );
        assert_eq!(strip_line_number_prefixes("let x = 1;"), None);
        assert_eq!(strip_line_number_prefixes("12\tok\nplain"), None);
    }

    #[test]
    fn finds_text_differing_only_in_whitespace() {
        let content = "fn main() {\n        let x  = 1;\n    y();\n}\n";
        assert_eq!(
            whitespace_insensitive_match(content, "let x = 1;\ny();").as_deref(),
            Some("        let x  = 1;\n    y();")
        );
        assert_eq!(
            whitespace_insensitive_match(content, "let x = 1;").as_deref(),
            Some("        let x  = 1;")
        );
        assert_eq!(whitespace_insensitive_match(content, "z();"), None);
    }

    #[test]
    fn finds_nearly_equal_text_and_ignores_unrelated_text() {
        let content = "use std::io;\n\nfn total(items: &[Item]) -> u32 {\n    items.iter().map(|i| i.price).sum()\n}\n";
        let near = near_match(
            content,
            "fn total(items: &[Item]) -> u64 {\n    items.iter().map(|i| i.cost).sum()\n}",
        )
        .unwrap();
        assert_eq!((near.first_line, near.last_line), (3, 5));
        assert!(near.text.starts_with("fn total(items: &[Item]) -> u32 {"));
        assert!(near.percent >= 80 && near.percent < 100, "{near:?}");
        assert_eq!(near_match(content, "completely different words here"), None);
        assert_eq!(near_match(content, "   "), None);
    }
}
