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

/// How a value is inserted: as is, or as a reference to its environment variable
/// (`run:`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Insert {
    AsIs,
    Shell,
}

/// A `${{ matrix … }}` that is not a reference drover can read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct TemplateError(pub String);

/// A reference in a shell command where drover's `"${DROVER_MATRIX_KEY}"` would not be
/// one quoted word: inside quotes, or after a `\`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub(crate) struct ShellPlacement {
    pub key: String,
    /// Which reference to `key` it is in the string (0: the first), to find where it is
    /// written.
    pub nth: usize,
    pub message: String,
}

/// The environment variable a setup step or check gets `key`'s value in:
/// `DROVER_MATRIX_` and the key, each `-` written `_` (`DROVER_MATRIX_base-url` is no
/// name bash can expand).
pub fn env_name(key: &str) -> String {
    format!("DROVER_MATRIX_{}", key.replace('-', "_"))
}

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

    /// A shell command's references must stand outside quotes and not after a `\\`:
    /// drover writes `"${DROVER_MATRIX_KEY}"` in a reference's place, whose quotes would
    /// otherwise be part of the text. This keeps a command meaning what it says; it is no
    /// safety boundary (the value is never in the text), so following the quoting as far
    /// as quotes and backslashes is enough.
    pub(crate) fn check_shell(&self) -> Result<(), ShellPlacement> {
        let mut quote = Quote::None;
        let mut seen: Vec<&str> = Vec::new();
        for piece in &self.pieces {
            match piece {
                Piece::Text(text) => quote = quote.after(text),
                Piece::Value(key) => {
                    let nth = seen.iter().filter(|seen| **seen == key).count();
                    seen.push(key);
                    let message = match quote {
                        Quote::None => continue,
                        Quote::Escaped => format!(
                            "${{{{ matrix.{key} }}}} follows a `\\` in a shell command: remove the backslash; drover puts \"${{{}}}\" there, one word, the value in the environment",
                            env_name(key)
                        ),
                        Quote::Single | Quote::Double => format!(
                            "${{{{ matrix.{key} }}}} is inside quotes in a shell command: write it unquoted; drover puts \"${{{}}}\" there, one word, the value in the environment",
                            env_name(key)
                        ),
                    };
                    return Err(ShellPlacement {
                        key: key.clone(),
                        nth,
                        message,
                    });
                }
            }
        }
        Ok(())
    }

    /// The string with `values` in the references' places (`Insert::AsIs`), or with
    /// `"${DROVER_MATRIX_KEY}"` there (`Insert::Shell`: the value is given to the command
    /// in its environment, see [`env_name`]); a key `values` lacks is left to the caller,
    /// which checked every key before (it yields nothing here).
    pub(crate) fn render(&self, values: &BTreeMap<String, String>, insert: Insert) -> String {
        let mut out = String::new();
        for piece in &self.pieces {
            match (piece, insert) {
                (Piece::Text(text), _) => out.push_str(text),
                (Piece::Value(key), Insert::AsIs) => {
                    out.push_str(values.get(key).map_or("", String::as_str));
                }
                // Drover's own text, never the value: bash expands the variable when the
                // command runs, and never reads what it holds as shell syntax.
                (Piece::Value(key), Insert::Shell) => {
                    out.push_str("\"${");
                    out.push_str(&env_name(key));
                    out.push_str("}\"");
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

/// Where a shell command's text leaves the quoting, as far as drover follows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Quote {
    None,
    Single,
    Double,
    /// Outside quotes, right after a `\\` (which escapes what comes next).
    Escaped,
}

impl Quote {
    fn after(self, text: &str) -> Quote {
        let mut quote = self;
        let mut chars = text.chars();
        while let Some(c) = chars.next() {
            quote = match (quote, c) {
                (Quote::Escaped, _) => Quote::None,
                (Quote::None, '\\') => Quote::Escaped,
                (Quote::Double, '\\') => {
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
