//! Files a spec loads by reference — the `.mcp.json` of `mcp.config`, the Claude Code
//! settings of `hooks_from`, the agent files of `agents_from` — usually live in the
//! repository under test, which a pull request from a fork controls. What they add runs
//! in the task's sandbox as the spec sets it: none of them can choose a sandbox. Their
//! formats (Claude Code's) have no `sandbox` key; one written there anyway is refused at
//! its line and column rather than half-honoured.

use std::fmt;

use serde::{Deserialize, Deserializer};

/// Why a `sandbox` key in such a file is refused, and what to do instead.
pub(crate) const NO_SANDBOX_HERE: &str = "`sandbox` cannot be set in a file the spec loads by reference (it may come from the pull request under test): what the file adds runs in the task's sandbox as the spec sets it; to give a server or hook a sandbox of its own, write it in the spec itself (mcp.servers, hooks:) with its sandbox:";

/// A `sandbox` field of such a file: absent is the only value it deserializes from.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct NoSandbox;

impl<'de> Deserialize<'de> for NoSandbox {
    fn deserialize<D: Deserializer<'de>>(_: D) -> Result<Self, D::Error> {
        Err(serde::de::Error::custom(NO_SANDBOX_HERE))
    }
}

/// What is wrong in such a JSON file, at its line and column (1-based).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct JsonError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl JsonError {
    /// The file's `sandbox` key was the problem.
    pub fn is_sandbox(&self) -> bool {
        self.message == NO_SANDBOX_HERE
    }
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.column, self.message)
    }
}

impl From<serde_json::Error> for JsonError {
    fn from(error: serde_json::Error) -> Self {
        let (line, column) = (error.line(), error.column());
        let text = error.to_string();
        // serde_json ends its message with the position, which is kept apart here.
        let message = without_quoted_value(
            text.strip_suffix(&format!(" at line {line} column {column}"))
                .unwrap_or(&text),
        );
        JsonError {
            line,
            column,
            message,
        }
    }
}

/// serde_json's message without the value it quotes (`invalid type: string "…",
/// expected …`): the file may be a link to a secret, and errors reach CI logs.
fn without_quoted_value(message: &str) -> String {
    for prefix in ["invalid type: ", "invalid value: "] {
        if let Some(rest) = message.strip_prefix(prefix)
            && let Some(at) = rest.find(", expected ")
        {
            let kind: Vec<&str> = rest[..at]
                .split(' ')
                .take_while(|word| !word.starts_with(['"', '`']))
                .collect();
            return format!("{prefix}{}{}", kind.join(" "), &rest[at..]);
        }
    }
    message.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    struct Entry {
        #[serde(default, rename = "sandbox")]
        _sandbox: NoSandbox,
        #[serde(default)]
        command: Option<String>,
    }

    #[test]
    fn a_value_of_the_wrong_type_is_named_by_its_kind_never_quoted() {
        for text in [r#""ghp_SECRET123""#, "98765", "{\"command\": 12345}"] {
            let error = JsonError::from(serde_json::from_str::<Entry>(text).unwrap_err());
            let shown = error.to_string();
            assert!(shown.contains("invalid type: "), "{shown}");
            for secret in ["ghp_SECRET123", "98765", "12345"] {
                assert!(!shown.contains(secret), "{shown}");
            }
        }
    }

    #[test]
    fn a_sandbox_key_is_refused_at_its_line_and_column() {
        let text = "{\n  \"command\": \"x\",\n  \"sandbox\": \"off\"\n}";
        let error = JsonError::from(serde_json::from_str::<Entry>(text).unwrap_err());
        assert_eq!((error.line, error.column), (3, 13), "{error}");
        assert!(error.is_sandbox(), "{error}");
        assert!(
            error
                .to_string()
                .starts_with("3:13: `sandbox` cannot be set")
        );
        let entry: Entry = serde_json::from_str("{\"command\": \"x\"}").unwrap();
        assert_eq!(entry.command.as_deref(), Some("x"));
    }

    #[test]
    fn other_errors_keep_their_message_and_position() {
        let error = JsonError::from(serde_json::from_str::<Entry>("{\"command\": 1}").unwrap_err());
        assert_eq!(error.line, 1);
        assert!(error.message.starts_with("invalid type"), "{error}");
        assert!(!error.is_sandbox());
    }
}
