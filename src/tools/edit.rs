//! Edit: replace an exact string in a file the run has read, keeping the file's line
//! endings, byte-order mark and final newline as they were.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::edit_apply::{IDENTICAL, Loaded, Replacement, apply, load, missing_file, write};
use super::text::{Encoding, display_path, numbered_snippet, parse_input};
use super::{Tool, ToolContext, ToolOutput, file_path_subject, resolve_file_path};
use crate::policy::Subject;

/// Lines of context shown around an edit in the success message.
const SNIPPET_CONTEXT: usize = 4;

pub struct EditTool;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    file_path: String,
    old_string: String,
    new_string: String,
    #[serde(default)]
    replace_all: bool,
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

#[async_trait]
impl Tool for EditTool {
    fn name(&self) -> &'static str {
        "Edit"
    }

    fn description(&self) -> &'static str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "file_path": {
                    "type": "string",
                    "description": "The file to edit, absolute or relative to the workspace root."
                },
                "old_string": {
                    "type": "string",
                    "description": "The exact text to replace."
                },
                "new_string": {
                    "type": "string",
                    "description": "The text to replace it with (must differ from old_string)."
                },
                "replace_all": {
                    "type": "boolean",
                    "default": false,
                    "description": "Replace every occurrence of old_string (default false)."
                }
            },
            "required": ["file_path", "old_string", "new_string"],
            "additionalProperties": false
        })
    }

    fn is_read_only(&self) -> bool {
        false
    }

    fn subject(&self, input: &Value) -> Subject {
        file_path_subject(input)
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let input: Input = match parse_input("Edit", input) {
            Ok(input) => input,
            Err(error) => return error,
        };
        let path = match resolve_file_path(ctx, &input.file_path) {
            Ok(path) => path,
            Err(error) => return error,
        };
        let shown = display_path(&ctx.workspace, &path);
        let edit = Replacement {
            old: &input.old_string,
            new: &input.new_string,
            replace_all: input.replace_all,
        };
        if edit.old == edit.new {
            return ToolOutput::error(IDENTICAL);
        }
        let loaded = match load(ctx, &path, &shown, "Edit").await {
            Ok(loaded) => loaded,
            Err(error) => return error,
        };
        let Some(Loaded { decoded }) = loaded else {
            if !edit.old.is_empty() {
                return missing_file(ctx, &shown);
            }
            let utf8 = Encoding::Utf8 { bom: false };
            return match write(ctx, &path, &shown, edit.new, utf8).await {
                Ok(()) => ToolOutput::ok(format!("File created successfully at: {shown}")),
                Err(error) => error,
            };
        };
        let applied = match apply(&decoded.text, edit) {
            Ok(applied) => applied,
            Err(message) => return ToolOutput::error(message),
        };
        if let Err(e) = write(ctx, &path, &shown, &applied.text, decoded.encoding).await {
            return e;
        }
        if edit.old.is_empty() {
            return ToolOutput::ok(format!("The file {shown} has been updated."));
        }
        let from = applied.first_line.saturating_sub(SNIPPET_CONTEXT).max(1);
        let to = applied.first_line + applied.new_breaks + SNIPPET_CONTEXT;
        let snippet = numbered_snippet(&applied.text, from, to);
        let what = if applied.count > 1 {
            format!("All {} occurrences were replaced. ", applied.count)
        } else {
            String::new()
        };
        ToolOutput::ok(format!(
            "The file {shown} has been updated. {what}Here is the edited region as Read would show it:\n{snippet}"
        ))
    }
}

#[cfg(test)]
#[path = "edit_tests.rs"]
mod tests;
