//! A task's last steps: the agent loop and what must follow it before anything is
//! judged (every command stopped, the worktree's git link restored), the diff, and the
//! checks and expectations that decide how the task ended.

use std::collections::VecDeque;
use std::path::Path;

use super::attempts::{Evaluation, evaluate, feedback};
use super::sandbox::TaskCommands;
use super::task::{Interrupt, ModelSource, TaskPlan};
use super::task_error::TaskError;
use super::task_start::{Armed, Started};
use crate::agent::{
    Agent, AgentConfig, LoopOutcome, OutputSchema, ReplayExpectations, system_prompt,
};
use crate::hooks::{HookCommand, HookEntry, HookSession, Hooks};
use crate::model::Model;
use crate::model::pricing;
use crate::record::{EndReason, Event, Redactor, TaskReport, TranscriptWriter};
use crate::spec::{DEFAULT_HOOK_TIMEOUT_SECS, HookMatcher};
use crate::tools::{ToolContext, WebAccess};
use crate::workspace::RelPath;
use crate::workspace::atomic::write_atomic;

/// What the loop needs besides the armed task.
pub(super) struct LoopInputs<'a> {
    pub model: &'a mut dyn Model,
    pub replay: Option<ReplayExpectations>,
    pub interrupt: Interrupt,
    /// Where the task's artifacts are being written (the transcript hooks are shown).
    pub task_dir: &'a Path,
}

/// What WebFetch may reach in this task: the policy's grants for it (none when the tool
/// is not offered), the page model of `tools.web_fetch.model`, and in a replay the
/// recorded results it answers with instead of fetching.
fn web_access(
    plan: &TaskPlan,
    policy: &crate::policy::Policy,
    registry: &crate::tools::Registry,
    meter: &std::sync::Arc<crate::agent::Meter>,
) -> WebAccess {
    let Some(facts) = registry.facts("WebFetch") else {
        return WebAccess::default();
    };
    let answerer = plan.web_fetch_model.as_ref().map(|source| {
        let model = super::task::model_of(source);
        let spec = plan
            .spec
            .spec
            .tools
            .as_ref()
            .and_then(|tools| tools.value.web_fetch_model());
        let pricing = spec.and_then(|spec| {
            let spec = &spec.value;
            pricing::resolve(model.provider(), model.name(), spec.pricing.as_ref())
        });
        std::sync::Arc::new(super::page_model::PageModel::new(
            model,
            std::sync::Arc::clone(meter),
            pricing,
        )) as std::sync::Arc<dyn crate::tools::PageAnswerer>
    });
    let access = WebAccess::new(policy.web_grants(facts.clone()), answerer);
    match &plan.answers {
        Some(answers) => access.replaying(std::sync::Arc::clone(answers)),
        None => access,
    }
}

/// How the loop's rounds ended: the last round's outcome and, when that round was
/// already judged (an earlier round under `retry:` whose checks passed), its diff and
/// evaluation, which stand.
pub(super) struct Rounds {
    pub outcome: LoopOutcome,
    pub commands: TaskCommands,
    pub settled: Option<(Changes, Evaluation)>,
}

