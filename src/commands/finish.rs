//! What every command that runs tasks does around them: take the artifacts directory,
//! clear an earlier run's folders from it, and at the end settle it, write and say the
//! reports, and (`--json`) write the result line, whatever the exit code.

use std::path::Path;

use crate::exit;
use crate::record::github::{GithubEnv, report_to_github};
use crate::record::stream::run_result;
use crate::record::{RunReport, ShardId};
use crate::run::artifacts::{ArtifactsLock, clear_earlier_run, write_reports};
use crate::run::batch::{Console, progress, run_plans};
use crate::run::plan::TaskPlan;
use crate::run::task::interrupt;

use super::artifacts::settle_artifacts;

/// Run `plans` as a new run in `artifacts` (an earlier run's task folders there that
/// this run does not write are removed first), then [`conclude`] it. The exit code,
/// and the report.
pub(super) async fn run_new(
    plans: Vec<TaskPlan>,
    artifacts: &Path,
    jobs: usize,
    console: &Console,
    shard: Option<ShardId>,
) -> (i32, Option<RunReport>) {
    let names: Vec<String> = plans.iter().map(|p| p.spec.name().to_string()).collect();
    let _lock = match lock_artifacts(artifacts) {
        Ok(lock) => lock,
        Err(code) => return (code, None),
    };
    forget_earlier_run(artifacts, &names, console.quiet);
    let finished = run_plans(plans, artifacts, jobs, console, interrupt::install()).await;
    let (code, report) = conclude(finished, artifacts, console, |mut report| {
        // summary.json says which shard this was, so `report merge` can tell one is missing.
        report.shard = shard;
        report
    });
    (code, Some(report))
}

/// The end of a run: the artifacts directory's sweep settled (an entry drover did not
/// write and cannot remove fails the run before any report), `complete` applied to the
/// report, the reports written and said, and `--json`'s result line. The exit code and
/// the report.
pub(super) fn conclude(
    finished: crate::run::batch::Finished,
    artifacts: &Path,
    console: &Console,
    complete: impl FnOnce(RunReport) -> RunReport,
) -> (i32, RunReport) {
    let crate::run::batch::Finished { report, swept } = finished;
    if let Err(code) = settle_artifacts(&swept, artifacts, console) {
        console.result(&run_result(&report, artifacts, code));
        return (code, report);
    }
    let report = complete(report);
    let code = finish_run(&report, artifacts, true, console);
    console.result(&run_result(&report, artifacts, code));
    (code, report)
}

/// Take the artifacts directory for this run (see `run::artifacts::lock`), saying whose
/// lock it takes over; the exit code when another run holds it or it cannot be locked.
pub(super) fn lock_artifacts(artifacts: &Path) -> Result<ArtifactsLock, i32> {
    match ArtifactsLock::acquire(artifacts) {
        Ok(lock) => {
            if let Some(previous) = lock.previous() {
                crate::esay!(
                    "drover: note: took over the lock on {} left by {previous}, which is no longer running",
                    artifacts.display()
                );
            }
            Ok(lock)
        }
        Err(error) => {
            crate::esay!("drover: {error}");
            Err(exit::BAD_INPUT)
        }
    }
}

/// Remove the task folders an earlier run left in `artifacts` that this run does not
/// write, saying so: the directory then holds this run alone.
fn forget_earlier_run(artifacts: &Path, names: &[String], quiet: bool) {
    let removed = clear_earlier_run(artifacts, names);
    if !removed.is_empty() && !quiet {
        crate::esay!(
            "drover: removed {} an earlier run left in {} (not tasks of this run): {}",
            crate::output::counted(removed.len() as u64, "task folder", "task folders"),
            artifacts.display(),
            removed.join(", ")
        );
    }
}

/// Write the reports, say where they are, and tell GitHub (annotations only when
/// `annotate`). Returns the run's exit code.
pub(super) fn finish_run(
    report: &RunReport,
    artifacts: &Path,
    annotate: bool,
    console: &Console,
) -> i32 {
    if let Err(error) = write_reports(report, artifacts) {
        crate::esay!(
            "drover: cannot write the reports in {}: {error}",
            artifacts.display()
        );
        return exit::RUNNER_ERROR;
    }
    console.say(&format!(
        "drover: artifacts in {} (junit.xml, summary.json, summary.md, <task>/transcript.jsonl, <task>/diff.patch, <task>/result.json)",
        artifacts.display()
    ));
    console.say(&progress::outcome_line(report));
    let github = GithubEnv::from_env();
    if let Err(error) = report_to_github(report, &github, annotate, &mut console.annotations()) {
        // The artifacts are written; a missing step summary does not change the outcome.
        crate::esay!("drover: warning: cannot write the GitHub step summary: {error}");
    }
    report.status().exit_code()
}
