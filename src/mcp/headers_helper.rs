//! A `url:` server's headers helper (Claude Code's `headersHelper`, the spec's
//! `headers_helper:`): a shell command run when drover connects, whose stdout is a JSON
//! object of header names to string values, sent on top of the server's `headers:`.
//!
//! A `.mcp.json` comes from the repository under test, so its helper is untrusted code,
//! like its stdio servers' commands: it runs as they do, in the server's sandbox (the
//! task's, with the task's network setting), with the scrubbed environment the task's
//! commands get, in the workspace, stdin closed, within a time limit, its stdout capped
//! and its stderr kept in the server's log. It gets nothing the agent's own commands could
//! not get, so it can hand the server nothing they could not. What it prints are
//! credentials: the caller registers every value with the task's redactor before
//! anything records them, so they never reach the transcript, a log or the model.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use reqwest::header::{HeaderName, HeaderValue};

use super::http::reserved_header;
use crate::record::Redactor;
use crate::sandbox::exec::{CommandEnv, run_shell_apart};

/// How long a helper may run (Claude Code's limit), or less when the server's
/// `timeouts.startup` is shorter.
pub(crate) const HELPER_LIMIT: Duration = Duration::from_secs(10);

/// The most a helper may print on stdout: a few headers, never a stream.
const MAX_STDOUT: usize = 64 * 1024;

/// Header names to the values a helper printed.
pub(crate) type Headers = BTreeMap<String, String>;

/// One run of a helper.
pub(crate) struct Helper<'a> {
    /// The field as its file spells it (`headersHelper` or `headers_helper`), for messages.
    pub field: &'static str,
    pub server: &'a str,
    /// The server's URL as drover reaches it (`CLAUDE_CODE_MCP_SERVER_URL`).
    pub url: &'a str,
    pub command: &'a str,
    /// The task's command environment with the server's sandbox.
    pub env: &'a CommandEnv,
    /// The server's `env:` entries, expanded (only a spec's server has any).
    pub extra_env: &'a [(String, String)],
    pub workspace: &'a Path,
    /// Where the helper's stderr is kept (the server's `mcp-<server>.log`).
    pub log: PathBuf,
    pub limit: Duration,
    /// The helper comes from a file of the repository under test (a `.mcp.json`). It runs
    /// with what the agent's own commands get, so what it prints is no secret of
    /// drover's, and registering it everywhere would let the file choose what drover
    /// hides (a word, a tool's name, the start of a real secret so that the secret is
    /// no longer found): its values are kept out of its own log and messages only.
    pub from_repository: bool,
}

/// Why a helper gave no headers. Never holds what it printed on stdout: that may be a
/// credential not yet registered for redaction.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HelperError {
    #[error("its {field} ({command}) could not be started: {source}")]
    Spawn {
        field: &'static str,
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error("its {field} ({command}) did not finish within {limit:?}{said}")]
    Timeout {
        field: &'static str,
        command: String,
        limit: Duration,
        said: String,
    },
    #[error("its {field} ({command}) failed ({status}){said}")]
    Failed {
        field: &'static str,
        command: String,
        status: String,
        said: String,
    },
    #[error(
        "its {field} ({command}) printed {problem}; it must print a JSON object of header names to string values, such as {{\"Authorization\": \"Bearer …\"}}"
    )]
    Output {
        field: &'static str,
        command: String,
        problem: OutputProblem,
    },
}

