//! Starting one MCP server: over stdio, the command through the task's sandbox launcher
//! (in stdio mode), its own process group, stderr into the task's artifacts; over
//! streamable HTTP, a connection to its `url:` (see [`super::http`]). Then the protocol
//! handshake (the 2026-07-28 `server/discover`, falling back to the legacy
//! `initialize`), and its tools listed page by page, all within the startup timeout.

use std::ffi::OsStr;
use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::ProtocolVersion;
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RunningService};
use rmcp::transport::IntoTransport;

use super::dropped_lines::DroppedLines;
use super::http::{Headers, HttpSetupError};
use super::stderr_log::StderrLog;
use super::vars::{VarSource, expand};
use crate::http_client::{RedirectRefused, RefusedRedirects};
use crate::sandbox::exec::CommandEnv;
use crate::spec::McpServerSpec;

/// A running server: its connection, the launcher process it runs under, and what it
/// said at start.
pub(crate) struct RunningServer {
    pub name: String,
    pub service: RunningService<RoleClient, ()>,
    /// The sandbox launcher of a stdio server: it kills the server's whole tree when the
    /// channel closes. None for a server over HTTP, which drover did not start.
    pub launcher: Option<tokio::process::Child>,
    /// What writes a stdio server's stderr into its log.
    pub log: Option<StderrLog>,
    /// A stdio server's proxy under rules naming hosts, until it has stopped.
    pub network: Option<Box<dyn crate::sandbox::launch_network::LaunchedNetwork>>,
    pub protocol_version: String,
    pub tools: Vec<rmcp::model::Tool>,
}

/// How long a launcher may take to kill its server's tree once the channel is closed,
/// before it is killed itself.
const STOP_GRACE: Duration = Duration::from_secs(5);

impl RunningServer {
    fn new(
        name: &str,
        service: Service,
        launcher: Option<(tokio::process::Child, StderrLog)>,
        tools: Vec<rmcp::model::Tool>,
    ) -> RunningServer {
        let (launcher, log) = launcher.unzip();
        let protocol_version = service
            .peer_info()
            .map(|info| info.protocol_version.to_string())
            .unwrap_or_default();
        RunningServer {
            name: name.to_string(),
            service,
            launcher,
            log,
            network: None,
            protocol_version,
            tools,
        }
    }

