//! JSON for notebooks that writes back what it read: keys in file order, numbers as
//! written, and every value the edit did not touch copied byte for byte from the file, so
//! a `git diff` of an edited notebook shows only the edited cell.
//!
//! serde_json's `Value` sorts keys (its `preserve_order` feature would change key order
//! crate-wide, transcripts included) and reformats numbers (`1e-05` becomes `1e-5`); a
//! notebook written back through it would differ on every line. This tree keeps each
//! parsed value's span in the source; a value changed by an edit loses its span (and so do
//! its ancestors), and only those are written anew, in the file's own layout ([`Style`]).

use std::ops::Range;

/// Nesting deeper than this is refused: the parser, the writer and `Drop` recurse, and no
/// real notebook nests anywhere near it.
pub(super) const MAX_DEPTH: usize = 256;

/// One JSON value and, while unchanged, where it is in the source text.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Node {
    pub value: Json,
    /// The value's bytes in the source; `None` once the value (or anything in it) changed.
    pub raw: Option<Range<usize>>,
}

/// A JSON value with object keys in the order they were found or inserted.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Json {
    Null,
    Bool(bool),
    /// The number as written (also Python's `NaN` and `Infinity`, which nbformat may write).
    Number(String),
    String(String),
    Array(Vec<Node>),
    Object(Vec<(String, Node)>),
}

impl Node {
    /// A value made by an edit (written anew).
    pub(super) fn new(value: Json) -> Self {
        Node { value, raw: None }
    }

    pub(super) fn as_str(&self) -> Option<&str> {
        match &self.value {
            Json::String(s) => Some(s),
            _ => None,
        }
    }

    /// The member `key` of an object.
    pub(super) fn get(&self, key: &str) -> Option<&Node> {
        match &self.value {
            Json::Object(members) => members.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    pub(super) fn as_array(&self) -> Option<&[Node]> {
        match &self.value {
            Json::Array(items) => Some(items),
            _ => None,
        }
    }

    /// The number as an integer, if it is one.
    pub(super) fn as_u64(&self) -> Option<u64> {
        match &self.value {
            Json::Number(n) => n.parse().ok(),
            _ => None,
        }
    }
}

/// Why a text is not JSON this module takes; the text says where, for the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} at line {line}, column {column}")]
pub(super) struct ParseError {
    pub message: String,
    pub line: usize,
    pub column: usize,
}

/// How the file was laid out, so new values are written the same way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Style {
    /// One level of indentation (nbformat writes one space); `None`: all on one line.
    pub indent: Option<String>,
    /// The line break of an indented file: `\n`, or `\r\n` for a file saved on Windows.
    pub newline: &'static str,
    /// Between a key and its value: `": "` as Python and nbformat write, or `":"`.
    pub colon: String,
    /// Between items on one line (compact files only): `", "` or `","`.
    pub comma: String,
    /// Write non-ASCII characters as `\uXXXX` escapes: the file does (Python's default,
    /// `ensure_ascii`), while nbformat writes them as they are.
    pub ascii: bool,
}

/// A parsed JSON document: its root and the text around it, kept as found.
#[derive(Debug, Clone)]
pub(super) struct Document {
    source: String,
    /// Before the root (a byte-order mark, whitespace).
    head: Range<usize>,
    pub root: Node,
    /// After the root: the final newline, or nothing.
    tail: Range<usize>,
    pub style: Style,
}

impl Document {
    /// Parse `source` (nesting bounded by [`MAX_DEPTH`]).
    pub(super) fn parse(source: String) -> Result<Self, ParseError> {
        let mut parser = Parser {
            text: &source,
            pos: 0,
            style: StyleSeen::default(),
        };
        if source.starts_with('\u{FEFF}') {
            parser.pos = '\u{FEFF}'.len_utf8();
        }
        parser.skip_ws();
        let head = 0..parser.pos;
        let root = parser.value(0)?;
        let tail_start = parser.pos;
        parser.skip_ws();
        if parser.pos < source.len() {
            return Err(parser.error("unexpected text after the JSON value"));
        }
        let style = parser.style.finish();
        Ok(Document {
            head,
            root,
            tail: tail_start..source.len(),
            style,
            source,
        })
    }

    /// The document as text: untouched values exactly as they were, changed ones in the
    /// file's own style.
    pub(super) fn render(&self) -> String {
        let mut out = String::with_capacity(self.source.len() + 1024);
        out.push_str(&self.source[self.head.clone()]);
        self.write(&self.root, 0, &mut out);
        out.push_str(&self.source[self.tail.clone()]);
        out
    }

