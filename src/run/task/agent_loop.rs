//! The agent loop of a task: as many rounds as `retry:` allows while checks fail, then
//! the workspace made still (every command stopped, the worktree's git link restored)
//! before anything is judged, and the loop's figures in the report.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::Arc;

use crate::agent::context::{self, ContextConfig};
use crate::agent::{
    Agent, AgentConfig, LoopOutcome, OutputSchema, ReplayCheck, Session, system_prompt,
};
use crate::mcp::McpSession;
use crate::model::Model;
use crate::model::{context_window, pricing};
use crate::policy::Policy;
use crate::record::{EndReason, Event, Redactor, TaskReport, TranscriptWriter};
use crate::run::plan::{Mode, TaskPlan};
use crate::run::recording::RecordedResults;
use crate::tools::{Registry, ToolContext};
use crate::workspace::atomic::write_atomic;
use crate::workspace::confined::ConfinedThread;
use crate::workspace::isolation::PreparedWorkspace;

use super::arm::Armed;
use super::commands::TaskCommands;
use super::diff::{Changes, diff};
use super::error::TaskError;
use super::evaluation::{Evaluation, evaluate, feedback};
use super::hooks::task_hooks;
use super::interrupt::Interrupt;
use super::judge::unknown_price;
use super::project::project_context;
use super::start::Started;
use super::subagents::sub_agents;
use super::web::{web_access, web_search};

/// What the loop needs besides the armed task.
pub(super) struct LoopInputs<'a> {
    pub model: &'a mut dyn Model,
    pub replay: Option<RecordedResults>,
    pub interrupt: Interrupt,
    /// Where the task's artifacts are being written (the transcript hooks are shown).
    pub task_dir: &'a Path,
}

/// How the loop's rounds ended: the last round's outcome and, when that round was
/// already judged (an earlier round under `retry:` whose checks passed), its diff and
/// evaluation, which stand.
pub(super) struct Rounds {
    pub outcome: LoopOutcome,
    pub commands: TaskCommands,
    pub settled: Option<(Changes, Evaluation)>,
}

/// The rounds as the loop left them, before the workspace is made still.
struct RoundsRun {
    outcome: Result<LoopOutcome, TaskError>,
    /// The round the loop ended in (1 for the first).
    attempt: u32,
    settled: Option<(Changes, Evaluation)>,
}

/// What judging a round between two rounds needs of the task.
struct Judging<'a> {
    plan: &'a TaskPlan,
    started: &'a Started,
    commands: &'a TaskCommands,
    task_dir: &'a Path,
    redactor: &'a Redactor,
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
        project,
    } = armed;
    let workspace = &started.workspace;
    let context = project_context(&project.files, &plan.skills, &registry, &policy);
    let mut config = loop_config(
        plan,
        (&workspace.dir, &context),
        inputs.model,
        report,
        inputs.interrupt.clone(),
    );
    config.clock_from = Some(started.clock);
    let hooks = task_hooks(
        plan,
        &commands,
        &workspace.dir,
        inputs.task_dir,
        &report.name,
    )?;
    let ctx = tool_context(
        plan,
        &workspace.dir,
        &commands,
        &policy,
        &registry,
        &config,
        file_thread,
    );
    let subagents = sub_agents(
        plan,
        (&registry, &policy),
        &project.files,
        inputs.replay.as_ref(),
    )?;
    let mut agent = Agent {
        model: inputs.model,
        registry: &registry,
        policy: &policy,
        ctx,
        transcript,
        replay: inputs
            .replay
            .map(|replay| Box::new(replay) as Box<dyn ReplayCheck>),
        redactor,
        hooks: &hooks,
        subagents: subagents.as_ref(),
        depth: 0,
    };
    let judging = Judging {
        plan,
        started,
        commands: &commands,
        task_dir: inputs.task_dir,
        redactor,
    };
    let driven = drive(&mut agent, &config, &judging, mcp, report).await?;
    report.todos = agent.ctx.todos();
    report.attempts = driven.attempt;
    report.hook_runs = hooks.count();
    record_figures(report, &driven.outcome, &config, &driven.offered);
    record_output(report, &driven.session, redactor, inputs.task_dir)?;
    Ok(Rounds {
        outcome: driven.outcome,
        commands,
        settled: driven.settled,
    })
}

