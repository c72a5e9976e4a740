//! Text shown on one line of drover's output, whoever wrote it.
//!
//! drover's lines carry text a model, a recording, a tool or a server chose: a denied
//! command, a tool's error, a check's output, a recorded check command. Printed as it
//! came, such text would start lines of its own — and on GitHub Actions the runner
//! executes a line that starts with `::` (`::add-mask::`, `::stop-commands::`, `::error`)
//! and a `##[command]` *anywhere* in a line (the runner's older syntax) — or drive a
//! terminal with escape sequences. So every printed line goes through [`one_line`]:
//! whatever it holds, it stays one line of plain text.

use std::borrow::Cow;
use std::fmt::Write as _;

/// `text` as one line of plain text:
///
/// - line breaks are written out, so they cannot start a line: `\n`, `\r`, VT (`\v`),
///   FF (`\f`), and NEL, U+2028 and U+2029 (`\u{85}`, `\u{2028}`, `\u{2029}`), which
///   terminals or log viewers may also break at;
/// - terminal colour codes (CSI sequences) are dropped, and every other control
///   character (C0 but tab, DEL, C1, a lone ESC) is shown as U+FFFD: no cursor moves,
///   rewritten lines, window titles or clipboard writes (OSC 52);
/// - bidirectional controls (U+202A–U+202E, U+2066–U+2069) are written out, so no text
///   a model or a file chose can reorder what a reader sees of the line;
/// - `##[` becomes `##\[`, so no part of the line is a GitHub workflow command.
///
/// Nothing that was there is lost from sight but escape sequences, so a reader still
/// sees what the model sent.
pub fn one_line(text: &str) -> Cow<'_, str> {
    if !text.contains("##[") && !text.chars().any(needs_care) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' if chars.peek() == Some(&'[') => {
                // A CSI sequence: parameters up to a final byte in '@'..='~'.
                chars.next();
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\u{0b}' => out.push_str("\\v"),
            '\u{0c}' => out.push_str("\\f"),
            '\u{85}' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c if is_bidi_control(c) => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            '\t' => out.push('\t'),
            c if c.is_control() => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    // Last, so no `##[` can be put together across a dropped escape sequence.
    Cow::Owned(out.replace("##[", "##\\["))
}

/// A character [`one_line`] changes.
fn needs_care(c: char) -> bool {
    (c.is_control() && c != '\t') || c == '\u{2028}' || c == '\u{2029}' || is_bidi_control(c)
}

/// An embedding, override or isolate control of Unicode's bidirectional algorithm.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// A whole line drover prints: [`one_line`], and never starting with `::` (after
/// blanks, which GitHub's runner skips), so no line is a workflow command unless drover
/// writes it as one (annotations do not go through here).
pub(crate) fn printed_line(text: &str) -> Cow<'_, str> {
    let line = one_line(text);
    if line.trim_start().starts_with("::") {
        Cow::Owned(format!("drover: {line}"))
    } else {
        line
    }
}

/// Text of several lines for whoever reads stdout (`drover exec`'s answer): its line
/// breaks (`\n`, and `\r\n`) kept, each line as [`one_line`] shows it, and a line that
/// would start with `::` (after blanks) given a `\` before them, so no line of it is a
/// GitHub workflow command or drives a terminal, whichever model wrote it.
pub fn text_block(text: &str) -> String {
    let lines: Vec<String> = text
        .split('\n')
        .map(|line| {
            let (body, end) = match line.strip_suffix('\r') {
                Some(body) => (body, "\r"),
                None => (line, ""),
            };
            let mut shown = one_line(body).into_owned();
            let blanks = shown.len() - shown.trim_start().len();
            if shown[blanks..].starts_with("::") {
                shown.insert(blanks, '\\');
            }
            shown.push_str(end);
            shown
        })
        .collect();
    lines.join("\n")
}

