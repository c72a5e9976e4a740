//! Read: show a text file with numbered lines, and remember what was seen so Edit and
//! Write can check they act on the current content.

use std::path::Path;

use schemars::JsonSchema;
use serde::Deserialize;

use super::notebook::is_notebook;
use super::notebook_read::{NotebookView, read_notebook};
use super::read_window::{Window, WindowError, read_window};
use super::{About, ToolContext, ToolError, ToolInput, TypedTool, blocking, file_target};
use crate::policy::Subject;

/// Lines shown when no limit is given.
pub(crate) const DEFAULT_LIMIT: usize = 2000;

#[derive(Clone, Copy)]
pub(crate) struct ReadTool;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Input {
    /// The file to read, absolute or relative to the workspace root.
    file_path: String,
    /// The 1-based line number to start reading from. Only needed for files too long to read at once.
    offset: Option<u64>,
    /// How many lines to read (default 2000).
    #[schemars(range(min = 1))]
    limit: Option<u64>,
}

impl ToolInput for Input {
    fn subject(&self) -> Subject {
        Subject::Path(self.file_path.clone())
    }
}

const DESCRIPTION: &str = "Reads a text file from the workspace and shows it with line numbers.

Usage:
- file_path may be absolute or relative to the workspace root.
- Output lines look like `N<TAB>content`, numbered from 1. The number and the tab are NOT part of the file: never copy them into Edit's old_string.
- By default up to 2000 lines are shown from the start of the file. For long files, pass offset (the 1-based line to start at) and limit (how many lines) to read a window; the output tells you when more lines remain.
- Lines longer than 2000 characters are cut.
- You must Read a file before you Edit or overwrite it with Write; if it changes on disk afterwards, Read it again.
- Windows line endings are shown without the carriage return; a UTF-8 byte-order mark is hidden; UTF-16 files with a byte-order mark are decoded.
- Jupyter notebooks (.ipynb) are shown as cells: each with its id and type, its source, then its outputs as text (images as a one-line note). Edit cells with NotebookEdit, naming them by that id. For a notebook, offset and limit count cells instead of lines.
- Directories cannot be read: use Glob (or LS) to list them. Binary files are refused.
- An empty file is reported as such rather than as an error.
- Reading several files you will need is best done with several Read calls in one turn.";

impl TypedTool for ReadTool {
    type Input = Input;
    const ABOUT: About = About::reads("Read", DESCRIPTION);

    async fn run(&self, input: Input, ctx: &ToolContext) -> Result<String, ToolError> {
        let (path, shown) = file_target(ctx, &input.file_path)?;
        let first = usize::try_from(input.offset.unwrap_or(1).max(1)).unwrap_or(usize::MAX);
        let limit = input
            .limit
            .map_or(DEFAULT_LIMIT, |l| usize::try_from(l).unwrap_or(usize::MAX));
        let mut note = None;
        if is_notebook(&path) || is_notebook(std::path::Path::new(&input.file_path)) {
            match read_notebook(ctx, &path, &shown, first, limit).await? {
                NotebookView::Cells(text) => return Ok(text),
                NotebookView::AsText(why) => note = why,
            }
        }
        let roots = std::sync::Arc::clone(&ctx.roots);
        let at = path.clone();
        let window = blocking(move || read_window(&roots, &at, first, limit))
            .await?
            .map_err(|error| window_error(error, &shown, &ctx.workspace))?;
        if window.empty {
            ctx.files
                .record_digest(&path, window.sha256, true, window.mtime);
            return Ok(format!(
                "<system-reminder>The file {shown} exists but is empty.</system-reminder>"
            ));
        }
        let total = window.total;
        if first > total {
            return Ok(format!(
                "<system-reminder>The file {shown} has only {total} lines, fewer than offset {first}. Read it with a smaller offset.</system-reminder>"
            ));
        }
        let last = window.lines.last().map_or(first, |(number, _)| *number);
        ctx.files.record_digest(
            &path,
            window.sha256,
            first == 1 && last == total,
            window.mtime,
        );
        Ok(numbered(&window, first, last, note))
    }
}

/// What the model is told when the window cannot be read.
fn window_error(error: WindowError, shown: &str, workspace: &Path) -> ToolError {
    match error {
        WindowError::Io(e) if e.kind() == std::io::ErrorKind::IsADirectory => {
            ToolError::Failed(format!(
                "{shown} is a directory, not a file. Use Glob (or LS) to list its contents, then Read the files you need."
            ))
        }
        WindowError::Io(e) if e.kind() == std::io::ErrorKind::NotFound => {
            ToolError::Failed(format!(
                "File does not exist. (path: {shown}; the workspace root is {})",
                workspace.display()
            ))
        }
        WindowError::Io(e) => ToolError::io(format!("Cannot read {shown}"), e),
        WindowError::NotText(not_text) => ToolError::Failed(format!(
            "{shown} is {not_text}, so it cannot be shown as text. Inspect it with a suitable command instead if you must."
        )),
        WindowError::TooLarge(size) => ToolError::Failed(format!(
            "{shown} is a UTF-16 file of {size} bytes, too large to decode (the limit is 64 MiB). Inspect it with a suitable command instead."
        )),
    }
}