/// What is wrong with a helper's stdout, in words that never quote a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum OutputProblem {
    #[error("more than {MAX_STDOUT} bytes")]
    TooLong,
    #[error("nothing")]
    Empty,
    #[error("text that is not JSON ({0})")]
    NotJson(String),
    #[error("JSON that is not an object (a {0})")]
    NotObject(&'static str),
    #[error("a value for header {0} that is not a string (a {1})")]
    NotString(String, &'static str),
    #[error("a name that is not a valid HTTP header name")]
    BadName,
    #[error("header {0}, which the MCP transport sets itself")]
    Reserved(String),
    #[error("a value for header {0} that is not a valid HTTP header value (a line break?)")]
    BadValue(String),
    #[error("header {0} twice (header names are case-insensitive)")]
    Twice(String),
}

/// Run the helper and read the headers it prints; every value is registered with
/// `redactor` before this returns, and its stderr is written to its log, redacted.
pub(crate) async fn run(helper: &Helper<'_>, redactor: &Redactor) -> Result<Headers, HelperError> {
    let command = shown(helper.command);
    let mut vars: Vec<(&str, &OsStr)> = vec![
        ("CLAUDE_CODE_MCP_SERVER_NAME", OsStr::new(helper.server)),
        ("CLAUDE_CODE_MCP_SERVER_URL", OsStr::new(helper.url)),
    ];
    vars.extend(
        helper
            .extra_env
            .iter()
            .map(|(name, value)| (name.as_str(), OsStr::new(value))),
    );
    let outcome = run_shell_apart(
        helper.command,
        helper.workspace,
        helper.limit,
        &vars,
        helper.env,
    )
    .await
    .map_err(|source| HelperError::Spawn {
        field: helper.field,
        command: command.clone(),
        source,
    })?;
    // The values are registered first, whatever else is wrong with the output: its
    // stderr (a `set -x` trace) and every later line are redacted of them (a
    // repository's helper: only its own log and messages).
    let local;
    let redactor = if helper.from_repository {
        local = own_redactor(&outcome.stdout);
        &local
    } else {
        register(helper, &printed_values(&outcome.stdout), redactor);
        redactor
    };
    let command = redactor.redact(&command).into_owned();
    let parsed = parse_headers(&outcome.stdout);
    let stderr = redactor.redact(&outcome.stderr).into_owned();
    // The log is kept for the user; a log that cannot be written loses no header.
    let _ = std::fs::write(&helper.log, &stderr);
    let said = said(&stderr);
    if outcome.timed_out {
        return Err(HelperError::Timeout {
            field: helper.field,
            command,
            limit: helper.limit,
            said,
        });
    }
    if outcome.exit_code != Some(0) {
        let status = match outcome.exit_code {
            Some(code) => format!("exit status {code}"),
            None => "killed by a signal".to_string(),
        };
        return Err(HelperError::Failed {
            field: helper.field,
            command,
            status,
            said,
        });
    }
    parsed.map_err(|problem| HelperError::Output {
        field: helper.field,
        command,
        problem,
    })
}

/// A redactor of what a repository's helper printed (and each value's last word), for
/// its own log and messages only.
fn own_redactor(stdout: &str) -> Redactor {
    let redactor = Redactor::default();
    redactor.add(
        printed_values(stdout)
            .iter()
            .flat_map(|(name, value)| with_last_word(name, value)),
    );
    redactor
}

/// A printed value as secrets, labelled: the value, and a `Bearer <token>`'s token alone.
fn with_last_word(label: &str, value: &str) -> Vec<(String, String)> {
    let mut secrets = vec![(label.to_string(), value.to_string())];
    if let Some((_, token)) = value.trim().rsplit_once(' ') {
        secrets.push((format!("{label} (its last word)"), token.to_string()));
    }
    secrets
}

/// Every string a helper printed in a JSON object, by its name, whether or not the
/// output is valid headers.
fn printed_values(stdout: &str) -> BTreeMap<String, String> {
    let Ok(serde_json::Value::Object(object)) = serde_json::from_str(stdout.trim()) else {
        return BTreeMap::new();
    };
    object
        .into_iter()
        .filter_map(|(name, value)| match value {
            serde_json::Value::String(value) => Some((name, value)),
            _ => None,
        })
        .collect()
}

/// Every value a spec's helper gave, as a secret of the task; a `Bearer <token>`'s token
/// alone too. A credential header's value too short to redact is named in a warning.
fn register(helper: &Helper<'_>, headers: &BTreeMap<String, String>, redactor: &Redactor) {
    for (name, value) in headers {
        let label = format!(
            "MCP server {}'s {} header {name}",
            helper.server, helper.field
        );
        let skipped = redactor.add(with_last_word(&label, value));
        if credential_header(name) {
            for skipped in skipped {
                crate::esay!("drover: warning: {}", skipped.warning());
            }
        }
    }
}

/// A header whose value is a credential: `Authorization`, `Proxy-Authorization`,
/// `Cookie`, or a secret-looking name such as `X-Api-Key`.
pub(crate) fn credential_header(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    matches!(
        lower.as_str(),
        "authorization" | "proxy-authorization" | "cookie"
    ) || crate::record::secret_names::looks_secret(&lower.replace('-', "_"))
}

/// The headers a helper printed: a JSON object of valid header names (none the transport
/// sets itself, none twice) to string values that can be sent.
pub(crate) fn parse_headers(stdout: &str) -> Result<Headers, OutputProblem> {
    if stdout.len() > MAX_STDOUT {
        return Err(OutputProblem::TooLong);
    }
    let text = stdout.trim();
    if text.is_empty() {
        return Err(OutputProblem::Empty);
    }
    // serde_json's syntax errors name a line and column, never the text.
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|error| OutputProblem::NotJson(syntax_only(&error)))?;
    let serde_json::Value::Object(object) = value else {
        return Err(OutputProblem::NotObject(kind(&value)));
    };
    let mut headers = BTreeMap::new();
    let mut seen = Vec::new();
    for (name, value) in object {
        let header = HeaderName::from_bytes(name.as_bytes()).map_err(|_| OutputProblem::BadName)?;
        if reserved_header(header.as_str()) {
            return Err(OutputProblem::Reserved(name));
        }
        if seen.contains(&header) {
            return Err(OutputProblem::Twice(name));
        }
        seen.push(header);
        let serde_json::Value::String(value) = value else {
            return Err(OutputProblem::NotString(name, kind(&value)));
        };
        if HeaderValue::from_str(&value).is_err() {
            return Err(OutputProblem::BadValue(name));
        }
        headers.insert(name, value);
    }
    Ok(headers)
}

/// A JSON error's kind and place, without the text it quotes (an invalid token may be
/// the start of a credential).
fn syntax_only(error: &serde_json::Error) -> String {
    format!("line {} column {}", error.line(), error.column())
}

fn kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "boolean",
        serde_json::Value::Number(_) => "number",
        serde_json::Value::String(_) => "string",
        serde_json::Value::Array(_) => "array",
        serde_json::Value::Object(_) => "object",
    }
}

/// The command as messages show it: one line, at most 120 characters.
fn shown(command: &str) -> String {
    let line = command.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(120) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

/// The end of what the helper said on stderr, for its failure's message: at most the
/// last 3 lines and 400 bytes, already redacted.
fn said(stderr: &str) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect();
    let tail = lines[lines.len().saturating_sub(3)..].join(" | ");
    if tail.is_empty() {
        return String::new();
    }
    let mut start = tail.len().saturating_sub(400);
    while !tail.is_char_boundary(start) {
        start += 1;
    }
    format!("; its stderr ends: {}", &tail[start..])
}

#[cfg(test)]
#[path = "headers_helper_tests.rs"]
mod tests;