/// Run the agent loop, as many rounds as `retry.max_attempts` allows while checks
/// fail, then make the workspace still: every command the agent started stopped and
/// gone, the worktree's `.git` file restored. The report gets the loop's turns, usage,
/// final text, denials, todos, attempts, hook runs and final answer.
pub(super) async fn run_agent(
    plan: &TaskPlan,
    started: &Started,
    armed: Armed,
    inputs: LoopInputs<'_>,
    redactor: &Redactor,
    report: &mut TaskReport,
    transcript: &mut TranscriptWriter,
) -> Result<Rounds, TaskError> {
    let Armed {
        policy,
        registry,
        commands,
        file_thread,
        mcp,
    } = armed;
    let workspace = &started.workspace;
    let config = loop_config(
        plan,
        &workspace.dir,
        inputs.model,
        report,
        inputs.interrupt.clone(),
    );
    let hooks = task_hooks(
        plan,
        &commands,
        &workspace.dir,
        inputs.task_dir,
        &report.name,
    )?;
    let mut ctx = ToolContext::with_env(workspace.dir.clone(), commands.env.clone())
        .with_additional(&plan.spec.additional_directories())
        .with_hidden(policy.hidden_filter())
        .with_web(web_access(plan, &policy, &registry, &config.meter));
    if let Some(thread) = file_thread {
        ctx = ctx.confined_to(thread);
    }
    // A resumed task has paid for the turns its resume dropped.
    if let Some(resume) = &plan.resume {
        let cost = config
            .pricing
            .map(|pricing| pricing::cost(&resume.spent_before, &pricing));
        config.meter.add_spent(&resume.spent_before, cost);
    }
    let subagents = super::subagents::sub_agents(plan, &registry, inputs.replay.as_ref())?;
    let mut agent = Agent {
        model: inputs.model,
        registry: &registry,
        policy: &policy,
        ctx,
        transcript,
        replay: inputs.replay,
        redactor,
        hooks: &hooks,
        subagents: subagents.as_ref(),
        depth: 0,
    };
    let mut session = agent.begin(&config);
    let max_attempts = plan
        .spec
        .spec
        .retry
        .as_ref()
        .map_or(1, |r| r.value.max_attempts);
    let mut recorded = recorded_attempts(plan);
    let mut attempt = 1;
    let mut settled = None;
    let mut outcome: Result<LoopOutcome, TaskError> = loop {
        if max_attempts > 1
            && attempt == 1
            && let Err(error) = agent.transcript.write(Event::Attempt {
                attempt,
                failed: Vec::new(),
                message: None,
            })
        {
            break Err(error.into());
        }
        let outcome = match agent.run(&config, &mut session).await {
            Ok(outcome) => outcome,
            Err(error) => break Err(error.into()),
        };
        if attempt >= max_attempts || outcome.reason != EndReason::EndTurn {
            break Ok(outcome);
        }
        // Another round may follow: judge this one as the last would be judged.
        // A replay's rounds are the recorded ones; a resumed run's too, then its own.
        let next_recorded = recorded.as_mut().and_then(VecDeque::pop_front);
        let (failed, message) = match next_recorded {
            Some(next) => next,
            None if recorded.is_some() && plan.resume.is_none() => break Ok(outcome),
            None => {
                let judged = judge_round(
                    plan,
                    started,
                    &commands,
                    &agent.ctx,
                    &config,
                    inputs.task_dir,
                    redactor,
                    report,
                    agent.transcript,
                )
                .await;
                let (changes, evaluation) = match judged {
                    Ok(judged) => judged,
                    Err(error) => break Err(error),
                };
                if evaluation.passed() || evaluation.interrupted.is_some() {
                    settled = Some((changes, evaluation));
                    break Ok(outcome);
                }
                let names = evaluation
                    .checks
                    .iter()
                    .filter(|c| !c.passed)
                    .map(|c| c.name.clone())
                    .collect();
                let message = feedback(&evaluation, attempt + 1, max_attempts);
                (names, redactor.redact_owned(message))
            }
        };
        attempt += 1;
        if let Err(error) = agent.transcript.write(Event::Attempt {
            attempt,
            failed,
            message: Some(message.clone()),
        }) {
            break Err(error.into());
        }
        session.next_round(message);
    };
    // A resumed run whose replay ended of its own accord before the recording did (a
    // Stop hook now lets the model stop where it sent it back) took another path: its
    // remaining recorded turns were never replayed, so its end is not the task's.
    if let (Some(resume), Ok(ended)) = (&plan.resume, &mut outcome)
        && matches!(ended.reason, EndReason::EndTurn | EndReason::HookStopped)
        && ended.turns < resume.turns
    {
        ended.message = format!(
            "the replay took another path: the run ended after turn {} ({}), but the recording goes on to turn {}; a hook may have answered otherwise than when it was recorded",
            ended.turns,
            ended.reason.as_str(),
            resume.turns
        );
        ended.reason = EndReason::ReplayDrift;
    }
    // A resumed run that ended before its recorded turns were all replayed (a strict
    // drift, a lower limit) records what follows: hooks, checks, the end.
    agent.hand_over_now();
    if let Ok(outcome) = &outcome {
        // SessionEnd: the agent's work is over, whatever comes next. Its hooks can
        // change the workspace, so a round judged before them is judged again.
        match agent.close(&config, &session, outcome.reason).await {
            Ok(0) => {}
            Ok(_) => settled = None,
            Err(error) => {
                agent.ctx.shutdown();
                mcp.shutdown().await;
                settle(&agent.ctx, &commands, workspace, report).await?;
                return Err(error.into());
            }
        }
    }
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
    settle(&agent.ctx, &commands, workspace, report).await?;
    let outcome = outcome?;
    report.turns = outcome.turns;
    // The task's figures: its sub-agents' included.
    report.usage = config.meter.usage();
    report.cost_usd = config.meter.cost_usd();
    report.agents = config.meter.agents();
    report.agent_turns = config.meter.turns().saturating_sub(outcome.turns);
    report.drift = outcome.drift.clone();
    report.final_text = outcome.final_text.clone();
    report.denials = outcome.denials.clone();
    // A sub-agent's denials are the task's too.
    report.denials.extend(config.meter.agent_denials());
    let mut calls = outcome.calls.clone();
    for (name, count) in config.meter.agent_calls() {
        *calls.entry(name).or_default() += count;
    }
    report.todos = agent.ctx.todos();
    report.attempts = attempt;
    report.hook_runs = hooks.count();
    report.output = session.output().cloned().map(|mut value| {
        // Redacted as JSON: a secret with characters JSON escapes is still found.
        redactor.redact_json(&mut value);
        value
    });
    if let Some(value) = &report.output {
        let path = inputs.task_dir.join("output.json");
        let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
        text.push('\n');
        write_atomic(&path, text.as_bytes()).map_err(|source| TaskError::Write { path, source })?;
    }
    for summary in &mut report.mcp_servers {
        let names = offered.iter().find(|(server, _)| *server == summary.name);
        summary.calls = names.map_or(0, |(_, names)| {
            names.iter().filter_map(|name| calls.get(name)).sum()
        });
    }
    Ok(Rounds {
        outcome,
        commands,
        settled,
    })
}

