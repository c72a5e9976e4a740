//! Starting one MCP server over stdio: the command through the task's sandbox launcher
//! (in stdio mode), its own process group, stderr into the task's artifacts, the
//! protocol handshake (the 2026-07-28 `server/discover`, falling back to the legacy
//! `initialize`), and its tools listed page by page, all within the startup timeout.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::ProtocolVersion;
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RunningService};

use crate::sandbox::exec::CommandEnv;
use crate::spec::McpServerSpec;

/// A running server: its connection, the launcher process it runs under, and what it
/// said at start.
pub(crate) struct RunningServer {
    pub name: String,
    pub service: RunningService<RoleClient, ()>,
    /// The sandbox launcher: it kills the server's whole tree when the channel closes.
    pub launcher: tokio::process::Child,
    pub protocol_version: String,
    pub tools: Vec<rmcp::model::Tool>,
}

/// How long a launcher may take to kill its server's tree once the channel is closed,
/// before it is killed itself.
const STOP_GRACE: Duration = Duration::from_secs(5);

impl RunningServer {
    /// Close the channel (the launcher's lifeline), wait for the launcher to kill the
    /// server's tree and exit, and kill it if it does not.
    pub(crate) async fn stop(mut self) {
        let _ = tokio::time::timeout(STOP_GRACE, self.service.cancel()).await;
        if tokio::time::timeout(STOP_GRACE, self.launcher.wait())
            .await
            .is_err()
        {
            let _ = self.launcher.kill().await;
        }
    }
}

/// Why a server could not be used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StartError {
    #[error("cannot open its log {}: {source}", path.display())]
    Log {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot start {command}: {source}")]
    Spawn {
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the MCP handshake failed: {0}")]
    Handshake(String),
    #[error("listing its tools failed: {0}")]
    ListTools(String),
    #[error("it did not start and list its tools within {0:?} (timeouts.startup)")]
    Timeout(Duration),
}

/// Where and how a server starts.
pub(crate) struct Launch<'a> {
    pub name: &'a str,
    pub spec: &'a McpServerSpec,
    /// The directory relative `cwd:` values start from (the spec file's).
    pub spec_dir: &'a Path,
    pub workspace: &'a Path,
    /// The task's command environment, with the server's sandbox.
    pub env: &'a CommandEnv,
    /// The server's stderr goes here.
    pub log: PathBuf,
    pub startup: Duration,
}

/// Start the server and list its tools, or say why not.
pub(crate) async fn start(launch: Launch<'_>) -> Result<RunningServer, StartError> {
    let spec = launch.spec;
    let program = spec.command.as_deref().unwrap_or_default();
    let args: Vec<&OsStr> = spec.args.iter().map(OsStr::new).collect();
    let mut command = launch.env.stdio_command(OsStr::new(program), &args);
    let cwd = match &spec.cwd {
        Some(cwd) => launch.spec_dir.join(cwd),
        None => launch.workspace.to_path_buf(),
    };
    let log = std::fs::File::create(&launch.log).map_err(|source| StartError::Log {
        path: launch.log.clone(),
        source,
    })?;
    // The channel is the launcher's stdin and stdout; closing it is the lifeline's cut.
    command
        .current_dir(cwd)
        .envs(spec.env.iter().map(|(k, v)| (k, expand(v))))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(log)
        .process_group(0);
    let spawn_error = |source| StartError::Spawn {
        command: program.to_string(),
        source,
    };
    let mut launcher = command.spawn().map_err(spawn_error)?;
    let (Some(stdout), Some(stdin)) = (launcher.stdout.take(), launcher.stdin.take()) else {
        return Err(spawn_error(std::io::Error::other("no stdio pipes")));
    };
    let connect = async {
        let lifecycle = ClientLifecycleMode::Auto {
            preferred_versions: vec![ProtocolVersion::LATEST],
            legacy_version: None,
        };
        let service =
            ().serve_with_lifecycle((stdout, stdin), lifecycle)
                .await
                .map_err(|e| StartError::Handshake(e.to_string()))?;
        let tools = service
            .list_all_tools()
            .await
            .map_err(|e| StartError::ListTools(e.to_string()))?;
        Ok::<_, StartError>((service, tools))
    };
    // On any failure (or a signal dropping this future) the channel is dropped, and the
    // launcher, seeing its stdin hang up, kills the server's whole tree and exits. It is
    // not killed itself first: that would orphan the tree instead.
    let (service, tools) = match tokio::time::timeout(launch.startup, connect).await {
        Ok(connected) => connected?,
        Err(_) => return Err(StartError::Timeout(launch.startup)),
    };
    let protocol_version = service
        .peer_info()
        .map(|info| info.protocol_version.to_string())
        .unwrap_or_default();
    Ok(RunningServer {
        name: launch.name.to_string(),
        service,
        launcher,
        protocol_version,
        tools,
    })
}

/// `${VAR}` and `${VAR:-default}` replaced from drover's environment; anything else kept.
pub(crate) fn expand(value: &str) -> String {
    expand_with(value, &|name| std::env::var(name).ok())
}

fn expand_with(value: &str, env: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::new();
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return out;
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inner, None),
        };
        let found = env(name).filter(|v| !v.is_empty());
        out.push_str(&found.or(default.map(str::to_string)).unwrap_or_default());
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_expand_with_defaults() {
        let env = |name: &str| (name == "TOKEN").then(|| "t0k".to_string());
        assert_eq!(expand_with("Bearer ${TOKEN}", &env), "Bearer t0k");
        assert_eq!(expand_with("${MISSING:-warn}", &env), "warn");
        assert_eq!(expand_with("${MISSING}x", &env), "x");
        assert_eq!(expand_with("a ${TOKEN:-d} b", &env), "a t0k b");
        assert_eq!(expand_with("no ${close", &env), "no ${close");
    }
}
