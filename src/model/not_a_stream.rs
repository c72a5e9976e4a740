//! A success status whose body is no event stream: a captive portal's login page, a
//! gateway's or proxy's error page served with 200, a web UI at the base URL, a server
//! answering without streaming. Read as a stream it gives no event, and would be
//! retried as "the response stream ended before message_stop" until the retries run
//! out, never saying what came. The body's first line tells at once: a model API's
//! stream opens with an SSE field (`event:`, `data:`) or a comment (`:`), anything else
//! is not one, and the error says what the server answered instead.
//!
//! Not retried: such a page does not go away in the seconds retries wait, and every
//! retry would only delay the same answer.

use super::http_errors::error_message;

/// The most of the body's start looked at to find its first line.
const MAX_HEAD: usize = 1024;
/// The most of a body that is no stream held and read to quote it (its title, a JSON
/// message).
pub(super) const MAX_QUOTED_BODY: usize = 8 * 1024;
/// Longest text quoted from the body, in characters.
const MAX_QUOTE: usize = 200;
/// Longest content type quoted, in characters.
const MAX_TYPE: usize = 100;

/// What the start of a body says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Nothing to go on yet (no complete non-blank line).
    Undecided,
    /// An event stream, as far as its first line tells.
    Stream,
    /// Not an event stream.
    NotStream,
}

/// The start of a response body, watched until its first non-blank line is in.
#[derive(Debug)]
pub(super) struct StreamStart {
    head: Vec<u8>,
    verdict: Verdict,
}

impl Default for StreamStart {
    fn default() -> Self {
        StreamStart {
            head: Vec::new(),
            verdict: Verdict::Undecided,
        }
    }
}

impl StreamStart {
    /// Take the body's next bytes; what its start says so far.
    pub(super) fn push(&mut self, bytes: &[u8]) -> Verdict {
        if self.verdict != Verdict::Undecided {
            return self.verdict;
        }
        let room = MAX_QUOTED_BODY - self.head.len();
        self.head.extend_from_slice(&bytes[..bytes.len().min(room)]);
        let looked_at = &self.head[..self.head.len().min(MAX_HEAD)];
        let text = String::from_utf8_lossy(looked_at);
        let text = text.trim_start_matches('\u{feff}');
        let mut rest = text;
        while let Some(end) = rest.find(['\n', '\r']) {
            let line = &rest[..end];
            if !line.trim().is_empty() {
                self.verdict = judge(line);
                return self.verdict;
            }
            rest = &rest[end + 1..];
        }
        // A first line longer than everything held is judged by its start.
        if looked_at.len() >= MAX_HEAD && !rest.trim().is_empty() {
            self.verdict = judge(rest);
        }
        self.verdict
    }

    /// The body ended: a last line without its line break is judged too.
    pub(super) fn end(&mut self) -> Verdict {
        if self.verdict == Verdict::Undecided {
            let text = String::from_utf8_lossy(&self.head);
            let rest = text.trim_start_matches('\u{feff}').trim();
            if !rest.is_empty() {
                self.verdict = judge(rest);
            }
        }
        self.verdict
    }

    /// The bytes held of the body's start (all it sent, up to [`MAX_QUOTED_BODY`]).
    pub(super) fn head(&self) -> &[u8] {
        &self.head
    }
}

/// Whether the first non-blank line of a body opens an event stream.
fn judge(line: &str) -> Verdict {
    let line = line.trim_start_matches('\u{feff}');
    if line.starts_with(':') {
        return Verdict::Stream;
    }
    let field = line.split_once(':').map_or(line, |(field, _)| field);
    if matches!(field, "data" | "event" | "id" | "retry") {
        Verdict::Stream
    } else {
        Verdict::NotStream
    }
}

/// What the server answered instead of a stream, for the error: `url` answered HTTP
/// `status` with `content_type` and `body` (its start). Bounded, one line, control
/// characters removed; the caller scrubs the key as from every provider error.
pub(super) fn describe(url: &str, status: u16, content_type: Option<&str>, body: &[u8]) -> String {
    let kind = match content_type.map(|t| clean(t, MAX_TYPE)) {
        Some(t) if !t.is_empty() => format!("content type {t}"),
        _ => "no content type".to_string(),
    };
    let text = String::from_utf8_lossy(body);
    let text = text.trim_start_matches('\u{feff}');
    let first_line = text
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or_default();
    let mut what = format!("its first line is \"{}\"", clean(first_line, MAX_QUOTE));
    if let Some(title) = html_title(text) {
        what.push_str(&format!(", its title \"{}\"", clean(&title, MAX_QUOTE)));
    }
    if serde_json::from_str::<serde_json::Value>(text).is_ok() {
        what = format!(
            "its message is \"{}\"",
            clean(&error_message(text), MAX_QUOTE)
        );
    }
    format!(
        "{url} answered HTTP {status} with {kind}, which is not the event stream (text/event-stream) a model API answers with: {what}. A captive portal, a proxy or a gateway may have answered in the API's place, or model.base_url / model.path point at something else; not retried, as asking again would get the same page"
    )
}

/// The text of an HTML page's `<title>`, when its start has one.
fn html_title(text: &str) -> Option<String> {
    let lower = text.to_ascii_lowercase();
    let open = lower.find("<title")?;
    let start = open + lower[open..].find('>')? + 1;
    let end = start + lower[start..].find("</title")?;
    let title = text.get(start..end)?.split_whitespace().collect::<Vec<_>>();
    (!title.is_empty()).then(|| title.join(" "))
}

/// `text` on one line, without control characters, at most `max` characters (with `…`
/// when cut).
fn clean(text: &str, max: usize) -> String {
    let one_line: String = text
        .chars()
        .map(|c| if c.is_whitespace() { ' ' } else { c })
        .filter(|c| !c.is_control())
        .collect();
    let one_line = one_line.trim();
    match one_line.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &one_line[..at]),
        None => one_line.to_string(),
    }
}

#[cfg(test)]
#[path = "not_a_stream_tests.rs"]
mod tests;
