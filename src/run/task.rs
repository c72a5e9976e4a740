//! One task from start to artifacts: workspace, baseline snapshot, the loop, the diff,
//! the checks, and the `run_end` event. Whatever goes wrong, the task ends with a report
//! and a transcript that says why.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use crate::agent::{Agent, AgentConfig, ReplayExpectations, system_prompt};
use crate::message::Usage;
use crate::model::Model;
use crate::model::pricing;
use crate::model::remote::RemoteConfig;
use crate::model::replay::ReplayModel;
use crate::model::script::ScriptModel;
use crate::policy::Policy;
use crate::record::transcript::{EventObserver, TranscriptError};
use crate::record::{EndReason, Event, Redactor, TaskReport, TranscriptWriter};
use crate::spec::{Isolation, LoadedSpec, ScriptTurn};
use crate::tools::{Registry, ToolContext};
use crate::workspace::Baseline;
use crate::workspace::atomic::write_atomic;
use crate::workspace::baseline::{
    CopyOrigin, Exclusions, IndexSnapshot, IndexSource, StartOptions,
};

use super::task_folder::TaskFolder;
use super::task_redaction::{redact_report, task_redactor, warn_unredacted, withheld_vars};
use crate::workspace::confined::ConfinedThread;

use super::checks::{failure_summary, run_check};
use super::expect;
use super::prepare::{PreparedWorkspace, git_worktree, in_place, scratch_copy};
use super::sandbox::task_commands;
use super::setup::run_setup;

/// Where a task's assistant turns come from.
pub(crate) enum ModelSource {
    Script {
        name: Option<String>,
        turns: Vec<ScriptTurn>,
    },
    /// Recorded model responses; with expectations, tool results are compared too.
    Replay {
        events: Vec<Event>,
        expectations: Option<ReplayExpectations>,
    },
    /// A real provider (anthropic, openai), its key already read.
    Remote(Box<RemoteConfig>),
}

/// Everything needed to run one task, decided before any task starts.
pub(crate) struct TaskPlan {
    pub spec: LoadedSpec,
    pub model: ModelSource,
    pub max_turns: Option<u32>,
    /// The workspace as the task starts from it.
    pub origin: PathBuf,
    /// In place, in a scratch copy of `origin`, or in a git worktree of its repository.
    pub isolation: Isolation,
    /// A replay: the fingerprint the recorded run started from.
    pub expected_fingerprint: Option<String>,
    /// Directories that are never part of the workspace's files (copies, snapshots,
    /// diffs) when they lie inside it, besides this run's artifacts directory: a
    /// replay's recorded artifacts.
    pub excluded: Vec<PathBuf>,
    /// What drover itself writes into the artifacts directory during this run: left out
    /// of the diff when it lies inside the workspace. Anything else there, such as files
    /// an agent plants, is diffed.
    pub own_outputs: OwnOutputs,
    /// For a task working in place: its repository's index as it was when the run
    /// started (None: there was no repository), the only index its baseline trusts.
    pub saved_index: Option<Arc<IndexSnapshot>>,
}

/// drover's own paths in the artifacts directory, each left out only as what drover
/// makes there: a file planted where a folder goes (or the reverse) is diffed.
#[derive(Debug, Clone, Default)]
pub(crate) struct OwnOutputs {
    /// Every task's folder.
    pub folders: Vec<PathBuf>,
    /// junit.xml, summary.json, summary.md.
    pub files: Vec<PathBuf>,
}

/// Run the task and write its transcript and diff under `artifacts/<name>/`. Every
/// transcript event is shown to `observer` too (progress output). `exposed`: the
/// artifacts directory lies where an agent of this run may write, so the task's folder is
/// staged and published when the task is over (see [`TaskFolder`]).
pub(crate) async fn run_task(
    plan: TaskPlan,
    artifacts: &Path,
    exposed: bool,
    observer: Option<EventObserver>,
    interrupt: Option<Interrupt>,
) -> TaskReport {
    let started = Instant::now();
    let mut report = unfinished_report(&plan, artifacts);
    let redactor = Arc::new(task_redactor(&plan));
    let outcome = match TaskFolder::new(&report.artifacts_dir, exposed) {
        Ok(folder) => {
            let executed = execute(
                plan,
                artifacts,
                folder.dir(),
                &mut report,
                observer,
                interrupt,
                Arc::clone(&redactor),
            )
            .await;
            // Published whatever happened: an error's transcript matters most.
            let published = folder.publish().map_err(|e| e.to_string());
            executed.and(published)
        }
        Err(error) => Err(format!(
            "cannot create artifact directory {}: {error}",
            report.artifacts_dir.display()
        )),
    };
    if let Err(error) = outcome {
        report.reason = EndReason::InternalError;
        report.status = EndReason::InternalError.status();
        report.message = error;
    }
    report.duration = started.elapsed();
    redact_report(&mut report, &redactor);
    report.redacted = redactor.replaced();
    report
}

