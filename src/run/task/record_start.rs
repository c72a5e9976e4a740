//! The `run_start` event and what must hold before the agent runs: the sandbox can be
//! enforced, the files `instructions:` names are there, the required MCP servers started
//! (an `mcp_server` event each), and a replay or resume starts from the recorded
//! workspace.

use std::path::Path;

use crate::mcp::{McpSession, ServerReport, Started as StartedServer};
use crate::model::Model;
use crate::record::McpServerReport;
use crate::record::transcript::{McpToolLeftOut, McpToolName, RunDefaults};
use crate::record::{EndReason, Event, Redactor, TaskReport, TranscriptWriter};
use crate::run::plan::TaskPlan;

use super::arm::Armed;
use super::error::Halt;
use super::redaction::warn_unredacted;
use super::web::web_search;

/// A replay starts where the recording did, or says why not: a worktree run's recorded
/// commit that cannot be its start is a warning (under `--strict` the task's end), and a
/// replay whose workspace the recording chose runs only from exactly the recorded
/// starting state. Either stops the task before any tool, server or command can read
/// the copy.
pub(super) fn recorded_start_only(
    plan: &TaskPlan,
    fingerprint: &str,
    task: &str,
) -> Result<(), Halt> {
    if let Some((start, strict)) = plan.mode.recorded_start()
        && let Some(problem) = &start.commit_problem
    {
        if strict {
            return Err(Halt::Early(
                EndReason::ReplayDrift,
                format!("{problem} (--strict: nothing was replayed)"),
            ));
        }
        crate::esay!("drover: warning: {task}: {problem}");
    }
    match plan.mode.start_from_recording() {
        Some(start) if start.fingerprint != fingerprint => {
            let expected = &start.fingerprint;
            Err(Halt::Early(
                EndReason::ReplayDrift,
                format!(
                    "the recorded workspace {} is not in the state the recorded run started from (fingerprint {} instead of {}), so nothing was replayed in it; pass --workspace with a checkout of the starting state{}",
                    plan.workspace.origin.display(),
                    short(fingerprint),
                    short(expected),
                    started_at(start.commit.as_ref())
                ),
            ))
        }
        _ => Ok(()),
    }
}

/// Write `run_start`, then stop early when the task cannot run as recorded: the
/// sandbox cannot be enforced, a file `instructions:` names is not in the workspace, or
/// (a strict replay) the workspace is not where the recording started.
pub(super) fn record_start(
    plan: &TaskPlan,
    model: &dyn Model,
    armed: &Armed,
    fingerprint: &str,
    redactor: &Redactor,
    report: &mut TaskReport,
    transcript: &mut TranscriptWriter,
) -> Result<(), Halt> {
    warn_unredacted(redactor);
    transcript.write(Event::RunStart {
        drover_version: crate::VERSION.to_string(),
        task: report.name.clone(),
        spec_sha256: plan.spec.sha256.clone(),
        provider: model.provider().to_string(),
        model: model.name().to_string(),
        tools: {
            let mut tools = armed.registry.names();
            if web_search(plan, model).is_some() {
                tools.push("WebSearch".to_string());
            }
            tools
        },
        spec_path: absolute(&plan.spec.path),
        spec_yaml: plan.spec.text.clone(),
        defaults: plan.spec.defaults.as_ref().map(|defaults| {
            Box::new(RunDefaults {
                path: absolute(&defaults.path),
                sha256: defaults.sha256.clone(),
                yaml: defaults.text.clone(),
            })
        }),
        matrix: plan.spec.matrix.clone().map(Box::new),
        workspace: absolute(&plan.workspace.origin),
        workspace_sha256: fingerprint.to_string(),
        max_turns: plan.limits.max_turns,
        sandbox: armed.commands.summary.clone(),
        redaction_skipped: redactor.skipped().to_vec(),
        output_schema: plan.output_schema.clone().unwrap_or_default(),
        agents: if plan.agents.is_empty() {
            serde_json::Value::Null
        } else {
            serde_json::to_value(&plan.agents).unwrap_or_default()
        },
        project: Box::new(crate::record::transcript::RunProject {
            instructions: armed.project.files.clone(),
            skills: if plan.skills.is_empty() {
                serde_json::Value::Null
            } else {
                serde_json::to_value(&plan.skills).unwrap_or_default()
            },
        }),
        settings: Box::new(run_settings(plan, armed, report.start.clone())),
    })?;
    if let Some(message) = armed.commands.unavailable.clone() {
        return Err(Halt::Early(EndReason::SandboxUnavailable, message));
    }
    if let Some(message) = armed.project.missing.clone() {
        return Err(Halt::Early(EndReason::SetupFailed, message));
    }
    record_mcp_servers(&armed.mcp, redactor, report, transcript)?;
    if let Some((expected, strict)) = plan.mode.expected_start()
        && expected != fingerprint
    {
        let commit = plan
            .mode
            .recorded_start()
            .and_then(|(start, _)| start.commit.as_ref());
        let message = format!(
            "the workspace {} is not in the state the recorded run started from (fingerprint {} instead of {}); pass --workspace with a checkout of the starting state{}",
            plan.workspace.origin.display(),
            short(fingerprint),
            short(expected),
            started_at(commit)
        );
        if strict {
            return Err(Halt::Early(EndReason::ReplayDrift, message));
        }
        crate::esay!("drover: warning: {}: {message}", report.name);
    }
    Ok(())
}

