//! Edit: replace an exact string in a file the run has read, keeping the file's line
//! endings, byte-order mark and final newline as they were.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::edit_hints::{strip_line_number_prefixes, whitespace_insensitive_match};
use super::text::{Encoding, decode, display_path, encode, numbered_snippet, parse_input};
use super::{Subject, Tool, ToolContext, ToolOutput, file_path_subject, resolve_file_path};
use crate::workspace::atomic::write_atomic;

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
        if input.old_string == input.new_string {
            return ToolOutput::error(
                "No changes to make: old_string and new_string are exactly the same.",
            );
        }
        let bytes = match tokio::fs::metadata(&path).await {
            Ok(meta) if meta.is_dir() => {
                return ToolOutput::error(format!(
                    "{shown} is a directory; give the path of a file to edit."
                ));
            }
            Ok(_) => match tokio::fs::read(&path).await {
                Ok(bytes) => Some(bytes),
                Err(e) => return ToolOutput::error(format!("Cannot read {shown}: {e}")),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return ToolOutput::error(format!("Cannot read {shown}: {e}")),
        };

        let Some(bytes) = bytes else {
            if input.old_string.is_empty() {
                return write(
                    ctx,
                    &path,
                    &shown,
                    &input.new_string,
                    Encoding::Utf8 { bom: false },
                )
                .await
                .map_or_else(
                    |e| e,
                    |_| ToolOutput::ok(format!("File created successfully at: {shown}")),
                );
            }
            return ToolOutput::error(format!(
                "File does not exist. (path: {shown}; the workspace root is {}). To create a new file, use Write, or Edit with an empty old_string.",
                ctx.workspace.display()
            ));
        };
        if let Err(message) = ctx.files.check_writable(&path) {
            return ToolOutput::error(message);
        }
        let Some(decoded) = decode(&bytes) else {
            return ToolOutput::error(format!(
                "{shown} is a binary file; Edit only changes text files."
            ));
        };
        if decoded.lossy {
            return ToolOutput::error(format!(
                "{shown} is not valid UTF-8 (or UTF-16) text; editing it would corrupt bytes. Use Bash with a suitable tool instead."
            ));
        }
        let content = decoded.text;

        if input.old_string.is_empty() {
            if !content.trim().is_empty() {
                return ToolOutput::error(format!(
                    "Cannot create {shown}: the file already exists and is not empty. Give the old_string to replace, or Read it and use Write to replace it whole."
                ));
            }
            return write(ctx, &path, &shown, &input.new_string, decoded.encoding)
                .await
                .map_or_else(
                    |e| e,
                    |_| ToolOutput::ok(format!("The file {shown} has been updated.")),
                );
        }

        // In a CRLF file, the model's `\n` means `\r\n`. Try that reading first; fall back
        // to the strings as written (mixed line endings).
        let mut attempts = vec![(input.old_string.clone(), input.new_string.clone())];
        if content.contains("\r\n") {
            attempts.insert(0, (to_crlf(&input.old_string), to_crlf(&input.new_string)));
        }
        let Some((old, new, count)) = attempts
            .into_iter()
            .map(|(old, new)| {
                let count = content.matches(old.as_str()).count();
                (old, new, count)
            })
            .find(|(_, _, count)| *count > 0)
        else {
            return ToolOutput::error(not_found_message(&content, &input.old_string));
        };
        if count > 1 && !input.replace_all {
            return ToolOutput::error(format!(
                "Found {count} matches of the string to replace, but replace_all is false. To replace every occurrence, set replace_all to true. To replace only one, add more surrounding lines to old_string so that it matches exactly once.\nString: {}",
                input.old_string
            ));
        }
        let Some(first_at) = content.find(old.as_str()) else {
            return ToolOutput::error(not_found_message(&content, &input.old_string));
        };
        let updated = if input.replace_all {
            content.replace(old.as_str(), &new)
        } else {
            content.replacen(old.as_str(), &new, 1)
        };
        let first_line = content[..first_at].matches('\n').count() + 1;
        if let Err(e) = write(ctx, &path, &shown, &updated, decoded.encoding).await {
            return e;
        }
        let changed_lines = new.matches('\n').count();
        let from = first_line.saturating_sub(SNIPPET_CONTEXT).max(1);
        let to = first_line + changed_lines + SNIPPET_CONTEXT;
        let snippet = numbered_snippet(&updated, from, to);
        let what = if input.replace_all && count > 1 {
            format!("All {count} occurrences were replaced. ")
        } else {
            String::new()
        };
        ToolOutput::ok(format!(
            "The file {shown} has been updated. {what}Here is the edited region as Read would show it:\n{snippet}"
        ))
    }
}

/// Write `text` back in `encoding` and record the new state for the next edit.
async fn write(
    ctx: &ToolContext,
    path: &std::path::Path,
    shown: &str,
    text: &str,
    encoding: Encoding,
) -> Result<(), ToolOutput> {
    let bytes = encode(text, encoding);
    let target = path.to_path_buf();
    let to_write = bytes.clone();
    match tokio::task::spawn_blocking(move || write_atomic(&target, &to_write)).await {
        Ok(Ok(())) => {
            ctx.files.record(path, &bytes, true);
            Ok(())
        }
        Ok(Err(e)) => Err(ToolOutput::error(format!("Could not write {shown}: {e}"))),
        Err(e) => Err(ToolOutput::error(format!("Could not write {shown}: {e}"))),
    }
}

/// `s` with every line break as `\r\n`.
fn to_crlf(s: &str) -> String {
    s.replace("\r\n", "\n").replace('\n', "\r\n")
}

/// Why old_string was not found, with whatever will help the model retry.
fn not_found_message(content: &str, old: &str) -> String {
    let mut message = format!("String to replace not found in file.\nString: {old}");
    if let Some(stripped) = strip_line_number_prefixes(old)
        && content
            .replace("\r\n", "\n")
            .contains(&stripped.replace("\r\n", "\n"))
    {
        message.push_str(&format!(
            "\n\nold_string starts its lines with line numbers and a TAB copied from Read's output; those prefixes are not part of the file. Without them, old_string would be:\n{stripped}"
        ));
        return message;
    }
    if let Some(stripped) = strip_line_number_prefixes(old) {
        message.push_str(&format!(
            "\n\nNote: old_string starts its lines with line numbers and a TAB copied from Read's output; those are not part of the file. Without them it reads:\n{stripped}"
        ));
    }
    if let Some(actual) = whitespace_insensitive_match(content, old) {
        message.push_str(&format!(
            "\n\nThe file has text that differs only in whitespace (indentation, spaces or line breaks). The exact text in the file is:\n{actual}"
        ));
    } else {
        message.push_str("\n\nRead the file again and copy old_string exactly.");
    }
    message
}

#[cfg(test)]
#[path = "edit_tests.rs"]
mod tests;
