//! A stdio server's answer over the bound of one MCP message (16 MiB, as over HTTP).
//! rmcp's stdio transport drops such a line without a word, so the request it answered
//! would wait for its whole `timeouts.call`. drover relays the server's stdout to rmcp
//! through a pipe of its own: a line within the bound passes as it is; of a longer one
//! rmcp gets the start (which it drops) and, once the line ends, drover's answer to the
//! same request in its place: the start of the result, cut, with a note saying so (a
//! tool's result), or an error naming the size. Memory stays bounded: of an oversized
//! line drover keeps its first [`HEAD`] and last [`TAIL`] bytes.

use std::collections::VecDeque;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

use super::json_prefix::{close_prefix, id_at_end};

/// The longest message read, newline included: rmcp's own bound for stdio (and its
/// bound of an HTTP response).
pub(crate) const MAX_MESSAGE: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;
/// How much of the start of an oversized message is kept (and shown, cut further at the
/// tool's `max_output`).
const HEAD: usize = 1 << 20;
/// How much of its end is kept, to find its `id` when that comes last.
const TAIL: usize = 64 << 10;

/// The server's `stdout`, as rmcp is to read it: a pipe drover fills from it.
pub(crate) fn relay<R>(stdout: R) -> tokio::io::DuplexStream
where
    R: AsyncRead + Unpin + Send + 'static,
{
    let (rmcp_end, ours) = tokio::io::duplex(64 << 10);
    // The task ends when the server's stdout does (rmcp then reads the end of the pipe)
    // or when rmcp's end is dropped (the write fails).
    tokio::spawn(async move {
        let _ = pump(stdout, ours).await;
    });
    rmcp_end
}

/// One line being relayed: its length so far, its first and its last bytes.
#[derive(Default)]
struct Line {
    length: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
}

impl Line {
    fn keep(&mut self, bytes: &[u8]) {
        let to_head = bytes.len().min(HEAD.saturating_sub(self.head.len()));
        self.head.extend_from_slice(&bytes[..to_head]);
        self.tail.extend(&bytes[to_head..]);
        let excess = self.tail.len().saturating_sub(TAIL);
        self.tail.drain(..excess);
        self.length += bytes.len();
    }
}

async fn pump<R, W>(stdout: R, mut to: W) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut from = BufReader::with_capacity(64 << 10, stdout);
    let mut line = Line::default();
    loop {
        let available = from.fill_buf().await?;
        if available.is_empty() {
            return to.shutdown().await;
        }
        let newline = available.iter().position(|b| *b == b'\n');
        let taken = newline.map_or(available.len(), |at| at + 1);
        let chunk = &available[..taken];
        // rmcp is given a line's first MAX_MESSAGE + 1 bytes (enough for it to drop the
        // line) and its newline; whatever lies between is never copied.
        let passed = (MAX_MESSAGE + 1)
            .saturating_sub(line.length)
            .min(chunk.len());
        to.write_all(&chunk[..passed]).await?;
        line.keep(chunk);
        let ended = newline.is_some();
        from.consume(taken);
        if !ended {
            continue;
        }
        if line.length > MAX_MESSAGE {
            if passed < taken {
                to.write_all(b"\n").await?;
            }
            let tail: Vec<u8> = line.tail.iter().copied().collect();
            if let Some(answer) = answer_for(&line.head, &tail, line.length) {
                to.write_all(&answer).await?;
            }
        }
        line = Line::default();
    }
}

/// drover's answer in place of an oversized message (`length` bytes, `head` its start
/// and `tail` its end), as a line: the result cut with a note when it is a tool's
/// result, else an error naming the size; None when it answers no request of ours (no
/// `id` found, or a request or notification of the server's).
fn answer_for(head: &[u8], tail: &[u8], length: usize) -> Option<Vec<u8>> {
    let start = close_prefix(head).unwrap_or_default();
    if start.get("method").is_some() {
        return None;
    }
    let id = match start.get("id") {
        Some(id) if id.is_number() || id.is_string() => id.clone(),
        _ => id_at_end(tail)?,
    };
    let answer = cut_result(&start, &id, length)
        .unwrap_or_else(|| json!({"jsonrpc": "2.0", "id": id, "error": {
            "code": -32603,
            "message": format!(
                "the server's answer was {length} bytes, over the {} MiB drover reads of one MCP message; none of it was used",
                MAX_MESSAGE >> 20
            ),
        }}));
    let mut line = serde_json::to_vec(&answer).ok()?;
    line.push(b'\n');
    Some(line)
}

/// The start of a tool's result as a result of its own: its content blocks that are
/// whole enough to be read, after a note saying it was cut; None when `start` is not a
/// tool's result.
fn cut_result(start: &Value, id: &Value, length: usize) -> Option<Value> {
    let blocks = start.get("result")?.get("content")?.as_array()?;
    let note = format!(
        "[the server's answer was {length} bytes, over the {} MiB drover reads of one MCP message; what follows is its start, cut at {} KiB]",
        MAX_MESSAGE >> 20,
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

#[cfg(test)]
#[path = "oversized_tests.rs"]
mod tests;
