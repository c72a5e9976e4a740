//! Grep: search file contents with ripgrep's regex syntax and ignore rules.

use schemars::JsonSchema;
use serde::Deserialize;

use super::grep_output::{OutputMode, Shown, format_hits, skipped_note};
use super::grep_search::{FileHits, Options, build_matcher, search};
use super::search_walk::search_root;
use super::{About, ToolContext, ToolError, ToolInput, TypedTool, blocking};
use crate::policy::Subject;

#[derive(Clone, Copy)]
pub(crate) struct GrepTool;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Input {
    /// The regular expression to search for.
    pattern: String,
    /// File or directory to search (default: the workspace root).
    path: Option<String>,
    /// Glob filter for file names, e.g. "*.js" or "*.{ts,tsx}".
    glob: Option<String>,
    /// ripgrep file type to search, e.g. rust, py, js.
    #[serde(rename = "type")]
    file_type: Option<String>,
    /// content: matching lines; files_with_matches (default): file paths; count: matches per file.
    #[serde(default)]
    output_mode: OutputMode,
    /// Case-insensitive search.
    #[serde(rename = "-i", default)]
    case_insensitive: bool,
    /// Show line numbers in content mode (default true).
    #[serde(rename = "-n")]
    line_numbers: Option<bool>,
    /// Lines of context after each match (content mode).
    #[serde(rename = "-A")]
    after: Option<usize>,
    /// Lines of context before each match (content mode).
    #[serde(rename = "-B")]
    before: Option<usize>,
    /// Lines of context before and after each match (content mode).
    #[serde(rename = "-C")]
    context: Option<usize>,
    /// Return at most this many entries (default 250; 0 = no limit).
    head_limit: Option<usize>,
    /// Skip this many entries first (default 0).
    offset: Option<usize>,
    /// Let . match newlines and patterns span lines.
    #[serde(default)]
    multiline: bool,
}

impl ToolInput for Input {
    fn subject(&self) -> Subject {
        Subject::Path(self.path.clone().unwrap_or_else(|| ".".to_string()))
    }
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

impl TypedTool for GrepTool {
    type Input = Input;
    const ABOUT: About = About::reads("Grep", DESCRIPTION).paths_governed_by("Read");

    async fn run(&self, input: Input, ctx: &ToolContext) -> Result<String, ToolError> {
        let root = search_root(ctx, input.path.as_deref())?;
        let opts = Options {
            case_insensitive: input.case_insensitive,
            multiline: input.multiline,
            before: input.before.or(input.context).unwrap_or(0),
            after: input.after.or(input.context).unwrap_or(0),
            want_lines: input.output_mode == OutputMode::Content,
            first_only: input.output_mode == OutputMode::FilesWithMatches,
        };
        let matcher = build_matcher(&input.pattern, &opts)
            .map_err(|e| ToolError::Failed(format!("Invalid regex pattern: {e}")))?;
        let types = file_types(input.file_type.as_deref())?;
        let overrides = globs(input.glob.as_deref(), &root.path)?;
        let walk_root = root.path.clone();
        let hidden = ctx.hidden_for(Self::ABOUT.name);
        let search_opts = opts.clone();
        let roots = std::sync::Arc::clone(&ctx.roots);
        let hits = blocking(move || {
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
        .await?;
        let (skipped, hits): (Vec<FileHits>, Vec<FileHits>) =
            hits.into_iter().partition(|hit| hit.skipped.is_some());
        let skipped_note = skipped_note(&skipped, &ctx.workspace);
        if hits.is_empty() {
            return Ok(format!("No matches found{skipped_note}"));
        }
        let shown = Shown {
            mode: input.output_mode,
            line_numbers: input.line_numbers,
            head_limit: input.head_limit,
            offset: input.offset,
        };
        Ok(format_hits(&hits, &shown, &opts, &root, &ctx.workspace) + &skipped_note)
    }
}

/// The ripgrep file type `name` selects, if one is given.
fn file_types(name: Option<&str>) -> Result<Option<ignore::types::Types>, ToolError> {
    let Some(name) = name else {
        return Ok(None);
    };
    let mut builder = ignore::types::TypesBuilder::new();
    builder.add_defaults();
    builder.select(name);
    builder.build().map(Some).map_err(|e| {
        ToolError::Failed(format!(
            "Invalid type {name:?}: {e}. Use a ripgrep file type such as rust, py, js, ts, go, java, c, cpp, md, json, yaml."
        ))
    })
}

/// The file-name filter of the space-separated `globs` (`!` excludes), if given.
fn globs(
    globs: Option<&str>,
    root: &std::path::Path,
) -> Result<Option<ignore::overrides::Override>, ToolError> {
    let Some(globs) = globs else {
        return Ok(None);
    };
    let mut builder = ignore::overrides::OverrideBuilder::new(root);
    for glob in globs.split_whitespace() {
        builder
            .add(glob)
            .map_err(|e| ToolError::Failed(format!("Invalid glob {glob:?}: {e}")))?;
    }
    builder
        .build()
        .map(Some)
        .map_err(|e| ToolError::Failed(format!("Invalid glob: {e}")))
}

#[cfg(test)]
#[path = "grep_tests.rs"]
mod tests;
