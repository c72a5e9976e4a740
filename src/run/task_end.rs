//! A task's last steps: the agent loop and what must follow it before anything is
//! judged (every command stopped, the worktree's git link restored), the diff, and the
//! checks and expectations that decide how the task ended.

use std::path::Path;

use super::checks::{failure_summary, run_check};
use super::expect;
use super::sandbox::TaskCommands;
use super::task::{Interrupt, TaskPlan};
use super::task_error::TaskError;
use super::task_start::{Armed, Started};
use crate::agent::{Agent, AgentConfig, LoopOutcome, ReplayExpectations, system_prompt};
use crate::model::Model;
use crate::model::pricing;
use crate::record::{EndReason, Event, Redactor, TaskReport, TranscriptWriter};
use crate::tools::ToolContext;
use crate::workspace::RelPath;
use crate::workspace::atomic::write_atomic;

/// What the loop needs besides the armed task.
pub(super) struct LoopInputs<'a> {
    pub model: &'a mut dyn Model,
    pub replay: Option<ReplayExpectations>,
    pub interrupt: Interrupt,
}

/// Run the agent loop, then make the workspace still: every command the agent started
/// stopped and gone, the worktree's `.git` file restored. The report gets the loop's
/// turns, usage, final text, denials and todos.
pub(super) async fn run_agent(
    plan: &TaskPlan,
    started: &Started,
    armed: Armed,
    inputs: LoopInputs<'_>,
    redactor: &Redactor,
    report: &mut TaskReport,
    transcript: &mut TranscriptWriter,
) -> Result<(LoopOutcome, TaskCommands), TaskError> {
    let Armed {
        policy,
        registry,
        commands,
        file_thread,
        mcp,
    } = armed;
    let workspace = &started.workspace;
    let config = loop_config(plan, &workspace.dir, inputs.model, report, inputs.interrupt);
    let mut ctx = ToolContext::with_env(workspace.dir.clone(), commands.env.clone())
        .with_additional(&plan.spec.additional_directories())
        .with_hidden(policy.hidden_filter());
    if let Some(thread) = file_thread {
        ctx = ctx.confined_to(thread);
    }
    let mut agent = Agent {
        model: inputs.model,
        registry: &registry,
        policy: &policy,
        ctx,
        transcript,
        replay: inputs.replay,
        redactor,
    };
    let outcome = agent.run(&config).await;
    // Nothing the agent started may outlive the loop, change the workspace while the
    // diff is taken, or race the checks: stop every command and server and wait until
    // they are gone.
    agent.ctx.shutdown();
    let offered: Vec<(String, Vec<String>)> = mcp
        .reports
        .iter()
        .filter_map(|server| {
            let started = server.outcome.as_ref().ok()?;
            let names = started.tools.iter().map(|t| t.name.clone()).collect();
            Some((server.server.clone(), names))
        })
        .collect();
    mcp.shutdown().await;
    let tracker = &commands.env.tracker;
    if !tracker
        .stop_all_and_wait(crate::sandbox::exec::STOP_GRACE * 2)
        .await
    {
        return Err(TaskError::Unstoppable {
            count: tracker.live(),
        });
    }
    // A check's git must find the real repository, not one the agent pointed at.
    if workspace.restore_git_link().map_err(TaskError::GitLink)? {
        eprintln!(
            "drover: warning: {}: the agent changed the worktree's .git file; it was restored before the diff and the checks",
            report.name
        );
    }
    let outcome = outcome?;
    report.turns = outcome.turns;
    report.usage = outcome.usage;
    report.cost_usd = outcome.cost_usd;
    report.final_text = outcome.final_text.clone();
    report.denials = outcome.denials.clone();
    report.todos = agent.ctx.todos();
    for summary in &mut report.mcp_servers {
        let names = offered.iter().find(|(server, _)| *server == summary.name);
        summary.calls = names.map_or(0, |(_, names)| {
            names
                .iter()
                .filter_map(|name| outcome.calls.get(name))
                .sum()
        });
    }
    Ok((outcome, commands))
}

/// The loop's limits and prompts; warns when the model's price is unknown.
fn loop_config(
    plan: &TaskPlan,
    workspace: &Path,
    model: &dyn Model,
    report: &TaskReport,
    interrupt: Interrupt,
) -> AgentConfig {
    let limits = &plan.spec.spec.limits;
    let prices = pricing::resolve(
        model.provider(),
        model.name(),
        plan.spec.spec.model.value.pricing.as_ref(),
    );
    if prices.is_none() {
        eprintln!(
            "drover: warning: {}: {}",
            report.name,
            unknown_price(&report.model)
        );
    }
    AgentConfig {
        system: system_prompt(workspace, plan.spec.spec.system.as_deref()),
        prompt: plan.spec.spec.prompt.clone(),
        max_turns: plan.max_turns,
        timeout: crate::spec::TimeoutLimit::effective(limits.timeout),
        max_cost_usd: limits.max_cost_usd.as_ref().map(|limit| limit.value),
        max_tokens: limits.max_tokens.as_ref().map(|l| l.value),
        pricing: prices,
        interrupt,
    }
}

/// The note for a model the pricing table does not know: its cost is null, not zero.
pub(super) fn unknown_price(model: &str) -> String {
    format!(
        "cost unknown: drover has no price for model {model:?}; set model.pricing to account for it"
    )
}