/// The window's lines as `N<TAB>line` from `first` to `last`, with notes: the lines
/// that remain, bytes that were not UTF-8, and `note` (why a notebook shows as text).
fn numbered(window: &Window, first: usize, last: usize, note: Option<String>) -> String {
    let total = window.total;
    let mut out: Vec<String> = window
        .lines
        .iter()
        .map(|(number, line)| format!("{number}\t{line}"))
        .collect();
    if last < total {
        out.push(format!(
            "\n(Showing lines {first}-{last} of {total}. {} more lines remain: call Read with offset={} to continue.)",
            total - last,
            last + 1
        ));
    }
    if window.lossy {
        out.push(
            "\n(Note: the file is not valid UTF-8; invalid bytes are shown as \u{FFFD}.)"
                .to_string(),
        );
    }
    if let Some(note) = note {
        out.push(format!("\n{note}"));
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::tools::text::{Encoding, encode};
    use crate::tools::{CallJson, Tool, ToolOutput};

    fn ctx(dir: &tempfile::TempDir) -> ToolContext {
        ToolContext::in_temp(dir)
    }

    async fn read(ctx: &ToolContext, input: Value) -> ToolOutput {
        ReadTool.call(input, ctx).await
    }

    #[tokio::test]
    async fn numbers_lines_from_one_and_records_whole_read() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\r\ntwo\r\n").unwrap();
        let ctx = ctx(&dir);
        let out = read(&ctx, json!({"file_path": "a.txt"})).await;
        assert!(!out.is_error);
        assert_eq!(out.content, "1\tone\n2\ttwo\n3\t");
        let state = ctx.files.get(&dir.path().join("a.txt")).unwrap();
        assert!(state.whole);
    }

    #[tokio::test]
    async fn offset_and_limit_show_a_window_with_a_continuation_note() {
        let dir = tempfile::tempdir().unwrap();
        let text: String = (1..=10).map(|i| format!("line{i}\n")).collect();
        std::fs::write(dir.path().join("a.txt"), text).unwrap();
        let ctx = ctx(&dir);
        let out = read(&ctx, json!({"file_path": "a.txt", "offset": 3, "limit": 2})).await;
        assert!(
            out.content.starts_with("3\tline3\n4\tline4\n"),
            "{}",
            out.content
        );
        assert!(out.content.contains("offset=5"), "{}", out.content);
        assert!(!ctx.files.get(&dir.path().join("a.txt")).unwrap().whole);
    }

    #[tokio::test]
    async fn offset_past_end_and_empty_file_are_notices() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "x\ny").unwrap();
        std::fs::write(dir.path().join("empty.txt"), "").unwrap();
        let ctx = ctx(&dir);
        let out = read(&ctx, json!({"file_path": "a.txt", "offset": 50})).await;
        assert!(!out.is_error);
        assert!(out.content.contains("only 2 lines"), "{}", out.content);
        let out = read(&ctx, json!({"file_path": "empty.txt"})).await;
        assert!(!out.is_error);
        assert!(out.content.contains("exists but is empty"));
        assert!(ctx.files.has_read(&dir.path().join("empty.txt")));
    }

    #[tokio::test]
    async fn missing_directory_and_binary_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("bin"), b"\x7fELF\0\0\x01").unwrap();
        let ctx = ctx(&dir);
        let out = read(&ctx, json!({"file_path": "nope.txt"})).await;
        assert!(out.is_error);
        assert!(out.content.starts_with("File does not exist."));
        assert!(out.content.contains(&ctx.workspace.display().to_string()));
        let out = read(&ctx, json!({"file_path": "sub"})).await;
        assert!(out.is_error && out.content.contains("directory"));
        let out = read(&ctx, json!({"file_path": "bin"})).await;
        assert!(out.is_error && out.content.contains("binary"));
        let out = read(&ctx, json!({"file_path": 3})).await;
        assert!(out.is_error);
    }

    #[tokio::test]
    async fn long_lines_are_cut_and_encodings_decoded() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("long.txt"), "x".repeat(3000)).unwrap();
        std::fs::write(
            dir.path().join("u16.txt"),
            encode("grüße\nzwei", Encoding::Utf16Le),
        )
        .unwrap();
        std::fs::write(dir.path().join("bom.txt"), b"\xEF\xBB\xBFhi").unwrap();
        let ctx = ctx(&dir);
        let out = read(&ctx, json!({"file_path": "long.txt"})).await;
        assert!(out.content.contains("line truncated: 3000 characters"));
        assert!(out.content.len() < 2100);
        let out = read(&ctx, json!({"file_path": "u16.txt"})).await;
        assert_eq!(out.content, "1\tgrüße\n2\tzwei");
        let out = read(&ctx, json!({"file_path": "bom.txt"})).await;
        assert_eq!(out.content, "1\thi");
    }

    #[test]
    fn schema_and_subject() {
        let input = json!({"file_path": "src/lib.rs"});
        assert_eq!(
            ReadTool.judged(input).subject,
            Subject::Path("src/lib.rs".into())
        );
        let schema = ReadTool.input_schema();
        assert_eq!(schema["additionalProperties"], json!(false));
        assert!(ReadTool.facts().read_only);
    }
}
