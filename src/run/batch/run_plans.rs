//! Running the planned tasks, `jobs` at a time, each on its own: a task that errors
//! (even one that panics) ends with its own report and the others go on.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use futures::StreamExt;

use crate::record::{EndReason, RunReport, TaskReport};
use crate::run::artifacts::{
    ArtifactsError, Ledger, Sweep, publish_orphaned_folders, write_reports,
};
use crate::run::plan::{TaskPlan, save_indexes, settle_outputs};
use crate::run::task::{Followers, Interrupt, interrupt, run_task, unfinished_report};

use super::artifacts_place;
use super::console::Console;
use super::progress;

/// A run's tasks as they ended, and what the artifacts directory's sweep did.
pub(crate) struct Finished {
    pub report: RunReport,
    /// The entries of the artifacts directory drover did not write, removed (or not)
    /// once every task was over; an error when the directory itself cannot be vouched
    /// for. Nothing may be reported from the directory before this is dealt with.
    pub swept: Result<Sweep, ArtifactsError>,
}

/// Run every plan, `jobs` at a time, reports in plan order. Each task runs on its own
/// (a task that errors, even one that panics, ends with its own error report and the
/// others go on); `console` says where progress, the final per-task lines and
/// (`--json`) the events go. When all are over, the
/// artifacts directory is swept of what drover did not write (see
/// `run::artifacts::ledger`).
pub(crate) async fn run_plans(
    mut plans: Vec<TaskPlan>,
    artifacts: &Path,
    jobs: usize,
    console: &Console,
    interrupt: Interrupt,
) -> Finished {
    settle_outputs(&mut plans, artifacts);
    // Each repository a task edits in place has its index saved now, before any agent
    // can rewrite `.git`: the baselines of later tasks trust only this copy.
    save_indexes(&mut plans);
    clear_killed_runs();
    // What the artifacts directory holds now, before any agent runs, is all it may hold
    // at the end besides what drover publishes.
    let opened = Ledger::open(artifacts).and_then(|ledger| {
        artifacts_place::holds_no_workspace(&plans, ledger.root()).map(|()| ledger)
    });
    let ledger = match opened {
        Ok(ledger) => Arc::new(ledger),
        Err(error) => return not_started(&plans, artifacts, error),
    };
    let style = progress::Style::detect(console.quiet);
    let shared = Shared {
        exposed: artifacts_place::exposed(&plans, ledger.root()),
        so_far: reports_for_a_second_signal(&plans, artifacts),
        progress: progress::Progress::new(
            style,
            plans.len(),
            progress::colors_enabled(),
            console.human,
        ),
        console: console.clone(),
        artifacts: artifacts.to_path_buf(),
        interrupt,
        ledger,
    };
    let mut finished: Vec<(usize, TaskReport)> =
        futures::stream::iter(plans.into_iter().enumerate())
            .map(|(index, plan)| run_one(index, plan, shared.clone()))
            // Unordered, so a slow task does not hold the slots of those finished after it.
            .buffer_unordered(jobs.max(1))
            .collect()
            .await;
    shared.progress.finish();
    finished.sort_by_key(|(index, _)| *index);
    Finished {
        report: RunReport {
            tasks: finished.into_iter().map(|(_, report)| report).collect(),
            shard: None,
        },
        swept: interrupt::holding_last_words(|| shared.ledger.sweep()),
    }
}

/// What every task of the batch shares.
#[derive(Clone)]
struct Shared {
    progress: Arc<progress::Progress>,
    console: Console,
    artifacts: PathBuf,
    interrupt: Interrupt,
    /// Every task's report as far as it is known.
    so_far: Arc<Mutex<Vec<TaskReport>>>,
    ledger: Arc<Ledger>,
    /// The artifacts directory lies where an agent may write: task folders are staged.
    exposed: bool,
}

/// Run one task on its own tokio task, so that even a panic ends only it, with its own
/// report.
async fn run_one(index: usize, plan: TaskPlan, shared: Shared) -> (usize, TaskReport) {
    let Shared {
        progress,
        console,
        artifacts,
        interrupt,
        so_far,
        ledger,
        exposed,
    } = shared;
    let mut fallback = unfinished_report(&plan, &artifacts);
    if interrupt.is_cancelled() {
        // Interrupted before this task's turn came: it never starts.
        fallback.reason = EndReason::Interrupted;
        fallback.status = EndReason::Interrupted.status();
        fallback.message = "not started: drover was interrupted".to_string();
        progress.task_finished(&fallback);
        return (index, fallback);
    }
    let followers = Followers {
        progress: progress.observer(plan.spec.name()),
        lines: console.tap(plan.spec.name()),
    };
    let handle = tokio::spawn(async move {
        run_task(plan, &artifacts, &ledger, exposed, followers, interrupt).await
    });
    let report = match handle.await {
        Ok(report) => report,
        Err(error) => {
            fallback.message = format!("the task's runner failed: {error}");
            fallback
        }
    };
    progress.task_finished(&report);
    if let Some(slot) = so_far
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_mut(index)
    {
        *slot = report.clone();
    }
    (index, report)
}

/// What a drover killed with SIGKILL left in the temp directory goes first: the task
/// folders it staged are published, the rest removed.
fn clear_killed_runs() {
    let temp = std::env::temp_dir();
    let waiting = announce_orphans(&temp);
    let removed = crate::workspace::leftovers::remove_stale_temp_dirs(&temp, &waiting);
    if !removed.is_empty() {
        crate::esay!(
            "drover: removed {} leftover director{} of killed drover runs from {}",
            removed.len(),
            if removed.len() == 1 { "y" } else { "ies" },
            temp.display()
        );
    }
}

/// The batch when the artifacts directory cannot be vouched for: no task started.
fn not_started(plans: &[TaskPlan], artifacts: &Path, error: ArtifactsError) -> Finished {
    let tasks = plans
        .iter()
        .map(|plan| {
            let mut report = unfinished_report(plan, artifacts);
            report.message = format!("not started: {error}");
            report
        })
        .collect();
    Finished {
        report: RunReport { tasks, shard: None },
        swept: Err(error),
    }
}

/// Should a second signal end drover at once, the reports still exist: every task as
/// far as it is known (finished, or interrupted). The reports, kept up to date by each
/// task as it ends.
fn reports_for_a_second_signal(
    plans: &[TaskPlan],
    artifacts: &Path,
) -> Arc<Mutex<Vec<TaskReport>>> {
    let so_far = Arc::new(Mutex::new(
        plans
            .iter()
            .map(|plan| {
                let mut report = unfinished_report(plan, artifacts);
                report.reason = EndReason::Interrupted;
                report.status = EndReason::Interrupted.status();
                report.message = "drover was stopped by a second signal".to_string();
                report
            })
            .collect::<Vec<_>>(),
    ));
    let kept = Arc::clone(&so_far);
    let artifacts = artifacts.to_path_buf();
    interrupt::on_second_signal(move || {
        let tasks = kept.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let _ = write_reports(&RunReport { tasks, shard: None }, &artifacts);
    });
    so_far
}

/// Publish the task folders killed drovers staged in `temp`, saying so. Returns those
/// that wait for the live run holding their artifacts directory.
pub(crate) fn announce_orphans(temp: &Path) -> Vec<PathBuf> {
    let orphans = publish_orphaned_folders(temp);
    for folder in &orphans.published {
        crate::esay!(
            "drover: published {}, which a killed drover had left unpublished in {}",
            folder.display(),
            temp.display()
        );
    }
    orphans.waiting
}
