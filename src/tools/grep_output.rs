//! How Grep shows what it found: ripgrep-style content lines, file lists and counts,
//! paged by offset and head_limit with a note saying what was cut.

use std::fmt::Write as _;
use std::path::Path;

use schemars::JsonSchema;
use serde::Deserialize;

use super::grep_search::{FileHits, Line, Options};
use super::search_walk::SearchRoot;
use super::text::{cut_chars, display_path};
use crate::workspace::paths::relative_to;

/// Entries returned when head_limit is not given.
pub(crate) const DEFAULT_HEAD_LIMIT: usize = 250;
/// Content-mode lines longer than this are cut.
pub(crate) const MAX_LINE_CHARS: usize = 500;

// Plain comments, not doc comments: documented variants would turn the schema's `enum`
// into a `oneOf` of constants.
#[derive(Deserialize, JsonSchema, Clone, Copy, Default, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub(crate) enum OutputMode {
    // Matching lines, `path:line:text`.
    Content,
    // The paths of matching files.
    #[default]
    FilesWithMatches,
    // Matches per file, and a total.
    Count,
}

/// How the hits are shown: the input's output mode, line numbers and paging.
pub(super) struct Shown {
    pub mode: OutputMode,
    /// Line numbers in content mode (default true).
    pub line_numbers: Option<bool>,
    /// Entries returned at most (default [`DEFAULT_HEAD_LIMIT`]; 0 = no limit).
    pub head_limit: Option<usize>,
    /// Entries skipped first (default 0).
    pub offset: Option<usize>,
}

/// The result text for `hits` (at least one) in the input's output mode, paged.
pub(super) fn format_hits(
    hits: &[FileHits],
    input: &Shown,
    opts: &Options,
    root: &SearchRoot,
    workspace: &Path,
) -> String {
    // Paths relative to a searched directory; a searched file is named from the workspace.
    let name = |hit: &FileHits| -> String {
        if root.is_dir {
            relative_to(&root.path, &hit.path).unwrap_or_else(|| hit.path.display().to_string())
        } else {
            display_path(workspace, &hit.path)
        }
    };
    match input.mode {
        OutputMode::Content => {
            // Content lines are written into one buffer and paged as slices of it: no
            // String per line, which matters with tens of thousands of lines and
            // head_limit 0.
            let mut buffer = String::new();
            let context = opts.before > 0 || opts.after > 0;
            let numbers = input.line_numbers.unwrap_or(true);
            let ends = content_entries(&mut buffer, hits, name, numbers, context);
            let mut start = 0;
            let entries: Vec<&str> = ends
                .into_iter()
                .map(|end| {
                    let line = &buffer[start..end];
                    start = end;
                    line
                })
                .collect();
            page(&entries, input, None, None)
        }
        OutputMode::Count => {
            let total: u64 = hits.iter().map(|h| h.count).sum();
            let entries: Vec<String> = hits
                .iter()
                .map(|h| format!("{}:{}", name(h), h.count))
                .collect();
            let footer = format!(
                "\nFound {total} total {} across {} {}.",
                plural(total as usize, "match", "matches"),
                hits.len(),
                plural(hits.len(), "file", "files")
            );
            page(&entries, input, None, Some(footer))
        }
        OutputMode::FilesWithMatches => {
            let header = format!(
                "Found {} {}",
                hits.len(),
                plural(hits.len(), "file", "files")
            );
            let entries: Vec<String> = hits.iter().map(name).collect();
            page(&entries, input, Some(header), None)
        }
    }
}

/// What the output says about files that could not be searched (empty when none).
pub(super) fn skipped_note(skipped: &[FileHits], workspace: &std::path::Path) -> String {
    if skipped.is_empty() {
        return String::new();
    }
    let listed: Vec<String> = skipped
        .iter()
        .take(10)
        .map(|hit| {
            format!(
                "{} ({})",
                display_path(workspace, &hit.path),
                hit.skipped.as_deref().unwrap_or_default()
            )
        })
        .collect();
    let more = skipped.len().saturating_sub(listed.len());
    format!(
        "\n\n(Not searched: {} {}: {}{})",
        skipped.len(),
        plural(skipped.len(), "file", "files"),
        listed.join("; "),
        if more > 0 {
            format!("; and {more} more")
        } else {
            String::new()
        }
    )
}

fn plural<'a>(n: usize, one: &'a str, many: &'a str) -> &'a str {
    if n == 1 { one } else { many }
}

/// Content-mode lines, ripgrep style, written one after another into `out`; returns where
/// each line ends.
fn content_entries(
    out: &mut String,
    hits: &[FileHits],
    name: impl Fn(&FileHits) -> String,
    numbers: bool,
    context: bool,
) -> Vec<usize> {
    let mut ends = Vec::new();
    for (i, hit) in hits.iter().enumerate() {
        let path = name(hit);
        if context && i > 0 {
            out.push_str("--");
            ends.push(out.len());
        }
        for line in &hit.lines {
            let (n, text, sep) = match line {
                Line::Match(n, range) => (n, hit.line_text(range), ':'),
                Line::Context(n, range) => (n, hit.line_text(range), '-'),
                Line::Break => {
                    out.push_str("--");
                    ends.push(out.len());
                    continue;
                }
            };
            // A line of at most MAX_LINE_CHARS bytes has at most as many characters:
            // skip counting them (most lines).
            let (shown, cut) = if text.len() <= MAX_LINE_CHARS {
                (text, false)
            } else {
                cut_chars(text, MAX_LINE_CHARS)
            };
            out.push_str(&path);
            out.push(sep);
            if numbers {
                // invariant: writing to a String cannot fail.
                let _ = write!(out, "{n}{sep}");
            }
            out.push_str(shown);
            if cut {
                out.push_str(" … [line truncated]");
            }
            ends.push(out.len());
        }
    }
    ends
}

/// Apply offset and head_limit, saying what was cut.
fn page<S: AsRef<str>>(
    entries: &[S],
    input: &Shown,
    header: Option<String>,
    footer: Option<String>,
) -> String {
    let offset = input.offset.unwrap_or(0);
    let limit = input.head_limit.unwrap_or(DEFAULT_HEAD_LIMIT);
    let total = entries.len();
    if offset >= total {
        return format!("No entries at offset {offset}: there are only {total}.");
    }
    let take = if limit == 0 { total } else { limit };
    let shown = &entries[offset..offset.saturating_add(take).min(total)];
    let end = offset + shown.len();
    let size = shown.iter().map(|e| e.as_ref().len() + 1).sum::<usize>();
    let mut out = String::with_capacity(size + 200);
    let mut first = true;
    let mut push = |line: &str| {
        if !first {
            out.push('\n');
        }
        first = false;
        out.push_str(line);
    };
    if let Some(header) = &header {
        push(header);
    }
    for entry in shown {
        push(entry.as_ref());
    }
    if end < total || offset > 0 {
        let more = if end < total {
            format!(" Use offset={end} to see more, or a narrower search.")
        } else {
            String::new()
        };
        push(&format!(
            "\n(Results limited: showing entries {}-{end} of {total}.{more})",
            offset + 1
        ));
    }
    if let Some(footer) = &footer {
        push(footer);
    }
    out
}