/// Judge a round that another may follow: the workspace made still, its diff, its
/// checks and expectations.
#[expect(
    clippy::too_many_arguments,
    reason = "the task's parts, each used once"
)]
async fn judge_round(
    plan: &TaskPlan,
    started: &Started,
    commands: &TaskCommands,
    ctx: &ToolContext,
    config: &AgentConfig,
    task_dir: &Path,
    redactor: &Redactor,
    report: &mut TaskReport,
    transcript: &mut TranscriptWriter,
) -> Result<(Changes, Evaluation), TaskError> {
    settle(ctx, commands, &started.workspace, report).await?;
    let changes = diff(started, task_dir, redactor, report)?;
    let evaluation = evaluate(
        plan,
        started,
        commands,
        &changes,
        &config.interrupt,
        redactor,
        transcript,
    )
    .await?;
    Ok((changes, evaluation))
}

/// Stop every command the agent started and wait until they are gone, then restore the
/// worktree's git link: the workspace is still for a diff or a check.
async fn settle(
    ctx: &ToolContext,
    commands: &TaskCommands,
    workspace: &super::prepare::PreparedWorkspace,
    report: &TaskReport,
) -> Result<(), TaskError> {
    ctx.stop_background();
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
        crate::esay!(
            "drover: warning: {}: the agent changed the worktree's .git file; it was restored before the diff and the checks",
            report.name
        );
    }
    Ok(())
}

/// A replay's rounds follow the recording: the failures and message of each recorded
/// round after the first (None for a live run: checks decide).
fn recorded_attempts(plan: &TaskPlan) -> Option<VecDeque<(Vec<String>, String)>> {
    let events = match (&plan.model, &plan.resume) {
        (_, Some(resume)) => &resume.events,
        (ModelSource::Replay { events, .. }, None) => events,
        _ => return None,
    };
    Some(
        events
            .iter()
            .filter_map(|event| match event {
                Event::Attempt {
                    failed,
                    message: Some(message),
                    ..
                } => Some((failed.clone(), message.clone())),
                _ => None,
            })
            .collect(),
    )
}

