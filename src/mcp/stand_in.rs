//! The messages drover gives rmcp in place of a stdio server's message it cannot read
//! (see [`super::relay`]): the start of a tool's result too long to be read, cut, with a
//! note; an error naming the size for any other answer; an error saying why an answer
//! within the bound cannot be read; and the error that fails the calls a message may have
//! answered when drover cannot tell which.

use std::time::Duration;

use serde_json::{Value, json};

use super::json_prefix::close_prefix;
use super::readable::Why;
use super::relay::{HEAD, MAX_MESSAGE};

/// How long an oversized message was when drover answered in its place: whole, or only
/// known to be past the bound.
#[derive(Clone, Copy)]
pub(crate) enum Size {
    Ended(usize),
    Going,
}

impl std::fmt::Display for Size {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Size::Ended(length) => write!(f, "{length} bytes"),
            Size::Going => write!(f, "more than {MAX_MESSAGE} bytes"),
        }
    }
}

/// The bound, as the messages say it.
fn bound() -> String {
    format!(
        "the {} MiB drover reads of one MCP message",
        MAX_MESSAGE >> 20
    )
}

/// drover's answer to request `id` in place of an oversized answer of `size` whose first
/// bytes are `head`, as a line: the result cut with a note when it is a tool's result,
/// else an error naming the size.
pub(crate) fn answer(head: &[u8], id: &Value, size: Size) -> Vec<u8> {
    let start = close_prefix(head).unwrap_or_default();
    let answer = cut_result(&start, id, size).unwrap_or_else(|| {
        let message = format!(
            "the server's answer was {size}, over {}; none of it was used",
            bound()
        );
        error(id, &message)
    });
    line(&answer)
}

/// An error answering `id` with `message`, as a line.
pub(crate) fn failure(id: &Value, message: &str) -> Vec<u8> {
    line(&error(id, message))
}

/// Why every call waiting on `server` failed when a message of `size` with no id could
/// not be read.
pub(crate) fn no_id(server: &str, size: Size) -> String {
    format!(
        "MCP server {server} wrote a message of {size}, over {}, in which drover found no id: it may have answered any call waiting on the server, so each of them failed",
        bound()
    )
}

/// Why the call `id` failed when `server` answered it with a message rmcp cannot read.
pub(crate) fn unreadable(server: &str, id: &Value, why: &Why) -> String {
    format!("MCP server {server} answered request {id} with a message drover cannot read: {why}")
}

/// Why every call waiting on `server` failed when a message of `size` answered `id`,
/// which drover never sent.
pub(crate) fn unknown_id(server: &str, id: &Value, size: Size) -> String {
    format!(
        "MCP server {server} wrote an answer of {size}, over {}, to request {id}, which drover never sent: it may have been meant for any call waiting on the server, so each of them failed",
        bound()
    )
}

/// `why` a call failed in the server's place, saying that the call reached the server,
/// which was asked to cancel it (and may have run it anyway).
pub(crate) fn cancelled(why: &str) -> String {
    format!("{why}; drover asked the server to cancel this call, but it may have run")
}

/// Why every call waiting on `server` failed when a message past the bound did not end
/// within `grace`.
pub(crate) fn unended(server: &str, grace: Duration) -> String {
    format!(
        "MCP server {server} is writing a message of more than {MAX_MESSAGE} bytes, over {}, that did not end within {grace:?} of passing it; nothing the server answers can be read before that message ends, so every call waiting on it failed",
        bound()
    )
}

fn error(id: &Value, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": message}})
}

fn line(message: &Value) -> Vec<u8> {
    let mut line = message.to_string().into_bytes();
    line.push(b'\n');
    line
}

/// The start of a tool's result as a result of its own: its content blocks that are
/// whole enough to be read, after a note saying it was cut; None when `start` is not a
/// tool's result.
fn cut_result(start: &Value, id: &Value, size: Size) -> Option<Value> {
    let blocks = start.get("result")?.get("content")?.as_array()?;
    let note = format!(
        "[the server's answer was {size}, over {}; what follows is its start, cut at {} KiB]",
        bound(),
        HEAD >> 10
    );
    let mut content = vec![json!({"type": "text", "text": note})];
    // A block cut in its middle may lack what its type needs (a `text`, an image's
    // `mimeType`): such a block is left out, never sent as a malformed answer.
    content.extend(
        blocks
            .iter()
            .filter(|block| {
                serde_json::from_value::<rmcp::model::ContentBlock>((*block).clone()).is_ok()
            })
            .cloned(),
    );
    let result = json!({"content": content, "isError": start["result"].get("isError") == Some(&Value::Bool(true))});
    let answer = json!({"jsonrpc": "2.0", "id": id, "result": result});
    serde_json::from_value::<rmcp::model::ServerJsonRpcMessage>(answer.clone())
        .is_ok()
        .then_some(answer)
}
