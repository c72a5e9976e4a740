//! MCP servers of a task: started in parallel before the first model request, their
//! tools offered beside the built-in ones as `mcp__<server>__<tool>`, judged by the
//! policy like any tool (denied unless a rule allows them), and stopped with the task.

mod content;
mod dropped_lines;
mod envelope;
mod headers_helper;
mod http;
mod json_prefix;
mod names;
mod pending;
mod readable;
mod recorded;
mod relay;
mod resources;
mod server;
mod stand_in;
mod stderr_log;
mod stdin_pump;
mod tool;
mod vars;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::record::Redactor;
use crate::sandbox::SandboxError;
use crate::sandbox::exec::CommandEnv;
use crate::spec::{McpServerSpec, McpSpec, SandboxSpec};
pub(crate) use headers_helper::credential_header;
pub(crate) use http::endpoint_problem;
pub(crate) use names::{LeftOutName, OfferedName};
pub(crate) use recorded::RecordedTool;
pub(crate) use resources::{LIST as LIST_RESOURCES, READ as READ_RESOURCE};
use resources::{ResourceServers, ResourceTool};
use server::{Launch, RunningServer};
pub(crate) use tool::{McpTool, facts_of};
pub(crate) use vars::{VarSource, expand, referenced_vars};

use crate::tools::Tool;

/// A server's startup limit when the spec sets none.
const DEFAULT_STARTUP: Duration = Duration::from_secs(30);
/// A call's limit when the spec sets none.
const DEFAULT_CALL: Duration = Duration::from_secs(120);
/// Tokens a result may hold when the spec sets none.
const DEFAULT_MAX_OUTPUT: u64 = 25_000;

/// What starting one server came to.
#[derive(Debug, Clone)]
pub(crate) struct ServerReport {
    pub server: String,
    pub required: bool,
    pub outcome: Result<Started, NotStarted>,
}

/// Why a server did not start, as its report and the transcript say it. The causes are
/// of several kinds (its sandbox, its command, its handshake, its URL); the report is
/// cloned into every listing and redacted in place, so it holds their words.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub(crate) struct NotStarted(pub String);

/// A server that started: its protocol version, its tools' offered names, and the
/// tools left out because their name would not be theirs alone.
#[derive(Debug, Clone)]
pub(crate) struct Started {
    pub protocol_version: String,
    pub tools: Vec<OfferedName>,
    pub left_out: Vec<LeftOutName>,
}

/// The task's running servers and the tools they offer.
#[derive(Default)]
pub(crate) struct McpSession {
    servers: Vec<RunningServer>,
    /// The servers' tools, and the resource tools when a server has resources.
    pub tools: Vec<Arc<dyn Tool>>,
    pub reports: Vec<ServerReport>,
}

/// What starting the servers needs from the task.
pub(crate) struct Setup<'a> {
    pub spec_dir: &'a Path,
    pub workspace: &'a Path,
    /// Where each server's stderr log is written (`mcp-<server>.log`).
    pub log_dir: &'a Path,
    /// Where `${VAR}` in servers' `env:` and `headers:` takes values from.
    pub vars: &'a VarSource,
    /// The task's redactor: what a server's headers helper prints is added to it.
    pub redactor: &'a Redactor,
    /// The command environment for a server with this `sandbox:` setting.
    pub env_for: &'a (dyn Fn(Option<&SandboxSpec>) -> Result<CommandEnv, SandboxError> + Sync),
}

