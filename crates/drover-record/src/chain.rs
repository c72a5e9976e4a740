//! The transcript's hash chain: every line carries `prev`, the SHA-256 (hex) of the line
//! before it (of the empty string for the first line), so a transcript that was edited,
//! had lines removed or reordered, or was cut short is detected by `drover transcript
//! verify` and refused by `drover replay`. A chain proves integrity against accidents and
//! naive edits, not authenticity: whoever can rewrite the whole file can recompute it,
//! which is why the agent never gets write access to the artifacts.

use std::fmt::Write as _;
use std::path::Path;

use sha2::{Digest, Sha256};

/// Lowercase hex SHA-256 of `bytes`: a line's hash as `prev` carries it, the same form
/// as every other digest drover writes. Computed here with sha2 so the record needs
/// nothing of the binary's `digest`.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(64);
    for byte in Sha256::digest(bytes) {
        // invariant: writing to a String cannot fail.
        let _ = write!(out, "{byte:02x}");
    }
    out
}

/// The `prev` of the first line.
pub(crate) fn genesis() -> String {
    sha256_hex(b"")
}

/// `line` (a serialized event object, no newline) with `"prev":"<hash>"` put first.
pub(crate) fn chain_line(line: &str, prev: &str) -> String {
    match line.strip_prefix('{') {
        Some("}") => format!("{{\"prev\":\"{prev}\"}}"),
        Some(rest) => format!("{{\"prev\":\"{prev}\",{rest}"),
        // Not an object: cannot happen for events; keep the line and let verify flag it.
        None => line.to_string(),
    }
}

/// What is wrong with a transcript's chain, by 1-based line number.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChainError {
    #[error("cannot read {0}")]
    Unreadable(String),
    #[error("not a JSON object")]
    NotJson { line: usize },
    #[error("no `prev` hash (written by a drover without the hash chain, or edited)")]
    Missing { line: usize },
    #[error(
        "`prev` does not match the line before it: the transcript was edited, or lines were removed or reordered"
    )]
    Broken { line: usize },
    #[error("the last line is incomplete: the transcript was cut off")]
    CutOff,
    #[error("the transcript is empty")]
    Empty,
    #[error(
        "it ends without a run_end event: the run was killed before it finished, or the transcript was truncated"
    )]
    NoRunEnd,
}

impl ChainError {
    /// The 1-based line the error is about, if it is about one.
    pub fn line(&self) -> Option<usize> {
        match self {
            ChainError::NotJson { line }
            | ChainError::Missing { line }
            | ChainError::Broken { line } => Some(*line),
            _ => None,
        }
    }

    /// The error with its place: `FILE:LINE: message` or `FILE: message`.
    pub fn at(&self, path: &Path) -> String {
        match self.line() {
            Some(line) => format!("{}:{line}: {self}", path.display()),
            None => format!("{}: {self}", path.display()),
        }
    }
}

/// How many lines a verified transcript has.
pub fn verify_file(path: &Path) -> Result<usize, ChainError> {
    let bytes = std::fs::read(path)
        .map_err(|e| ChainError::Unreadable(format!("{}: {e}", path.display())))?;
    verify(&bytes)
}

/// A transcript a run may resume from: its lines whose chain holds, and whether it was
/// cut off mid-line (that partial line is not among them).
#[derive(Debug, PartialEq, Eq)]
pub struct Resumable {
    pub lines: Vec<String>,
    pub cut_off: bool,
}

/// Verify what a killed or stopped run left: the chain of every whole line must hold (an
/// edit anywhere is refused), but the transcript may end without `run_end`, and with a
/// last line cut short by the kill, which is left out. A last line that lacks only its
/// newline (the kill came between the two) is whole.
pub fn verify_resumable(bytes: &[u8]) -> Result<Resumable, ChainError> {
    if bytes.is_empty() {
        return Err(ChainError::Empty);
    }
    let (body, tail) = match bytes.iter().rposition(|b| *b == b'\n') {
        Some(end) => (Some(&bytes[..end]), &bytes[end + 1..]),
        None => (None, bytes),
    };
    let mut chain = Chain::new();
    let mut lines = Vec::new();
    for line in body
        .into_iter()
        .flat_map(|body| body.split(|b| *b == b'\n'))
    {
        lines.push(chain.step(line)?);
    }
    let mut cut_off = false;
    if !tail.is_empty() {
        match chain.step(tail) {
            Ok(line) => lines.push(line),
            Err(_) => cut_off = true,
        }
    }
    if lines.is_empty() {
        return Err(ChainError::CutOff);
    }
    Ok(Resumable { lines, cut_off })
}

