//! A stdio server's stdout as rmcp reads it. rmcp's stdio transport drops a line it
//! cannot parse or that is over the bound of one MCP message (16 MiB, as over HTTP)
//! without a word, so the request it answered would wait for its whole `timeouts.call`;
//! and it answers a JSON line that is no message (a log line) with an error written to
//! the server's stdin from inside its read loop, so a server logging on stdout faster than
//! it reads its stdin blocks itself and rmcp for good. drover relays the server's stdout
//! to rmcp through a pipe of its own, reading the envelope of every line as it passes
//! ([`Envelope`]: its top-level `id`, wherever it lies, and which members it has), and
//! knows every request rmcp sends ([`Pending`]).
//!
//! A line within the bound is kept until it ends and checked the way rmcp will read it
//! ([`readable`]): a message passes as it is. One rmcp cannot read never reaches it: when
//! it is meant as the answer to a waiting call (it has a top-level `jsonrpc` and that
//! call's `id`, and no `method`), drover answers the call in the server's place with an
//! error saying why; any other is counted, and the server's log says so
//! ([`DroppedLines`]).
//!
//! Of a line past the bound drover keeps its first [`HEAD`] bytes and reads the rest
//! away; none of it reaches rmcp. As soon as it is past the bound and its `id` known,
//! drover answers that request in its place (see [`stand_in`]): the start of a tool's
//! result, cut, with a note, or an error naming the size. When no `id` can be known (the
//! line ends, or the server's output does, without one), or the `id` is of no request
//! drover ever sent, every call waiting on the server fails at once, since any of them
//! may have been the one answered. And a line that goes on for [`GRACE`] past the bound
//! without ending (a server that hangs mid-line, or writes forever) fails every call
//! waiting on the server, and every call sent until the line ends: nothing after it can
//! be read before then. Each call drover fails so has reached the server, which may
//! still run it: the server is asked to cancel it.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream};
use tokio::time::Instant;

use super::dropped_lines::DroppedLines;
use super::envelope::{Envelope, Member};
use super::pending::{Named, Pending};
use super::readable::{self, Reading};
use super::stand_in::{self, Size};
use super::stdin_pump::{self, NotedStdin};

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
/// `stdin` as rmcp is to write to it (the server's, noting each request's id). The lines
/// not passed on are counted in `dropped`.
pub(crate) fn relay<R, W>(
    server: &str,
    stdout: R,
    stdin: W,
    dropped: Arc<DroppedLines>,
) -> (DuplexStream, NotedStdin)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let pending = Arc::new(Pending::default());
    let (rmcp_end, ours) = tokio::io::duplex(64 << 10);
    let relay = Relay {
        server: server.to_string(),
        pending: pending.clone(),
        dropped,
        to: ours,
    };
    // The task ends when the server's stdout does (rmcp then reads the end of the pipe)
    // or when rmcp's end is dropped (a write fails).
    tokio::spawn(async move {
        let dropped = relay.dropped.clone();
        let _ = relay.pump(stdout).await;
        dropped.relay_ended();
    });
    (rmcp_end, stdin_pump::pump(stdin, pending))
}

/// What the relay needs besides the server's stdout.
struct Relay<W> {
    server: String,
    pending: Arc<Pending>,
    dropped: Arc<DroppedLines>,
    /// rmcp's side of the pipe.
    to: W,
}

/// One line being relayed.
#[derive(Default)]
struct Line {
    length: usize,
    /// The whole line while it is within the bound; past it, its first [`HEAD`] bytes.
    bytes: Vec<u8>,
    envelope: Envelope,
    /// Set once the line is past the bound.
    over: Option<Over>,
    /// The line ended with a newline (not with the server's output).
    newline: bool,
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
        if self.length + bytes.len() <= MAX_MESSAGE {
            self.bytes.extend_from_slice(bytes);
        } else {
            // Past the bound only the head is kept, and the memory of the rest let go.
            self.bytes.truncate(HEAD);
            let room = HEAD.saturating_sub(self.bytes.len()).min(bytes.len());
            self.bytes.extend_from_slice(&bytes[..room]);
            self.bytes.shrink_to_fit();
        }
        self.envelope.feed(bytes);
        self.length += bytes.len();
        self.newline = bytes.ends_with(b"\n");
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
                // The output ended: a line past the bound is as whole as it will be, and
                // one within it never ended (rmcp would drop it).
                self.settle(&mut line, true).await?;
                if line.over.is_none() && line.length > 0 {
                    self.dropped.line(&line.bytes, line.length);
                }
                return self.to.shutdown().await;
            }
            let newline = available.iter().position(|b| *b == b'\n');
            let taken = newline.map_or(available.len(), |at| at + 1);
            line.take(&available[..taken]);
            from.consume(taken);
            let ended = newline.is_some();
            if line.over.is_none() && line.length > MAX_MESSAGE {
                line.over = Some(Over {
                    since: Instant::now(),
                    settled: false,
                    stuck: false,
                });
            }
            self.settle(&mut line, ended).await?;
            if ended {
                if line.over.is_none() {
                    self.deliver(&line).await?;
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

    /// Pass rmcp a line within the bound that has ended, when it can read it; else answer
    /// the call it was meant to answer, or count it.
    async fn deliver(&mut self, line: &Line) -> std::io::Result<()> {
        let text = line.bytes.strip_suffix(b"\n").unwrap_or(&line.bytes);
        let why = match readable::read(text, &line.envelope) {
            Reading::Message => {
                if !line.envelope.is_request()
                    && let Some(id) = line.envelope.id()
                {
                    let _ = self.pending.answered(id);
                }
                return self.to.write_all(&line.bytes).await;
            }
            Reading::Blank => return Ok(()),
            Reading::Unreadable(why) => why,
        };
        // Only a line that says it is JSON-RPC is taken for an answer: a log line may
        // well have an `id` of its own.
        let envelope = &line.envelope;
        if envelope.has(Member::Jsonrpc)
            && !envelope.is_request()
            && let Some(id) = envelope.id()
            && let Named::Waiting(id) = self.pending.answered(id)
        {
            let message = stand_in::unreadable(&self.server, &id, &why);
            return self.to.write_all(&stand_in::failure(&id, &message)).await;
        }
        self.dropped.line(text, text.len());
        Ok(())
    }

    /// Answer in place of the line past the bound as soon as it can be: once its `id` is
    /// known and it is an answer (or it has ended without saying it is not). When it
    /// ends with no `id`, or one drover never sent, the calls waiting fail.
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
                match self.pending.answered(id) {
                    Named::Waiting(id) => {
                        let answer = stand_in::answer(&line.bytes, &id, size);
                        self.to.write_all(&answer).await
                    }
                    // A late answer, to a call already answered or given up.
                    Named::Settled => Ok(()),
                    Named::Unknown => {
                        let why = stand_in::unknown_id(&self.server, id, size);
                        self.fail_waiting(&why).await
                    }
                }
            }
            // No answer at all (a log line): only counted, like a short one.
            None if ended && !line.envelope.is_answer() => {
                over.settled = true;
                let length = line.length - usize::from(line.newline);
                self.dropped.line(&line.bytes, length);
                Ok(())
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

    /// Answer every request awaiting an answer with an error saying `why`, and ask the
    /// server to cancel each.
    async fn fail_waiting(&mut self, why: &str) -> std::io::Result<()> {
        for id in self.pending.take_all() {
            self.pending.cancel(&id, why);
            let message = stand_in::cancelled(why);
            self.to.write_all(&stand_in::failure(&id, &message)).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "relay_tests.rs"]
mod tests;
