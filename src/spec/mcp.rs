//! `mcp:` in a task spec: the MCP servers whose tools join the built-in ones, offered
//! as `mcp__<server>__<tool>`.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::types::{SandboxSpec, SpecDuration};

/// The task's MCP servers and their limits.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct McpSpec {
    /// By name (`[A-Za-z0-9_-]`, no `__`): the name is part of every tool's name.
    #[serde(default)]
    pub servers: BTreeMap<String, McpServerSpec>,
    /// Defaults for every server: `startup` 30s, `call` 120s.
    #[serde(default)]
    pub timeouts: McpTimeouts,
    /// Tokens (estimated at 4 bytes each) one tool result may hold; longer results are
    /// cut with a note. Default 25,000.
    #[serde(default)]
    pub max_output: Option<u64>,
}

/// One server, started as a command speaking MCP over its stdin and stdout.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct McpServerSpec {
    /// The program to start (looked up in `PATH`, or relative to `cwd`).
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    /// Added to the server's (scrubbed) environment; `${VAR}` and `${VAR:-default}` are
    /// taken from drover's environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Where the server starts, relative to the spec file (default: the workspace).
    #[serde(default)]
    pub cwd: Option<String>,
    /// The server's sandbox: by default the task's, with the network off.
    #[serde(default)]
    pub sandbox: Option<SandboxSpec>,
    /// A streamable HTTP server (not supported yet: refused when the spec is checked).
    #[serde(default)]
    pub url: Option<String>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// A required server that fails to start ends the task (`mcp_unavailable`) before
    /// any model request; an optional one is left out with a warning. Default true.
    #[serde(default = "required_by_default")]
    pub required: bool,
    /// This server's own limits (what it leaves out comes from `mcp.timeouts`).
    #[serde(default)]
    pub timeouts: Option<McpTimeouts>,
}

fn required_by_default() -> bool {
    true
}

/// How long a server may take to start (and list its tools), and one call.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct McpTimeouts {
    #[serde(default)]
    pub startup: Option<SpecDuration>,
    #[serde(default)]
    pub call: Option<SpecDuration>,
}

/// Why a server entry cannot be used; the spec check names the server.
pub(crate) fn server_problem(name: &str, server: &McpServerSpec) -> Option<String> {
    let valid_char = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    // `mcp__a` must cover server a's tools and no other server's: a name with `__`, or
    // one that starts or ends with `_`, could make `mcp__a__` the prefix of another's.
    let blurs = name.contains("__") || name.starts_with('_') || name.ends_with('_');
    if name.is_empty() || !name.chars().all(valid_char) || blurs {
        return Some(format!(
            "MCP server name {name:?} must be letters, digits, '_' and '-', without \"__\" and not starting or ending with '_' (it is part of every tool name: mcp__<server>__<tool>)"
        ));
    }
    if server.url.is_some() {
        return Some(format!(
            "mcp.servers.{name}: streamable HTTP servers (url:) are not supported yet; start the server over stdio with command:"
        ));
    }
    if !server.headers.is_empty() {
        return Some(format!(
            "mcp.servers.{name}: headers: apply to url: servers only"
        ));
    }
    match &server.command {
        Some(command) if !command.trim().is_empty() => None,
        _ => Some(format!(
            "mcp.servers.{name} needs command: (the program that speaks MCP over stdio)"
        )),
    }
}