/// The loop as it ended, the workspace made still.
struct Driven {
    outcome: LoopOutcome,
    attempt: u32,
    settled: Option<(Changes, Evaluation)>,
    session: Session,
    /// The MCP tools each server offered, by server.
    offered: Vec<(String, Vec<String>)>,
}

/// The rounds of the loop, then the session closed (SessionEnd) and the workspace made
/// still: every command and server the agent started stopped and gone.
async fn drive(
    agent: &mut Agent<'_>,
    config: &AgentConfig,
    judging: &Judging<'_>,
    mcp: McpSession,
    report: &mut TaskReport,
) -> Result<Driven, TaskError> {
    charge_spent_before(judging.plan, config);
    let mut session = agent.begin(config);
    let RoundsRun {
        outcome,
        attempt,
        mut settled,
    } = run_rounds(agent, &mut session, config, judging, report).await;
    // A loop that stopped on an error (a full disk) still ran its turns and spent them.
    if outcome.is_err() {
        report.turns = session.turns();
        report.usage = config.meter.usage();
        report.cost_usd = config.meter.cost_usd();
        report.agent_turns = config.meter.turns().saturating_sub(session.turns());
    }
    // A resumed run that ended before its recorded turns were all replayed (a strict
    // drift, a lower limit) records what follows: hooks, checks, the end.
    agent.hand_over_now();
    // SessionEnd: the agent's work is over, whatever comes next. Its hooks can change
    // the workspace, so a round judged before them is judged again.
    let closed = match &outcome {
        Ok(outcome) => agent.close(config, &session, outcome.reason).await,
        Err(_) => Ok(0),
    };
    // Nothing the agent started may outlive the loop, change the workspace while the
    // diff is taken, or race the checks: stop every command and server and wait until
    // they are gone.
    agent.ctx.shutdown();
    let offered = offered_mcp_tools(&mcp);
    mcp.shutdown().await;
    settle(
        &agent.ctx,
        judging.commands,
        &judging.started.workspace,
        report,
    )
    .await?;
    if closed? > 0 {
        settled = None;
    }
    Ok(Driven {
        outcome: outcome?,
        attempt,
        settled,
        session,
        offered,
    })
}

/// The context the task's tools run in: the workspace, the command environment, what
/// the policy hides, what the web tools may reach, and the confined file thread.
fn tool_context(
    plan: &TaskPlan,
    workspace: &Path,
    commands: &TaskCommands,
    policy: &Policy,
    registry: &Registry,
    config: &AgentConfig,
    file_thread: Option<ConfinedThread>,
) -> ToolContext {
    let ctx = ToolContext::with_env(workspace.to_path_buf(), commands.env.clone())
        .with_additional(&plan.spec.additional_directories())
        .with_hidden(policy.hidden_filter())
        .with_web(web_access(plan, policy, registry, &config.meter));
    match file_thread {
        Some(thread) => ctx.confined_to(thread),
        None => ctx,
    }
}

/// A resumed task has paid for the turns its resume dropped: they count toward its
/// budget from the start.
fn charge_spent_before(plan: &TaskPlan, config: &AgentConfig) {
    if let Mode::Resume(resume) = &plan.mode {
        let cost = config
            .pricing
            .map(|pricing| pricing::cost(&resume.spent_before, &pricing));
        config.meter.add_spent(&resume.spent_before, cost);
    }
}

