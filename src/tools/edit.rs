//! Edit: replace an exact string in a file the run has read, keeping the file's line
//! endings, byte-order mark and final newline as they were.

use schemars::JsonSchema;
use serde::Deserialize;

use super::edit_apply::{IDENTICAL, Loaded, Replacement, apply, load, missing_file, write};
use super::text::{Encoding, numbered_snippet};
use super::{About, ToolContext, ToolError, ToolInput, TypedTool, file_target};
use crate::policy::Subject;

/// Lines of context shown around an edit in the success message.
const SNIPPET_CONTEXT: usize = 4;

#[derive(Clone, Copy)]
pub(crate) struct EditTool;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Input {
    /// The file to edit, absolute or relative to the workspace root.
    file_path: String,
    /// The exact text to replace.
    old_string: String,
    /// The text to replace it with (must differ from old_string).
    new_string: String,
    /// Replace every occurrence of old_string (default false).
    #[serde(default)]
    replace_all: bool,
}

impl ToolInput for Input {
    fn subject(&self) -> Subject {
        Subject::Path(self.file_path.clone())
    }
}

const DESCRIPTION: &str = "Replaces an exact string in a file with another string.

Usage:
- You must Read the file in this conversation before editing it; if it changed on disk since, Read it again.
- old_string must match the file exactly, including indentation and whitespace. Copy it from Read's output WITHOUT the line-number prefix (the number and the TAB before each line are not part of the file).
- old_string must occur exactly once, unless replace_all is true. If it occurs several times, include more surrounding lines to make it unique, or set replace_all to replace every occurrence (useful for renaming).
- new_string is inserted literally (no regex: `$1` stays `$1`) and must differ from old_string.
- The file's line endings (LF or CRLF), byte-order mark and final newline are kept; write new_string with plain \\n line breaks.
- With an empty old_string on a file that does not exist (or is empty), the file is created with new_string.
- Prefer Edit over Write for changing existing files.";

impl TypedTool for EditTool {
    type Input = Input;
    const ABOUT: About = About::writes("Edit", DESCRIPTION);

    async fn run(&self, input: Input, ctx: &ToolContext) -> Result<String, ToolError> {
        let (path, shown) = file_target(ctx, &input.file_path)?;
        let edit = Replacement {
            old: &input.old_string,
            new: &input.new_string,
            replace_all: input.replace_all,
        };
        if edit.old == edit.new {
            return Err(ToolError::Failed(IDENTICAL.to_string()));
        }
        let Some(Loaded { decoded }) = load(ctx, &path, &shown, "Edit").await? else {
            if !edit.old.is_empty() {
                return Err(missing_file(ctx, &shown));
            }
            let utf8 = Encoding::Utf8 { bom: false };
            write(ctx, &path, &shown, edit.new, utf8).await?;
            return Ok(format!("File created successfully at: {shown}"));
        };
        let applied = apply(&decoded.text, edit)?;
        write(ctx, &path, &shown, &applied.text, decoded.encoding).await?;
        if edit.old.is_empty() {
            return Ok(format!("The file {shown} has been updated."));
        }
        let from = applied.first_line.saturating_sub(SNIPPET_CONTEXT).max(1);
        let to = applied.first_line + applied.new_breaks + SNIPPET_CONTEXT;
        let snippet = numbered_snippet(&applied.text, from, to);
        let what = if applied.count > 1 {
            format!("All {} occurrences were replaced. ", applied.count)
        } else {
            String::new()
        };
        Ok(format!(
            "The file {shown} has been updated. {what}Here is the edited region as Read would show it:\n{snippet}"
        ))
    }
}

#[cfg(test)]
#[path = "edit_tests.rs"]
mod tests;
