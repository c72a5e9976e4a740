//! A task's first steps, before the agent loop: the workspace and its starting state,
//! what the agent is allowed (policy, tools, commands, the confined file thread), the
//! `run_start` event, and `setup:`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::prepare::{PreparedWorkspace, git_worktree, in_place, scratch_copy};
use super::sandbox::{TaskCommands, task_commands};
use super::setup::run_setup;
use super::task::{Interrupt, ModelSource, TaskPlan};
use super::task_error::{Halt, TaskError};
use super::task_redaction::{warn_unredacted, withheld_vars};
use crate::mcp::{McpSession, RecordedTool, Setup as McpSetup};
use crate::model::Model;
use crate::policy::Policy;
use crate::record::McpServerReport;
use crate::record::transcript::{McpToolLeftOut, McpToolName};
use crate::record::{EndReason, Event, Redactor, TaskReport, TranscriptWriter};
use crate::spec::Isolation;
use crate::tools::Registry;
use crate::tools::recorded::AnsweredTool;
use crate::workspace::Baseline;
use crate::workspace::baseline::{CopyOrigin, Exclusions, IndexSource, StartOptions};
use crate::workspace::confined::ConfinedThread;

/// The workspace the task works in and its starting state.
pub(super) struct Started {
    pub workspace: PreparedWorkspace,
    pub baseline: Baseline,
    /// What the baseline leaves out: drover's own folders and files.
    excluded: Exclusions,
}

/// Isolate the workspace (in place, a copy, a worktree) and take its starting state.
/// A signal stops both at once: nothing has changed yet, so the task ends interrupted.
pub(super) fn workspace(
    plan: &TaskPlan,
    artifacts: &Path,
    report: &TaskReport,
    stop: &dyn Fn() -> bool,
) -> Result<Started, Halt> {
    // drover's own artifacts (this task's transcript, other tasks', earlier runs') are not
    // the agent's work: a copy, the snapshots and the diff leave them out when they lie
    // inside the workspace (the default: `drover-artifacts/` in the current directory).
    // A copy leaves the whole artifacts directory out; the baseline of the workspace
    // leaves out only what drover writes there, so files an agent plants in it are in
    // the diff.
    let mut copy_excluded = plan.excluded.clone();
    copy_excluded.push(artifacts.to_path_buf());
    let mut excluded_folders = plan.excluded.clone();
    excluded_folders.extend(plan.own_outputs.folders.iter().cloned());
    let mut excluded_files = plan.own_outputs.files.clone();
    // A resumed task leaves out what its recorded run left out.
    if let Some(recorded) = &plan.recorded_outputs {
        copy_excluded.push(recorded.artifacts.clone());
        excluded_folders.extend(recorded.folders.iter().cloned());
        excluded_files.extend(recorded.files.iter().cloned());
    }
    let excluded = Exclusions {
        dirs: excluded_folders,
        files: excluded_files,
    };
    let prepared = isolate(plan, &copy_excluded, stop).and_then(|workspace| {
        let options = start_options(plan, &excluded, workspace.copy_origin(true));
        let baseline = Baseline::take(&workspace.dir, options, stop)?;
        Ok((workspace, baseline))
    });
    let (workspace, baseline) = prepared.map_err(|error| {
        interrupted_or(
            error,
            "interrupted while the workspace was prepared; the agent never ran",
            |source| TaskError::Prepare {
                workspace: plan.origin.clone(),
                source,
            },
        )
    })?;
    if !baseline.leftovers.is_empty() {
        let names: Vec<String> = baseline.leftovers.iter().map(ToString::to_string).collect();
        crate::esay!(
            "drover: {}: removed {} temp file(s) a killed drover left in the workspace: {}",
            report.name,
            names.len(),
            names.join(", ")
        );
    }
    Ok(Started {
        workspace,
        baseline,
        excluded,
    })
}

