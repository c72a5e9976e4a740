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
//!
//! The same holds for a stream that begins as events and then carries a page (a proxy
//! that cut into it with its own error page): when such a stream ends without its final
//! event, the error quotes the first line that was no SSE ([`describe_midway`]) instead
//! of calling it a dropped connection, and is not retried. A stream that merely ends
//! early, with nothing foreign in it, is a cut connection and is retried as before.

use super::http_errors::error_message;
use super::sse::is_sse_line;

/// The most of the body's start looked at to find its first line.
const MAX_HEAD: usize = 1024;
/// The most of a body that is no stream held and read to quote it (its title, a JSON
/// message).
pub(super) const MAX_QUOTED_BODY: usize = 8 * 1024;
/// Longest text quoted from the body, in characters.
const MAX_QUOTE: usize = 200;

/// What takes the API key out of a text quoted in an error.
pub(super) type Scrub<'a> = &'a dyn Fn(&str) -> String;
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
    if is_sse_line(line.trim_start_matches('\u{feff}')) {
        Verdict::Stream
    } else {
        Verdict::NotStream
    }
}

/// What the server answered instead of a stream, for the error: `url` answered HTTP
/// `status` with `content_type` and `body` (its start). Bounded, one line, control
/// characters removed. `scrub` takes the key out of each quoted part after it is
/// cleaned and before it is cut (see [`clean`]).
pub(super) fn describe(
    url: &str,
    status: u16,
    content_type: Option<&str>,
    body: &[u8],
    scrub: Scrub<'_>,
) -> String {
    let quoted = Quoted::of(body, scrub);
    let what = match &quoted.message {
        Some(message) => format!("its message is \"{message}\""),
        None => match &quoted.title {
            Some(title) => format!(
                "its first line is \"{}\", its title \"{title}\"",
                quoted.first_line
            ),
            None => format!("its first line is \"{}\"", quoted.first_line),
        },
    };
    // A body labelled as a stream that is none: saying "which is not the event stream"
    // of a text/event-stream answer would contradict itself.
    let answered = match content_type.map(|t| clean(t, MAX_TYPE, scrub)) {
        Some(t) if is_event_stream(&t) => {
            format!("{url} answered HTTP {status} labelled {t} but sent no events")
        }
        Some(t) if !t.is_empty() => format!(
            "{url} answered HTTP {status} with content type {t}, which is not the event stream (text/event-stream) a model API answers with"
        ),
        _ => format!(
            "{url} answered HTTP {status} with no content type, which is not the event stream (text/event-stream) a model API answers with"
        ),
    };
    format!(
        "{answered}: {what}. A captive portal, a proxy or a gateway may have answered in the API's place, or model.base_url / model.path point at something else; not retried, as asking again would get the same page"
    )
}

/// A stream that began as events and then carried something else, for the error: `url`
/// answered HTTP `status` with `content_type`, `foreign` is what came from the first line
/// that is no SSE on (bounded; `scrub` takes the key out as in [`describe`]) and `ended`
/// how the stream then failed (`the response stream ended before message_stop`).
pub(super) fn describe_midway(
    url: &str,
    status: u16,
    content_type: Option<&str>,
    foreign: &[u8],
    ended: &str,
    scrub: Scrub<'_>,
) -> String {
    let kind = match content_type.map(|t| clean(t, MAX_TYPE, scrub)) {
        Some(t) if !t.is_empty() => format!("content type {t}"),
        _ => "no content type".to_string(),
    };
    let quoted = Quoted::of(foreign, scrub);
    let mut line = format!("\"{}\"", quoted.first_line);
    if let Some(message) = &quoted.message {
        line.push_str(&format!(" (a JSON error saying \"{message}\")"));
    } else if let Some(title) = &quoted.title {
        line.push_str(&format!(" (a page titled \"{title}\")"));
    }
    format!(
        "{url} answered HTTP {status} with {kind} and began an event stream, then sent a line that is no server-sent event: {line}; drover expected only `event:`, `data:`, `id:`, `retry:` and `:` lines up to the stream's final event, and then {ended}. A proxy or a gateway may have put its own page into the stream; not retried, as a server answering something else is no dropped connection"
    )
}

/// Whether a content type names an event stream, whatever its parameters.
fn is_event_stream(content_type: &str) -> bool {
    let media = content_type.split(';').next().unwrap_or_default();
    media.trim().eq_ignore_ascii_case("text/event-stream")
}

/// What an error quotes of a text that is no event stream, each part cleaned and bounded.
struct Quoted {
    /// Its first non-blank line.
    first_line: String,
    /// An HTML page's `<title>`.
    title: Option<String>,
    /// A JSON body's `error.message` (with its type).
    message: Option<String>,
}

impl Quoted {
    fn of(body: &[u8], scrub: Scrub<'_>) -> Quoted {
        let text = String::from_utf8_lossy(body);
        let text = text.trim_start_matches('\u{feff}');
        let first_line = text
            .lines()
            .map(str::trim)
            .find(|line| !line.is_empty())
            .unwrap_or_default();
        let message = serde_json::from_str::<serde_json::Value>(text)
            .is_ok()
            .then(|| clean(&error_message(text), MAX_QUOTE, scrub));
        Quoted {
            first_line: clean(first_line, MAX_QUOTE, scrub),
            title: html_title(text).map(|title| clean(&title, MAX_QUOTE, scrub)),
            message,
        }
    }
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

/// `text` on one line, without control characters and the key, at most `max`
/// characters (with `…` when cut). The key is taken out after the text is cleaned and
/// decoded (removing a control character or a JSON escape can put a key together that
/// the raw body did not hold whole) and before the cut (a key cut in half is no longer
/// recognised by any later scrub).
fn clean(text: &str, max: usize, scrub: Scrub<'_>) -> String {
    let one_line: String = text
        .chars()
        .map(|c| if c.is_whitespace() { ' ' } else { c })
        .filter(|c| !c.is_control())
        .collect();
    let one_line = scrub(one_line.trim());
    let one_line = one_line.trim();
    match one_line.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &one_line[..at]),
        None => one_line.to_string(),
    }
}

#[cfg(test)]
#[path = "not_a_stream_tests.rs"]
mod tests;
