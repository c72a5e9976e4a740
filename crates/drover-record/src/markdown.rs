//! Markdown that holds text drover did not write: what summary.md (and the GitHub step
//! summary, and `report merge`'s summary of shards' `summary.json`) shows of commands,
//! messages, file names, denial reasons and check output.
//!
//! Such text is never written as Markdown: a line break in it could start a heading
//! (`## drover: 1 passed …`) or end a list, and GitHub renders raw HTML (`<h2>`). It goes
//! into a code span ([`code`], [`cell`]) or a fenced block ([`fenced`]), where nothing is
//! interpreted, behind a fence longer than any run of backticks inside, so it cannot
//! close its own fence.

use crate::junit::clean;

/// `text` as an inline code span, on one line: line breaks written as `\n` (a line break
/// inside a span would still let the next line start a block of its own), control
/// characters dropped (see [`clean`]).
pub(crate) fn code(text: &str) -> String {
    let text = clean(text)
        .replace("\r\n", "\\n")
        .replace(['\r', '\n'], "\\n");
    if text.is_empty() {
        return "` `".to_string();
    }
    let fence = "`".repeat(longest_backtick_run(&text) + 1);
    // A span that starts or ends with a backtick needs a space between it and the fence;
    // one space on each side is taken off again when rendered.
    let pad = if text.starts_with(['`', ' ']) || text.ends_with(['`', ' ']) {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{text}{pad}{fence}")
}

/// [`code`] for a table cell: GitHub splits a table row at every `|` that is not
/// escaped, inside code spans too, so each is written `\|` (shown as `|`). GitHub reads
/// backslashes in pairs first (`\\` is an escaped backslash), so a `|` after an odd run
/// of them gets one more, or its own backslash would pair with the run's last.
pub(crate) fn cell(text: &str) -> String {
    let mut out = String::new();
    let mut backslashes = 0;
    for c in code(text).chars() {
        if c == '|' {
            if backslashes % 2 == 1 {
                out.push('\\');
            }
            out.push('\\');
        }
        backslashes = if c == '\\' { backslashes + 1 } else { 0 };
        out.push(c);
    }
    out
}

/// `text` as a fenced code block of language `info`, each line indented by `indent` (to
/// sit inside a list item), ending with a newline. Every line break a Markdown reader
/// knows (`\n`, `\r\n`, a lone `\r`) ends a line that gets the indent, so no line of the
/// text falls out of the block.
pub(crate) fn fenced(text: &str, info: &str, indent: &str) -> String {
    let text = clean(text);
    let fence = "`".repeat((longest_backtick_run(&text) + 1).max(3));
    let mut out = format!("{indent}{fence}{info}\n");
    for line in text.split("\r\n").flat_map(|line| line.split(['\r', '\n'])) {
        out.push_str(indent);
        out.push_str(line);
        out.push('\n');
    }
    out.push_str(&format!("{indent}{fence}\n"));
    out
}

/// `markdown` (written with the helpers above) cut to at most `max` bytes at the end of
/// a line, so no code span is split (the rest of a split span would be read as Markdown),
/// with a fenced block it leaves open closed again. None when it fits.
pub(crate) fn cut(markdown: &str, max: usize) -> Option<String> {
    if markdown.len() <= max {
        return None;
    }
    let mut end = max;
    while !markdown.is_char_boundary(end) {
        end -= 1;
    }
    let end = markdown[..end].rfind('\n').map_or(0, |at| at + 1);
    let mut kept = markdown[..end].to_string();
    if let Some((indent, fence)) = open_fence(&kept) {
        kept.push_str(&format!("{indent}{fence}\n"));
    }
    Some(kept)
}

/// The indent and fence of a fenced block `markdown` opens and does not close. Only
/// [`fenced`] writes lines that start with three backticks and have none after them (a
/// line that starts with a code span has its closing fence on it), and the lines of a
/// block hold no run of backticks as long as its fence.
fn open_fence(markdown: &str) -> Option<(String, String)> {
    let mut open: Option<(String, String)> = None;
    for line in markdown.lines() {
        let text = line.trim_start_matches(' ');
        let run = text.len() - text.trim_start_matches('`').len();
        let rest = &text[run..];
        match &open {
            None if run >= 3 && !rest.contains('`') => {
                let indent = &line[..line.len() - text.len()];
                open = Some((indent.to_string(), "`".repeat(run)));
            }
            Some((_, fence)) if run >= fence.len() && rest.trim().is_empty() => open = None,
            _ => {}
        }
    }
    open
}

fn longest_backtick_run(text: &str) -> usize {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    longest
}

#[cfg(test)]
#[path = "markdown_tests.rs"]
pub(crate) mod tests;
