//! The envelope of one JSON-RPC message (its top-level `id`, and whether it is a request
//! or an answer), read as the message's bytes pass, in a few bytes of state whatever the
//! message's size. drover reads it of every line a stdio server writes and of every
//! request rmcp writes to the server (see [`super::relay`]): a message too long to
//! be read whole still says which request it answers, wherever in it the `id` lies, and
//! drover knows which requests await an answer.

use serde_json::Value;

/// The longest `id` taken for one, as JSON text: no request drover sends has a longer
/// one, and keeping more would let a message's size be kept.
const MAX_ID: usize = 1 << 10;
/// The longest key read: longer ones are none of the members this looks for.
const MAX_KEY: usize = 64;

/// What the bytes of one message, fed in order, said so far of its envelope.
#[derive(Default)]
pub(crate) struct Envelope {
    /// How many arrays and objects are open.
    depth: usize,
    /// The outermost value is an object (only its members are the envelope's).
    object: bool,
    /// The outermost value has ended: what follows belongs to no member.
    closed: bool,
    in_string: bool,
    /// The last byte was a backslash inside a string.
    escape: bool,
    /// At depth 1 of the object, the next string is a key.
    expect_key: bool,
    /// A `:` at depth 1 was seen and its value has not begun.
    expect_value: bool,
    /// The last key at depth 1 was `id`.
    key_is_id: bool,
    /// What is being read: a key at depth 1, or the value of `id`.
    capture: Capture,
    id: Option<Value>,
    /// The members of [`Member`] the object has, one bit each.
    members: u8,
    /// The first of them the object has twice.
    repeated: Option<Member>,
}

/// The top-level members a JSON-RPC message is told by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Member {
    Jsonrpc,
    Id,
    Method,
    Result,
    Error,
}

impl Member {
    const ALL: [Member; 5] = [
        Member::Jsonrpc,
        Member::Id,
        Member::Method,
        Member::Result,
        Member::Error,
    ];

    /// The member's key.
    pub(crate) fn key(self) -> &'static str {
        match self {
            Member::Jsonrpc => "jsonrpc",
            Member::Id => "id",
            Member::Method => "method",
            Member::Result => "result",
            Member::Error => "error",
        }
    }

    fn bit(self) -> u8 {
        1 << self as u8
    }
}

/// The text kept of the key or `id` being read (raw JSON, within its bounds).
#[derive(Default)]
enum Capture {
    #[default]
    Nothing,
    Key(Vec<u8>),
    /// The key grew past [`MAX_KEY`]: it is not one of ours, but its end is awaited.
    LongKey,
    /// The value of `id`: a string (its quotes kept) or a scalar.
    Id(Vec<u8>),
}

impl Envelope {
    /// Read the next bytes of the message.
    pub(crate) fn feed(&mut self, bytes: &[u8]) {
        let mut rest = bytes;
        while let Some((&byte, after)) = rest.split_first() {
            if self.closed {
                return;
            }
            // The long run of a string none of whose text is kept is skipped at once.
            if self.in_string && !self.escape && matches!(self.capture, Capture::Nothing) {
                let plain = after
                    .iter()
                    .position(|b| matches!(b, b'"' | b'\\'))
                    .unwrap_or(after.len());
                if !matches!(byte, b'"' | b'\\') {
                    rest = &after[plain..];
                    continue;
                }
            }
            self.step(byte);
            rest = after;
        }
    }

    /// The message's top-level `id`, once read: a number or a string of at most
    /// [`MAX_ID`] bytes of JSON (the first such when it has several).
    pub(crate) fn id(&self) -> Option<&Value> {
        self.id.as_ref()
    }

    /// The message has a top-level `method`: a request or a notification, nobody's
    /// answer.
    pub(crate) fn is_request(&self) -> bool {
        self.has(Member::Method)
    }

    /// The message has a top-level `result` or `error`: an answer.
    pub(crate) fn is_answer(&self) -> bool {
        self.has(Member::Result) || self.has(Member::Error)
    }

