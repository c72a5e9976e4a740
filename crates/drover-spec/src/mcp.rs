//! `mcp:` in a task spec: the MCP servers whose tools join the built-in ones, offered
//! as `mcp__<server>__<tool>`.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::referenced::{JsonError, NoSandbox};
use super::sandbox::SandboxSpec;
use super::values::SpecDuration;

/// The task's MCP servers and their limits.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpSpec {
    /// By name (`[A-Za-z0-9_-]`, no `__`): the name is part of every tool's name.
    #[serde(default)]
    pub servers: BTreeMap<String, McpServerSpec>,
    /// Claude Code's `.mcp.json` (`{"mcpServers": {...}}`), relative to the spec file:
    /// its servers join these (a name in both is an error).
    #[serde(default)]
    pub config: Option<String>,
    /// Defaults for every server: `startup` 30s, `call` 120s.
    #[serde(default)]
    pub timeouts: McpTimeouts,
    /// Tokens (estimated at 4 bytes each) one tool result may hold; longer results are
    /// cut with a note. Default 25,000.
    #[serde(default)]
    pub max_output: Option<u64>,
}

/// One server: a command speaking MCP over its stdin and stdout, or a `url:`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerSpec {
    /// The program to start (looked up in `PATH`, or relative to `cwd`).
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    /// Added to the server's (scrubbed) environment; `${VAR}` and `${VAR:-default}` are
    /// taken from drover's environment. On a `url:` server, its `headers_helper`'s.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Where the server starts, relative to the spec file (default: the workspace).
    #[serde(default)]
    pub cwd: Option<String>,
    /// The server's sandbox: by default the task's, with the network off. On a `url:`
    /// server, its `headers_helper`'s.
    #[serde(default)]
    pub sandbox: Option<SandboxSpec>,
    /// A streamable HTTP server, instead of `command:`: drover connects, it starts nothing.
    #[serde(default)]
    pub url: Option<String>,
    /// Sent with every request to a `url:` server; `${VAR}` and `${VAR:-default}` are
    /// taken from drover's environment (and their values redacted like secrets).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// A shell command run when drover connects to a `url:` server (Claude Code's
    /// `headersHelper`): its stdout, a JSON object of header names to string values, is
    /// sent on top of `headers:`. It runs in the server's sandbox like a stdio server's
    /// command, and the values it gives are redacted like secrets (see docs/mcp.md).
    #[serde(default)]
    pub headers_helper: Option<String>,
    /// A required server that fails to start ends the task (`mcp_unavailable`) before
    /// any model request; an optional one is left out with a warning. Default true.
    #[serde(default = "required_by_default")]
    pub required: bool,
    /// This server's own limits (what it leaves out comes from `mcp.timeouts`).
    #[serde(default)]
    pub timeouts: Option<McpTimeouts>,
    /// It came from `mcp.config`'s file, not the spec: such a server takes from drover's
    /// environment only what the task's commands get, and may be a `url:` server only
    /// where the task's commands have the network (see docs/mcp.md).
    #[serde(skip)]
    pub from_config: bool,
}

fn required_by_default() -> bool {
    true
}

/// How long a server may take to start (and list its tools), and one call.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpTimeouts {
    #[serde(default)]
    pub startup: Option<SpecDuration>,
    #[serde(default)]
    pub call: Option<SpecDuration>,
}

/// A server of Claude Code's `.mcp.json`: `command`/`args`/`env`, or `type: http` with
/// `url`/`headers`/`headersHelper` (`sse`, the older transport, is refused by name).
/// Fields drover does not use are named in a note, as Claude Code's file may carry more.
#[derive(Debug, Deserialize)]
struct ClaudeServer {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default, rename = "headersHelper")]
    headers_helper: Option<String>,
    /// Claude Code's format has none; drover's is refused (see `referenced`).
    #[serde(default, rename = "sandbox")]
    _sandbox: NoSandbox,
    /// Every other key: named in a note, never dropped silently.
    #[serde(flatten)]
    other: BTreeMap<String, serde_json::Value>,
}