/// A baseline that could not be taken: the task ends interrupted when a signal stopped
/// it (`Interrupted`), else drover failed as `failed` says.
fn interrupted_or(
    error: std::io::Error,
    interrupted: &str,
    failed: impl FnOnce(std::io::Error) -> TaskError,
) -> Halt {
    if error.kind() == std::io::ErrorKind::Interrupted {
        Halt::Early(EndReason::Interrupted, interrupted.to_string())
    } else {
        Halt::Failed(failed(error))
    }
}

fn isolate(
    plan: &TaskPlan,
    excluded: &[PathBuf],
    stop: &dyn Fn() -> bool,
) -> std::io::Result<PreparedWorkspace> {
    match plan.isolation {
        Isolation::None => in_place(&plan.origin),
        Isolation::Copy => scratch_copy(&plan.origin, excluded, stop),
        Isolation::Worktree => git_worktree(&plan.origin, plan.spec.name()),
    }
}

/// How the task's baseline is taken: drover's own paths left out, what a copy leans on,
/// and which git index is trusted (in place: only the one saved when the run started).
fn start_options<'a>(
    plan: &'a TaskPlan,
    excluded: &Exclusions,
    origin: Option<CopyOrigin<'a>>,
) -> StartOptions<'a> {
    StartOptions {
        excluded: excluded.clone(),
        origin,
        index: match plan.isolation {
            Isolation::None => IndexSource::Saved(plan.saved_index.as_deref()),
            Isolation::Copy | Isolation::Worktree => IndexSource::Discover,
        },
    }
}

/// What the agent may do: the policy, the tools it offers, how commands start, and the
/// thread drover's file tools open files on.
pub(super) struct Armed {
    pub policy: Policy,
    pub registry: Registry,
    pub commands: TaskCommands,
    pub file_thread: Option<ConfinedThread>,
    /// The task's MCP servers (none without `mcp:`), stopped when the task ends.
    pub mcp: McpSession,
}

