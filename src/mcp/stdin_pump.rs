//! A stdio server's stdin as rmcp writes to it: rmcp writes into a pipe of drover's, and
//! a task copies it to the server, every byte as it is, noting the id of each request in
//! [`Pending`] as its line is about to end (so no answer can come before the request is
//! known). Between two of rmcp's lines, never inside one, it writes the cancellations
//! drover queued for the requests it failed in the server's place. rmcp dropping its end
//! drops the server's stdin at once, even while a write to a server that reads nothing
//! waits: the launcher's lifeline is cut as soon as drover lets go of the server.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWrite, AsyncWriteExt, DuplexStream};
use tokio::sync::oneshot;

use super::envelope::Envelope;
use super::pending::Pending;

/// How much of one of rmcp's lines is kept to read a notification from: rmcp's
/// `notifications/cancelled` is far shorter.
const KEEP: usize = 4 << 10;

/// The server's stdin as rmcp is to write to it.
pub(crate) struct NotedStdin {
    pipe: DuplexStream,
    /// Dropped with this: the pump lets go of the server's stdin at once.
    _held: oneshot::Sender<()>,
}

/// Start copying what rmcp writes to `stdin` (the server's), noting requests in
/// `pending` and writing the cancellations queued there.
pub(crate) fn pump<W>(stdin: W, pending: Arc<Pending>) -> NotedStdin
where
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (pipe, ours) = tokio::io::duplex(64 << 10);
    let (held, released) = oneshot::channel();
    let pump = Pump {
        to: stdin,
        pending,
        line: Envelope::default(),
        head: Vec::new(),
        at_boundary: true,
    };
    tokio::spawn(pump.run(ours, released));
    NotedStdin { pipe, _held: held }
}

struct Pump<W> {
    to: W,
    pending: Arc<Pending>,
    /// The envelope and first [`KEEP`] bytes of rmcp's line being copied.
    line: Envelope,
    head: Vec<u8>,
    /// The last byte written ended a line (or nothing was written yet).
    at_boundary: bool,
}

/// The pump is to stop: rmcp let go of its end, or the server's stdin failed.
struct Gone;

impl<W: AsyncWrite + Unpin> Pump<W> {
    async fn run(mut self, mut from: DuplexStream, mut released: oneshot::Receiver<()>) {
        let mut buffer = vec![0u8; 64 << 10];
        loop {
            if self.flush_cancels(&mut released).await.is_err() {
                return;
            }
            let read = tokio::select! {
                biased;
                _ = &mut released => return,
                () = self.pending.next_cancel(), if self.at_boundary => continue,
                read = from.read(&mut buffer) => read,
            };
            let Ok(read @ 1..) = read else {
                // rmcp closed its end: so is the server's stdin.
                let _ = self.to.shutdown().await;
                return;
            };
            for piece in buffer[..read].split_inclusive(|b| *b == b'\n') {
                if self.copy(piece, &mut released).await.is_err() {
                    return;
                }
            }
        }
    }

    /// Copy one piece of rmcp's output (at most one line's end, its last byte): a line
    /// that ends in it is noted first, and the cancellations queued follow it.
    async fn copy(
        &mut self,
        piece: &[u8],
        released: &mut oneshot::Receiver<()>,
    ) -> Result<(), Gone> {
        self.line.feed(piece);
        let room = KEEP.saturating_sub(self.head.len()).min(piece.len());
        self.head.extend_from_slice(&piece[..room]);
        let ends = piece.ends_with(b"\n");
        if ends {
            self.note_line();
        }
        self.write(piece, released).await?;
        self.at_boundary = ends;
        self.flush_cancels(released).await
    }

    /// Note the line just ended: a request awaits its answer; a request rmcp gave up on
    /// (its own `notifications/cancelled`) no longer does.
    fn note_line(&mut self) {
        let line = std::mem::take(&mut self.line);
        let head = std::mem::take(&mut self.head);
        if !line.is_request() {
            return;
        }
        if let Some(id) = line.id() {
            self.pending.note_sent(id);
            return;
        }
        let cancelled = serde_json::from_slice::<Value>(&head)
            .ok()
            .filter(|note| note["method"] == "notifications/cancelled");
        if let Some(id) = cancelled.as_ref().map(|note| &note["params"]["requestId"]) {
            let _ = self.pending.answered(id);
        }
    }

    /// Write the cancellations queued, when no line of rmcp's is cut by them.
    async fn flush_cancels(&mut self, released: &mut oneshot::Receiver<()>) -> Result<(), Gone> {
        if !self.at_boundary {
            return Ok(());
        }
        for line in self.pending.take_cancels() {
            self.write(&line, released).await?;
        }
        Ok(())
    }

    /// Write `bytes` to the server, unless rmcp lets go first.
    async fn write(
        &mut self,
        bytes: &[u8],
        released: &mut oneshot::Receiver<()>,
    ) -> Result<(), Gone> {
        tokio::select! {
            biased;
            _ = released => Err(Gone),
            written = self.to.write_all(bytes) => written.map_err(|_| Gone),
        }
    }
}

impl AsyncWrite for NotedStdin {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().pipe).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().pipe).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().pipe).poll_shutdown(cx)
    }
}

#[cfg(test)]
#[path = "stdin_pump_tests.rs"]
mod tests;