/// The limits, outputs and start (`start`: where the workspace started in git)
/// `run_start` records for a resume or replay, and the notes on what the files the spec
/// loads by reference (and the project's instructions) held that drover skipped or left
/// out.
fn run_settings(
    plan: &TaskPlan,
    armed: &Armed,
    start: Option<crate::record::StartCommit>,
) -> crate::record::transcript::RunSettings {
    crate::record::transcript::RunSettings {
        start,
        max_cost_usd: plan.limits.max_cost_usd,
        max_tokens: plan.limits.max_tokens,
        timeout: Some(crate::spec::TimeoutLimit::spelled(
            plan.spec.spec.limits.timeout,
        )),
        artifacts: Some(plan.workspace.own_outputs.artifacts.display().to_string())
            .filter(|dir| !dir.is_empty()),
        run_tasks: plan
            .workspace
            .own_outputs
            .folders
            .iter()
            .filter_map(|folder| folder.file_name())
            .map(|name| name.to_string_lossy().into_owned())
            .collect(),
        notes: plan
            .notes
            .iter()
            .chain(&armed.project.notes)
            .cloned()
            .collect(),
        permissions_from: plan.borrowed_rules.clone(),
    }
}

/// An `mcp_server` event for each server; a required one that did not start ends the
/// task before any model request, an optional one is left out with a warning.
fn record_mcp_servers(
    mcp: &McpSession,
    redactor: &Redactor,
    report: &mut TaskReport,
    transcript: &mut TranscriptWriter,
) -> Result<(), Halt> {
    let mut unavailable = Vec::new();
    for server in &mcp.reports {
        report.mcp_servers.push(server_summary(server));
        let event = match &server.outcome {
            Ok(started) => {
                for left in &started.left_out {
                    crate::esay!(
                        "drover: warning: {}: MCP tool {:?} of server {} is not offered: {}",
                        report.name,
                        left.tool,
                        server.server,
                        left.reason()
                    );
                }
                started_event(server, started)
            }
            Err(why) => {
                if server.required {
                    unavailable.push(format!("{}: {why}", server.server));
                } else {
                    // `why` quotes the server's stderr, which may hold a secret.
                    crate::esay!(
                        "drover: warning: {}: optional MCP server {} did not start, its tools are not offered: {}",
                        report.name,
                        server.server,
                        redactor.redact(&why.0)
                    );
                }
                Event::McpServer {
                    server: server.server.clone(),
                    status: "failed".to_string(),
                    required: server.required,
                    protocol_version: None,
                    tools: Vec::new(),
                    left_out: Vec::new(),
                    message: Some(why.0.clone()),
                }
            }
        };
        transcript.write(event)?;
    }
    if unavailable.is_empty() {
        return Ok(());
    }
    Err(Halt::Early(
        EndReason::McpUnavailable,
        format!(
            "required MCP server(s) did not start, so the agent never ran: {}; see mcp-<server>.log in the task's artifacts",
            unavailable.join("; ")
        ),
    ))
}

/// A server as the report lists it: whether it started, its protocol and tools.
fn server_summary(server: &ServerReport) -> McpServerReport {
    let started = server.outcome.as_ref().ok();
    McpServerReport {
        name: server.server.clone(),
        status: if started.is_some() {
            "started"
        } else {
            "failed"
        }
        .to_string(),
        protocol_version: started.map(|started| started.protocol_version.clone()),
        tools: started.map_or(0, |started| started.tools.len()),
        calls: 0,
    }
}

/// The `mcp_server` event of a server that started: its tools as offered (renamed
/// where a name had to change) and those left out, each with why.
fn started_event(server: &ServerReport, started: &StartedServer) -> Event {
    Event::McpServer {
        server: server.server.clone(),
        status: "started".to_string(),
        required: server.required,
        protocol_version: Some(started.protocol_version.clone()),
        tools: started
            .tools
            .iter()
            .map(|named| McpToolName {
                tool: named.tool.clone(),
                name: named.name.clone(),
                renamed: named.changed.map(|why| why.as_str().to_string()),
            })
            .collect(),
        left_out: started
            .left_out
            .iter()
            .map(|left| McpToolLeftOut {
                tool: left.tool.clone(),
                name: left.name.clone(),
                reason: left.reason(),
            })
            .collect(),
        message: None,
    }
}

fn absolute(path: &Path) -> String {
    path.canonicalize()
        .unwrap_or_else(|_| path.to_path_buf())
        .display()
        .to_string()
}

/// Where the recorded run started in git, for a message about a workspace that is not in
/// its starting state: ` (the recorded run started at commit C)`, or nothing.
pub(super) fn started_at(commit: Option<&crate::record::StartCommit>) -> String {
    match commit {
        Some(start) if start.dirty => format!(
            " (the recorded run started at commit {} with uncommitted or untracked files)",
            start.commit
        ),
        Some(start) => format!(
            " (the recorded run started at commit {}, clean: `git worktree add --detach DIR {}` makes it)",
            start.commit, start.commit
        ),
        None => String::new(),
    }
}

fn short(fingerprint: &str) -> &str {
    fingerprint.get(..12).unwrap_or(fingerprint)
}