/// Arm the task in `workspace`: the policy (with drover's own paths off limits), the
/// tools it does not withhold, the command environment and sandbox, and the confined
/// file thread. A sandbox that cannot be enforced is noted in `commands.unavailable`.
pub(super) async fn arm(
    plan: &TaskPlan,
    workspace: &PreparedWorkspace,
    artifacts: &Path,
    task_dir: &Path,
) -> Result<Armed, TaskError> {
    // drover's artifacts and a worktree's `.git` file are off limits to every tool
    // (the OS keeps them out of reach too: see task_folder and restore_git_link).
    let mut protected = workspace.protected();
    let artifacts_dir = crate::workspace::paths::canonicalize_for_write(
        &std::path::absolute(artifacts).unwrap_or_else(|_| artifacts.to_path_buf()),
    )
    .unwrap_or_else(|_| artifacts.to_path_buf());
    // An artifacts directory holding the whole workspace cannot be kept off limits
    // without forbidding every write; the OS-side staging still protects its files.
    if !workspace.dir.starts_with(&artifacts_dir) {
        protected.push(artifacts_dir);
    }
    let policy = Policy::new(
        &plan.rules,
        &workspace.dir,
        &plan.spec.additional_directories(),
    )
    .with_protected(protected);
    let mut registry = Registry::builtin()?;
    let runs_commands = registry.names().iter().any(|name| name == "Bash");
    // Setup and checks run in the sandbox too, so it is probed for them as for Bash.
    let probe =
        runs_commands || !plan.spec.spec.checks.is_empty() || !plan.spec.spec.setup.is_empty();
    let mut commands = task_commands(
        &plan.spec,
        &plan.rules,
        &workspace.dir,
        &plan.unreadable,
        probe,
    )
    .await?;
    for name in withheld_vars(plan) {
        if !commands.env.withheld.contains(&name) {
            commands.env.withheld.push(name);
        }
    }
    if plan.fixed_environment {
        commands
            .env
            .withheld
            .extend(super::sandbox::outside_fixed_environment());
    }
    // drover's file tools get the same filesystem confinement as the commands: a thread
    // under the task's Landlock ruleset does their opens (defence in depth beneath the
    // path handling). Failing that, the task fails as it would for Bash.
    let mut file_thread = None;
    if commands.summary["enabled"] == true {
        let sandbox = commands.policy.clone();
        match ConfinedThread::start(move || crate::sandbox::enforce_files(&sandbox)) {
            Ok(thread) => file_thread = Some(thread),
            Err(reason) => {
                let hint = super::runner_hint::here();
                commands.unavailable.get_or_insert(format!(
                    "the OS sandbox cannot be enforced on this machine ({reason}), so the task did not run; {hint}; or write `sandbox: off` in the spec to run without it explicitly"
                ));
            }
        }
    }
    // MCP servers start only for a task that will run, each in its sandbox.
    let mut mcp = McpSession::default();
    if !plan.mcp_servers.is_empty() && commands.unavailable.is_none() {
        let limits = plan
            .spec
            .spec
            .mcp
            .as_ref()
            .map(|mcp| mcp.value.clone())
            .unwrap_or_default();
        let env_for = |sandbox: Option<&crate::spec::SandboxSpec>| commands.for_sandbox(sandbox);
        let setup = McpSetup {
            spec_dir: plan.spec.path.parent().unwrap_or(Path::new(".")),
            workspace: &workspace.dir,
            log_dir: task_dir,
            vars: &plan.mcp_vars,
            env_for: &env_for,
        };
        mcp = McpSession::start(&plan.mcp_servers, &limits, &setup).await;
        for tool in &mcp.tools {
            // A resumed run answers the calls it replays from the recording: what the
            // recorded run did to the world is not done twice.
            let tool = match (&plan.resume, &plan.answers) {
                (Some(_), Some(answers)) => {
                    Arc::new(AnsweredTool::new(Arc::clone(tool), Arc::clone(answers)))
                }
                _ => Arc::clone(tool),
            };
            // A server's schema that does not compile leaves its tool out, not the task.
            if let Err(error) = registry.add(Arc::clone(&tool)) {
                crate::esay!(
                    "drover: warning: MCP tool {} left out: {error}",
                    tool.name()
                );
            }
        }
    }
    // A replay answers the recording's MCP calls with their recorded results.
    if let ModelSource::Replay { .. } = &plan.model
        && let Some(results) = &plan.answers
    {
        for name in &plan.replayed_mcp_tools {
            let tool = RecordedTool::new(name.clone(), Arc::clone(results));
            registry.add(Arc::new(tool))?;
        }
    }
    super::subagents::add_agent_tool(&mut registry, &plan.agents)?;
    registry.retain(|facts| policy.withholds(facts).is_none());
    Ok(Armed {
        policy,
        registry,
        commands,
        file_thread,
        mcp,
    })
}

/// A replay whose workspace the recording chose runs only from exactly the recorded
/// starting state: stopped before any tool, server or command can read the copy.
pub(super) fn recorded_start_only(plan: &TaskPlan, fingerprint: &str) -> Result<(), Halt> {
    match &plan.expected_fingerprint {
        Some(expected) if plan.workspace_from_recording && expected != fingerprint => {
            Err(Halt::Early(
                EndReason::ReplayDrift,
                format!(
                    "the recorded workspace {} is not in the state the recorded run started from (fingerprint {} instead of {}), so nothing was replayed in it; pass --workspace with a checkout of the starting state",
                    plan.origin.display(),
                    short(fingerprint),
                    short(expected)
                ),
            ))
        }
        _ => Ok(()),
    }
}