#[derive(Debug, Deserialize)]
struct ClaudeConfig {
    #[serde(rename = "mcpServers", default)]
    servers: Option<BTreeMap<String, ClaudeServer>>,
    /// Other top-level keys: a plugin's servers, or keys named in a note.
    #[serde(flatten)]
    other: BTreeMap<String, serde_json::Value>,
}

/// Why a `.mcp.json` cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum McpConfigError {
    #[error("{0}")]
    Sandbox(JsonError),
    #[error(
        "{}:{}: not Claude Code's .mcp.json format ({{\"mcpServers\": {{...}}}}): {}",
        .0.line,
        .0.column,
        .0.message
    )]
    Format(JsonError),
}

/// Why a `type: sse` server is left out, and what to give instead.
const SSE_REPLACED: &str = "type \"sse\" is the HTTP+SSE transport MCP replaced in 2025-03-26, which drover does not speak; give the server's streamable HTTP endpoint as type \"http\"";

impl McpConfigError {
    /// The error with the file's path in front (and its line and column when known).
    pub fn in_file(&self, path: &std::path::Path) -> String {
        format!("{}:{self}", path.display())
    }
}

/// The keys `server` sets that only the other kind of server uses (`env` on an http
/// server, `url` on a stdio one).
fn other_kinds_keys(server: &ClaudeServer, remote: bool) -> Vec<&'static str> {
    let set = if remote {
        [
            ("command", server.command.is_some()),
            ("args", !server.args.is_empty()),
            ("env", !server.env.is_empty()),
        ]
    } else {
        [
            ("url", server.url.is_some()),
            ("headers", !server.headers.is_empty()),
            ("headersHelper", false),
        ]
    };
    set.into_iter()
        .filter(|(_, given)| *given)
        .map(|(key, _)| key)
        .collect()
}

/// The servers of a Claude Code `.mcp.json`, as spec entries (required, default limits),
/// and a note for each key drover does not use and each server it leaves out. Only a
/// file that is not JSON, or not this format at all, is an error: one server drover
/// cannot use never costs the others.
pub fn servers_of_claude_config(
    text: &str,
) -> Result<(BTreeMap<String, McpServerSpec>, Vec<String>), McpConfigError> {
    let parse_error = |error: serde_json::Error| {
        let error = JsonError::from(error);
        if error.is_sandbox() {
            McpConfigError::Sandbox(error)
        } else {
            McpConfigError::Format(error)
        }
    };
    let config: ClaudeConfig = serde_json::from_str(text).map_err(parse_error)?;
    let mut notes = Vec::new();
    let entries = match config.servers {
        Some(servers) => {
            notes.extend(
                config
                    .other
                    .keys()
                    .map(|key| format!("top-level key {key:?} ignored: drover reads mcpServers")),
            );
            servers
        }
        // A plugin's `.mcp.json` may hold its servers at the top level.
        None if !config.other.is_empty() && config.other.values().all(looks_like_server) => {
            serde_json::from_str(text).map_err(parse_error)?
        }
        None => {
            notes.extend(config.other.keys().map(|key| {
                format!("top-level key {key:?} ignored: it is not mcpServers, and not a server")
            }));
            BTreeMap::new()
        }
    };
    let mut servers = BTreeMap::new();
    for (name, server) in entries {
        match server_entry(&name, server, &mut notes) {
            Ok(entry) => {
                servers.insert(name, entry);
            }
            Err(why) => notes.push(format!("server {name} left out: {why}")),
        }
    }
    Ok((servers, notes))
}

/// Why a server of a `.mcp.json` is left out (the rest of the file is used).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct LeftOut(String);

/// A top-level value of a plugin's `.mcp.json` that is a server, not some other key.
fn looks_like_server(value: &serde_json::Value) -> bool {
    value.as_object().is_some_and(|entry| {
        ["command", "url", "type"]
            .iter()
            .any(|key| entry.contains_key(*key))
    })
}