    fn write(&self, node: &Node, depth: usize, out: &mut String) {
        if let Some(raw) = &node.raw
            && let Some(text) = self.source.get(raw.clone())
        {
            out.push_str(text);
            return;
        }
        match &node.value {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Number(n) => out.push_str(n),
            Json::String(s) => write_string(s, self.style.ascii, out),
            Json::Array(items) if items.is_empty() => out.push_str("[]"),
            Json::Object(members) if members.is_empty() => out.push_str("{}"),
            Json::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    self.separator(i, depth + 1, out);
                    self.write(item, depth + 1, out);
                }
                self.close(depth, out);
                out.push(']');
            }
            Json::Object(members) => {
                out.push('{');
                for (i, (key, value)) in members.iter().enumerate() {
                    self.separator(i, depth + 1, out);
                    write_string(key, self.style.ascii, out);
                    out.push_str(&self.style.colon);
                    self.write(value, depth + 1, out);
                }
                self.close(depth, out);
                out.push('}');
            }
        }
    }

    /// What goes before item `i` of a container whose items sit at `depth`.
    fn separator(&self, i: usize, depth: usize, out: &mut String) {
        match &self.style.indent {
            Some(unit) => {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(self.style.newline);
                for _ in 0..depth {
                    out.push_str(unit);
                }
            }
            None if i > 0 => out.push_str(&self.style.comma),
            None => {}
        }
    }

    /// What goes before the closing bracket of a non-empty container at `depth`.
    fn close(&self, depth: usize, out: &mut String) {
        if let Some(unit) = &self.style.indent {
            out.push_str(self.style.newline);
            for _ in 0..depth {
                out.push_str(unit);
            }
        }
    }
}

/// `s` as a JSON string, escaped as Python's `json.dumps` escapes it: quotes,
/// backslashes and control characters, and (`ascii`, Python's default but not
/// nbformat's) every non-ASCII character as `\uXXXX`, in surrogate pairs beyond U+FFFF.
pub(super) fn write_string(s: &str, ascii: bool, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c if ascii && !c.is_ascii() => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// The layout seen in the first object and the first array or object with two items.
#[derive(Debug, Default)]
struct StyleSeen {
    /// Whitespace after a comma between items of the root (`"\n "` in nbformat files).
    after_comma: Option<String>,
    /// Whitespace between the root's opening brace and its first item.
    after_open: Option<String>,
    colon: Option<String>,
    /// A string held a non-ASCII character written as itself.
    raw_non_ascii: bool,
    /// A string held a non-ASCII character written as an escape.
    escaped_non_ascii: bool,
}

impl StyleSeen {
    fn finish(self) -> Style {
        let gap = self.after_comma.or(self.after_open).unwrap_or_default();
        let (indent, comma) = match gap.rfind('\n') {
            Some(at) => (Some(gap[at + 1..].to_string()), ",".to_string()),
            None => (None, format!(",{gap}")),
        };
        let newline = if gap.contains("\r\n") { "\r\n" } else { "\n" };
        Style {
            indent,
            newline,
            colon: self.colon.unwrap_or_else(|| ": ".to_string()),
            comma,
            ascii: self.escaped_non_ascii && !self.raw_non_ascii,
        }
    }
}

struct Parser<'a> {
    text: &'a str,
    pos: usize,
    style: StyleSeen,
}