/// What the agent changed.
pub(super) struct Changes {
    pub paths: Vec<RelPath>,
    /// Files that could not be read for the diff, each with why.
    pub unreadable: Vec<String>,
}

/// Compare the workspace with its start and write `diff.patch` (redacted; files drover
/// could not read are named in notes, not fatal). Done even after a signal: the diff is
/// what an interrupted task most needs to keep.
pub(super) fn diff(
    started: &Started,
    task_dir: &Path,
    redactor: &Redactor,
    report: &mut TaskReport,
) -> Result<Changes, TaskError> {
    let baseline = &started.baseline;
    let comparison = baseline
        .compare_until(&|| false)
        .map_err(TaskError::Compare)?;
    let patch = baseline.patch(&comparison);
    let unreadable: Vec<String> = baseline
        .unreadable
        .iter()
        .chain(&comparison.unreadable)
        .map(|(path, why)| format!("{path} ({why})"))
        .collect();
    let mut note: String = unreadable
        .iter()
        .map(|line| format!("# drover: not in this diff, could not be read: {line}\n"))
        .collect();
    for line in &patch.notes {
        note.push_str(&format!("# drover: changed but not in this diff: {line}\n"));
    }
    // The agent may have written a secret it read into a file: the diff is an artifact
    // like the others, so it is redacted too (a redacted hunk no longer applies, which
    // is the lesser harm).
    let patch = redactor.redact_owned(note + &patch.text);
    write_diff(task_dir, patch.as_bytes())?;
    let paths = comparison.paths();
    report.files_changed = paths.iter().map(ToString::to_string).collect();
    report.ignored_changes = comparison.excluded_changes;
    Ok(Changes { paths, unreadable })
}

/// Write the task's `diff.patch`.
pub(super) fn write_diff(task_dir: &Path, patch: &[u8]) -> Result<(), TaskError> {
    let path = task_dir.join("diff.patch");
    write_atomic(&path, patch).map_err(|source| TaskError::Write { path, source })
}

/// Run the checks and expectations after a loop that ended on its own, and say how the
/// task ended: the loop's reason unless a check failed (`checks_failed`) or a signal
/// stopped a check (`interrupted`).
#[expect(
    clippy::too_many_arguments,
    reason = "the task's parts, each used once"
)]
pub(super) async fn judge(
    plan: &TaskPlan,
    started: &Started,
    commands: &TaskCommands,
    outcome: LoopOutcome,
    changes: &Changes,
    interrupt: Interrupt,
    redactor: &Redactor,
    report: &mut TaskReport,
    transcript: &mut TranscriptWriter,
) -> Result<(EndReason, String), TaskError> {
    let (mut reason, mut message) = (outcome.reason, outcome.message);
    if runs_checks(reason) {
        // Checks get the agent's scrubbed environment and, unless a check says otherwise,
        // its sandbox: they run code the agent wrote.
        for check in &plan.spec.spec.checks {
            let check_env = commands.for_check(check)?;
            // A signal stops the check at once (dropping it kills its processes) and the
            // task ends interrupted: a cancelled job never reports a pass.
            let result = tokio::select! {
                result = run_check(check, &started.workspace.dir, &check_env, redactor) => result,
                () = interrupt.cancelled() => {
                    reason = EndReason::Interrupted;
                    message = format!(
                        "interrupted while check \"{}\" ran; it was stopped and the checks after it did not run",
                        check.name
                    );
                    break;
                }
            };
            transcript.write(Event::check(&result))?;
            report.checks.push(result);
        }
        let mut failed: Vec<String> = report
            .checks
            .iter()
            .filter(|c| !c.passed)
            .map(failure_summary)
            .collect();
        if reason == EndReason::Interrupted {
            // The stopped check's processes are gone before the reports say so.
            commands
                .env
                .tracker
                .stop_all_and_wait(crate::sandbox::exec::STOP_GRACE * 2)
                .await;
        }
        // Expectations are reported like checks and fail the task like them.
        if let Some(expectations) = &plan.spec.spec.expect
            && reason != EndReason::Interrupted
        {
            for result in expect::evaluate(expectations, &changes.paths) {
                transcript.write(Event::check(&result))?;
                if !result.passed {
                    failed.push(expect::failure_summary(&result));
                }
                report.checks.push(result);
            }
        }
        if reason == EndReason::EndTurn && !failed.is_empty() {
            reason = EndReason::ChecksFailed;
            message = failed.join("; ");
        }
    }
    if !changes.unreadable.is_empty() {
        message = format!(
            "{message}; {} file(s) could not be read for the diff: {}",
            changes.unreadable.len(),
            changes.unreadable.join(", ")
        );
    }
    if report.cost_usd.is_none() {
        message = format!("{message} ({})", unknown_price(&report.model));
    }
    Ok((reason, message))
}

/// Checks say something useful after any loop that ran to a stop of its own; after a
/// timeout or a runner error they would only add time.
fn runs_checks(reason: EndReason) -> bool {
    !matches!(
        reason,
        EndReason::Timeout
            | EndReason::ProviderError
            | EndReason::InternalError
            | EndReason::McpUnavailable
            | EndReason::Interrupted
    )
}