/// The report of a task that has not finished: an internal error until it says more.
/// Also what is reported when running the task failed outright.
pub(crate) fn unfinished_report(plan: &TaskPlan, artifacts: &Path) -> TaskReport {
    TaskReport {
        name: plan.spec.name().to_string(),
        spec_path: plan.spec.path.clone(),
        status: EndReason::InternalError.status(),
        reason: EndReason::InternalError,
        message: String::new(),
        provider: String::new(),
        model: String::new(),
        turns: 0,
        usage: Usage::default(),
        cost_usd: Some(0.0),
        duration: Default::default(),
        checks: Vec::new(),
        denials: Vec::new(),
        files_changed: Vec::new(),
        ignored_changes: 0,
        setup: Vec::new(),
        final_text: String::new(),
        todos: Vec::new(),
        artifacts_dir: artifacts.join(plan.spec.name()),
        redacted: 0,
    }
}

/// Resolves when drover is interrupted; never without an interrupt channel (or when its
/// sender is gone, which is not a signal).
pub(super) async fn signalled(interrupt: &mut Option<Interrupt>) {
    if let Some(receiver) = interrupt
        && receiver.wait_for(|set| *set).await.is_ok()
    {
        return;
    }
    std::future::pending().await
}

/// Becomes true when drover is interrupted (see `run::interrupt`).
pub(super) type Interrupt = tokio::sync::watch::Receiver<bool>;

/// The task's steps; an Err is an internal error (drover could not do its job).
async fn execute(
    plan: TaskPlan,
    artifacts: &Path,
    task_dir: &Path,
    report: &mut TaskReport,
    observer: Option<EventObserver>,
    interrupt: Option<Interrupt>,
    redactor: Arc<Redactor>,
) -> Result<(), String> {
    let mut transcript =
        TranscriptWriter::create(&task_dir.join("transcript.jsonl")).map_err(|e| e.to_string())?;
    if let Some(observer) = observer {
        transcript.observe(observer);
    }
    transcript.redact_with(Arc::clone(&redactor));
    let steps = steps(
        plan,
        artifacts,
        task_dir,
        report,
        interrupt,
        &redactor,
        &mut transcript,
    )
    .await;
    if let Err(error) = &steps {
        // Whatever failed, the transcript ends with its run_end: the record is never
        // left without an ending.
        let message = format!("drover could not finish the task: {error}");
        let _ = finish(
            &mut transcript,
            &redactor,
            report,
            EndReason::InternalError,
            message,
        );
    }
    steps
}

