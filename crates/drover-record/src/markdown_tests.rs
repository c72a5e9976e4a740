// Test-only module: its parent includes it under #[cfg(test)].
use super::*;

/// What a Markdown reader would take as Markdown in `markdown`: every line outside
/// fenced blocks with its code spans taken out. Panics when a line of a fenced block is
/// indented less than its fence (it would fall out of the list item, and the block).
pub(crate) fn live_text(markdown: &str) -> String {
    let mut live = String::new();
    let mut fence: Option<(usize, usize)> = None;
    for line in markdown
        .split("\r\n")
        .flat_map(|line| line.split(['\r', '\n']))
    {
        let text = line.trim_start_matches(' ');
        let indent = line.len() - text.len();
        let run = text.len() - text.trim_start_matches('`').len();
        match fence {
            Some((fence_indent, length)) => {
                assert!(
                    line.is_empty() || indent >= fence_indent,
                    "a line falls out of its block: {line:?}"
                );
                if run >= length && text[run..].trim().is_empty() {
                    fence = None;
                }
            }
            None if run >= 3 && !text[run..].contains('`') => fence = Some((indent, run)),
            None => {
                live.push_str(&without_code_spans(line));
                live.push('\n');
            }
        }
    }
    live
}

/// A line with its code spans (a backtick run, up to the next run of the same length)
/// taken out.
fn without_code_spans(line: &str) -> String {
    let chars: Vec<char> = line.chars().collect();
    let run_at = |at: usize| chars[at..].iter().take_while(|c| **c == '`').count();
    let mut out = String::new();
    let mut at = 0;
    while at < chars.len() {
        if chars[at] != '`' {
            out.push(chars[at]);
            at += 1;
            continue;
        }
        let open = run_at(at);
        let mut end = at + open;
        let mut closed = None;
        while end < chars.len() {
            if chars[end] == '`' {
                let run = run_at(end);
                if run == open {
                    closed = Some(end + run);
                    break;
                }
                end += run;
            } else {
                end += 1;
            }
        }
        match closed {
            Some(after) => at = after,
            None => {
                out.extend(&chars[at..at + open]);
                at += open;
            }
        }
    }
    out
}

const HOSTILE: &str = "a`b``c\n## FORGED\r### FORGED\r\n<h2>FORGED</h2>|x|```\n````\n- FORGED";

#[test]
fn code_spans_hold_any_text_on_one_line() {
    assert_eq!(code("a.rs"), "`a.rs`");
    assert_eq!(code("x ` y"), "``x ` y``");
    assert_eq!(code("`start"), "`` `start ``");
    assert_eq!(code("a\nb\r\nc\rd"), "`a\\nb\\nc\\nd`");
    assert_eq!(code(""), "` `");
    let span = code(HOSTILE);
    assert_eq!(span.lines().count(), 1);
    assert!(!live_text(&format!("- {span}\n")).contains("FORGED"));
    assert!(
        !live_text(&format!("{span}\n")).contains("FORGED"),
        "{span}"
    );
}

#[test]
fn a_cell_escapes_its_pipes() {
    assert_eq!(cell("a|b"), "`a\\|b`");
    // GitHub pairs backslashes before it sees `\|`: the pipe's own stays unpaired.
    assert_eq!(cell("a\\|b"), "`a\\\\\\|b`");
    assert_eq!(cell("a\\\\|b"), "`a\\\\\\|b`");
    let row = format!("| {} | 1 |", cell(HOSTILE));
    assert_eq!(row.matches(" | ").count(), 1, "one cell boundary: {row}");
}

#[test]
fn a_fenced_block_keeps_every_line_inside() {
    let block = fenced(HOSTILE, "text", "  ");
    assert!(block.starts_with("  `````text\n"), "{block}");
    assert!(block.ends_with("  `````\n"), "{block}");
    let item = format!("- check\n\n{block}");
    assert!(!live_text(&item).contains("FORGED"), "{item}");
    assert_eq!(fenced("ok", "", ""), "```\nok\n```\n");
}

#[test]
fn a_cut_ends_at_a_line_and_closes_an_open_block() {
    let markdown = format!(
        "## drover\n\n- {}\n{}",
        code("x"),
        fenced("1\n2\n3\n4", "text", "  ")
    );
    assert_eq!(cut(&markdown, markdown.len()), None);
    let short = cut(&markdown, markdown.len() - 8).unwrap();
    assert!(short.ends_with("  3\n  ```\n"), "{short}");
    let in_span = cut(&markdown, "## drover\n\n- `x".len()).unwrap();
    assert_eq!(in_span, "## drover\n\n");
    assert!(open_fence(&short).is_none());
    // A line starting with a code span opens no block.
    assert_eq!(open_fence(&format!("{}\n", code("a``b"))), None);
}