/// One server of the file as a spec entry, with notes on the keys it does not use; the
/// error says why drover cannot use the server at all.
fn server_entry(
    name: &str,
    server: ClaudeServer,
    notes: &mut Vec<String>,
) -> Result<McpServerSpec, LeftOut> {
    for key in server.other.keys() {
        notes.push(format!(
            "server {name}: key {key:?} ignored: drover does not use it"
        ));
    }
    let remote = match server.kind.as_deref() {
        None => server.command.is_none() && server.url.is_some(),
        Some("stdio") if server.command.is_none() => {
            return Err(LeftOut(
                "type \"stdio\" needs a command (a url: server is type \"http\")".to_string(),
            ));
        }
        Some("stdio") => false,
        Some("http") => true,
        Some("sse") => return Err(LeftOut(SSE_REPLACED.to_string())),
        Some(kind) => {
            return Err(LeftOut(format!(
                "type {kind:?} is not one drover knows (stdio, http)"
            )));
        }
    };
    if !remote && server.headers_helper.is_some() {
        notes.push(format!(
            "server {name}: headersHelper ignored: it makes the headers of an http server, and this is a stdio server"
        ));
    }
    notes.extend(other_kinds_keys(&server, remote).into_iter().map(|key| {
        let (this, other) = if remote {
            ("an http", "stdio")
        } else {
            ("a stdio", "http")
        };
        format!("server {name}: key {key:?} ignored: it is for {other} servers, and this is {this} server")
    }));
    // What the other kind of server would use is left out: Claude Code ignores it too.
    let entry = McpServerSpec {
        command: if remote { None } else { server.command },
        args: if remote { Vec::new() } else { server.args },
        env: if remote { BTreeMap::new() } else { server.env },
        cwd: None,
        sandbox: None,
        url: if remote { server.url } else { None },
        headers: if remote {
            server.headers
        } else {
            BTreeMap::new()
        },
        headers_helper: if remote { server.headers_helper } else { None },
        required: true,
        timeouts: None,
        from_config: true,
    };
    match server_problem(name, &entry) {
        Some(problem) => Err(LeftOut(problem)),
        None => Ok(entry),
    }
}