impl McpSession {
    /// Start every server of `spec` at once and collect their tools. A server that does
    /// not start is reported (the caller decides what a required one's failure means).
    pub(crate) async fn start(
        servers: &BTreeMap<String, McpServerSpec>,
        spec: &McpSpec,
        setup: &Setup<'_>,
    ) -> McpSession {
        let starts = servers
            .iter()
            .map(|(name, server)| start_one(spec, name, server, setup));
        let results = futures::future::join_all(starts).await;
        let mut session = McpSession::default();
        let mut running = Vec::new();
        let mut failed = Vec::new();
        for ((name, server), result) in servers.iter().zip(results) {
            match result {
                Ok(started) => running.push((server, started)),
                Err(why) => failed.push(ServerReport {
                    server: name.clone(),
                    required: server.required,
                    outcome: Err(why),
                }),
            }
        }
        let pairs: Vec<(String, String)> = running
            .iter()
            .flat_map(|(_, server)| {
                server
                    .tools
                    .iter()
                    .map(|tool| (server.name.clone(), tool.name.to_string()))
            })
            .collect();
        let naming = names::offered_names(&pairs);
        let max_output = spec.max_output.unwrap_or(DEFAULT_MAX_OUTPUT);
        let mut with_resources = BTreeMap::new();
        for (server_spec, server) in running {
            let call = limit(spec, server_spec, |t| t.call).unwrap_or(DEFAULT_CALL);
            let (named, left_out) = naming.of_server(&server.name);
            let limits = CallLimits {
                call,
                max_output,
                required: server_spec.required,
            };
            session
                .tools
                .extend(offered_tools(&server, &named, &limits));
            let has_resources = server
                .service
                .peer_info()
                .is_some_and(|info| info.capabilities.resources.is_some());
            if has_resources {
                with_resources.insert(server.name.clone(), server.service.peer().clone());
            }
            session.reports.push(ServerReport {
                server: server.name.clone(),
                required: server_spec.required,
                outcome: Ok(Started {
                    protocol_version: server.protocol_version.clone(),
                    tools: named,
                    left_out,
                }),
            });
            session.servers.push(server);
        }
        if !with_resources.is_empty() {
            let servers = ResourceServers {
                peers: with_resources,
                call_timeout: spec.timeouts.call.map_or(DEFAULT_CALL, |d| d.0),
                max_output,
            };
            for tool in ResourceTool::both(servers) {
                session.tools.push(tool);
            }
        }
        session.reports.extend(failed);
        session.reports.sort_by(|a, b| a.server.cmp(&b.server));
        session
    }

    /// The offered names of every started server's tools.
    pub(crate) fn offered_names(&self) -> Vec<OfferedName> {
        self.reports
            .iter()
            .filter_map(|report| report.outcome.as_ref().ok())
            .flat_map(|started| started.tools.iter().cloned())
            .collect()
    }

    /// Stop every server at once: each channel closed, each launcher waited for (it
    /// kills its server's whole tree when the channel closes) or killed.
    pub(crate) async fn shutdown(self) {
        futures::future::join_all(self.servers.into_iter().map(RunningServer::stop)).await;
    }
}

async fn start_one(
    spec: &McpSpec,
    name: &str,
    server: &McpServerSpec,
    setup: &Setup<'_>,
) -> Result<RunningServer, NotStarted> {
    let startup = limit(spec, server, |t| t.startup).unwrap_or(DEFAULT_STARTUP);
    let env = (setup.env_for)(server.sandbox.as_ref())
        .map_err(|e| NotStarted(e.to_string()))?
        .for_origin(crate::record::network::NetworkOrigin {
            source: "mcp".to_string(),
            tool_use_id: None,
            name: Some(name.to_string()),
        });
    // A `.mcp.json` may come from the repository under test: its `${VAR}`s take only
    // what the task's commands get (no secret the spec does not pass, never the model's
    // key, nothing another server takes as a credential).
    let narrowed;
    let vars = if server.from_config {
        narrowed = setup.vars.narrowed(|name| env.passes(name));
        &narrowed
    } else {
        setup.vars
    };
    if let Some(url) = &server.url {
        // The URL as it will be reached, its `${VAR}`s expanded, is held to what a
        // written one is (http or https, no credentials in it). A URL is printed and
        // recorded, so it takes only variables the task's commands get: a secret goes in
        // `headers:`, never in the URL.
        let url = expand(url, &vars.narrowed(|name| env.passes(name)));
        if let Some(problem) = http::url_problem(&url) {
            return Err(NotStarted(format!(
                "{problem} (once its variables were expanded)"
            )));
        }
        let helper = match &server.headers_helper {
            Some(command) => {
                let run = HelperRun {
                    name,
                    server,
                    command,
                    url: &url,
                    env: &env,
                    vars,
                    startup,
                };
                run_helper(&run, setup).await?
            }
            None => BTreeMap::new(),
        };
        let headers = http::Headers {
            written: &server.headers,
            vars,
            helper: &helper,
        };
        return server::connect(name, &url, &headers, startup)
            .await
            .map_err(|e| NotStarted(e.to_string()));
    }
    let launch = Launch {
        name,
        spec: server,
        spec_dir: setup.spec_dir,
        workspace: setup.workspace,
        env: &env,
        log: log_path(setup.log_dir, name),
        vars,
        startup,
    };
    server::start(launch)
        .await
        .map_err(|e| NotStarted(e.to_string()))
}

