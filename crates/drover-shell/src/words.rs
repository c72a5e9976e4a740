//! Turning a word of the syntax tree into the text the command receives.
//!
//! Quote removal matters for safety: `r\m`, `'r'm` and `"rm"` all run `rm`, so a rule
//! about `rm` must see `rm` in each case. Expansions cannot be resolved statically; they
//! are kept as written (`$HOME` stays `$HOME`) and the word is marked as not literal.

use tree_sitter::Node;

/// How much of a word is known before the shell runs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Shape {
    /// The text is exactly what the program receives.
    Literal,
    /// Static text that the shell may still expand into other words (globs such as `*`,
    /// brace expansion such as `{a,b}`).
    Pattern,
    /// Contains a parameter, arithmetic or command expansion.
    Dynamic,
}

/// One shell word after quote removal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Word {
    /// The text after quote removal; expansions are kept as written.
    pub text: String,
    pub shape: Shape,
    /// The word as written in the source, for messages.
    pub source: String,
}

impl Word {
    pub(super) fn is_literal(&self) -> bool {
        self.shape == Shape::Literal
    }
}

/// Convert a word-like node (`word`, `string`, `raw_string`, `concatenation`, …).
pub(super) fn convert(node: Node, src: &[u8]) -> Word {
    let mut word = Word {
        text: String::new(),
        shape: Shape::Literal,
        source: text_of(node, src).to_string(),
    };
    append(node, src, &mut word);
    word
}

/// The source text of a node; empty if the range is not valid UTF-8 (it always is, as
/// the parser is given a `&str` and nodes start and end on token boundaries).
pub(super) fn text_of<'s>(node: Node, src: &'s [u8]) -> &'s str {
    node.utf8_text(src).unwrap_or("")
}

fn widen(word: &mut Word, shape: Shape) {
    word.shape = word.shape.max(shape);
}

fn append(node: Node, src: &[u8], word: &mut Word) {
    let raw = text_of(node, src);
    match node.kind() {
        "word" => unquoted(raw, word),
        "number" if node.named_child_count() == 0 => word.text.push_str(raw),
        "raw_string" => {
            let inner = raw.strip_prefix('\'').unwrap_or(raw);
            word.text
                .push_str(inner.strip_suffix('\'').unwrap_or(inner));
        }
        "ansi_c_string" => {
            let inner = raw.strip_prefix("$'").unwrap_or(raw);
            ansi_c(inner.strip_suffix('\'').unwrap_or(inner), &mut word.text);
        }
        "string" => double_quoted(node, src, word),
        "translated_string" => match node.named_child(0) {
            Some(inner) => append(inner, src, word),
            None => word.text.push_str(raw),
        },
        "concatenation" => {
            // Brace expansion is split into several `word` children; look at the whole.
            if has_brace_expansion(raw) {
                widen(word, Shape::Pattern);
            }
            with_gaps(node, src, word, unquoted, append);
        }
        "brace_expression" => {
            widen(word, Shape::Pattern);
            word.text.push_str(raw);
        }
        _ => {
            // Expansions, substitutions, arrays, anything unexpected: as written.
            widen(word, Shape::Dynamic);
            word.text.push_str(raw);
        }
    }
}

/// Walk the children of `node`, converting the text between them with `gap` (the parser
/// does not always give literal runs a node of their own).
fn with_gaps(
    node: Node,
    src: &[u8],
    word: &mut Word,
    gap: fn(&str, &mut Word),
    child: fn(Node, &[u8], &mut Word),
) {
    let (start, end) = content_range(node);
    let mut pos = start;
    let mut cursor = node.walk();
    for part in node.named_children(&mut cursor) {
        if part.start_byte() > pos {
            gap(slice(src, pos, part.start_byte()), word);
        }
        child(part, src, word);
        pos = pos.max(part.end_byte());
    }
    if end > pos {
        gap(slice(src, pos, end), word);
    }
}

/// The byte range inside a node's delimiters (`"…"` for strings, all of it otherwise).
fn content_range(node: Node) -> (usize, usize) {
    let (start, end) = (node.start_byte(), node.end_byte());
    if node.kind() == "string" && end >= start + 2 {
        (start + 1, end - 1)
    } else {
        (start, end)
    }
}

fn slice(src: &[u8], start: usize, end: usize) -> &str {
    src.get(start..end)
        .and_then(|bytes| std::str::from_utf8(bytes).ok())
        .unwrap_or("")
}

