//! One task from start to artifacts: workspace, baseline snapshot, the loop, the diff,
//! the checks, and the `run_end` event. Whatever goes wrong, the task ends with a report
//! and a transcript that says why.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use crate::agent::Handover;
use crate::message::Usage;
use crate::model::Model;
use crate::network::NetworkRecorder;
use crate::record::transcript::{EventObserver, LineTap, TranscriptError};
use crate::record::{EndReason, Event, Redactor, TaskReport, TranscriptWriter};
use crate::run::artifacts::{Ledger, TaskFolder};
use crate::run::plan::{Mode, ResumePlan, TaskPlan};
use crate::run::recording::RecordedResults;

use super::agent_loop::{self, LoopInputs, Rounds};
use super::arm::{Armed, arm};
use super::diff::{Changes, diff, write_diff};
use super::error::{Halt, TaskError};
use super::evaluation::Evaluation;
use super::interrupt::Interrupt;
use super::judge::judge;
use super::kept_recording::keep_recording;
use super::model::build_model;
use super::record_start::{record_start, recorded_start_only};
use super::redaction::{redact_report, task_redactor};
use super::repo::{clone_repo, start_with_repository};
use super::setup::setup;
use super::start::{Started, workspace};

/// Who follows a task's transcript as it is written.
pub(crate) struct Followers {
    /// Progress output: every event.
    pub progress: Option<EventObserver>,
    /// `--json`: every line as written (a resumed task's kept lines first).
    pub lines: Option<LineTap>,
}

