//! The requests drover has sent a stdio server that await its answer, noted as rmcp
//! writes them to the server's stdin. rmcp keeps its own table of them and offers no way
//! to fail one but an answer, so when a message that may have answered any of them cannot
//! be read (see [`super::oversized`]), drover answers each of these ids itself, with an
//! error: the calls fail at once instead of at their `timeouts.call`, and the server,
//! still running, answers the next ones. (Closing the transport would fail them too, but
//! as a server gone: a required server's call would end the task, and no later call
//! could be made.)

use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, ready};

use serde_json::Value;
use tokio::io::AsyncWrite;
use tokio::sync::Notify;

use super::envelope::Envelope;

/// The ids of the requests sent and not yet answered.
#[derive(Default)]
pub(crate) struct Pending {
    /// Each id by its JSON text, so a number and a string stay apart.
    ids: Mutex<BTreeMap<String, Value>>,
    /// Woken when a request is sent.
    sent: Notify,
}

impl Pending {
    fn note_sent(&self, id: &Value) {
        self.ids().insert(id.to_string(), id.clone());
        self.sent.notify_one();
    }

    /// The server answered `id` (or drover did in its place).
    pub(crate) fn answered(&self, id: &Value) {
        let mut ids = self.ids();
        if ids.remove(&id.to_string()).is_none() {
            // rmcp takes the string "7" as an answer to the request 7, so does this.
            let number = id.as_str().and_then(|s| s.parse::<i64>().ok());
            if let Some(number) = number {
                ids.remove(&number.to_string());
            }
        }
    }

    /// Every id still awaiting an answer, which no longer are.
    pub(crate) fn take_all(&self) -> Vec<Value> {
        std::mem::take(&mut *self.ids()).into_values().collect()
    }

    /// Wait until a request is sent (at once if one was since the last wait).
    pub(crate) async fn next_sent(&self) {
        self.sent.notified().await;
    }

    fn ids(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Value>> {
        // A panic while the map was held cannot leave it half changed (each change is
        // one call of the map's), so a poisoned lock's map is used as it is.
        self.ids.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A server's stdin as rmcp writes to it: every byte passes as it is, and the id of each
/// request written is noted in [`Pending`].
pub(crate) struct NotedStdin<W> {
    inner: W,
    line: Envelope,
    pending: Arc<Pending>,
}

impl<W> NotedStdin<W> {
    pub(crate) fn new(inner: W, pending: Arc<Pending>) -> NotedStdin<W> {
        NotedStdin {
            inner,
            line: Envelope::default(),
            pending,
        }
    }

    /// Read the bytes the server was given; at the end of each line (rmcp writes one
    /// message a line) note the id of a request.
    fn note(&mut self, bytes: &[u8]) {
        for piece in bytes.split_inclusive(|b| *b == b'\n') {
            self.line.feed(piece);
            if piece.ends_with(b"\n") {
                let line = std::mem::take(&mut self.line);
                if line.is_request()
                    && let Some(id) = line.id()
                {
                    self.pending.note_sent(id);
                }
            }
        }
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for NotedStdin<W> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let written = ready!(Pin::new(&mut this.inner).poll_write(cx, buf))?;
        // Only what the server was given: the rest comes again in the next write.
        this.note(&buf[..written]);
        Poll::Ready(Ok(written))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tokio::io::AsyncWriteExt;

    use super::*;

    #[tokio::test]
    async fn the_requests_written_are_noted_until_answered() {
        let pending = Arc::new(Pending::default());
        let mut stdin = NotedStdin::new(Vec::new(), pending.clone());
        let written = concat!(
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}}"#,
            "\n",
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":"s-1","result":{}}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"arguments":{"id":9}}}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#,
        );
        // Written in pieces that cut messages anywhere.
        for piece in written.as_bytes().chunks(7) {
            stdin.write_all(piece).await.unwrap();
        }
        assert_eq!(stdin.inner, written.as_bytes(), "every byte passes");
        // A notification and drover's own answer to the server are no requests; the
        // third request's line has not ended.
        pending.answered(&json!("2"));
        assert_eq!(pending.take_all(), vec![json!(1)]);
        assert!(pending.take_all().is_empty());
        stdin.write_all(b"\n").await.unwrap();
        assert_eq!(pending.take_all(), vec![json!(3)]);
    }
}