/// The rounds of the loop: after each round that ended on its own, while `retry:`
/// allows another, the round is judged as the last would be; a round whose checks fail
/// is followed by another with their feedback. A replay's rounds are the recorded
/// ones; a resumed run's too, then its own.
async fn run_rounds(
    agent: &mut Agent<'_>,
    session: &mut Session,
    config: &AgentConfig,
    judging: &Judging<'_>,
    report: &mut TaskReport,
) -> RoundsRun {
    let max_attempts = judging.plan.max_attempts();
    let mut recorded = recorded_attempts(judging.plan);
    let resumed = matches!(judging.plan.mode, Mode::Resume(_));
    let mut attempt = 1;
    let mut settled = None;
    let outcome = 'rounds: {
        if max_attempts > 1
            && let Err(error) = agent.transcript.write(Event::Attempt {
                attempt,
                failed: Vec::new(),
                message: None,
            })
        {
            break 'rounds Err(error.into());
        }
        loop {
            let outcome = match agent.run(config, session).await {
                Ok(outcome) => outcome,
                Err(error) => break 'rounds Err(error.into()),
            };
            if attempt >= max_attempts || outcome.reason != EndReason::EndTurn {
                break 'rounds Ok(outcome);
            }
            let (failed, message) = match recorded.as_mut().and_then(VecDeque::pop_front) {
                Some(next) => next,
                None if recorded.is_some() && !resumed => break 'rounds Ok(outcome),
                None => {
                    let judged = judge_round(judging, &agent.ctx, config, report, agent.transcript);
                    let (changes, evaluation) = match judged.await {
                        Ok(judged) => judged,
                        Err(error) => break 'rounds Err(error),
                    };
                    if evaluation.passed() || evaluation.interrupted.is_some() {
                        settled = Some((changes, evaluation));
                        break 'rounds Ok(outcome);
                    }
                    let failed = evaluation
                        .checks
                        .iter()
                        .filter(|c| !c.passed)
                        .map(|c| c.name.clone())
                        .collect();
                    let message = feedback(&evaluation, attempt + 1, max_attempts);
                    (failed, judging.redactor.redact_owned(message))
                }
            };
            attempt += 1;
            if let Err(error) = agent.transcript.write(Event::Attempt {
                attempt,
                failed,
                message: Some(message.clone()),
            }) {
                break 'rounds Err(error.into());
            }
            session.next_round(message);
        }
    };
    let mut outcome = outcome;
    if let (Mode::Resume(resume), Ok(ended)) = (&judging.plan.mode, &mut outcome) {
        took_another_path(ended, resume.turns);
    }
    RoundsRun {
        outcome,
        attempt,
        settled,
    }
}

/// A resumed run whose replay ended of its own accord before the recording did (a
/// Stop hook now lets the model stop where it sent it back) took another path: its
/// remaining recorded turns were never replayed, so its end is not the task's.
fn took_another_path(ended: &mut LoopOutcome, recorded_turns: u32) {
    if matches!(ended.reason, EndReason::EndTurn | EndReason::HookStopped)
        && ended.turns < recorded_turns
    {
        ended.message = format!(
            "the replay took another path: the run ended after turn {} ({}), but the recording goes on to turn {recorded_turns}; a hook may have answered otherwise than when it was recorded",
            ended.turns,
            ended.reason.as_str(),
        );
        ended.reason = EndReason::ReplayDrift;
    }
}

/// The MCP tools each server offered, by server: their calls are counted per server.
fn offered_mcp_tools(mcp: &McpSession) -> Vec<(String, Vec<String>)> {
    mcp.reports
        .iter()
        .filter_map(|server| {
            let started = server.outcome.as_ref().ok()?;
            let names = started.tools.iter().map(|t| t.name.clone()).collect();
            Some((server.server.clone(), names))
        })
        .collect()
}

/// The loop's figures in the report: its sub-agents' included.
fn record_figures(
    report: &mut TaskReport,
    outcome: &LoopOutcome,
    config: &AgentConfig,
    offered: &[(String, Vec<String>)],
) {
    report.turns = outcome.turns;
    report.usage = config.meter.usage();
    report.cost_usd = config.meter.cost_usd();
    report.agents = config.meter.agents();
    report.agent_turns = config.meter.turns().saturating_sub(outcome.turns);
    report.drift = outcome.drift.clone();
    report.final_text = outcome.final_text.clone();
    report.context = outcome.context.clone();
    report.wrap_up = outcome.wrap_up.clone();
    report.denials = outcome.denials.clone();
    // A sub-agent's denials are the task's too.
    report.denials.extend(config.meter.agent_denials());
    let mut calls = outcome.calls.clone();
    for (name, count) in config.meter.agent_calls() {
        *calls.entry(name).or_default() += count;
    }
    for summary in &mut report.mcp_servers {
        let names = offered.iter().find(|(server, _)| *server == summary.name);
        summary.calls = names.map_or(0, |(_, names)| {
            names.iter().filter_map(|name| calls.get(name)).sum()
        });
    }
}