/// Run the task and write its transcript and diff under `artifacts/<name>/`. Every
/// transcript event is shown to its `followers` too. `exposed`: the
/// artifacts directory lies where an agent of this run may write, so the task's folder is
/// staged and published when the task is over (see [`TaskFolder`]); either way its files
/// are recorded in `ledger`.
pub(crate) async fn run_task(
    plan: TaskPlan,
    artifacts: &Path,
    ledger: &Ledger,
    exposed: bool,
    followers: Followers,
    interrupt: Interrupt,
) -> TaskReport {
    let started = Instant::now();
    let mut report = unfinished_report(&plan, artifacts);
    let redactor = Arc::new(task_redactor(&plan));
    let outcome = match TaskFolder::new(
        &report.artifacts_dir,
        ledger,
        exposed,
        matches!(plan.mode, Mode::Resume(_)),
    ) {
        Ok(folder) => {
            let executed = execute(
                plan,
                artifacts,
                folder.dir(),
                &mut report,
                followers,
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
        if let Some(replay) = &mut report.replay {
            replay.outcome_from = crate::record::OutcomeFrom::Replay;
        }
    }
    report.duration = started.elapsed();
    redact_report(&mut report, &redactor);
    report.redacted = redactor.replaced();
    report
}

/// A resumed task's transcript starts with the recording's kept lines, written before
/// anyone could follow it: they are handed to `tap` first, so what it gets is the file.
fn kept_lines_first(mode: &Mode, mut tap: LineTap) -> LineTap {
    if let Mode::Resume(resume) = mode {
        for line in &resume.kept {
            tap(line);
        }
    }
    tap
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
        excluded_from_diff: None,
        network: None,
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
        start: None,
        replay: plan.mode.replay_judgement().cloned(),
        context: None,
        wrap_up: None,
        started_at: Some(
            humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string(),
        ),
        earlier_runs: Vec::new(),
    }
}

/// The task's steps; an Err is an internal error (drover could not do its job).
async fn execute(
    plan: TaskPlan,
    artifacts: &Path,
    task_dir: &Path,
    report: &mut TaskReport,
    followers: Followers,
    interrupt: Interrupt,
    redactor: Arc<Redactor>,
) -> Result<(), TaskError> {
    let path = task_dir.join("transcript.jsonl");
    // A resumed task continues its recording: the kept lines, then its own.
    let mut transcript = match &plan.mode {
        Mode::Resume(resume) => {
            keep_recording(resume, task_dir).map_err(|source| TaskError::Write {
                path: task_dir.to_path_buf(),
                source,
            })?;
            TranscriptWriter::resume(&path, &resume.kept, resume.turns > 0)?
        }
        Mode::Live | Mode::Replay(_) | Mode::DiffOnly(_) => TranscriptWriter::create(&path)?,
    };
    if let Some(observer) = followers.progress {
        transcript.observe(observer);
    }
    if let Some(tap) = followers.lines {
        transcript.tap(kept_lines_first(&plan.mode, tap));
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
/// state, arming the task, `run_start`, setup, the loop (or a recorded diff), the diff,
/// the checks, `run_end`. A step that ends the task early or fails says so with a
/// [`Halt`].
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
    // Held to the end of the task: a temp checkout goes with it.
    let checkout = clone_repo(&mut plan, &interrupt).await?;
    let mut started = workspace(&plan, artifacts, report, &stop)?;
    started.start = start_with_repository(&plan, checkout.as_ref(), started.start.take());
    report.start = started.start.clone();
    let fingerprint = started.baseline.fingerprint();
    recorded_start_only(&plan, &fingerprint, &report.name)?;
    let mut model = task_model(&plan, report, transcript)?;
    let armed =
        arm_unless_interrupted(&plan, &started, artifacts, task_dir, redactor, &interrupt).await?;
    record_start(
        &plan,
        model.as_ref(),
        &armed,
        &fingerprint,
        redactor,
        report,
        transcript,
    )?;
    // Every connection attempt is written as it happens from now on.
    let network = armed.commands.network.record_to(transcript.share());
    setup(
        &plan,
        &mut started,
        &armed.commands,
        &interrupt,
        redactor,
        report,
        transcript,
    )
    .await?;
    let replay = replay_expectations(&mut plan.mode);
    let mut rounds = match &plan.mode {
        // `replay --diff-only`: the recorded diff instead of the loop.
        Mode::DiffOnly(diff_only) => {
            let Armed { commands, .. } = armed;
            super::diff_only::apply(&started.workspace.dir, &diff_only.patch, commands)
        }
        Mode::Live | Mode::Replay(_) | Mode::Resume(_) => {
            let inputs = LoopInputs {
                model: model.as_mut(),
                replay,
                interrupt: interrupt.clone(),
                task_dir,
            };
            agent_loop::run_agent(&plan, &started, armed, inputs, redactor, report, transcript)
                .await?
        }
    };
    let (changes, evaluation) = changes_of(
        &plan,
        &started,
        &mut rounds,
        task_dir,
        redactor,
        report,
        transcript,
    )?;
    let Rounds {
        outcome, commands, ..
    } = rounds;
    let (reason, message) = judge(
        &plan,
        &started,
        &commands,
        (outcome, evaluation),
        &changes,
        interrupt,
        redactor,
        report,
        transcript,
    )
    .await?;
    network_ended(&network, report);
    finish(transcript, redactor, report, reason, message)?;
    Ok(())
}

/// The task's connections in its report, when it tried any, and a replay's commands
/// that tried other hosts than recorded in its drift. Nothing is recorded after this
/// (`run_end` comes next): a later attempt (a server stopping) is counted no more.
fn network_ended(network: &NetworkRecorder, report: &mut TaskReport) {
    network.stop();
    report.network = Some(network.tally()).filter(|tally| tally.allowed + tally.denied > 0);
    if let Some(drift) = network.drift() {
        match &mut report.drift {
            Some(first) => first.count += drift.count,
            None => report.drift = Some(drift),
        }
    }
}

/// The task's model, named in the report; a resumed task's transcript goes on with the
/// `resume` event.
fn task_model(
    plan: &TaskPlan,
    report: &mut TaskReport,
    transcript: &mut TranscriptWriter,
) -> Result<Box<dyn Model>, TranscriptError> {
    let model = build_model(plan);
    report.provider = model.provider().to_string();
    report.model = model.name().to_string();
    if let Mode::Resume(resume) = &plan.mode {
        transcript.write(resume_event(resume, plan, report))?;
    }
    Ok(model)
}

/// Arming starts the MCP servers, which may take their startup time: a signal stops it
/// at once (the servers started so far are killed with the dropped future).
async fn arm_unless_interrupted(
    plan: &TaskPlan,
    started: &Started,
    artifacts: &Path,
    task_dir: &Path,
    redactor: &Redactor,
    interrupt: &Interrupt,
) -> Result<Armed, Halt> {
    tokio::select! {
        armed = arm(plan, &started.workspace, artifacts, task_dir, redactor) => Ok(armed?),
        () = interrupt.cancelled() => {
            let message = "interrupted while the task's tools and MCP servers were set up; the agent never ran";
            Err(Halt::Early(EndReason::Interrupted, message.to_string()))
        }
    }
}

/// What the agent changed, and the evaluation of a round already judged. After
/// `replay --diff-only` the diff is compared with the recorded one.
fn changes_of(
    plan: &TaskPlan,
    started: &Started,
    rounds: &mut Rounds,
    task_dir: &Path,
    redactor: &Redactor,
    report: &mut TaskReport,
    transcript: &mut TranscriptWriter,
) -> Result<(Changes, Option<Evaluation>), Halt> {
    let (changes, evaluation) = match rounds.settled.take() {
        Some((changes, evaluation)) => (changes, Some(evaluation)),
        None => {
            let exclude = plan.spec.spec.diff.as_ref().map(|diff| &diff.value);
            (diff(exclude, started, task_dir, redactor, report)?, None)
        }
    };
    if let Mode::DiffOnly(diff_only) = &plan.mode {
        super::diff_only::compare_diffs(
            &diff_only.patch,
            task_dir,
            diff_only.strict,
            rounds,
            report,
            transcript,
        )?;
    }
    Ok((changes, evaluation))
}

/// What the loop compares its results with: a replay's recorded results, or a resumed
/// run's for its recorded turns (then the live model takes over). Only the loop
/// compares results: they move there; the plan keeps whether drift is strict.
fn replay_expectations(mode: &mut Mode) -> Option<RecordedResults> {
    match mode {
        Mode::Replay(replay) => Some(RecordedResults {
            results: std::mem::take(&mut replay.expectations.results),
            strict: replay.expectations.strict,
            masks: Arc::clone(&replay.expectations.masks),
            handover: None,
            steering: std::mem::take(&mut replay.expectations.steering),
        }),
        Mode::Resume(resume) => Some(RecordedResults {
            results: std::mem::take(&mut resume.results),
            strict: resume.strict,
            masks: Arc::clone(&resume.masks),
            handover: Some(Handover {
                turns: resume.turns,
                answers: Arc::clone(&resume.answers),
            }),
            steering: crate::run::recording::Steering::of(&resume.events),
        }),
        Mode::Live | Mode::DiffOnly(_) => None,
    }
}

/// The `resume` event a resumed task's transcript goes on with: what it replays and the
/// limits it now runs under.
fn resume_event(resume: &ResumePlan, plan: &TaskPlan, report: &TaskReport) -> Event {
    Event::Resume {
        replayed_turns: resume.turns,
        kept_lines: resume.kept.len(),
        dropped_lines: resume.dropped,
        previous_reason: resume.previous.as_ref().map(|end| end.reason),
        drover_version: crate::VERSION.to_string(),
        provider: report.provider.clone(),
        model: report.model.clone(),
        max_turns: plan.limits.max_turns,
        max_cost_usd: plan.limits.max_cost_usd,
        max_tokens: plan.limits.max_tokens,
        timeout: Some(crate::spec::TimeoutLimit::spelled(
            plan.spec.spec.limits.timeout,
        )),
        spent_before: resume.spent_before,
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
) -> Result<(), TaskError> {
    write_diff(task_dir, b"")?;
    Ok(finish(transcript, redactor, report, reason, message)?)
}

/// The task's end in the report and `run_end`. A replay's own end is first weighed
/// against the recorded one (`ReplayJudgement::settle`): without `--checks` nothing
/// judged the replayed result, so a recorded failure is never reported as a pass.
fn finish(
    transcript: &mut TranscriptWriter,
    redactor: &Redactor,
    report: &mut TaskReport,
    reason: EndReason,
    message: String,
) -> Result<(), TranscriptError> {
    let (reason, message) = match &mut report.replay {
        Some(judgement) => judgement.settle((reason, message)),
        None => (reason, message),
    };
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
