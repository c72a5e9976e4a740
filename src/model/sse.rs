//! An incremental parser for server-sent events (the WHATWG `text/event-stream` format).
//!
//! Bytes go in as the network delivers them, complete events come out. A chunk may end
//! anywhere — inside a line, between `\r` and `\n`, inside a multi-byte UTF-8 character —
//! because lines are only decoded once they are complete. Both providers stream their
//! responses this way.

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
}

/// A line longer than this is cut: a hostile or broken server cannot make us buffer
/// without bound inside one line.
const MAX_LINE: usize = 16 * 1024 * 1024;

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
    /// specification says (a cut stream must not look like a complete one).
    pub(crate) fn finish(&mut self) {
        self.line.clear();
        self.event.clear();
        self.data.clear();
        self.has_data = false;
    }

    fn end_line(&mut self, events: &mut Vec<SseEvent>) {
        let line = std::mem::take(&mut self.line);
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
}
