//! An incremental parser for server-sent events (the WHATWG `text/event-stream` format).
//!
//! Bytes go in as the network delivers them, complete events come out. A chunk may end
//! anywhere — inside a line, between `\r` and `\n`, inside a multi-byte UTF-8 character —
//! because lines are only decoded once they are complete. Both providers stream their
//! responses this way.
//!
//! The parser also keeps the first line that is no SSE line (and what follows it, bounded):
//! a proxy that puts its own error page into a stream leaves the stream without its final
//! event, and the error should then say what came rather than call it a dropped
//! connection (see `not_a_stream`).

/// The field names of the format; a line naming another is no SSE a model API sends.
const FIELDS: [&str; 4] = ["event", "data", "id", "retry"];

/// A UTF-8 byte order mark, which the format drops at the start of a stream.
const BOM: &[u8] = b"\xef\xbb\xbf";

/// One dispatched event: its `event:` name (empty when the stream gave none) and its
/// `data:` lines joined by `\n`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    pub event: String,
    pub data: String,
}

/// Parser state between chunks.
#[derive(Debug, Default)]
pub(crate) struct SseParser {
    /// The bytes of the line in progress.
    line: Vec<u8>,
    /// The previous chunk ended in `\r`: a `\n` at the start of the next one belongs to it.
    after_cr: bool,
    event: String,
    data: String,
    has_data: bool,
    /// A line has ended: a byte order mark can no longer open the stream.
    seen_line: bool,
    /// From the first line that is no SSE line on, each line ended by `\n`, at most
    /// [`MAX_FOREIGN`] bytes.
    foreign: Option<Vec<u8>>,
}

/// A line longer than this is cut: a hostile or broken server cannot make us buffer
/// without bound inside one line.
const MAX_LINE: usize = 16 * 1024 * 1024;

/// The most kept of what follows the first line that is no SSE: enough to quote its
/// first line and find a page's `<title>`.
pub(crate) const MAX_FOREIGN: usize = 8 * 1024;

/// Whether a whole line (without its line break) belongs in an event stream: blank, a
/// comment (`:`), or one of the format's fields (`event`, `data`, `id`, `retry`, with or
/// without a value). The format itself ignores other fields, but no model API sends
/// them: such a line is a page or a message from something else.
pub(crate) fn is_sse_line(line: &str) -> bool {
    if line.trim().is_empty() || line.starts_with(':') {
        return true;
    }
    let field = line.split_once(':').map_or(line, |(field, _)| field);
    FIELDS.contains(&field)
}

/// Whether the start of a line cut by the stream's end could still have become an SSE
/// line (`ev` of `event:`): a connection dropped mid-line is no foreign text.
fn could_be_sse_line(start: &str) -> bool {
    is_sse_line(start)
        || (!start.contains(':') && FIELDS.iter().any(|field| field.starts_with(start)))
}

impl SseParser {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Feed the next chunk; returns the events it completed, in order.
    pub(crate) fn push(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        let mut events = Vec::new();
        for &byte in chunk {
            if self.after_cr {
                self.after_cr = false;
                if byte == b'\n' {
                    continue;
                }
            }
            match byte {
                b'\n' => self.end_line(&mut events),
                b'\r' => {
                    self.after_cr = true;
                    self.end_line(&mut events);
                }
                _ if self.line.len() < MAX_LINE => self.line.push(byte),
                _ => {}
            }
        }
        events
    }

    /// The stream ended: an event not terminated by a blank line is discarded, as the
    /// specification says (a cut stream must not look like a complete one). A last line
    /// without its line break is still judged for [`SseParser::foreign`].
    pub(crate) fn finish(&mut self) {
        if !self.line.is_empty() {
            let line = self.take_line();
            self.keep_foreign(&line, false);
        }
        self.event.clear();
        self.data.clear();
        self.has_data = false;
    }

    /// What came from the first line that is no SSE line on (that line first, each line
    /// ended by `\n`, at most [`MAX_FOREIGN`] bytes), when one came.
    pub(crate) fn foreign(&self) -> Option<&[u8]> {
        self.foreign.as_deref()
    }

    /// The line in progress, without the byte order mark that may open the stream.
    fn take_line(&mut self) -> Vec<u8> {
        let mut line = std::mem::take(&mut self.line);
        if !self.seen_line {
            self.seen_line = true;
            if line.starts_with(BOM) {
                line.drain(..BOM.len());
            }
        }
        line
    }

    /// Keep `line` when it is the first that is no SSE line (`whole`: it ended with a
    /// line break, else it is the start of one the stream's end cut) or follows one.
    fn keep_foreign(&mut self, line: &[u8], whole: bool) {
        if self.foreign.is_none() {
            let text = String::from_utf8_lossy(line);
            let sse = if whole {
                is_sse_line(&text)
            } else {
                could_be_sse_line(&text)
            };
            if sse {
                return;
            }
            self.foreign = Some(Vec::new());
        }
        if let Some(kept) = &mut self.foreign {
            let room = MAX_FOREIGN.saturating_sub(kept.len());
            kept.extend_from_slice(&line[..line.len().min(room)]);
            if kept.len() < MAX_FOREIGN {
                kept.push(b'\n');
            }
        }
    }

