//! `${{ matrix.KEY }}` in a spec's string: where a matrix entry's value goes. A string is
//! read once into literal text and references, and an entry's values are put in the
//! references' places, so a value is never read for references itself (a value holding
//! `${{ matrix.other }}` is inserted as those characters). Other `${{ … }}` expressions
//! (a GitHub Actions workflow quoted in a prompt) are left as written; `$${{ matrix.KEY }}`
//! writes `${{ matrix.KEY }}` itself.

use std::collections::BTreeMap;

/// One part of a string: text as written, or a reference to an entry's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Piece {
    Text(String),
    Value(String),
}

/// A string read for references.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Template {
    pub pieces: Vec<Piece>,
}

/// How a value is inserted: as is, or quoted for bash as one word (`run:`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Insert {
    AsIs,
    Shell,
}

/// A `${{ matrix … }}` that is not a reference drover can read, or one inside quotes in a
/// shell command.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct TemplateError(pub String);

const OPEN: &str = "${{";
const CLOSE: &str = "}}";

/// Whether `key` may name a matrix value: `[A-Za-z_][A-Za-z0-9_-]*`.
pub(crate) fn valid_key(key: &str) -> bool {
    let mut chars = key.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
}

/// Whether the text of a `${{ … }}` is meant as a matrix reference: it starts with the
/// word `matrix`.
fn meant_for_matrix(inner: &str) -> bool {
    inner
        .trim_start()
        .strip_prefix("matrix")
        .is_some_and(|rest| !rest.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_'))
}

impl Template {
    /// `text` read for references; an error for a `${{ matrix … }}` that is not
    /// `${{ matrix.KEY }}`.
    pub(crate) fn parse(text: &str) -> Result<Template, TemplateError> {
        let mut pieces = Vec::new();
        let mut literal = String::new();
        let mut rest = text;
        while let Some(open) = rest.find(OPEN) {
            literal.push_str(&rest[..open]);
            let after = &rest[open + OPEN.len()..];
            let Some(close) = after.find(CLOSE) else {
                if meant_for_matrix(after) {
                    return Err(TemplateError(
                        "`${{ matrix.` is not closed: write ${{ matrix.KEY }}".to_string(),
                    ));
                }
                literal.push_str(OPEN);
                rest = after;
                continue;
            };
            let inner = &after[..close];
            let whole = &rest[open..open + OPEN.len() + close + CLOSE.len()];
            rest = &after[close + CLOSE.len()..];
            if !meant_for_matrix(inner) {
                literal.push_str(whole);
                continue;
            }
            if literal.ends_with('$') {
                // `$${{ matrix.KEY }}`: the reference written out.
                literal.pop();
                literal.push_str(whole);
                continue;
            }
            let key = key_of(inner)?;
            if !literal.is_empty() {
                pieces.push(Piece::Text(std::mem::take(&mut literal)));
            }
            pieces.push(Piece::Value(key.to_string()));
        }
        literal.push_str(rest);
        if !literal.is_empty() {
            pieces.push(Piece::Text(literal));
        }
        Ok(Template { pieces })
    }

    /// The keys referenced, in order, each once.
    pub(crate) fn keys(&self) -> Vec<&str> {
        let mut keys: Vec<&str> = Vec::new();
        for piece in &self.pieces {
            if let Piece::Value(key) = piece
                && !keys.contains(&key.as_str())
            {
                keys.push(key);
            }
        }
        keys
    }

    /// Whether the string references no value.
    pub(crate) fn is_plain(&self) -> bool {
        self.keys().is_empty()
    }

    /// A shell command's references must stand outside quotes: drover quotes each value
    /// as one word, and inside `"…"` or `'…'` those quotes would be part of the word.
    pub(crate) fn check_shell(&self) -> Result<(), TemplateError> {
        let mut quote = Quote::None;
        for piece in &self.pieces {
            match piece {
                Piece::Text(text) => quote = quote.after(text),
                Piece::Value(key) if quote != Quote::None => {
                    return Err(TemplateError(format!(
                        "${{{{ matrix.{key} }}}} is inside quotes in a shell command: write it unquoted; drover inserts the value quoted as one word"
                    )));
                }
                Piece::Value(_) => {}
            }
        }
        Ok(())
    }

    /// The string with `values` in the references' places; a key `values` lacks is
    /// left to the caller, which checked every key before (it yields nothing here).
    pub(crate) fn render(&self, values: &BTreeMap<String, String>, insert: Insert) -> String {
        let mut out = String::new();
        for piece in &self.pieces {
            match piece {
                Piece::Text(text) => out.push_str(text),
                Piece::Value(key) => {
                    let value = values.get(key).map_or("", String::as_str);
                    match insert {
                        Insert::AsIs => out.push_str(value),
                        Insert::Shell => out.push_str(&bash_word(value)),
                    }
                }
            }
        }
        out
    }
}

/// The key of `matrix.KEY` (whitespace around it allowed).
fn key_of(inner: &str) -> Result<&str, TemplateError> {
    let malformed = || {
        TemplateError(format!(
            "`${{{{{inner}}}}}` is not a matrix reference: write ${{{{ matrix.KEY }}}}, KEY made of letters, digits, '_' and '-' and starting with a letter or '_'"
        ))
    };
    let key = inner.trim().strip_prefix("matrix.").ok_or_else(malformed)?;
    if valid_key(key) {
        Ok(key)
    } else {
        Err(malformed())
    }
}

/// `value` as one bash word: in single quotes, each `'` written `'\''`. Nothing in it is
/// expanded (`$(…)`, `;`, newlines stay literal).
pub(crate) fn bash_word(value: &str) -> String {
    format!("'{}'", value.replace('\'', r"'\''"))
}

/// Where a shell command's text leaves the quoting, as far as drover follows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Quote {
    None,
    Single,
    Double,
}

impl Quote {
    fn after(self, text: &str) -> Quote {
        let mut quote = self;
        let mut chars = text.chars();
        while let Some(c) = chars.next() {
            quote = match (quote, c) {
                (Quote::None | Quote::Double, '\\') => {
                    chars.next();
                    quote
                }
                (Quote::None, '\'') => Quote::Single,
                (Quote::None, '"') => Quote::Double,
                (Quote::Single, '\'') | (Quote::Double, '"') => Quote::None,
                _ => quote,
            };
        }
        quote
    }
}

#[cfg(test)]
#[path = "template_tests.rs"]
mod tests;