fn double_quoted(node: Node, src: &[u8], word: &mut Word) {
    fn part(child: Node, src: &[u8], word: &mut Word) {
        if child.kind() == "string_content" {
            in_double_quotes(text_of(child, src), word);
        } else {
            widen(word, Shape::Dynamic);
            word.text.push_str(text_of(child, src));
        }
    }
    with_gaps(node, src, word, in_double_quotes, part);
}

/// Unquoted text: a backslash quotes the next character, a backslash-newline vanishes,
/// and unescaped glob or brace characters make the word a pattern.
fn unquoted(raw: &str, word: &mut Word) {
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('\n') | None => {}
                Some(next) => word.text.push(next),
            },
            '*' | '?' | '[' => {
                widen(word, Shape::Pattern);
                word.text.push(c);
            }
            '$' | '`' => {
                widen(word, Shape::Dynamic);
                word.text.push(c);
            }
            _ => word.text.push(c),
        }
    }
    if has_brace_expansion(raw) {
        widen(word, Shape::Pattern);
    }
}

/// Inside double quotes a backslash only escapes `$`, `` ` ``, `"`, `\` and newline.
fn in_double_quotes(raw: &str, word: &mut Word) {
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek().copied()) {
            ('\\', Some('\n')) => {
                chars.next();
            }
            ('\\', Some(next @ ('$' | '`' | '"' | '\\'))) => {
                chars.next();
                word.text.push(next);
            }
            ('$' | '`', _) => {
                widen(word, Shape::Dynamic);
                word.text.push(c);
            }
            _ => word.text.push(c),
        }
    }
}

/// An unescaped `{` followed later by `,` or `..` and a `}`: bash may expand it.
fn has_brace_expansion(raw: &str) -> bool {
    let mut escaped = false;
    let mut open = None;
    for (index, c) in raw.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            '{' => open = Some(index),
            '}' => {
                if let Some(start) = open {
                    let inner = &raw[start + 1..index];
                    if inner.contains(',') || inner.contains("..") {
                        return true;
                    }
                }
            }
            _ => {}
        }
    }
    false
}

/// Decode the escapes of `$'…'` (bash's ANSI-C quoting).
fn ansi_c(raw: &str, out: &mut String) {
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(escape) = chars.next() else {
            out.push('\\');
            break;
        };
        match escape {
            'a' => out.push('\u{7}'),
            'b' => out.push('\u{8}'),
            'e' | 'E' => out.push('\u{1b}'),
            'f' => out.push('\u{c}'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'v' => out.push('\u{b}'),
            '\\' | '\'' | '"' | '?' => out.push(escape),
            'x' => push_code(&mut chars, 16, 2, out),
            'u' => push_code(&mut chars, 16, 4, out),
            'U' => push_code(&mut chars, 16, 8, out),
            '0'..='7' => {
                let mut value = escape.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match chars.peek().and_then(|d| d.to_digit(8)) {
                        Some(digit) => {
                            value = value * 8 + digit;
                            chars.next();
                        }
                        None => break,
                    }
                }
                out.push(char::from_u32(value).unwrap_or('\u{fffd}'));
            }
            'c' => match chars.next() {
                Some(control) => {
                    let value = (control.to_ascii_uppercase() as u32) ^ 0x40;
                    out.push(char::from_u32(value).unwrap_or('\u{fffd}'));
                }
                None => out.push_str("\\c"),
            },
            other => {
                out.push('\\');
                out.push(other);
            }
        }
    }
}

fn push_code(
    chars: &mut std::iter::Peekable<std::str::Chars>,
    radix: u32,
    max_digits: usize,
    out: &mut String,
) {
    let mut value: u32 = 0;
    let mut digits = 0;
    while digits < max_digits {
        match chars.peek().and_then(|d| d.to_digit(radix)) {
            Some(digit) => {
                value = value.saturating_mul(radix).saturating_add(digit);
                digits += 1;
                chars.next();
            }
            None => break,
        }
    }
    if digits == 0 {
        out.push('\\');
        out.push(match radix {
            16 if max_digits == 2 => 'x',
            16 if max_digits == 4 => 'u',
            _ => 'U',
        });
        return;
    }
    out.push(char::from_u32(value).unwrap_or('\u{fffd}'));
}
