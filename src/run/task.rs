//! One task from start to artifacts: workspace, baseline snapshot, the loop, the diff,
//! the checks, and the `run_end` event. Whatever goes wrong, the task ends with a report
//! and a transcript that says why.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use super::artifacts_ledger::Ledger;
use super::task_end::{self, LoopInputs};
use super::task_error::{Halt, TaskError};
use super::task_folder::TaskFolder;
use super::task_redaction::{redact_report, task_redactor};
use super::task_start;
use crate::agent::ReplayExpectations;
use crate::message::Usage;
use crate::model::Model;
use crate::model::remote::RemoteConfig;
use crate::model::replay::ReplayModel;
use crate::model::resumed::ResumedModel;
use crate::model::script::ScriptModel;
use crate::policy::RuleSet;
use crate::record::transcript::{EventObserver, TranscriptError};
use crate::record::{EndReason, Event, Redactor, TaskReport, TranscriptWriter};
use crate::spec::{Isolation, LoadedSpec, ScriptTurn};
use crate::workspace::baseline::IndexSnapshot;

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
    /// The spec's permission rules, parsed once when the task was planned.
    pub rules: RuleSet,
    /// The MCP servers to start (`mcp.servers` and `mcp.config`'s), checked when the
    /// task was planned; none for a replay.
    pub mcp_servers: std::collections::BTreeMap<String, crate::spec::McpServerSpec>,
    /// A replay: the MCP tools the recording used, answered from the recording.
    pub replayed_mcp_tools: Vec<String>,
    /// Where `${VAR}` in MCP servers' `env:`/`headers:` takes values from: drover's
    /// environment for a run, only the `--mcp-env` variables for a replay.
    pub mcp_vars: crate::mcp::VarSource,
    /// The task's hooks (`hooks:` and `hooks_from:`'s), checked when it was planned.
    pub hooks: crate::spec::HooksSpec,
    /// The sub-agents (`agents:` and `agents_from:`'s, or a replay's recorded ones).
    pub agents: std::collections::BTreeMap<String, crate::spec::AgentSpec>,
    /// A replay: each recorded sub-agent run's events, by agent id.
    pub agent_events: std::collections::BTreeMap<String, Vec<Event>>,
    /// A replay: the hook runs of every agent, in recorded order.
    pub hook_events: Vec<Event>,
    /// `replay --diff-only`: the recorded diff.patch, applied instead of replaying the
    /// loop, and compared with the diff it leads to.
    pub recorded_patch: Option<super::diff_only::RecordedPatch>,
    /// `output:`'s schema, read and compiled when the task was planned.
    pub output_schema: Option<serde_json::Value>,
    pub model: ModelSource,
    /// The model answering WebFetch's prompts over pages (`tools.web_fetch.model`).
    pub web_fetch_model: Option<ModelSource>,
    pub max_turns: Option<u32>,
    /// Stop (reason `budget`) once the task's cost reaches this many USD: the spec's
    /// `limits.max_cost_usd`, or `--max-cost-usd`.
    pub max_cost_usd: Option<f64>,
    /// Stop (reason `budget`) once the task's tokens reach this: the spec's
    /// `limits.max_tokens`, or `--max-tokens`.
    pub max_tokens: Option<u64>,
    /// A replay or a resumed run: the recorded results that answer WebFetch and MCP
    /// calls instead of reaching out again.
    pub answers: Option<Arc<crate::tools::recorded::RecordedAnswers>>,
    /// A resumed run: the recording it continues.
    pub resume: Option<super::resume::ResumePlan>,
    /// The workspace as the task starts from it.
    pub origin: PathBuf,
    /// In place, in a scratch copy of `origin`, or in a git worktree of its repository.
    pub isolation: Isolation,
    /// A replay: the fingerprint the recorded run started from.
    pub expected_fingerprint: Option<String>,
    /// A replay whose starting workspace the recording named (no `--workspace`): it
    /// starts only from exactly the recorded state, checked before anything runs there
    /// (a matching fingerprint shows the recording already knew all of it).
    pub workspace_from_recording: bool,
    /// A replay: commands get only [`super::sandbox::FIXED_ENVIRONMENT`] of drover's
    /// environment, not all of it less what looks secret (a recording's rules must not
    /// reach a secret whose name does not look like one, `DATABASE_URL` say).
    pub fixed_environment: bool,
    /// Paths the task's commands and file tools may not read, besides what its Read deny
    /// rules name: a replay of a recording alone reads only where programs live (see
    /// `run::replay_spec`).
    pub unreadable: Vec<PathBuf>,
    /// Directories that are never part of the workspace's files (copies, snapshots,
    /// diffs) when they lie inside it, besides this run's artifacts directory: a
    /// replay's recorded artifacts.
    pub excluded: Vec<PathBuf>,
    /// What drover itself writes into the artifacts directory during this run: left out
    /// of the diff when it lies inside the workspace. Anything else there, such as files
    /// an agent plants, is diffed.
    pub own_outputs: OwnOutputs,
    /// A resumed task: what the recorded run left out of its starting state as its own
    /// outputs, left out again so the fingerprints can agree.
    pub recorded_outputs: Option<OwnOutputs>,
    /// For a task working in place: its repository's index as it was when the run
    /// started (None: there was no repository), the only index its baseline trusts.
    pub saved_index: Option<Arc<IndexSnapshot>>,
}