    fn end_line(&mut self, events: &mut Vec<SseEvent>) {
        let line = self.take_line();
        self.keep_foreign(&line, true);
        if line.is_empty() {
            if self.has_data {
                events.push(SseEvent {
                    event: std::mem::take(&mut self.event),
                    data: std::mem::take(&mut self.data),
                });
            } else {
                self.event.clear();
            }
            self.has_data = false;
            return;
        }
        let text = String::from_utf8_lossy(&line);
        if text.starts_with(':') {
            return; // a comment (keep-alive)
        }
        let (field, value) = match text.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (text.as_ref(), ""),
        };
        match field {
            "event" => self.event = value.to_string(),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            _ => {} // id, retry and unknown fields mean nothing to us
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STREAM: &str = "event: message_start\r\ndata: {\"a\":\"h\u{e9}llo \u{1f600}\"}\r\n\r\n: keep-alive\n\nevent: ping\ndata: {}\n\ndata: line one\ndata: line two\n\nevent: x\rdata:no-space\r\r";

    fn expected() -> Vec<SseEvent> {
        vec![
            SseEvent {
                event: "message_start".into(),
                data: "{\"a\":\"h\u{e9}llo \u{1f600}\"}".into(),
            },
            SseEvent {
                event: "ping".into(),
                data: "{}".into(),
            },
            SseEvent {
                event: String::new(),
                data: "line one\nline two".into(),
            },
            SseEvent {
                event: "x".into(),
                data: "no-space".into(),
            },
        ]
    }

    #[test]
    fn whole_stream() {
        assert_eq!(SseParser::new().push(STREAM.as_bytes()), expected());
    }

    #[test]
    fn split_at_every_byte_position() {
        let bytes = STREAM.as_bytes();
        for cut in 0..=bytes.len() {
            let mut parser = SseParser::new();
            let mut events = parser.push(&bytes[..cut]);
            events.extend(parser.push(&bytes[cut..]));
            assert_eq!(events, expected(), "cut at {cut}");
        }
    }

    #[test]
    fn one_byte_at_a_time() {
        let mut parser = SseParser::new();
        let events: Vec<SseEvent> = STREAM
            .as_bytes()
            .iter()
            .flat_map(|b| parser.push(std::slice::from_ref(b)))
            .collect();
        assert_eq!(events, expected());
    }

    #[test]
    fn an_unterminated_event_is_not_dispatched() {
        let mut parser = SseParser::new();
        assert!(parser.push(b"event: message_stop\ndata: {}\n").is_empty());
        parser.finish();
        assert!(parser.push(b"\n").is_empty());
    }

    #[test]
    fn an_event_name_without_data_is_dropped() {
        let mut parser = SseParser::new();
        assert!(
            parser.push(b"event: lonely\n\ndata: x\n\n")[0]
                .event
                .is_empty()
        );
    }

    #[test]
    fn invalid_utf8_does_not_panic() {
        let events = SseParser::new().push(b"data: \xff\xfe\n\n");
        assert_eq!(events.len(), 1);
    }

    #[test]
    fn event_stream_lines_are_never_foreign() {
        let mut parser = SseParser::new();
        parser.push(STREAM.as_bytes());
        parser.push(b"id: 7\nretry: 100\ndata\n  \t\n:\n\n");
        parser.finish();
        assert_eq!(parser.foreign(), None);
    }

    #[test]
    fn a_byte_order_mark_opening_the_stream_is_dropped() {
        let mut parser = SseParser::new();
        let events = parser.push(b"\xef\xbb\xbfevent: ping\ndata: {}\n\n");
        assert_eq!(events[0].event, "ping");
        assert_eq!(parser.foreign(), None);
        // Anywhere else it is no field name.
        parser.push(b"\xef\xbb\xbfevent: ping\n");
        assert!(parser.foreign().is_some());
    }

    #[test]
    fn a_page_after_events_is_kept_from_its_first_foreign_line() {
        let page = "<!DOCTYPE html>\r\n<html><head><title>502 Bad Gateway</title></head>\n\ndata: x\n</html>";
        let stream = format!("event: message_start\ndata: {{}}\n\n{page}");
        let expected = b"<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head>\n\ndata: x\n</html>\n";
        let bytes = stream.as_bytes();
        for cut in 0..=bytes.len() {
            let mut parser = SseParser::new();
            let mut events = parser.push(&bytes[..cut]);
            events.extend(parser.push(&bytes[cut..]));
            parser.finish();
            assert_eq!(events.len(), 1, "cut at {cut}");
            assert_eq!(
                parser.foreign(),
                Some(&expected[..]),
                "cut at {cut}: {:?}",
                parser.foreign().map(String::from_utf8_lossy)
            );
        }
    }

    #[test]
    fn a_line_cut_by_the_end_of_the_stream_is_foreign_only_if_no_field_could_follow() {
        for cut in [
            "ev",
            "event",
            "data: {\"type\":\"con",
            ": keep",
            "retr",
            "i",
        ] {
            let mut parser = SseParser::new();
            parser.push(format!("data: {{}}\n\n{cut}").as_bytes());
            parser.finish();
            assert_eq!(parser.foreign(), None, "{cut}");
        }
        for cut in ["<htm", "Bad gateway", "eventx", "dat a"] {
            let mut parser = SseParser::new();
            parser.push(format!("data: {{}}\n\n{cut}").as_bytes());
            assert_eq!(parser.foreign(), None, "not judged before the end: {cut}");
            parser.finish();
            assert_eq!(
                parser.foreign(),
                Some(format!("{cut}\n").as_bytes()),
                "{cut}"
            );
        }
    }

    #[test]
    fn what_is_kept_of_foreign_text_is_bounded() {
        let mut parser = SseParser::new();
        parser.push(b"data: {}\n\n");
        parser.push(&[b'x'; 3 * MAX_FOREIGN]);
        parser.push(b"\n<title>t</title>\n");
        for _ in 0..10 {
            parser.push(&[b'y'; 1000]);
            parser.push(b"\n");
        }
        parser.finish();
        let kept = parser.foreign().unwrap();
        assert_eq!(kept.len(), MAX_FOREIGN);
        assert!(kept.iter().all(|&b| b == b'x'));
    }
}