    /// The message has the top-level `member` (whatever its value).
    pub(crate) fn has(&self, member: Member) -> bool {
        self.members & member.bit() != 0
    }

    /// The first top-level member the message has twice: rmcp reads no such message.
    pub(crate) fn repeated(&self) -> Option<Member> {
        self.repeated
    }

    fn step(&mut self, byte: u8) {
        if self.in_string {
            self.string_byte(byte);
            return;
        }
        if let Capture::Id(text) = &mut self.capture {
            // A scalar `id` ends where its member does.
            if !matches!(byte, b',' | b'}' | b']') && !byte.is_ascii_whitespace() {
                keep(text, byte);
                return;
            }
            self.end_id();
        }
        if self.expect_value && !byte.is_ascii_whitespace() {
            self.expect_value = false;
            if self.key_is_id && !matches!(byte, b'{' | b'[') {
                self.capture = Capture::Id(vec![byte]);
                self.in_string = byte == b'"';
                return;
            }
        }
        match byte {
            b'"' => {
                self.in_string = true;
                if self.depth == 1 && self.expect_key {
                    self.expect_key = false;
                    self.capture = Capture::Key(Vec::new());
                }
            }
            b'{' | b'[' => {
                if self.depth == 0 {
                    self.object = byte == b'{';
                    self.expect_key = self.object;
                }
                self.depth += 1;
            }
            b'}' | b']' => {
                self.depth = self.depth.saturating_sub(1);
                self.closed = self.depth == 0;
            }
            b',' if self.depth == 1 => self.expect_key = self.object,
            b':' if self.depth == 1 => self.expect_value = true,
            _ => {}
        }
    }

    fn string_byte(&mut self, byte: u8) {
        let ends = byte == b'"' && !self.escape;
        self.escape = byte == b'\\' && !self.escape;
        match &mut self.capture {
            Capture::Key(text) if !ends => {
                text.push(byte);
                if text.len() > MAX_KEY {
                    self.capture = Capture::LongKey;
                }
            }
            Capture::Id(text) => keep(text, byte),
            _ => {}
        }
        if !ends {
            return;
        }
        self.in_string = false;
        match std::mem::take(&mut self.capture) {
            Capture::Key(text) => self.end_key(&text),
            Capture::LongKey => self.key_is_id = false,
            Capture::Id(text) => {
                self.capture = Capture::Id(text);
                self.end_id();
            }
            Capture::Nothing => {}
        }
    }

    /// A key at depth 1 ended; `text` is what lay between its quotes.
    fn end_key(&mut self, text: &[u8]) {
        let mut quoted = Vec::with_capacity(text.len() + 2);
        quoted.push(b'"');
        quoted.extend_from_slice(text);
        quoted.push(b'"');
        // Escapes are decoded, as any JSON reader would: `"\u0069d"` is `id`.
        let key: Option<String> = serde_json::from_slice(&quoted).ok();
        let key = key.as_deref().unwrap_or_default();
        self.key_is_id = key == "id";
        if let Some(member) = Member::ALL.into_iter().find(|m| m.key() == key) {
            if self.has(member) && self.repeated.is_none() {
                self.repeated = Some(member);
            }
            self.members |= member.bit();
        }
    }

    /// The value of `id` ended: it is the message's id when it is a number or a string
    /// within the bound and none came before it.
    fn end_id(&mut self) {
        let Capture::Id(text) = std::mem::take(&mut self.capture) else {
            return;
        };
        if self.id.is_some() || text.len() > MAX_ID {
            return;
        }
        let value: Option<Value> = serde_json::from_slice(&text).ok();
        self.id = value.filter(|v| v.is_number() || v.is_string());
    }
}

/// Keep one more byte of an `id`'s text, up to one past the bound (which marks it too
/// long to be an id).
fn keep(text: &mut Vec<u8>, byte: u8) {
    if text.len() <= MAX_ID {
        text.push(byte);
    }
}

#[cfg(test)]
#[path = "envelope_tests.rs"]
mod tests;