/// A JSON document for machines (`--json`, `policy check`), made safe to print the
/// same way while staying the same JSON: `##[`, NEL, U+2028 and U+2029 — which can only
/// be inside its strings — written as JSON escapes (`##\u005b`, `\u0085`…). serde_json
/// already escapes every control character inside strings.
pub(crate) fn json_text(json: &str) -> Cow<'_, str> {
    if !json.contains("##[") && !json.contains(['\u{85}', '\u{2028}', '\u{2029}']) {
        return Cow::Borrowed(json);
    }
    Cow::Owned(
        json.replace("##[", "##\\u005b")
            .replace('\u{85}', "\\u0085")
            .replace('\u{2028}', "\\u2028")
            .replace('\u{2029}', "\\u2029"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What GitHub's runner would act on in one printed line: a workflow command at the
    /// start (after blanks) or a `##[` anywhere.
    fn is_command(line: &str) -> bool {
        line.trim_start().starts_with("::") || line.contains("##[")
    }

    #[test]
    fn line_breaks_of_every_kind_are_written_out() {
        let shown = one_line("a\nb\rc\u{b}d\u{c}e\u{85}f\u{2028}g\u{2029}h\r\ni");
        assert_eq!(
            shown,
            "a\\nb\\rc\\vd\\fe\\u{85}f\\u{2028}g\\u{2029}h\\r\\ni"
        );
        assert_eq!(shown.lines().count(), 1);
    }

    #[test]
    fn no_workflow_command_survives_anywhere_in_a_line() {
        for hostile in [
            "::error title=x::forged",
            "  ::add-mask::secret",
            "\u{2028}::stop-commands::token",
            "ok ##[error]forged",
            "ok ##\u{1b}[31m[add-mask]secret",
            "ok #\u{1b}[0m#[set-output name=a]b",
            "###[warning]x",
        ] {
            let line = printed_line(hostile);
            assert!(!is_command(&line), "{hostile:?} printed as {line:?}");
            for part in line.split(['\n', '\r']) {
                assert!(!is_command(part), "{hostile:?} printed as {line:?}");
            }
        }
        assert_eq!(printed_line("::error::x"), "drover: ::error::x");
        assert_eq!(one_line("a ##[error]b"), "a ##\\[error]b");
    }

    #[test]
    fn escape_sequences_and_control_characters_cannot_drive_the_terminal() {
        let shown = one_line("Raed\u{1b}]52;c;ZXZpbA==\u{7}\u{1b}[2J\rok\u{9b}31m\u{7f}\u{0}");
        assert!(
            !shown.chars().any(|c| c.is_control() && c != '\t'),
            "{shown:?}"
        );
        assert!(
            shown.starts_with("Raed") && shown.contains("ok"),
            "{shown:?}"
        );
        assert_eq!(one_line("\u{1b}[1;31merror\u{1b}[0m: x"), "error: x");
    }

    #[test]
    fn bidirectional_controls_cannot_reorder_a_line() {
        assert_eq!(
            one_line("pid 7 \u{202e}nur-sd\u{2066}x\u{2069}"),
            "pid 7 \\u{202e}nur-sd\\u{2066}x\\u{2069}"
        );
        assert_eq!(one_line("plain \u{5d0} text"), "plain \u{5d0} text");
    }

    #[test]
    fn a_text_block_keeps_its_lines_and_none_is_a_workflow_command() {
        let answer = "Fixed it.\n\n::add-mask::x\r\n  ::error::y\nsee ##[warning]z\n\u{1b}[2Jok\n";
        let shown = text_block(answer);
        assert_eq!(
            shown,
            "Fixed it.\n\n\\::add-mask::x\r\n  \\::error::y\nsee ##\\[warning]z\nok\n"
        );
        for line in shown.split('\n') {
            assert!(!is_command(line), "{line:?}");
        }
        assert_eq!(text_block("plain\ntext ü"), "plain\ntext ü");
    }

    #[test]
    fn plain_text_is_left_as_it_is() {
        let text = "drover: t passed — 3 turns\twith `git push` and ü";
        assert!(matches!(one_line(text), Cow::Borrowed(_)));
        assert!(matches!(printed_line(text), Cow::Borrowed(_)));
        // Escaping is done once: what it wrote stays as written.
        let once = one_line("a\nb ##[x");
        assert_eq!(one_line(&once), once);
    }

    #[test]
    fn json_stays_the_same_json() {
        let value = serde_json::json!({"d": "x ##[add-mask]y\u{2028}::z\u{85}\u{2029}\n"});
        let text = serde_json::to_string_pretty(&value).unwrap();
        let safe = json_text(&text);
        assert!(!safe.contains("##[") && !safe.contains(['\u{85}', '\u{2028}', '\u{2029}']));
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back, value);
    }
}
