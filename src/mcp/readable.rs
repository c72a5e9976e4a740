//! Whether rmcp can read a line a stdio server wrote, checked the way rmcp reads it
//! (rmcp 3's stdio transport: one `\r` before the newline and a leading byte order mark
//! are dropped, then the rest is parsed as a server's JSON-RPC message by serde_json).
//! rmcp drops a line it cannot parse, and answers one that is JSON but no message with an
//! "Invalid request" written to the server's stdin from inside its read loop: a server
//! that logs JSON lines on stdout while it does not read its stdin fills that pipe, rmcp
//! stops reading, and the server blocks writing. So the relay (see [`super::relay`])
//! passes rmcp only the lines it can read, and says why a line meant as an answer was
//! not one.

use rmcp::model::{JsonRpcError, JsonRpcResponse, ServerJsonRpcMessage, ServerResult};
use serde_json::Value;
use serde_json::error::Category;

use super::envelope::{Envelope, Member};

/// What rmcp makes of a line.
#[derive(Debug)]
pub(crate) enum Reading {
    /// A message: rmcp reads it.
    Message,
    /// Nothing at all (rmcp skips it).
    Blank,
    /// rmcp cannot read it, for this reason.
    Unreadable(Why),
}

/// Why rmcp cannot read a line; each says it of the message as it was written.
#[derive(Debug, PartialEq, thiserror::Error)]
pub(crate) enum Why {
    /// `at` counts bytes from 1, as serde_json's columns do.
    #[error("invalid UTF-8 at byte {at}")]
    InvalidUtf8 { at: usize },
    #[error("a carriage return at byte {at} inside it (a message ends with a newline)")]
    CarriageReturn { at: usize },
    #[error("it is not JSON ({0})")]
    NotJson(String),
    #[error("it has its \"{}\" twice", .0.key())]
    Repeated(Member),
    #[error("an answer with neither result nor error")]
    Neither,
    #[error("an answer with both result and error")]
    Both,
    #[error("{0}")]
    NoMessage(String),
}

/// What rmcp makes of `line` (its newline left out), whose envelope is `envelope`.
pub(crate) fn read(line: &[u8], envelope: &Envelope) -> Reading {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.is_empty() {
        return Reading::Blank;
    }
    let text = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    let Err(error) = serde_json::from_slice::<ServerJsonRpcMessage>(text) else {
        return Reading::Message;
    };
    // Positions count in the line as written, its byte order mark included.
    let skipped = line.len() - text.len();
    Reading::Unreadable(why(text, skipped, &error, envelope))
}

/// Why `text` (past `skipped` bytes) is no message, `error` being serde_json's word.
fn why(text: &[u8], skipped: usize, error: &serde_json::Error, envelope: &Envelope) -> Why {
    if let Err(utf8) = std::str::from_utf8(text) {
        return Why::InvalidUtf8 {
            at: skipped + utf8.valid_up_to() + 1,
        };
    }
    if matches!(error.classify(), Category::Syntax | Category::Eof) {
        if let Some(at) = text.iter().position(|b| *b == b'\r') {
            return Why::CarriageReturn {
                at: skipped + at + 1,
            };
        }
        return Why::NotJson(with_byte(error, skipped));
    }
    if let Some(member) = envelope.repeated() {
        return Why::Repeated(member);
    }
    let (result, error_member) = (envelope.has(Member::Result), envelope.has(Member::Error));
    match (result, error_member) {
        (false, false) if !envelope.is_request() => return Why::Neither,
        (true, true) => return Why::Both,
        _ => {}
    }
    Why::NoMessage(shape_problem(text, result).unwrap_or_else(|| error.to_string()))
}

/// What serde_json finds wrong with an answer read as the kind it claims to be (rmcp's
/// own error only says "unrecognized JSON-RPC message").
fn shape_problem(text: &[u8], result: bool) -> Option<String> {
    let value: Value = serde_json::from_slice(text).ok()?;
    if !value.is_object() {
        return Some("it is not a JSON object".to_string());
    }
    let problem = if result {
        serde_json::from_value::<JsonRpcResponse<ServerResult>>(value).err()
    } else {
        serde_json::from_value::<JsonRpcError>(value).err()
    };
    problem.map(|problem| problem.to_string())
}

/// serde_json's error with its place said as a byte of the line (the line is one line).
fn with_byte(error: &serde_json::Error, skipped: usize) -> String {
    let text = error.to_string();
    let Some(at) = text.rfind(" at line ") else {
        return text;
    };
    format!("{} at byte {}", &text[..at], skipped + error.column())
}

#[cfg(test)]
#[path = "readable_tests.rs"]
mod tests;
