//! The `setup:` phase: commands run after isolation and before the loop (`cargo fetch`,
//! `npm ci`), so the agent's network-less sandbox finds what it needs. Setup is part of
//! the starting state: the diff's baseline is taken after it.

use std::path::Path;
use std::time::Duration;

use tokio::time::Instant;

use crate::run::plan::TaskPlan;
use crate::workspace::Baseline;

use super::checks::{failure_summary, run_check};
use super::commands::TaskCommands;
use super::error::{Halt, TaskError};
use super::interrupt::Interrupt;
use super::start::{Started, interrupted_or, start_options};
use crate::record::transcript::{Event, TranscriptWriter};
use crate::record::{CheckReport, EndReason, Redactor, TaskReport};
use crate::spec::CheckSpec;

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
    // `limits.timeout` is the task's clock, setup included: a step still running when it
    // passes is stopped, and the task ends `timeout` before the agent runs.
    let limit = crate::spec::TimeoutLimit::effective(plan.spec.spec.limits.timeout);
    let deadline = limit.map(|limit| (started.clock + limit, limit));
    let ran = run_setup(
        &plan.spec.spec.setup,
        &started.workspace.dir,
        commands,
        (redactor, transcript),
        (interrupt, deadline),
        &mut report.setup,
    )
    .await?;
    if let Err(stopped) = ran {
        return Err(Halt::Early(stopped.reason, stopped.message));
    }
    let stop = || interrupt.is_cancelled();
    let options = start_options(
        &plan.workspace,
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

/// How setup ended when it did not complete.
pub(super) struct SetupStopped {
    pub reason: EndReason,
    pub message: String,
}

/// Run `steps` in order, each with a `setup` transcript event, stopping at the first that
/// fails (`setup_failed`) or at a signal (`interrupted`). Every process a step left
/// running is stopped before this returns: nothing from setup changes the workspace
/// once the baseline is taken. An Err is an internal error.
async fn run_setup(
    steps: &[CheckSpec],
    workspace: &Path,
    commands: &TaskCommands,
    (redactor, transcript): (&Redactor, &mut TranscriptWriter),
    (interrupt, deadline): (&Interrupt, Option<(Instant, Duration)>),
    reports: &mut Vec<CheckReport>,
) -> Result<Result<(), SetupStopped>, TaskError> {
    let mut stopped = None;
    let task_clock = async {
        match deadline {
            Some((at, _)) => tokio::time::sleep_until(at).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(task_clock);
    for step in steps {
        let env = commands.for_setup(step)?;
        let result = tokio::select! {
            result = run_check(step, workspace, &env, redactor) => result,
            () = interrupt.cancelled() => {
                stopped = Some(SetupStopped {
                    reason: EndReason::Interrupted,
                    message: format!(
                        "interrupted while setup step \"{}\" ran; it was stopped and the agent never ran",
                        step.name
                    ),
                });
                break;
            }
            () = &mut task_clock => {
                let limit = deadline.map(|(_, limit)| humantime::format_duration(limit).to_string()).unwrap_or_default();
                stopped = Some(SetupStopped {
                    reason: EndReason::Timeout,
                    message: format!(
                        "setup step \"{}\" was still running when limits.timeout {limit} passed (the task's clock counts setup); it was stopped and the agent never ran",
                        step.name
                    ),
                });
                break;
            }
        };
        transcript.write(Event::setup(&result))?;
        let passed = result.passed;
        if !passed {
            let why = failure_summary(&result).replacen("check", "setup step", 1);
            stopped = Some(SetupStopped {
                reason: EndReason::SetupFailed,
                message: format!(
                    "{why}; the agent never ran (no model request was made). Its output ends: {}",
                    last_line(&result.output_tail)
                ),
            });
        }
        reports.push(result);
        if !passed {
            break;
        }
    }
    commands
        .env
        .tracker
        .stop_all_and_wait(crate::sandbox::exec::STOP_GRACE * 2)
        .await;
    Ok(stopped.map_or(Ok(()), Err))
}

/// The last non-empty line of a command's output, for a one-line message.
fn last_line(output: &str) -> &str {
    output
        .lines()
        .rev()
        .find(|line| !line.trim().is_empty())
        .unwrap_or("(no output)")
}