/// Write `run_start`, then stop early when the task cannot run as recorded: the
/// sandbox cannot be enforced, or (a strict replay) the workspace is not where the
/// recording started.
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
            if super::task_end::web_search(plan, model).is_some() {
                tools.push("WebSearch".to_string());
            }
            tools
        },
        spec_path: absolute(&plan.spec.path),
        spec_yaml: plan.spec.text.clone(),
        workspace: absolute(&plan.origin),
        workspace_sha256: fingerprint.to_string(),
        max_turns: plan.max_turns,
        sandbox: armed.commands.summary.clone(),
        redaction_skipped: redactor.skipped().to_vec(),
        output_schema: plan.output_schema.clone().unwrap_or_default(),
        agents: if plan.agents.is_empty() {
            serde_json::Value::Null
        } else {
            serde_json::to_value(&plan.agents).unwrap_or_default()
        },
        settings: Box::new(crate::record::transcript::RunSettings {
            max_cost_usd: plan.max_cost_usd,
            max_tokens: plan.max_tokens,
            timeout: Some(crate::spec::TimeoutLimit::spelled(
                plan.spec.spec.limits.timeout,
            )),
            artifacts: Some(plan.own_outputs.artifacts.display().to_string())
                .filter(|dir| !dir.is_empty()),
            run_tasks: plan
                .own_outputs
                .folders
                .iter()
                .filter_map(|folder| folder.file_name())
                .map(|name| name.to_string_lossy().into_owned())
                .collect(),
        }),
    })?;
    if let Some(message) = armed.commands.unavailable.clone() {
        return Err(Halt::Early(EndReason::SandboxUnavailable, message));
    }
    record_mcp_servers(&armed.mcp, redactor, report, transcript)?;
    if let Some(expected) = &plan.expected_fingerprint
        && expected != fingerprint
    {
        let message = format!(
            "the workspace {} is not in the state the recorded run started from (fingerprint {} instead of {}); pass --workspace with a checkout of the starting state",
            plan.origin.display(),
            short(fingerprint),
            short(expected)
        );
        // A resumed run was checked before it started; a workspace changed since then
        // cannot be continued.
        let strict = plan.resume.is_some()
            || matches!(&plan.model, ModelSource::Replay { expectations: Some(e), .. } if e.strict);
        if strict {
            return Err(Halt::Early(EndReason::ReplayDrift, message));
        }
        crate::esay!("drover: warning: {}: {message}", report.name);
    }
    Ok(())
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
        report.mcp_servers.push(McpServerReport {
            name: server.server.clone(),
            status: if server.outcome.is_ok() {
                "started"
            } else {
                "failed"
            }
            .to_string(),
            protocol_version: server
                .outcome
                .as_ref()
                .ok()
                .map(|started| started.protocol_version.clone()),
            tools: server
                .outcome
                .as_ref()
                .map_or(0, |started| started.tools.len()),
            calls: 0,
        });
        if let Ok(started) = &server.outcome {
            for left in &started.left_out {
                crate::esay!(
                    "drover: warning: {}: MCP tool {:?} of server {} is not offered: {}",
                    report.name,
                    left.tool,
                    server.server,
                    left.reason()
                );
            }
        }
        let event = match &server.outcome {
            Ok(started) => Event::McpServer {
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
            },
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

/// Run `setup:` (if any) and take the baseline again after it: setup's effects are the
/// starting state. Stops early when a step fails or a signal arrives.
pub(super) async fn setup(
    plan: &TaskPlan,
    started: &mut Started,
    commands: &TaskCommands,
    interrupt: &Interrupt,
    redactor: &Redactor,
    report: &mut TaskReport,
    transcript: &mut TranscriptWriter,
) -> Result<(), Halt> {
    if plan.spec.spec.setup.is_empty() {
        return Ok(());
    }
    let ran = run_setup(
        &plan.spec.spec.setup,
        &started.workspace.dir,
        commands,
        redactor,
        transcript,
        interrupt,
        &mut report.setup,
    )
    .await?;
    if let Err(stopped) = ran {
        return Err(Halt::Early(stopped.reason, stopped.message));
    }
    let stop = || interrupt.is_cancelled();
    let options = start_options(
        plan,
        &started.excluded,
        started.workspace.copy_origin(false),
    );
    started.baseline = Baseline::take(&started.workspace.dir, options, &stop).map_err(|error| {
        interrupted_or(
            error,
            "interrupted after setup, before the agent ran",
            TaskError::Restart,
        )
    })?;
    Ok(())
}

fn absolute(path: &Path) -> String {
    path.canonicalize()
        .unwrap_or_else(|_| path.to_path_buf())
        .display()
        .to_string()
}

fn short(fingerprint: &str) -> &str {
    fingerprint.get(..12).unwrap_or(fingerprint)
}