/// Verify the chain of a whole transcript's bytes.
pub fn verify(bytes: &[u8]) -> Result<usize, ChainError> {
    if bytes.is_empty() {
        return Err(ChainError::Empty);
    }
    if !bytes.ends_with(b"\n") {
        return Err(ChainError::CutOff);
    }
    let mut chain = Chain::new();
    for line in bytes[..bytes.len() - 1].split(|b| *b == b'\n') {
        chain.step(line)?;
    }
    if chain.last_type != "run_end" {
        return Err(ChainError::NoRunEnd);
    }
    Ok(chain.count)
}

/// The chain read line by line: each line must be a JSON object whose `prev` is the hash
/// of the line before.
struct Chain {
    expected: String,
    last_type: String,
    count: usize,
}

impl Chain {
    fn new() -> Chain {
        Chain {
            expected: genesis(),
            last_type: String::new(),
            count: 0,
        }
    }

    /// Check the next line and take it; the line, as text.
    fn step(&mut self, line: &[u8]) -> Result<String, ChainError> {
        let number = self.count + 1;
        let value: serde_json::Value =
            serde_json::from_slice(line).map_err(|_| ChainError::NotJson { line: number })?;
        let Some(prev) = value.get("prev").and_then(|p| p.as_str()) else {
            return Err(ChainError::Missing { line: number });
        };
        if prev != self.expected {
            return Err(ChainError::Broken { line: number });
        }
        // JSON that parsed is UTF-8.
        let text =
            String::from_utf8(line.to_vec()).map_err(|_| ChainError::NotJson { line: number })?;
        self.last_type = value
            .get("type")
            .and_then(|t| t.as_str())
            .unwrap_or_default()
            .to_string();
        self.expected = sha256_hex(line);
        self.count = number;
        Ok(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_of_empty_input_is_the_known_value() {
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    fn transcript(lines: &[&str]) -> Vec<u8> {
        let mut prev = genesis();
        let mut out = Vec::new();
        for line in lines {
            let chained = chain_line(line, &prev);
            prev = sha256_hex(chained.as_bytes());
            out.extend_from_slice(chained.as_bytes());
            out.push(b'\n');
        }
        out
    }

    #[test]
    fn a_whole_chain_verifies_and_any_change_breaks_it() {
        let good = transcript(&[
            r#"{"type":"run_start"}"#,
            r#"{"type":"tool_result","content":"ok"}"#,
            r#"{"type":"run_end"}"#,
        ]);
        assert_eq!(verify(&good), Ok(3));
        let text = String::from_utf8(good.clone()).unwrap();
        let edited = text.replace("\"ok\"", "\"KO\"");
        assert_eq!(
            verify(edited.as_bytes()),
            Err(ChainError::Broken { line: 3 })
        );
        let lines: Vec<&str> = text.lines().collect();
        let dropped = format!("{}\n{}\n", lines[0], lines[2]);
        assert_eq!(
            verify(dropped.as_bytes()),
            Err(ChainError::Broken { line: 2 })
        );
        let truncated = format!("{}\n{}\n", lines[0], lines[1]);
        assert_eq!(verify(truncated.as_bytes()), Err(ChainError::NoRunEnd));
        assert_eq!(verify(&good[..good.len() - 5]), Err(ChainError::CutOff));
        assert_eq!(verify(b""), Err(ChainError::Empty));
        assert_eq!(
            verify(b"{\"type\":\"run_end\"}\n"),
            Err(ChainError::Missing { line: 1 })
        );
    }

    #[test]
    fn a_killed_run_is_resumable_but_an_edited_one_is_not() {
        let good = transcript(&[
            r#"{"type":"run_start"}"#,
            r#"{"type":"tool_result","content":"ok"}"#,
            r#"{"type":"model_response"}"#,
        ]);
        let whole = verify_resumable(&good).unwrap();
        assert_eq!(whole.lines.len(), 3);
        assert!(!whole.cut_off);
        // kill -9 mid-write: the partial last line is left out.
        let cut = verify_resumable(&good[..good.len() - 7]).unwrap();
        assert_eq!(cut.lines.len(), 2);
        assert!(cut.cut_off);
        let text = String::from_utf8(good).unwrap();
        let edited = text.replace("\"ok\"", "\"KO\"");
        assert_eq!(
            verify_resumable(edited.as_bytes()),
            Err(ChainError::Broken { line: 3 })
        );
        assert_eq!(verify_resumable(b""), Err(ChainError::Empty));
    }
}
