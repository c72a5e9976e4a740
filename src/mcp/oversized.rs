//! A stdio server's message over the bound of one MCP message (16 MiB, as over HTTP).
//! rmcp's stdio transport drops such a line without a word, so the request it answered
//! would wait for its whole `timeouts.call`. drover relays the server's stdout to rmcp
//! through a pipe of its own, reading the envelope of every line as it passes
//! ([`Envelope`]: its top-level `id`, wherever it lies, and whether it is an answer),
//! and notes every request rmcp sends ([`Pending`]). A line within the bound passes as it
//! is. Of a longer one rmcp gets the first bytes past the bound (which it drops) and a
//! newline, and the rest is read and thrown away; as soon as the line is past the bound
//! and its `id` known, drover answers that request in its place (see [`stand_in`]): the
//! start of a tool's result, cut, with a note, or an error naming the size. When no `id`
//! can be known (the line ends, or the server's output does, without one), every call
//! waiting on the server fails at once, since any of them may have been the one
//! answered. And a line that goes on for [`GRACE`] past the bound without ending (a
//! server that hangs mid-line, or writes forever) fails every call waiting on the server,
//! and every call sent until the line ends: nothing after it can be read before then.
//! Memory stays bounded: of a line drover keeps its first [`HEAD`] bytes and the few
//! bytes of its envelope.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream};
use tokio::time::Instant;

use super::envelope::Envelope;
use super::pending::{NotedStdin, Pending};
use super::stand_in::{self, Size};

/// The longest message read, newline included: rmcp's own bound for stdio (and its
/// bound of an HTTP response).
pub(crate) const MAX_MESSAGE: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;
/// How much of the start of an oversized message is kept (and shown, cut further at the
/// tool's `max_output`).
pub(crate) const HEAD: usize = 1 << 20;
/// How long a line may go on past the bound without ending before the calls waiting on
/// its server fail: long enough for a server writing at any speed a pipe allows to end
/// a message of several times the bound, short enough that no call waits on one that
/// never ends.
const GRACE: Duration = Duration::from_secs(5);

/// The server's `stdout` as rmcp is to read it (a pipe drover fills from it), and its
/// `stdin` as rmcp is to write to it (the server's, noting each request's id).
pub(crate) fn relay<R, W>(server: &str, stdout: R, stdin: W) -> (DuplexStream, NotedStdin<W>)
where
    R: AsyncRead + Unpin + Send + 'static,
{
    let pending = Arc::new(Pending::default());
    let (rmcp_end, ours) = tokio::io::duplex(64 << 10);
    let relay = Relay {
        server: server.to_string(),
        pending: pending.clone(),
        to: ours,
    };
    // The task ends when the server's stdout does (rmcp then reads the end of the pipe)
    // or when rmcp's end is dropped (a write fails).
    tokio::spawn(async move {
        let _ = relay.pump(stdout).await;
    });
    (rmcp_end, NotedStdin::new(stdin, pending))
}

/// What the relay needs besides the server's stdout.
struct Relay<W> {
    server: String,
    pending: Arc<Pending>,
    /// rmcp's side of the pipe.
    to: W,
}

/// One line being relayed.
#[derive(Default)]
struct Line {
    length: usize,
    head: Vec<u8>,
    envelope: Envelope,
    /// Set once the line is past the bound.
    over: Option<Over>,
}

/// A line past the bound.
struct Over {
    /// When it passed the bound.
    since: Instant,
    /// drover has answered in its place, failed the calls waiting, or found it is nobody's
    /// answer: nothing more is owed for it.
    settled: bool,
    /// It went on past [`GRACE`]: every call sent until it ends fails at once.
    stuck: bool,
}

impl Line {
    fn take(&mut self, bytes: &[u8]) {
        let to_head = bytes.len().min(HEAD.saturating_sub(self.head.len()));
        self.head.extend_from_slice(&bytes[..to_head]);
        self.envelope.feed(bytes);
        self.length += bytes.len();
    }
}

/// What woke the relay.
enum Event {
    /// The server's stdout has bytes (or has ended).
    Readable,
    /// The line being read has been past the bound for [`GRACE`].
    GraceOver,
    /// rmcp sent a request while the line being read is stuck.
    Sent,
}