    /// Close the channel (the launcher's lifeline; over HTTP, the session is ended), wait
    /// for the launcher to kill the server's tree and exit, and kill it if it does not.
    pub(crate) async fn stop(self) {
        let _ = tokio::time::timeout(STOP_GRACE, self.service.cancel()).await;
        let Some(mut launcher) = self.launcher else {
            return;
        };
        if tokio::time::timeout(STOP_GRACE, launcher.wait())
            .await
            .is_err()
        {
            let _ = launcher.kill().await;
        }
        if let Some(log) = self.log {
            log.finish().await;
        }
        if let Some(network) = self.network {
            network.finish().await;
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
    #[error("{0}")]
    Http(#[from] HttpSetupError),
    #[error("{0}; if the server really is there, set its url: to that address")]
    Redirected(RedirectRefused),
    #[error("the MCP handshake failed: {0}")]
    Handshake(String),
    #[error("listing its tools failed: {0}")]
    ListTools(String),
    #[error("it did not start and list its tools within {0:?} (timeouts.startup)")]
    Timeout(Duration),
    #[error("{error}; its stderr ends: {said}")]
    Said {
        error: Box<StartError>,
        said: String,
    },
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
    /// Where `${VAR}` in `command:`, `args:` and `env:` takes values from.
    pub vars: &'a VarSource,
    pub startup: Duration,
}

/// Connect to the server at `url`, sending `headers`, and list its tools, or say why not.
pub(crate) async fn connect(
    name: &str,
    url: &str,
    headers: &Headers<'_>,
    startup: Duration,
) -> Result<RunningServer, StartError> {
    let refused = RefusedRedirects::default();
    let transport = super::http::transport(url, headers, startup, &refused)?;
    // rmcp keeps only the text of a refused redirect, without where it pointed.
    let (service, tools) = handshake(transport, startup)
        .await
        .map_err(|error| refused.last().map_or(error, StartError::Redirected))?;
    Ok(RunningServer::new(name, service, None, tools))
}

/// Start the server's command under the sandbox launcher, talk to it over stdio and list
/// its tools, or say why not.
pub(crate) async fn start(launch: Launch<'_>) -> Result<RunningServer, StartError> {
    let spec = launch.spec;
    // `${VAR}` and `${VAR:-default}` expand in the command and its arguments as in
    // `env:` (a `.mcp.json` gives `"${ROOT:-.}/server.js"`), from the same variables.
    let program = expand(spec.command.as_deref().unwrap_or_default(), launch.vars);
    let program = program.as_str();
    let expanded_args: Vec<String> = spec.args.iter().map(|a| expand(a, launch.vars)).collect();
    let args: Vec<&OsStr> = expanded_args.iter().map(OsStr::new).collect();
    let env: Vec<(&String, String)> = spec
        .env
        .iter()
        .map(|(k, v)| (k, expand(v, launch.vars)))
        .collect();
    let spawn_error = |source| StartError::Spawn {
        command: program.to_string(),
        source,
    };
    let (mut command, mut network) = launch
        .env
        .stdio_command(OsStr::new(program), &args, &env)
        .map_err(spawn_error)?;
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
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0);
    let mut launcher = command.spawn().map_err(spawn_error)?;
    if let Some(network) = &mut network {
        network.started();
    }
    let (Some(stdout), Some(stdin), Some(stderr)) = (
        launcher.stdout.take(),
        launcher.stdin.take(),
        launcher.stderr.take(),
    ) else {
        return Err(spawn_error(std::io::Error::other("no stdio pipes")));
    };
    let dropped = Arc::new(DroppedLines::default());
    let log = StderrLog::start(stderr, log, launch.log.clone(), dropped.clone());
    // On any failure (or a signal dropping this future) the channel is dropped, and the
    // launcher, seeing its stdin hang up, kills the server's whole tree and exits. It is
    // not killed itself first: that would orphan the tree instead.
    let channel = super::relay::relay(launch.name, stdout, stdin, dropped);
    let (service, tools) = match handshake(channel, launch.startup).await {
        Ok(connected) => connected,
        Err(error) => {
            // The channel is closed: the launcher ends the server's tree, and with it
            // stderr. What the server (or the launcher, failing to start it) said is the
            // why.
            log.finish().await;
            let said = log_tail(&launch.log);
            return Err(match said {
                Some(said) => StartError::Said {
                    error: Box::new(error),
                    said,
                },
                None => error,
            });
        }
    };
    let mut server = RunningServer::new(launch.name, service, Some((launcher, log)), tools);
    server.network = network;
    Ok(server)
}

/// The protocol handshake and the tool listing over `transport`, within `startup`.
async fn handshake<T, E, A>(
    transport: T,
    startup: Duration,
) -> Result<(Service, Vec<rmcp::model::Tool>), StartError>
where
    T: IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let connect = async {
        let lifecycle = ClientLifecycleMode::Auto {
            preferred_versions: vec![ProtocolVersion::LATEST],
            legacy_version: None,
        };
        let service =
            ().serve_with_lifecycle(transport, lifecycle)
                .await
                .map_err(|e| StartError::Handshake(e.to_string()))?;
        let tools = service
            .list_all_tools()
            .await
            .map_err(|e| StartError::ListTools(e.to_string()))?;
        Ok::<_, StartError>((service, tools))
    };
    match tokio::time::timeout(startup, connect).await {
        Ok(connected) => connected,
        Err(_) => Err(StartError::Timeout(startup)),
    }
}

type Service = RunningService<RoleClient, ()>;

/// The last lines a server wrote to its log (at most 3 lines, 400 bytes), if any. It
/// may hold a secret: whoever prints it redacts it (the transcript always does).
fn log_tail(log: &Path) -> Option<String> {
    let mut file = std::fs::File::open(log).ok()?;
    let length = file.metadata().ok()?.len();
    file.seek(SeekFrom::Start(length.saturating_sub(4096)))
        .ok()?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let tail = lines[lines.len().saturating_sub(3)..].join(" | ");
    if tail.is_empty() {
        return None;
    }
    let mut start = tail.len().saturating_sub(400);
    while !tail.is_char_boundary(start) {
        start += 1;
    }
    Some(tail[start..].to_string())
}
