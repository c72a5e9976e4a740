//! Grep: search file contents with ripgrep's regex syntax and ignore rules.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::grep_search::{FileHits, Line, Options, build_matcher, search};
use super::judged_path;
use super::text::{cut_chars, display_path, parse_input};
use super::{Tool, ToolContext, ToolOutput, str_field};
use crate::policy::Subject;
use crate::workspace::paths::relative_to;

/// Entries returned when head_limit is not given.
pub const DEFAULT_HEAD_LIMIT: usize = 250;
/// Content-mode lines longer than this are cut.
pub const MAX_LINE_CHARS: usize = 500;

pub struct GrepTool;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    pattern: String,
    path: Option<String>,
    glob: Option<String>,
    #[serde(rename = "type")]
    file_type: Option<String>,
    output_mode: Option<String>,
    #[serde(rename = "-i", default)]
    case_insensitive: bool,
    #[serde(rename = "-n")]
    line_numbers: Option<bool>,
    #[serde(rename = "-A")]
    after: Option<usize>,
    #[serde(rename = "-B")]
    before: Option<usize>,
    #[serde(rename = "-C")]
    context: Option<usize>,
    head_limit: Option<usize>,
    offset: Option<usize>,
    #[serde(default)]
    multiline: bool,
}

const DESCRIPTION: &str = "Searches file contents with a regular expression (ripgrep syntax), in-process and fast.