/// What running a `url:` server's headers helper needs.
struct HelperRun<'a> {
    name: &'a str,
    server: &'a McpServerSpec,
    command: &'a str,
    /// The URL as drover reaches it, its variables expanded.
    url: &'a str,
    env: &'a CommandEnv,
    vars: &'a VarSource,
    startup: Duration,
}

/// The headers the server's helper prints (registered with the task's redactor), run in
/// the workspace with the server's sandbox and `env:`, within [`headers_helper::HELPER_LIMIT`]
/// or the server's startup limit if shorter.
async fn run_helper(
    run: &HelperRun<'_>,
    setup: &Setup<'_>,
) -> Result<headers_helper::Headers, NotStarted> {
    let extra_env: Vec<(String, String)> = run
        .server
        .env
        .iter()
        .map(|(key, value)| (key.clone(), expand(value, run.vars)))
        .collect();
    let helper = headers_helper::Helper {
        // The field as the file the server came from spells it.
        field: if run.server.from_config {
            "headersHelper"
        } else {
            "headers_helper"
        },
        server: run.name,
        url: run.url,
        command: run.command,
        env: run.env,
        extra_env: &extra_env,
        workspace: setup.workspace,
        log: log_path(setup.log_dir, run.name),
        limit: run.startup.min(headers_helper::HELPER_LIMIT),
        from_repository: run.server.from_config,
    };
    headers_helper::run(&helper, setup.redactor)
        .await
        .map_err(|e| NotStarted(e.to_string()))
}

/// What every call of one server's tools is held to.
struct CallLimits {
    call: Duration,
    max_output: u64,
    required: bool,
}

/// The tools of `server` that have an offered name in `named`; a tool left out has
/// none, so it is not offered.
fn offered_tools(
    server: &RunningServer,
    named: &[OfferedName],
    limits: &CallLimits,
) -> Vec<Arc<dyn Tool>> {
    let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
    for listed in &server.tools {
        let Some(name) = named.iter().find(|n| n.tool == listed.name) else {
            continue;
        };
        tools.push(Arc::new(McpTool {
            name: name.name.clone(),
            server: server.name.clone(),
            tool: listed.name.to_string(),
            description: listed
                .description
                .as_deref()
                .unwrap_or_default()
                .to_string(),
            input_schema: serde_json::Value::Object((*listed.input_schema).clone()),
            peer: server.service.peer().clone(),
            call_timeout: limits.call,
            required: limits.required,
            output_schema: output_validator(&server.name, listed),
            max_output: limits.max_output,
        }));
    }
    tools
}

/// The tool's `outputSchema`, compiled; a schema that does not compile is not checked
/// (said once, as a warning).
fn output_validator(server: &str, tool: &rmcp::model::Tool) -> Option<Arc<jsonschema::Validator>> {
    let schema = serde_json::Value::Object((*tool.output_schema.clone()?).clone());
    match crate::tools::schema_validator(&schema) {
        Ok(validator) => Some(Arc::new(validator)),
        Err(error) => {
            crate::esay!(
                "drover: warning: MCP server {server}: the outputSchema of {} does not compile, so its results are not checked: {error}",
                tool.name
            );
            None
        }
    }
}

/// The server's own limit, else the section's.
fn limit(
    spec: &McpSpec,
    server: &McpServerSpec,
    pick: impl Fn(&crate::spec::McpTimeouts) -> Option<crate::spec::SpecDuration>,
) -> Option<Duration> {
    server
        .timeouts
        .as_ref()
        .and_then(&pick)
        .or_else(|| pick(&spec.timeouts))
        .map(|d| d.0)
}

/// Where a server's stderr is kept.
pub(crate) fn log_path(log_dir: &Path, server: &str) -> PathBuf {
    log_dir.join(format!("mcp-{server}.log"))
}