impl<W: AsyncWrite + Unpin> Relay<W> {
    async fn pump<R: AsyncRead + Unpin>(mut self, stdout: R) -> std::io::Result<()> {
        let mut from = BufReader::with_capacity(64 << 10, stdout);
        let mut line = Line::default();
        loop {
            match self.next_event(&mut from, &line).await? {
                Event::Readable => {}
                Event::GraceOver => {
                    if let Some(over) = line.over.as_mut() {
                        over.stuck = true;
                        over.settled = true;
                    }
                    self.fail_waiting(&stand_in::unended(&self.server, GRACE))
                        .await?;
                    continue;
                }
                Event::Sent => {
                    self.fail_waiting(&stand_in::unended(&self.server, GRACE))
                        .await?;
                    continue;
                }
            }
            let available = from.fill_buf().await?;
            if available.is_empty() {
                // The output ended: a line past the bound is as whole as it will be.
                self.settle(&mut line, true).await?;
                return self.to.shutdown().await;
            }
            let newline = available.iter().position(|b| *b == b'\n');
            let taken = newline.map_or(available.len(), |at| at + 1);
            let chunk = &available[..taken];
            // rmcp is given a line's first MAX_MESSAGE + 1 bytes (enough for it to drop
            // the line) and a newline; whatever lies past them is never copied.
            let passed = (MAX_MESSAGE + 1)
                .saturating_sub(line.length)
                .min(chunk.len());
            self.to.write_all(&chunk[..passed]).await?;
            line.take(chunk);
            from.consume(taken);
            let ended = newline.is_some();
            if line.over.is_none() && line.length > MAX_MESSAGE {
                // Unless the line's newline was the byte past the bound, rmcp is dropping
                // what it reads until a newline: this one ends that now.
                if !(ended && passed == taken) {
                    self.to.write_all(b"\n").await?;
                }
                line.over = Some(Over {
                    since: Instant::now(),
                    settled: false,
                    stuck: false,
                });
            }
            self.settle(&mut line, ended).await?;
            if ended {
                if line.over.is_none()
                    && !line.envelope.is_request()
                    && let Some(id) = line.envelope.id()
                {
                    self.pending.answered(id);
                }
                line = Line::default();
            }
        }
    }

    /// Wait until the server's stdout is readable, the line being read has been past the
    /// bound for [`GRACE`], or (once it has) a request is sent.
    async fn next_event<R: AsyncRead + Unpin>(
        &self,
        from: &mut BufReader<R>,
        line: &Line,
    ) -> std::io::Result<Event> {
        let grace_over = line.over.as_ref().map(|over| over.since + GRACE);
        let stuck = line.over.as_ref().is_some_and(|over| over.stuck);
        tokio::select! {
            // A server that writes without end keeps its stdout readable: the grace and
            // the calls sent are heard first.
            biased;
            () = tokio::time::sleep_until(grace_over.unwrap_or_else(Instant::now)),
                if grace_over.is_some() && !stuck => Ok(Event::GraceOver),
            () = self.pending.next_sent(), if stuck => Ok(Event::Sent),
            ready = from.fill_buf() => ready.map(|_| Event::Readable),
        }
    }

    /// Answer in place of the line past the bound as soon as it can be: once its `id` is
    /// known and it is an answer (or it has ended without saying it is not). When it
    /// ends with no `id`, the calls waiting fail.
    async fn settle(&mut self, line: &mut Line, ended: bool) -> std::io::Result<()> {
        let Some(over) = line.over.as_mut() else {
            return Ok(());
        };
        if over.settled {
            return Ok(());
        }
        // A server's own request or notification is nobody's answer: only dropped.
        if line.envelope.is_request() {
            over.settled = true;
            return Ok(());
        }
        let size = if ended {
            Size::Ended(line.length)
        } else {
            Size::Going
        };
        match line.envelope.id() {
            Some(id) if ended || line.envelope.is_answer() => {
                over.settled = true;
                self.pending.answered(id);
                let answer = stand_in::answer(&line.head, id, size);
                self.to.write_all(&answer).await
            }
            None if ended => {
                over.settled = true;
                self.fail_waiting(&stand_in::no_id(&self.server, size))
                    .await
            }
            // The id, or what the message is, may come later.
            _ => Ok(()),
        }
    }

    /// Answer every request awaiting an answer with an error saying `why`.
    async fn fail_waiting(&mut self, why: &str) -> std::io::Result<()> {
        for id in self.pending.take_all() {
            self.to.write_all(&stand_in::failure(&id, why)).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "oversized_tests.rs"]
mod tests;