/// The task's hooks, ready to run: each with its own command environment (the task's
/// sandbox unless it says otherwise). A replay gives the recorded answers again and
/// runs nothing.
fn task_hooks(
    plan: &TaskPlan,
    commands: &TaskCommands,
    workspace: &Path,
    task_dir: &Path,
    task: &str,
) -> Result<Hooks, TaskError> {
    if let ModelSource::Replay { .. } = &plan.model {
        return Ok(Hooks::recorded(&plan.hook_events));
    }
    if plan.hooks.is_empty() {
        return Ok(Hooks::none());
    }
    let io_dir = commands.hook_dir().to_path_buf();
    let real = io_dir.canonicalize().unwrap_or_else(|_| io_dir.clone());
    if commands
        .policy
        .writable
        .iter()
        .any(|w| real.starts_with(w.canonicalize().unwrap_or_else(|_| w.clone())))
    {
        return Err(TaskError::HookDirWritable(io_dir));
    }
    let mut entries = Vec::new();
    for (event, matchers) in &plan.hooks {
        for entry in matchers {
            let text = entry.matcher.clone().unwrap_or_default();
            // Checked when the spec was loaded; a matcher that fails now matches all.
            let compiled = HookMatcher::new(&text).unwrap_or(HookMatcher::All);
            let mut hooks = Vec::new();
            for hook in &entry.hooks {
                hooks.push(HookCommand {
                    command: hook.command.clone(),
                    timeout: std::time::Duration::from_secs(
                        hook.timeout.unwrap_or(DEFAULT_HOOK_TIMEOUT_SECS),
                    ),
                    env: commands.for_sandbox(hook.sandbox.as_ref())?,
                });
            }
            entries.push(HookEntry {
                event: *event,
                matcher: text,
                compiled,
                hooks,
            });
        }
    }
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let session = HookSession {
        session_id: format!("{task}-{}-{millis}", std::process::id()),
        transcript_path: task_dir.join("transcript.jsonl"),
        cwd: workspace.to_path_buf(),
        task: task.to_string(),
        io_dir,
    };
    Ok(Hooks::live(entries, session))
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
        crate::esay!(
            "drover: warning: {}: {}",
            report.name,
            unknown_price(&report.model)
        );
    }
    let output = plan
        .output_schema
        .clone()
        .and_then(OutputSchema::new)
        .map(std::sync::Arc::new);
    let mut system = system_prompt(workspace, plan.spec.spec.system.as_deref());
    if let Some(schema) = &output {
        system.push_str("\n\n");
        system.push_str(&schema.instructions(model.output_mode()));
    }
    AgentConfig {
        system,
        prompt: plan.spec.spec.prompt.clone(),
        max_turns: plan.max_turns,
        timeout: crate::spec::TimeoutLimit::effective(limits.timeout),
        max_cost_usd: plan.max_cost_usd,
        max_tokens: plan.max_tokens,
        pricing: prices,
        interrupt,
        output,
        meter: Default::default(),
        web_search: web_search(plan, model),
    }
}

/// Anthropic's web search, when the task's rules allow it and its model is Anthropic's.
pub(super) fn web_search(plan: &TaskPlan, model: &dyn Model) -> Option<crate::message::WebSearch> {
    super::tool_listing::offered_web_search(
        &plan.rules,
        model.provider(),
        plan.spec.spec.tools.as_ref().map(|tools| &tools.value),
    )
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

/// Run the checks and expectations after a loop that ended on its own (unless the
/// last round was judged already), and say how the task ended: the loop's reason unless
/// a check failed (`checks_failed`) or a signal stopped a check (`interrupted`).
#[expect(
    clippy::too_many_arguments,
    reason = "the task's parts, each used once"
)]
pub(super) async fn judge(
    plan: &TaskPlan,
    started: &Started,
    commands: &TaskCommands,
    rounds: (LoopOutcome, Option<Evaluation>),
    changes: &Changes,
    interrupt: Interrupt,
    redactor: &Redactor,
    report: &mut TaskReport,
    transcript: &mut TranscriptWriter,
) -> Result<(EndReason, String), TaskError> {
    let (outcome, settled) = rounds;
    let (mut reason, mut message) = (outcome.reason, outcome.message);
    if runs_checks(reason) {
        let evaluation = match settled {
            Some(evaluation) => evaluation,
            None => {
                evaluate(
                    plan, started, commands, changes, &interrupt, redactor, transcript,
                )
                .await?
            }
        };
        report.checks = evaluation.checks;
        if let Some(why) = evaluation.interrupted {
            reason = EndReason::Interrupted;
            message = why;
        } else if reason == EndReason::EndTurn && !evaluation.failed.is_empty() {
            reason = EndReason::ChecksFailed;
            message = evaluation.failed.join("; ");
        }
    }
    if report.attempts > 1 {
        message = format!(
            "{message} (attempt {} of {})",
            report.attempts,
            max_attempts(plan)
        );
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

fn max_attempts(plan: &TaskPlan) -> u32 {
    plan.spec
        .spec
        .retry
        .as_ref()
        .map_or(1, |r| r.value.max_attempts)
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
