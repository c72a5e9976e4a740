//! The lines a stdio server wrote on stdout that the relay did not pass to rmcp, because
//! rmcp cannot read them (see [`super::readable`]): a log line, text, a message rmcp
//! would drop. None is dropped unsaid: they are counted, and the server's log
//! (`mcp-<server>.log`, see [`super::stderr_log`]) says so when the first comes, with
//! its start, and how many there were when the server stops.

use std::sync::{Mutex, PoisonError};

use tokio::sync::Notify;

/// How many bytes of the first line dropped the log shows.
const SHOWN: usize = 200;

/// The lines of one server not passed on.
#[derive(Default)]
pub(crate) struct DroppedLines {
    state: Mutex<State>,
    /// Woken when the first line is dropped.
    first: Notify,
    /// Woken when the relay has ended (the server's stdout did, or rmcp let go).
    ended: Notify,
}

#[derive(Default)]
struct State {
    count: u64,
    /// The start of the first line dropped, as the log shows it.
    first: Option<String>,
    relay_ended: bool,
}

impl DroppedLines {
    /// The relay did not pass on a line of `length` bytes (its newline left out) that
    /// starts with `start`.
    pub(crate) fn line(&self, start: &[u8], length: usize) {
        let mut state = self.state();
        state.count += 1;
        if state.first.is_none() {
            state.first = Some(shown(start, length));
            drop(state);
            self.first.notify_one();
        }
    }

    /// The relay has ended: no more lines are dropped.
    pub(crate) fn relay_ended(&self) {
        self.state().relay_ended = true;
        self.ended.notify_one();
    }

    /// Wait until the first line is dropped (at once if it was).
    pub(crate) async fn first_dropped(&self) {
        if self.state().first.is_some() {
            return;
        }
        self.first.notified().await;
    }

    /// Wait until the relay has ended (at once if it has).
    pub(crate) async fn relay_end(&self) {
        if self.state().relay_ended {
            return;
        }
        self.ended.notified().await;
    }

    /// The log's line when the first line is dropped, if one was.
    pub(crate) fn first_note(&self) -> Option<String> {
        let first = self.state().first.clone()?;
        Some(format!(
            "[drover: the server wrote a line on stdout that is no MCP message drover can read, so it was not passed on, nor will such lines be (a server writes only MCP messages on stdout, its logs on stderr); the first: {first}]\n"
        ))
    }

    /// The log's last line, saying how many lines were dropped, if any were.
    pub(crate) fn closing_note(&self) -> Option<String> {
        let count = self.state().count;
        let (lines, were) = if count == 1 {
            ("line", "was")
        } else {
            ("lines", "were")
        };
        (count > 0).then(|| {
            format!(
                "[drover: in all, {count} {lines} the server wrote on stdout {were} no MCP message drover can read, and not passed on]\n"
            )
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // Each change is one assignment: a poisoned lock's state is whole.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A line of `length` bytes starting with `start` as the log shows it: quoted, with
/// control characters escaped, cut (a character cut in two left out) with its length.
fn shown(start: &[u8], length: usize) -> String {
    let text = String::from_utf8_lossy(&start[..start.len().min(SHOWN)]);
    let quoted = format!("{:?}", text.trim_end_matches('\u{FFFD}'));
    if length > SHOWN {
        format!("{quoted}… ({length} bytes)")
    } else {
        quoted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_line_is_shown_escaped_and_cut_and_the_rest_counted() {
        let dropped = DroppedLines::default();
        assert_eq!(dropped.first_note(), None);
        assert_eq!(dropped.closing_note(), None);
        let first = b"{\"level\":\"info\",\"msg\":\"a\x1b]0;x\x07\"}";
        dropped.line(first, first.len());
        dropped.line(&[b'y'; 1000], 1000);
        let first = dropped.first_note().unwrap();
        assert!(
            first.ends_with("the first: \"{\\\"level\\\":\\\"info\\\",\\\"msg\\\":\\\"a\\u{1b}]0;x\\u{7}\\\"}\"]\n"),
            "{first}"
        );
        assert_eq!(
            dropped.closing_note().unwrap(),
            "[drover: in all, 2 lines the server wrote on stdout were no MCP message drover can read, and not passed on]\n"
        );
        let long = DroppedLines::default();
        long.line(&[b'y'; 500], 1000);
        let first = long.first_note().unwrap();
        assert!(
            first.contains(&format!("\"{}\"… (1000 bytes)]", "y".repeat(SHOWN))),
            "{first}"
        );
    }
}