Usage:
- Always use Grep for content searches; do not run grep or rg through Bash.
- pattern uses Rust/ripgrep regex syntax: escape literal braces and dots (`interface\\{\\}`, `foo\\.bar`). Invalid patterns are reported with the parser's message.
- path: a directory (default: the workspace root) or a single file. Files ignored by .gitignore and the .git directory are skipped; hidden files are searched; binary files are skipped.
- Filter files with glob (e.g. \"*.rs\", \"*.{ts,tsx}\"; several globs separated by spaces, `!` to exclude) or type (ripgrep file types: rust, py, js, go, java, ...). An unknown type is an error.
- output_mode: \"files_with_matches\" (default) lists matching files; \"content\" shows matching lines as `path:line:text` (-n, default true; context lines use `-` instead of `:` and `--` separates groups); \"count\" shows `path:N` per file and a total.
- -i: case-insensitive. -A/-B/-C: lines of context after/before/around each match (content mode only).
- multiline: true lets `.` match newlines and patterns span lines (slower; only when needed).
- head_limit caps the entries returned (lines, files or counts; default 250, 0 for no limit) and offset skips entries, for paging; the output says when results were cut. Content lines over 500 characters are cut.
- Paths are shown relative to the searched directory.";

#[async_trait]
impl Tool for GrepTool {
    fn name(&self) -> &'static str {
        "Grep"
    }

    fn description(&self) -> &'static str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        let count = |description: &str| json!({"type": "integer", "minimum": 0, "description": description});
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "The regular expression to search for."},
                "path": {"type": "string", "description": "File or directory to search (default: the workspace root)."},
                "glob": {"type": "string", "description": "Glob filter for file names, e.g. \"*.js\" or \"*.{ts,tsx}\"."},
                "type": {"type": "string", "description": "ripgrep file type to search, e.g. rust, py, js."},
                "output_mode": {
                    "type": "string",
                    "enum": ["content", "files_with_matches", "count"],
                    "description": "content: matching lines; files_with_matches (default): file paths; count: matches per file."
                },
                "-i": {"type": "boolean", "description": "Case-insensitive search."},
                "-n": {"type": "boolean", "description": "Show line numbers in content mode (default true)."},
                "-A": count("Lines of context after each match (content mode)."),
                "-B": count("Lines of context before each match (content mode)."),
                "-C": count("Lines of context before and after each match (content mode)."),
                "head_limit": count("Return at most this many entries (default 250; 0 = no limit)."),
                "offset": count("Skip this many entries first (default 0)."),
                "multiline": {"type": "boolean", "description": "Let . match newlines and patterns span lines."}
            },
            "required": ["pattern"],
            "additionalProperties": false
        })
    }

    fn is_read_only(&self) -> bool {
        true
    }

    fn subject(&self, input: &Value) -> Subject {
        Subject::Path(str_field(input, "path").unwrap_or(".").to_string())
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let input: Input = match parse_input("Grep", input) {
            Ok(input) => input,
            Err(error) => return error,
        };
        let root = match judged_path(ctx, input.path.as_deref().unwrap_or(".")) {
            Ok(root) => root,
            Err(e) => return ToolOutput::error(format!("Invalid path: {e}")),
        };
        let shown_root = display_path(&ctx.workspace, &root);
        let Ok(meta) = ctx.roots.metadata(&root) else {
            return ToolOutput::error(format!(
                "Path does not exist: {shown_root} (the workspace root is {}).",
                ctx.workspace.display()
            ));
        };
        let mode = input.output_mode.as_deref().unwrap_or("files_with_matches");
        if !matches!(mode, "content" | "files_with_matches" | "count") {
            return ToolOutput::error(format!(
                "Unknown output_mode {mode:?}: use content, files_with_matches or count."
            ));
        }
        let opts = Options {
            case_insensitive: input.case_insensitive,
            multiline: input.multiline,
            before: input.before.or(input.context).unwrap_or(0),
            after: input.after.or(input.context).unwrap_or(0),
            want_lines: mode == "content",
            first_only: mode == "files_with_matches",
        };
        let matcher = match build_matcher(&input.pattern, &opts) {
            Ok(matcher) => matcher,
            Err(e) => return ToolOutput::error(format!("Invalid regex pattern: {e}")),
        };
        let types = match &input.file_type {
            Some(name) => {
                let mut builder = ignore::types::TypesBuilder::new();
                builder.add_defaults();
                builder.select(name);
                match builder.build() {
                    Ok(types) => Some(types),
                    Err(e) => {
                        return ToolOutput::error(format!(
                            "Invalid type {name:?}: {e}. Use a ripgrep file type such as rust, py, js, ts, go, java, c, cpp, md, json, yaml."
                        ));
                    }
                }
            }
            None => None,
        };
        let overrides = match &input.glob {
            Some(globs) => {
                let mut builder = ignore::overrides::OverrideBuilder::new(&root);
                for glob in globs.split_whitespace() {
                    if let Err(e) = builder.add(glob) {
                        return ToolOutput::error(format!("Invalid glob {glob:?}: {e}"));
                    }
                }
                match builder.build() {
                    Ok(overrides) => Some(overrides),
                    Err(e) => return ToolOutput::error(format!("Invalid glob: {e}")),
                }
            }
            None => None,
        };

        let walk_root = root.clone();
        let hidden = std::sync::Arc::clone(&ctx.hidden);
        let search_opts = opts.clone();
        let roots = std::sync::Arc::clone(&ctx.roots);
        let hits = tokio::task::spawn_blocking(move || {
            search(
                &walk_root,
                &matcher,
                &search_opts,
                types,
                overrides,
                hidden,
                &roots,
            )
        })
        .await;
        let (skipped, hits): (Vec<FileHits>, Vec<FileHits>) = match hits {
            Ok(hits) => hits.into_iter().partition(|hit| hit.skipped.is_some()),
            Err(e) => return ToolOutput::error(format!("Search failed: {e}")),
        };
        let skipped_note = skipped_note(&skipped, &ctx.workspace);
        if hits.is_empty() {
            return ToolOutput::ok(format!("No matches found{skipped_note}"));
        }
        let name = |hit: &FileHits| -> String {
            if meta.is_dir() {
                relative_to(&root, &hit.path).unwrap_or_else(|| hit.path.display().to_string())
            } else {
                display_path(&ctx.workspace, &hit.path)
            }
        };
        let context = opts.before > 0 || opts.after > 0;
        let numbers = input.line_numbers.unwrap_or(true);
        // Content lines are written into one buffer and paged as slices of it: no String
        // per line, which matters with tens of thousands of lines and head_limit 0.
        let mut buffer = String::new();
        let (entries, header, footer) = match mode {
            "content" => {
                let ends = content_entries(&mut buffer, &hits, name, numbers, context);
                let mut start = 0;
                let entries: Vec<&str> = ends
                    .into_iter()
                    .map(|end| {
                        let line = &buffer[start..end];
                        start = end;
                        line
                    })
                    .collect();
                (Entries::Borrowed(entries), None, None)
            }
            "count" => {
                let total: u64 = hits.iter().map(|h| h.count).sum();
                let entries = hits
                    .iter()
                    .map(|h| format!("{}:{}", name(h), h.count))
                    .collect();
                let footer = format!(
                    "\nFound {total} total {} across {} {}.",
                    plural(total as usize, "match", "matches"),
                    hits.len(),
                    plural(hits.len(), "file", "files")
                );
                (Entries::Owned(entries), None, Some(footer))
            }
            _ => {
                let header = format!(
                    "Found {} {}",
                    hits.len(),
                    plural(hits.len(), "file", "files")
                );
                (
                    Entries::Owned(hits.iter().map(name).collect()),
                    Some(header),
                    None,
                )
            }
        };
        let content = match &entries {
            Entries::Borrowed(entries) => page(entries, &input, header, footer),
            Entries::Owned(entries) => page(entries, &input, header, footer),
        };
        ToolOutput::ok(content + &skipped_note)
    }
}

/// What the output says about files that could not be searched (empty when none).
fn skipped_note(skipped: &[FileHits], workspace: &std::path::Path) -> String {
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

/// Entries to page through: slices of one buffer, or strings of their own.
enum Entries<'a> {
    Borrowed(Vec<&'a str>),
    Owned(Vec<String>),
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
    use std::fmt::Write;
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
    input: &Input,
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

#[cfg(test)]
#[path = "grep_tests.rs"]
mod tests;