/// Why a server entry cannot be used; the spec check names the server.
pub fn server_problem(name: &str, server: &McpServerSpec) -> Option<String> {
    let blank = |text: &str| text.trim().is_empty();
    let valid_char = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    // `mcp__a` must cover server a's tools and no other server's: a name with `__`, or
    // one that starts or ends with `_`, could make `mcp__a__` the prefix of another's.
    let blurs = name.contains("__") || name.starts_with('_') || name.ends_with('_');
    if name.is_empty() || !name.chars().all(valid_char) || blurs {
        return Some(format!(
            "MCP server name {name:?} must be letters, digits, '_' and '-', without \"__\" and not starting or ending with '_' (it is part of every tool name: mcp__<server>__<tool>)"
        ));
    }
    match (&server.command, &server.url) {
        (Some(_), Some(_)) => Some(format!(
            "mcp.servers.{name} has both command: (a stdio server) and url: (an HTTP server); keep one"
        )),
        (Some(command), None) if blank(command) => Some(format!(
            "mcp.servers.{name}: command: is empty (the program that speaks MCP over stdio)"
        )),
        (Some(_), None) if !server.headers.is_empty() || server.headers_helper.is_some() => Some(
            format!("mcp.servers.{name}: headers: and headers_helper: apply to url: servers only"),
        ),
        (None, Some(_)) if server.cwd.is_some() || !server.args.is_empty() => Some(format!(
            "mcp.servers.{name}: cwd: and args: apply to command: servers only (drover does not start a url: server)"
        )),
        (None, Some(_))
            if server.headers_helper.is_none()
                && (server.sandbox.is_some() || !server.env.is_empty()) =>
        {
            Some(format!(
                "mcp.servers.{name}: sandbox: and env: apply to command: servers only, and to a url: server's headers_helper: (drover does not start a url: server); a url: server takes headers:"
            ))
        }
        (None, Some(_)) if server.headers_helper.as_deref().is_some_and(blank) => Some(format!(
            "mcp.servers.{name}: headers_helper: is empty (a shell command printing a JSON object of headers)"
        )),
        (Some(_), None) | (None, Some(_)) => None,
        (None, None) => Some(format!(
            "mcp.servers.{name} needs command: (a program that speaks MCP over stdio) or url: (a streamable HTTP server)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_code_configs_become_server_entries() {
        let text = r#"{"mcpServers": {
            "fs": {"command": "npx", "args": ["-y", "server-fs", "."], "env": {"A": "1"}, "disabled": false},
            "docs": {"type": "http", "url": "http://127.0.0.1:3001/mcp", "headers": {"X": "y"}},
            "old": {"url": "http://127.0.0.1:3002/sse"}
        }}"#;
        let (servers, _) = servers_of_claude_config(text).unwrap();
        let fs = &servers["fs"];
        assert_eq!(fs.command.as_deref(), Some("npx"));
        assert_eq!(fs.args, ["-y", "server-fs", "."]);
        assert_eq!(fs.env["A"], "1");
        assert!(fs.required && fs.url.is_none());
        assert_eq!(
            servers["docs"].url.as_deref(),
            Some("http://127.0.0.1:3001/mcp")
        );
        assert!(servers["docs"].command.is_none());
        assert!(servers["old"].url.is_some());
        assert!(server_problem("docs", &servers["docs"]).is_none());
        assert!(server_problem("fs", fs).is_none());
    }

    #[test]
    fn a_server_drover_cannot_use_is_left_out_with_a_note_and_the_others_load() {
        let (servers, notes) = servers_of_claude_config(
            r#"{"mcpServers": {
                "ws": {"type": "ws"},
                "old": {"type": "sse", "url": "http://h/sse"},
                "blank": {"command": " "},
                "bad__name": {"command": "x"},
                "fs": {"command": "srv"}
            }}"#,
        )
        .unwrap();
        assert_eq!(servers.keys().collect::<Vec<_>>(), vec!["fs"]);
        for expected in [
            "server ws left out: type \"ws\" is not one drover knows",
            "server old left out: type \"sse\" is the HTTP+SSE transport",
            "server blank left out: ",
            "server bad__name left out: ",
        ] {
            assert!(
                notes.iter().any(|note| note.starts_with(expected)),
                "{expected} not in {notes:?}"
            );
        }
        assert!(servers_of_claude_config("[1]").is_err());
        assert!(servers_of_claude_config("{}").unwrap().0.is_empty());
    }

    #[test]
    fn a_plugins_servers_at_the_top_level_are_read_and_other_keys_are_named() {
        let (servers, notes) =
            servers_of_claude_config(r#"{"meigen": {"command": "npx", "args": ["-y", "m"]}}"#)
                .unwrap();
        assert_eq!(servers["meigen"].command.as_deref(), Some("npx"));
        assert!(notes.is_empty(), "{notes:?}");
        let (servers, notes) =
            servers_of_claude_config(r#"{"mcpServers": {}, "version": 2}"#).unwrap();
        assert!(servers.is_empty());
        assert_eq!(
            notes,
            vec!["top-level key \"version\" ignored: drover reads mcpServers"]
        );
        let (servers, notes) = servers_of_claude_config(r#"{"servers": [1]}"#).unwrap();
        assert!(servers.is_empty());
        assert!(notes[0].contains("\"servers\""), "{notes:?}");
    }

    #[test]
    fn a_config_file_chooses_no_sandbox_and_its_servers_say_where_they_came_from() {
        let text = "{\"mcpServers\": {\"x\": {\n  \"command\": \"srv\",\n  \"sandbox\": {\"network\": true}\n}}}";
        let error = servers_of_claude_config(text).unwrap_err();
        let shown = error.in_file(std::path::Path::new("ws/.mcp.json"));
        assert!(shown.starts_with("ws/.mcp.json:3:"), "{shown}");
        assert!(shown.contains("`sandbox` cannot be set"), "{shown}");
        assert!(!shown.contains("not Claude Code's"), "{shown}");
        let bad = servers_of_claude_config("{\"mcpServers\": 1}").unwrap_err();
        let shown = bad.in_file(std::path::Path::new("m.json"));
        assert!(shown.starts_with("m.json:1:"), "{shown}");
        assert!(
            shown.contains("not Claude Code's .mcp.json format"),
            "{shown}"
        );
        let servers = servers_of_claude_config(r#"{"mcpServers": {"x": {"command": "srv"}}}"#)
            .unwrap()
            .0;
        assert!(servers["x"].from_config);
    }

    #[test]
    fn a_headers_helper_is_kept_for_http_servers_and_named_for_stdio_ones() {
        let text = r#"{"mcpServers": {
            "docs": {"type": "http", "url": "http://127.0.0.1:1/mcp", "headersHelper": "./token.sh"},
            "local": {"command": "srv", "headersHelper": "./token.sh"}
        }}"#;
        let (servers, notes) = servers_of_claude_config(text).unwrap();
        assert_eq!(
            servers["docs"].headers_helper.as_deref(),
            Some("./token.sh")
        );
        assert!(server_problem("docs", &servers["docs"]).is_none());
        assert!(servers["local"].headers_helper.is_none());
        assert_eq!(
            notes,
            [
                "server local: headersHelper ignored: it makes the headers of an http server, and this is a stdio server"
            ]
        );
        let number = servers_of_claude_config(
            r#"{"mcpServers": {"docs": {"url": "http://h/", "headersHelper": 5}}}"#,
        )
        .unwrap_err();
        assert!(number.to_string().contains("not Claude Code's"), "{number}");
    }

    #[test]
    fn keys_of_the_other_kind_of_server_are_named_not_dropped() {
        let (_, notes) = servers_of_claude_config(
            r#"{"mcpServers": {
                "web": {"type": "http", "url": "http://h/mcp", "env": {"A": "1"}, "command": "x"},
                "local": {"command": "x", "headers": {"H": "v"}}
            }}"#,
        )
        .unwrap();
        for expected in [
            "server web: key \"env\" ignored: it is for stdio servers, and this is an http server",
            "server web: key \"command\" ignored",
            "server local: key \"headers\" ignored: it is for http servers, and this is a stdio server",
        ] {
            assert!(
                notes.iter().any(|note| note.starts_with(expected)),
                "{expected} not in {notes:?}"
            );
        }
    }

    #[test]
    fn a_spec_url_server_gives_its_headers_helper_an_env_and_a_sandbox() {
        let server = |yaml: &str| -> McpServerSpec { serde_saphyr::from_str(yaml).unwrap() };
        let helper = server(
            "url: http://127.0.0.1:1/mcp\nheaders_helper: ./token.sh\nenv: { VAULT_TOKEN: \"${VAULT_TOKEN}\" }\nsandbox: { network: true }\n",
        );
        assert_eq!(server_problem("docs", &helper), None);
        let cases = [
            (
                "url: http://h/\nenv: { A: b }\n",
                "apply to command: servers only, and to a url: server's headers_helper",
            ),
            (
                "url: http://h/\nsandbox: off\n",
                "apply to command: servers only, and to a url: server's headers_helper",
            ),
            (
                "url: http://h/\nheaders_helper: \" \"\n",
                "headers_helper: is empty",
            ),
            (
                "url: http://h/\nheaders_helper: x\ncwd: tools\n",
                "cwd: and args: apply to command: servers only",
            ),
            (
                "command: srv\nheaders_helper: ./token.sh\n",
                "headers: and headers_helper: apply to url: servers only",
            ),
        ];
        for (yaml, expected) in cases {
            let problem = server_problem("docs", &server(yaml)).unwrap();
            assert!(problem.contains(expected), "{yaml}: {problem}");
        }
    }
}