/// drover's own paths in the artifacts directory, each left out only as what drover
/// makes there: a file planted where a folder goes (or the reverse) is diffed.
#[derive(Debug, Clone, Default)]
pub(crate) struct OwnOutputs {
    /// The artifacts directory (resolved).
    pub artifacts: PathBuf,
    /// Every task's folder.
    pub folders: Vec<PathBuf>,
    /// junit.xml, summary.json, summary.md.
    pub files: Vec<PathBuf>,
}

/// Run the task and write its transcript and diff under `artifacts/<name>/`. Every
/// transcript event is shown to `observer` too (progress output). `exposed`: the
/// artifacts directory lies where an agent of this run may write, so the task's folder is
/// staged and published when the task is over (see [`TaskFolder`]); either way its files
/// are recorded in `ledger`.
pub(crate) async fn run_task(
    plan: TaskPlan,
    artifacts: &Path,
    ledger: &Ledger,
    exposed: bool,
    observer: Option<EventObserver>,
    interrupt: Interrupt,
) -> TaskReport {
    let started = Instant::now();
    let mut report = unfinished_report(&plan, artifacts);
    let redactor = Arc::new(task_redactor(&plan));
    let outcome = match TaskFolder::new(
        &report.artifacts_dir,
        ledger,
        exposed,
        plan.resume.is_some(),
    ) {
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
            let published = folder.publish(ledger).map_err(|source| TaskError::Publish {
                path: report.artifacts_dir.clone(),
                source,
            });
            executed.and(published)
        }
        Err(source) => Err(TaskError::ArtifactDir {
            path: report.artifacts_dir.clone(),
            source,
        }),
    };
    if let Err(error) = outcome {
        report.reason = EndReason::InternalError;
        report.status = EndReason::InternalError.status();
        report.message = error.to_string();
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
        mcp_servers: Vec::new(),
        attempts: 1,
        hook_runs: 0,
        output: None,
        agents: Vec::new(),
        agent_turns: 0,
        drift: None,
    }
}

/// Cancelled when drover is interrupted (see `run::interrupt`).
pub(super) type Interrupt = tokio_util::sync::CancellationToken;

/// The task's steps; an Err is an internal error (drover could not do its job).
async fn execute(
    plan: TaskPlan,
    artifacts: &Path,
    task_dir: &Path,
    report: &mut TaskReport,
    observer: Option<EventObserver>,
    interrupt: Interrupt,
    redactor: Arc<Redactor>,
) -> Result<(), TaskError> {
    let path = task_dir.join("transcript.jsonl");
    // A resumed task continues its recording: the kept lines, then its own.
    let mut transcript = match &plan.resume {
        Some(resume) => {
            super::resume::keep_recording(resume, task_dir).map_err(|source| TaskError::Write {
                path: task_dir.to_path_buf(),
                source,
            })?;
            TranscriptWriter::resume(&path, &resume.kept, resume.turns > 0)?
        }
        None => TranscriptWriter::create(&path)?,
    };
    if let Some(observer) = observer {
        transcript.observe(observer);
    }
    transcript.redact_with(Arc::clone(&redactor));
    let halted = match steps(
        plan,
        artifacts,
        task_dir,
        report,
        interrupt,
        &redactor,
        &mut transcript,
    )
    .await
    {
        Ok(()) => return Ok(()),
        Err(halt) => halt,
    };
    let error = match halted {
        Halt::Early(reason, message) => {
            match end_before_loop(
                task_dir,
                &mut transcript,
                &redactor,
                report,
                reason,
                message,
            ) {
                Ok(()) => return Ok(()),
                Err(error) => error,
            }
        }
        Halt::Failed(error) => error,
    };
    // Whatever failed, the transcript ends with its run_end: the record is never left
    // without an ending.
    let message = format!("drover could not finish the task: {error}");
    let _ = finish(
        &mut transcript,
        &redactor,
        report,
        EndReason::InternalError,
        message,
    );
    Err(error)
}