/// Everything after the transcript exists; an Err is an internal error, and the caller
/// still ends the transcript.
async fn steps(
    plan: TaskPlan,
    artifacts: &Path,
    task_dir: &Path,
    report: &mut TaskReport,
    interrupt: Option<Interrupt>,
    redactor: &Arc<Redactor>,
    transcript: &mut TranscriptWriter,
) -> Result<(), String> {
    let redactor = Arc::clone(redactor);
    // drover's own artifacts (this task's transcript, other tasks', earlier runs') are not
    // the agent's work: a copy, the snapshots and the diff leave them out when they lie
    // inside the workspace (the default: `drover-artifacts/` in the current directory).
    // A copy leaves the whole artifacts directory out; the baseline of the workspace
    // leaves out only what drover writes there, so files an agent plants in it are in
    // the diff.
    let mut excluded = plan.excluded.clone();
    excluded.push(artifacts.to_path_buf());
    let mut excluded_folders = plan.excluded.clone();
    excluded_folders.extend(plan.own_outputs.folders.iter().cloned());
    let baseline_excluded = Exclusions {
        dirs: excluded_folders,
        files: plan.own_outputs.files.clone(),
    };
    // Isolation and the baseline stop at once on a signal: nothing has changed yet, so
    // the task ends interrupted with an empty diff.
    let stop = || interrupt.as_ref().is_some_and(|i| *i.borrow());
    let prepared = prepare(&plan, &excluded, &stop).and_then(|workspace| {
        let baseline = Baseline::take(
            &workspace.dir,
            start_options(&plan, &baseline_excluded, workspace.copy_origin(true)),
            &stop,
        )?;
        Ok((workspace, baseline))
    });
    let (workspace, mut baseline) = match prepared {
        Ok(prepared) => {
            if !prepared.1.leftovers.is_empty() {
                eprintln!(
                    "drover: {}: removed {} temp file(s) a killed drover left in the workspace: {}",
                    report.name,
                    prepared.1.leftovers.len(),
                    prepared
                        .1
                        .leftovers
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
            prepared
        }
        Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {
            let message = "interrupted while the workspace was prepared; the agent never ran";
            return end_before_loop(
                task_dir,
                transcript,
                &redactor,
                report,
                EndReason::Interrupted,
                message.to_string(),
            );
        }
        Err(error) => {
            return Err(format!(
                "cannot prepare the workspace {}: {error}",
                plan.origin.display()
            ));
        }
    };
    let fingerprint = baseline.fingerprint();

    let mut model = build_model(&plan);
    report.provider = model.provider().to_string();
    report.model = model.name().to_string();
    let rules = super::spec_checks::rule_set(&plan.spec).map_err(|e| e.to_string())?;
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
    let policy = Policy::new(&rules, &workspace.dir, &plan.spec.additional_directories())
        .with_protected(protected);
    let mut registry = Registry::builtin().map_err(|e| e.to_string())?;
    registry.retain(|facts| policy.withholds(facts).is_none());
    let runs_commands = registry.names().iter().any(|name| name == "Bash");
    // Setup and checks run in the sandbox too, so it is probed for them as for Bash.
    let probe =
        runs_commands || !plan.spec.spec.checks.is_empty() || !plan.spec.spec.setup.is_empty();
    let mut commands = task_commands(&plan.spec, &workspace.dir, probe).await?;
    for name in withheld_vars(&plan) {
        if !commands.env.withheld.contains(&name) {
            commands.env.withheld.push(name);
        }
    }

    // drover's file tools get the same filesystem confinement as the commands: a thread
    // under the task's Landlock ruleset does their opens (defence in depth beneath the
    // path handling). Failing that, the task fails as it would for Bash.
    let sandbox_on = commands.summary["enabled"] == true;
    let mut file_thread = None;
    if sandbox_on {
        let policy = commands.policy.clone();
        match ConfinedThread::start(move || crate::sandbox::enforce_files(&policy)) {
            Ok(thread) => file_thread = Some(thread),
            Err(reason) => {
                if commands.unavailable.is_none() {
                    commands.unavailable = Some(format!(
                        "the OS sandbox cannot be enforced on this machine ({reason}), so the task did not run; run drover on a Linux kernel with Landlock enabled, or write `sandbox: off` in the spec to run without it explicitly"
                    ));
                }
            }
        }
    }

    warn_unredacted(&redactor);
    transcript
        .write(Event::RunStart {
            drover_version: crate::VERSION.to_string(),
            task: report.name.clone(),
            spec_sha256: plan.spec.sha256.clone(),
            provider: report.provider.clone(),
            model: report.model.clone(),
            tools: registry.names(),
            spec_path: absolute(&plan.spec.path),
            spec_yaml: plan.spec.text.clone(),
            workspace: absolute(&plan.origin),
            workspace_sha256: fingerprint.clone(),
            max_turns: plan.max_turns,
            sandbox: commands.summary.clone(),
            redaction_skipped: redactor.skipped().to_vec(),
        })
        .map_err(|e| e.to_string())?;
    if let Some(message) = commands.unavailable.clone() {
        return finish(
            transcript,
            &redactor,
            report,
            EndReason::SandboxUnavailable,
            message,
        )
        .map_err(|e| e.to_string());
    }

    if let Some(expected) = &plan.expected_fingerprint
        && *expected != fingerprint
    {
        let message = format!(
            "the workspace {} is not in the state the recorded run started from (fingerprint {} instead of {}); pass --workspace with a checkout of the starting state",
            plan.origin.display(),
            short(&fingerprint),
            short(expected)
        );
        let strict =
            matches!(&plan.model, ModelSource::Replay { expectations: Some(e), .. } if e.strict);
        if strict {
            return finish(
                transcript,
                &redactor,
                report,
                EndReason::ReplayDrift,
                message,
            )
            .map_err(|e| e.to_string());
        }
        eprintln!("drover: warning: {}: {message}", report.name);
    }

    // Setup's effects are the starting state: the diff's baseline is taken again after it.
    if !plan.spec.spec.setup.is_empty() {
        let mut setup_interrupt = interrupt.clone();
        let ran = run_setup(
            &plan.spec.spec.setup,
            &workspace.dir,
            &commands,
            &redactor,
            transcript,
            &mut setup_interrupt,
            &mut report.setup,
        )
        .await?;
        if let Err(stopped) = ran {
            return end_before_loop(
                task_dir,
                transcript,
                &redactor,
                report,
                stopped.reason,
                stopped.message,
            );
        }
        let stop = || interrupt.as_ref().is_some_and(|i| *i.borrow());
        baseline = match Baseline::take(
            &workspace.dir,
            start_options(&plan, &baseline_excluded, workspace.copy_origin(false)),
            &stop,
        ) {
            Ok(baseline) => baseline,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {
                let message = "interrupted after setup, before the agent ran";
                return end_before_loop(
                    task_dir,
                    transcript,
                    &redactor,
                    report,
                    EndReason::Interrupted,
                    message.to_string(),
                );
            }
            Err(error) => {
                return Err(format!(
                    "cannot take the workspace's starting state after setup: {error}"
                ));
            }
        };
    }

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
    let mut check_interrupt = interrupt.clone();
    let config = AgentConfig {
        system: system_prompt(&workspace.dir, plan.spec.spec.system.as_deref()),
        prompt: plan.spec.spec.prompt.clone(),
        max_turns: plan.max_turns,
        timeout: crate::spec::TimeoutLimit::effective(limits.timeout),
        max_cost_usd: limits.max_cost_usd.as_ref().map(|limit| limit.value),
        max_tokens: limits.max_tokens.as_ref().map(|l| l.value),
        pricing: prices,
        interrupt,
    };
    let expectations = match plan.model {
        ModelSource::Replay { expectations, .. } => expectations,
        ModelSource::Script { .. } | ModelSource::Remote(_) => None,
    };
    let mut ctx = ToolContext::with_env(workspace.dir.clone(), commands.env.clone())
        .with_additional(&plan.spec.additional_directories())
        .with_hidden(policy.hidden_filter());
    if let Some(thread) = file_thread {
        ctx = ctx.confined_to(thread);
    }
    let mut agent = Agent {
        model: model.as_mut(),
        registry: &registry,
        policy: &policy,
        ctx,
        transcript,
        replay: expectations,
        redactor: &redactor,
    };
    let outcome = agent.run(&config).await;
    // Nothing the agent started may outlive the loop, change the workspace while the
    // diff is taken, or race the checks: stop every command and wait until it is gone.
    agent.ctx.shutdown();
    if !commands
        .env
        .tracker
        .stop_all_and_wait(crate::sandbox::exec::STOP_GRACE * 2)
        .await
    {
        return Err(format!(
            "{} of the agent's commands could not be stopped; the diff and the checks were not run",
            commands.env.tracker.live()
        ));
    }
    // A check's git must find the real repository, not one the agent pointed at.
    match workspace.restore_git_link() {
        Ok(false) => {}
        Ok(true) => eprintln!(
            "drover: warning: {}: the agent changed the worktree's .git file; it was restored before the diff and the checks",
            report.name
        ),
        Err(error) => {
            return Err(format!(
                "the worktree's .git file was changed and cannot be restored ({error}); the checks were not run"
            ));
        }
    }
    let outcome = outcome.map_err(|e| e.to_string())?;
    report.turns = outcome.turns;
    report.usage = outcome.usage;
    report.cost_usd = outcome.cost_usd;
    report.final_text = outcome.final_text.clone();
    report.denials = outcome.denials.clone();
    report.todos = agent.ctx.todos();

    // The end is compared even after a signal: the diff is what an interrupted task
    // most needs to keep.
    let comparison = baseline
        .compare_until(&|| false)
        .map_err(|e| format!("cannot compare the workspace with its start: {e}"))?;
    let patch = baseline.patch(&comparison);
    // A file drover cannot read is named, not fatal: the diff of everything else is
    // kept, and the unreadable file shows as unchanged with a note `git apply` skips.
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
    write_atomic(&task_dir.join("diff.patch"), patch.as_bytes()).map_err(|e| {
        format!(
            "cannot write {}: {e}",
            task_dir.join("diff.patch").display()
        )
    })?;
    let changed = comparison.paths();
    report.files_changed = changed.iter().map(ToString::to_string).collect();
    report.ignored_changes = comparison.excluded_changes;

    let (mut reason, mut message) = (outcome.reason, outcome.message);
    if runs_checks(reason) {
        // Checks get the agent's scrubbed environment and, unless a check says otherwise,
        // its sandbox: they run code the agent wrote.
        for check in &plan.spec.spec.checks {
            let check_env = commands.for_check(check)?;
            // A signal stops the check at once (dropping it kills its processes) and the
            // task ends interrupted: a cancelled job never reports a pass.
            let result = tokio::select! {
                result = run_check(check, &workspace.dir, &check_env, &redactor) => result,
                () = signalled(&mut check_interrupt) => {
                    reason = EndReason::Interrupted;
                    message = format!(
                        "interrupted while check \"{}\" ran; it was stopped and the checks after it did not run",
                        check.name
                    );
                    break;
                }
            };
            transcript
                .write(Event::check(&result))
                .map_err(|e| e.to_string())?;
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
            for result in expect::evaluate(expectations, &changed) {
                transcript
                    .write(Event::check(&result))
                    .map_err(|e| e.to_string())?;
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
    if !unreadable.is_empty() {
        message = format!(
            "{message}; {} file(s) could not be read for the diff: {}",
            unreadable.len(),
            unreadable.join(", ")
        );
    }
    if report.cost_usd.is_none() {
        message = format!("{message} ({})", unknown_price(&report.model));
    }
    finish(transcript, &redactor, report, reason, message).map_err(|e| e.to_string())
}

/// The note for a model the pricing table does not know: its cost is null, not zero.
fn unknown_price(model: &str) -> String {
    format!(
        "cost unknown: drover has no price for model {model:?}; set model.pricing to account for it"
    )
}

/// Checks say something useful after any loop that ran to a stop of its own; after a
/// timeout or a runner error they would only add time.
fn runs_checks(reason: EndReason) -> bool {
    !matches!(
        reason,
        EndReason::Timeout
            | EndReason::ProviderError
            | EndReason::InternalError
            | EndReason::Interrupted
    )
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

/// End a task before its loop ran: an empty diff (nothing was changed by the agent),
/// then the run_end event.
fn end_before_loop(
    task_dir: &Path,
    transcript: &mut TranscriptWriter,
    redactor: &Redactor,
    report: &mut TaskReport,
    reason: EndReason,
    message: String,
) -> Result<(), String> {
    write_atomic(&task_dir.join("diff.patch"), b"")
        .map_err(|e| format!("cannot write the diff: {e}"))?;
    finish(transcript, redactor, report, reason, message).map_err(|e| e.to_string())
}

fn finish(
    transcript: &mut TranscriptWriter,
    redactor: &Redactor,
    report: &mut TaskReport,
    reason: EndReason,
    message: String,
) -> Result<(), TranscriptError> {
    report.reason = reason;
    report.status = reason.status();
    report.message = message;
    let redacted_so_far = redactor.replaced();
    transcript.write(Event::RunEnd {
        status: report.status,
        reason,
        message: report.message.clone(),
        turns: report.turns,
        usage: report.usage,
        cost_usd: report.cost_usd,
        todos: report.todos.clone(),
        redacted: redacted_so_far,
    })
}

fn prepare(
    plan: &TaskPlan,
    excluded: &[PathBuf],
    stop: crate::workspace::snapshot::Stop<'_>,
) -> std::io::Result<PreparedWorkspace> {
    match plan.isolation {
        Isolation::None => in_place(&plan.origin),
        Isolation::Copy => scratch_copy(&plan.origin, excluded, stop),
        Isolation::Worktree => git_worktree(&plan.origin, plan.spec.name()),
    }
}

fn build_model(plan: &TaskPlan) -> Box<dyn Model> {
    match &plan.model {
        ModelSource::Script { name, turns } => {
            Box::new(ScriptModel::new(name.as_deref(), turns.clone()))
        }
        ModelSource::Replay { events, .. } => Box::new(ReplayModel::from_events(events)),
        ModelSource::Remote(config) => config.as_ref().clone().build(),
    }
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
