//! The rules Edit and MultiEdit share: loading a file for editing (read-before-edit,
//! staleness, text only), applying one replacement to in-memory content, and writing the
//! result back atomically in the file's own encoding.

use std::io::Read as _;
use std::path::Path;

use super::edit_hints::{near_match, strip_line_number_prefixes, whitespace_insensitive_match};
use super::text::{Decoded, Encoding, decode, encode};
use super::{ToolContext, ToolError, blocking};

/// One replacement as the model asked for it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Replacement<'a> {
    pub old: &'a str,
    pub new: &'a str,
    pub replace_all: bool,
}

/// The content after one replacement, and where it happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Applied {
    pub text: String,
    /// 1-based line of the first replaced occurrence.
    pub first_line: usize,
    /// Line breaks in the inserted text (as written to the file).
    pub new_breaks: usize,
    /// Occurrences replaced.
    pub count: usize,
}

/// The error for an edit that would change nothing.
pub(super) const IDENTICAL: &str =
    "No changes to make: old_string and new_string are exactly the same.";

/// Apply `edit` to `content` under Edit's rules: exact and literal, unique unless
/// `replace_all`, `\n` meaning `\r\n` in a CRLF file, an empty `old` only on empty
/// content. The error is the message for the model.
pub(super) fn apply(content: &str, edit: Replacement<'_>) -> Result<Applied, ToolError> {
    if edit.old == edit.new {
        return Err(ToolError::Failed(IDENTICAL.to_string()));
    }
    if edit.old.is_empty() {
        if !content.trim().is_empty() {
            return Err(ToolError::Failed("old_string is empty, but the file already exists and is not empty: an empty old_string only creates a file (or fills an empty one). Give the old_string to replace, or Read the file and use Write to replace it whole.".to_string()));
        }
        return Ok(Applied {
            text: edit.new.to_string(),
            first_line: 1,
            new_breaks: edit.new.matches('\n').count(),
            count: 1,
        });
    }
    // In a CRLF file, the model's `\n` means `\r\n`. Try that reading first; fall back
    // to the strings as written (mixed line endings).
    let mut attempts = vec![(edit.old.to_string(), edit.new.to_string())];
    if content.contains("\r\n") {
        attempts.insert(0, (to_crlf(edit.old), to_crlf(edit.new)));
    }
    let Some((old, new, count)) = attempts
        .into_iter()
        .map(|(old, new)| {
            let count = content.matches(old.as_str()).count();
            (old, new, count)
        })
        .find(|(_, _, count)| *count > 0)
    else {
        return Err(ToolError::Failed(not_found_message(content, edit.old)));
    };
    if count > 1 && !edit.replace_all {
        return Err(ToolError::Failed(format!(
            "Found {count} matches of the string to replace, but replace_all is false. To replace every occurrence, set replace_all to true. To replace only one, add more surrounding lines to old_string so that it matches exactly once.\nString: {}",
            edit.old
        )));
    }
    let Some(first_at) = content.find(old.as_str()) else {
        return Err(ToolError::Failed(not_found_message(content, edit.old)));
    };
    let text = if edit.replace_all {
        content.replace(old.as_str(), &new)
    } else {
        content.replacen(old.as_str(), &new, 1)
    };
    Ok(Applied {
        text,
        first_line: content[..first_at].matches('\n').count() + 1,
        new_breaks: new.matches('\n').count(),
        count: if edit.replace_all { count } else { 1 },
    })
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
    } else if let Some(near) = near_match(content, old) {
        message.push_str(&format!(
            "\n\nThe most similar text in the file (lines {}-{}, {}% similar) is:\n{}\nIf that is what you meant, use it as old_string exactly; otherwise Read the file again.",
            near.first_line,
            near.last_line,
            near.percent,
            near.text
        ));
    } else {
        message.push_str("\n\nRead the file again and copy old_string exactly.");
    }
    message
}

/// Edit and MultiEdit load the whole file; larger files are refused rather than loaded.
pub(super) const MAX_EDITED_FILE: u64 = 256 * 1024 * 1024;

/// The bytes of a regular file opened beneath `roots`, unless it holds more than
/// [`MAX_EDITED_FILE`] (a `FileTooLarge` error whose text is the size).
fn read_bounded(roots: &crate::workspace::Roots, path: &Path) -> std::io::Result<Vec<u8>> {
    let file = roots.open_file(path)?;
    let too_large =
        |size: u64| std::io::Error::new(std::io::ErrorKind::FileTooLarge, format!("{size} bytes"));
    let size = file.metadata()?.len();
    if size > MAX_EDITED_FILE {
        return Err(too_large(size));
    }
    let mut bytes = Vec::new();
    file.take(MAX_EDITED_FILE + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_EDITED_FILE {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(bytes)
}

/// A file loaded for editing: its text and how to write it back.
pub(super) struct Loaded {
    pub decoded: Decoded,
}

/// Load `path` for an edit. `Ok(None)`: the file does not exist. Errors (a directory, an
/// unread or stale file, a binary or undecodable file) are results for the model.
pub(super) async fn load(
    ctx: &ToolContext,
    path: &Path,
    shown: &str,
    tool: &str,
) -> Result<Option<Loaded>, ToolError> {
    let roots = std::sync::Arc::clone(&ctx.roots);
    let at = path.to_path_buf();
    let bytes = match blocking(move || read_bounded(&roots, &at)).await? {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::FileTooLarge => {
            return Err(ToolError::Failed(format!(
                "{shown} is {e}, larger than the {} MiB {tool} works on, so it was not loaded. Change it with a command (Bash) instead, if the permissions allow.",
                MAX_EDITED_FILE / (1024 * 1024)
            )));
        }
        Err(e) if e.kind() == std::io::ErrorKind::IsADirectory => {
            return Err(ToolError::Failed(format!(
                "{shown} is a directory; give the path of a file to edit."
            )));
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(ToolError::io(format!("Cannot read {shown}"), e)),
    };
    ctx.files.check_writable(path, &ctx.roots)?;
    let decoded = match decode(&bytes) {
        Ok(decoded) => decoded,
        Err(not_text) => {
            return Err(ToolError::Failed(format!(
                "{shown} is {not_text}; {tool} only changes text files."
            )));
        }
    };
    if decoded.lossy {
        return Err(ToolError::Failed(format!(
            "{shown} is not valid UTF-8 (or UTF-16) text; editing it would corrupt bytes. Use Bash with a suitable tool instead."
        )));
    }
    Ok(Some(Loaded { decoded }))
}

/// The error for an edit of a missing file with a non-empty old_string.
pub(super) fn missing_file(ctx: &ToolContext, shown: &str) -> ToolError {
    ToolError::Failed(format!(
        "File does not exist. (path: {shown}; the workspace root is {}). To create a new file, use Write, or an edit with an empty old_string.",
        ctx.workspace.display()
    ))
}

/// Write `text` back in `encoding` and record the new state for the next edit.
pub(super) async fn write(
    ctx: &ToolContext,
    path: &Path,
    shown: &str,
    text: &str,
    encoding: Encoding,
) -> Result<(), ToolError> {
    super::write_file(ctx, path, shown, encode(text, encoding)).await
}