/// Everything after the transcript exists, in order: the workspace and its starting
/// state, arming the task, `run_start`, setup, the loop, the diff, the checks, `run_end`.
/// A step that ends the task early or fails says so with a [`Halt`].
async fn steps(
    mut plan: TaskPlan,
    artifacts: &Path,
    task_dir: &Path,
    report: &mut TaskReport,
    interrupt: Interrupt,
    redactor: &Redactor,
    transcript: &mut TranscriptWriter,
) -> Result<(), Halt> {
    let stop = || interrupt.is_cancelled();
    let mut started = task_start::workspace(&plan, artifacts, report, &stop)?;
    let fingerprint = started.baseline.fingerprint();
    task_start::recorded_start_only(&plan, &fingerprint)?;
    let mut model = build_model(&plan);
    report.provider = model.provider().to_string();
    report.model = model.name().to_string();
    if let Some(resume) = &plan.resume {
        transcript.write(Event::Resume {
            replayed_turns: resume.turns,
            kept_lines: resume.kept.len(),
            dropped_lines: resume.dropped,
            previous_reason: resume.previous.as_ref().map(|end| end.reason),
            drover_version: crate::VERSION.to_string(),
            provider: report.provider.clone(),
            model: report.model.clone(),
            max_turns: plan.max_turns,
            max_cost_usd: plan.max_cost_usd,
            max_tokens: plan.max_tokens,
            timeout: Some(crate::spec::TimeoutLimit::spelled(
                plan.spec.spec.limits.timeout,
            )),
            spent_before: resume.spent_before,
        })?;
    }
    // Arming starts the MCP servers, which may take their startup time: a signal stops
    // it at once (the servers started so far are killed with the dropped future).
    let armed = tokio::select! {
        armed = task_start::arm(&plan, &started.workspace, artifacts, task_dir) => armed?,
        () = interrupt.cancelled() => {
            let message = "interrupted while the task's tools and MCP servers were set up; the agent never ran";
            return Err(Halt::Early(EndReason::Interrupted, message.to_string()));
        }
    };
    task_start::record_start(
        &plan,
        model.as_ref(),
        &armed,
        &fingerprint,
        redactor,
        report,
        transcript,
    )?;
    task_start::setup(
        &plan,
        &mut started,
        &armed.commands,
        &interrupt,
        redactor,
        report,
        transcript,
    )
    .await?;
    let replay = match (&mut plan.model, &mut plan.resume) {
        (_, Some(resume)) => Some(ReplayExpectations {
            // Only the loop compares results: they move there.
            results: std::mem::take(&mut resume.results),
            strict: resume.strict,
            masks: Arc::clone(&resume.masks),
            handover: plan.answers.as_ref().map(|answers| crate::agent::Handover {
                turns: resume.turns,
                answers: Arc::clone(answers),
            }),
        }),
        (ModelSource::Replay { expectations, .. }, None) => expectations.take(),
        (ModelSource::Script { .. } | ModelSource::Remote(_), None) => None,
    };
    let strict = replay.as_ref().is_some_and(|replay| replay.strict);
    let mut rounds = match &plan.recorded_patch {
        // `replay --diff-only`: the recorded diff instead of the loop.
        Some(patch) => {
            let task_start::Armed { commands, .. } = armed;
            super::diff_only::apply(&started.workspace.dir, patch, commands)
        }
        None => {
            let inputs = LoopInputs {
                model: model.as_mut(),
                replay,
                interrupt: interrupt.clone(),
                task_dir,
            };
            task_end::run_agent(&plan, &started, armed, inputs, redactor, report, transcript)
                .await?
        }
    };
    let (changes, evaluation) = match rounds.settled.take() {
        Some((changes, evaluation)) => (changes, Some(evaluation)),
        None => (task_end::diff(&started, task_dir, redactor, report)?, None),
    };
    if let Some(patch) = &plan.recorded_patch {
        super::diff_only::compare_diffs(patch, task_dir, strict, &mut rounds, report, transcript)?;
    }
    let (reason, message) = task_end::judge(
        &plan,
        &started,
        &rounds.commands,
        (rounds.outcome, evaluation),
        &changes,
        interrupt,
        redactor,
        report,
        transcript,
    )
    .await?;
    finish(transcript, redactor, report, reason, message)?;
    Ok(())
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
) -> Result<(), TaskError> {
    task_end::write_diff(task_dir, b"")?;
    Ok(finish(transcript, redactor, report, reason, message)?)
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
        agent_turns: report.agent_turns,
    })
}

/// The task's model; a resumed task's plays its recorded turns back first.
fn build_model(plan: &TaskPlan) -> Box<dyn Model> {
    let Some(resume) = &plan.resume else {
        return model_of(&plan.model);
    };
    let live = match &plan.model {
        // A script goes on with the turn after the recorded ones.
        ModelSource::Script { name, turns } => {
            Box::new(ScriptModel::new(name.as_deref(), turns.clone()).resumed_after(resume.turns))
        }
        source => model_of(source),
    };
    Box::new(ResumedModel::new(
        ReplayModel::from_events(&resume.events),
        resume.turns,
        live,
    ))
}

/// The model whose turns come from `source`.
pub(super) fn model_of(source: &ModelSource) -> Box<dyn Model> {
    match source {
        ModelSource::Script { name, turns } => {
            Box::new(ScriptModel::new(name.as_deref(), turns.clone()))
        }
        ModelSource::Replay { events, .. } => Box::new(ReplayModel::from_events(events)),
        ModelSource::Remote(config) => crate::model::remote_model::build(config.as_ref().clone()),
    }
}