/// The task's final answer (`output:`) in the report and in `output.json`.
fn record_output(
    report: &mut TaskReport,
    session: &Session,
    redactor: &Redactor,
    task_dir: &Path,
) -> Result<(), TaskError> {
    report.output = session.output().cloned().map(|mut value| {
        // Redacted as JSON: a secret with characters JSON escapes is still found.
        redactor.redact_json(&mut value);
        value
    });
    if let Some(value) = &report.output {
        let path = task_dir.join("output.json");
        let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
        text.push('\n');
        write_atomic(&path, text.as_bytes()).map_err(|source| TaskError::Write { path, source })?;
    }
    Ok(())
}

/// Judge a round that another may follow: the workspace made still, its diff, its
/// checks and expectations.
async fn judge_round(
    judging: &Judging<'_>,
    ctx: &ToolContext,
    config: &AgentConfig,
    report: &mut TaskReport,
    transcript: &mut TranscriptWriter,
) -> Result<(Changes, Evaluation), TaskError> {
    let Judging {
        plan,
        started,
        commands,
        task_dir,
        redactor,
    } = judging;
    settle(ctx, commands, &started.workspace, report).await?;
    let exclude = plan.spec.spec.diff.as_ref().map(|diff| &diff.value);
    let changes = diff(exclude, started, task_dir, redactor, report)?;
    let evaluation = evaluate(
        &plan.spec.spec,
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
    workspace: &PreparedWorkspace,
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
    let events = match (&plan.mode, plan.recording()) {
        (Mode::Resume(resume), _) => &resume.events,
        (_, Some(recording)) => &recording.events,
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

/// The loop's limits and prompts (`prompt`: the workspace root, and what the project
/// brings to the system prompt); warns when the model's price is unknown.
fn loop_config(
    plan: &TaskPlan,
    (workspace, project): (&Path, &str),
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
        .map(Arc::new);
    let mut system = system_prompt(workspace, project, plan.spec.spec.system.as_deref());
    if let Some(schema) = &output {
        system.push_str("\n\n");
        system.push_str(&schema.instructions(model.output_mode()));
    }
    AgentConfig {
        clock_from: None,
        system,
        prompt: plan.spec.spec.prompt.clone(),
        max_turns: plan.limits.max_turns,
        timeout: crate::spec::TimeoutLimit::effective(limits.timeout),
        max_cost_usd: plan.limits.max_cost_usd,
        max_tokens: plan.limits.max_tokens,
        pricing: prices,
        interrupt,
        output,
        meter: Default::default(),
        web_search: web_search(plan, model),
        context: context_config(limits.context.as_ref(), model),
        max_identical_calls: crate::spec::IdenticalCalls::effective(limits.max_identical_calls),
        wrap_up: limits.wrap_up,
    }
}

/// `limits.context` with its defaults: the model's window from the table, 70% of it,
/// the newest three results kept.
fn context_config(spec: Option<&crate::spec::ContextSpec>, model: &dyn Model) -> ContextConfig {
    let settings = crate::spec::ContextSpec::settings(spec);
    ContextConfig {
        strategy: crate::spec::ContextSpec::strategy(spec),
        window: settings
            .window
            .map_or_else(|| context_window::window(model.name()), |window| window.0),
        threshold: settings
            .threshold
            .map_or(context::DEFAULT_THRESHOLD, |threshold| threshold.0),
        keep_tool_results: settings
            .keep_tool_results
            .map_or(context::DEFAULT_KEEP_TOOL_RESULTS, |keep| keep.0 as usize),
        window_given: settings.window.is_some(),
    }
}