impl Parser<'_> {
    fn error(&self, message: &str) -> ParseError {
        let mut at = self.pos.min(self.text.len());
        while !self.text.is_char_boundary(at) {
            at -= 1;
        }
        let before = &self.text[..at];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        ParseError {
            message: message.to_string(),
            line,
            column,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    fn skip_ws(&mut self) -> &str {
        let start = self.pos;
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
        &self.text[start..self.pos]
    }

    fn value(&mut self, depth: usize) -> Result<Node, ParseError> {
        if depth >= MAX_DEPTH {
            return Err(self.error(&format!("nested deeper than {MAX_DEPTH} levels")));
        }
        let start = self.pos;
        let value = match self.peek() {
            Some(b'{') => self.object(depth)?,
            Some(b'[') => self.array(depth)?,
            Some(b'"') => Json::String(self.string()?),
            Some(b't') => self.literal("true", Json::Bool(true))?,
            Some(b'f') => self.literal("false", Json::Bool(false))?,
            Some(b'n') => self.literal("null", Json::Null)?,
            Some(b'N') => self.literal("NaN", Json::Number("NaN".into()))?,
            Some(b'I') => self.literal("Infinity", Json::Number("Infinity".into()))?,
            Some(b'-' | b'0'..=b'9') => self.number()?,
            Some(_) => return Err(self.error("expected a JSON value")),
            None => return Err(self.error("unexpected end of file")),
        };
        Ok(Node {
            value,
            raw: Some(start..self.pos),
        })
    }

    fn literal(&mut self, word: &str, value: Json) -> Result<Json, ParseError> {
        if self.text[self.pos..].starts_with(word) {
            self.pos += word.len();
            Ok(value)
        } else {
            Err(self.error("expected a JSON value"))
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.pos += 1;
        }
        self.pos - start
    }

    fn number(&mut self) -> Result<Json, ParseError> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
            if self.text[self.pos..].starts_with("Infinity") {
                self.pos += "Infinity".len();
                return Ok(Json::Number(self.text[start..self.pos].to_string()));
            }
        }
        if self.digits() == 0 {
            return Err(self.error("invalid number"));
        }
        if self.peek() == Some(b'.') {
            self.pos += 1;
            if self.digits() == 0 {
                return Err(self.error("invalid number"));
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.pos += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return Err(self.error("invalid number"));
            }
        }
        Ok(Json::Number(self.text[start..self.pos].to_string()))
    }

    /// A string token, decoded by serde_json (escapes, surrogate pairs).
    fn string(&mut self) -> Result<String, ParseError> {
        let start = self.pos;
        self.pos += 1;
        loop {
            match self.peek() {
                None => return Err(self.error("unterminated string")),
                Some(b'"') => break,
                Some(b'\\') => self.pos += 2,
                Some(c) if c < 0x20 => {
                    return Err(self.error("control character inside a string"));
                }
                Some(_) => self.pos += 1,
            }
        }
        self.pos += 1;
        let token = self
            .text
            .get(start..self.pos)
            .ok_or_else(|| self.error("invalid string"))?;
        if !token.is_ascii() {
            self.style.raw_non_ascii = true;
        }
        if !token.contains('\\') {
            return Ok(token[1..token.len() - 1].to_string());
        }
        let decoded: String = serde_json::from_str(token).map_err(|e| {
            let mut error = self.error("invalid string escape");
            error.message = format!("invalid string: {e}");
            error
        })?;
        if token.is_ascii() && !decoded.is_ascii() {
            self.style.escaped_non_ascii = true;
        }
        Ok(decoded)
    }

    fn array(&mut self, depth: usize) -> Result<Json, ParseError> {
        self.pos += 1;
        let mut items = Vec::new();
        self.skip_ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(Json::Array(items));
        }
        loop {
            items.push(self.value(depth + 1)?);
            self.skip_ws();
            match self.peek() {
                Some(b',') => {
                    self.pos += 1;
                    self.skip_ws();
                }
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Json::Array(items));
                }
                _ => return Err(self.error("expected ',' or ']' in an array")),
            }
        }
    }

    fn object(&mut self, depth: usize) -> Result<Json, ParseError> {
        self.pos += 1;
        let mut members = Vec::new();
        // Python's json keeps the last of a repeated key, this reader would show the
        // first: a notebook could show the model one cell and Jupyter run another.
        let mut keys = std::collections::HashSet::new();
        let open_gap = self.skip_ws().to_string();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(Json::Object(members));
        }
        if depth == 0 {
            self.style.after_open = Some(open_gap);
        }
        loop {
            if self.peek() != Some(b'"') {
                return Err(self.error("expected a key (a string) in an object"));
            }
            let key_at = self.pos;
            let key = self.string()?;
            if !keys.insert(key.clone()) {
                self.pos = key_at;
                return Err(self.error(&format!(
                    "the key {key:?} appears twice in one object (Jupyter would read the last, drover the first)"
                )));
            }
            let colon_start = self.pos;
            self.skip_ws();
            if self.peek() != Some(b':') {
                return Err(self.error("expected ':' after a key"));
            }
            self.pos += 1;
            self.skip_ws();
            if self.style.colon.is_none() {
                self.style.colon = Some(self.text[colon_start..self.pos].to_string());
            }
            members.push((key, self.value(depth + 1)?));
            self.skip_ws();
            match self.peek() {
                Some(b',') => {
                    self.pos += 1;
                    let gap = self.skip_ws().to_string();
                    if depth == 0 && self.style.after_comma.is_none() {
                        self.style.after_comma = Some(gap);
                    }
                }
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Json::Object(members));
                }
                _ => return Err(self.error("expected ',' or '}' in an object")),
            }
        }
    }
}

#[cfg(test)]
#[path = "notebook_json_tests.rs"]
mod tests;
