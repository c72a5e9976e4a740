//! Before a resumed task runs: its starting workspace made again as the task will make
//! it, and the resume refused (before anything is written) unless it is in the recorded
//! starting state. A `repo:` task's is checked when it is cloned, as the task starts.

use std::path::Path;

use crate::run::plan::{Mode, PlanError, ResumeError, TaskPlan, save_indexes, settle_outputs};

use super::error::Halt;
use super::run_task::unfinished_report;
use super::start;

/// Make the starting workspace as the task will, and refuse (before anything is
/// written) unless it is in the recorded starting state: a resumed task must continue
/// from where its recorded turns left the workspace, which only their replay from the
/// same start gives.
pub(crate) fn check_workspace(plan: &mut TaskPlan, artifacts: &Path) -> Result<(), PlanError> {
    let Mode::Resume(resume) = &plan.mode else {
        return Ok(());
    };
    if plan.workspace.repo.is_some() {
        // A `repo:` task's checkout is cloned (at the recorded commit) when the task
        // starts; its fingerprint is checked then, a different one ending the task
        // `replay_drift` before any turn (`Mode::expected_start`).
        return Ok(());
    }
    let transcript = resume.transcript.clone();
    let recorded = resume.fingerprint.clone();
    let started_at = super::record_start::started_at(resume.commit.as_ref());
    settle_outputs(std::slice::from_mut(plan), artifacts);
    save_indexes(std::slice::from_mut(plan));
    let report = unfinished_report(plan, artifacts);
    let started = start::workspace(plan, artifacts, &report, &|| false).map_err(|halt| {
        let message = match halt {
            Halt::Early(_, message) => message,
            Halt::Failed(error) => error.to_string(),
        };
        PlanError::Resume(Box::new(ResumeError::WorkspaceUnusable {
            transcript: transcript.clone(),
            message,
        }))
    })?;
    let now = started.baseline.fingerprint();
    drop(started);
    if now == recorded {
        return Ok(());
    }
    let patch = transcript.with_file_name("diff.patch");
    let advice = if plan.workspace.isolation == crate::spec::Isolation::None {
        if patch.is_file() {
            format!(
                "The task works in place (isolation: none), so the stopped run's changes are still there: revert them (`git apply -R {}` in the workspace), then resume again.",
                patch.display()
            )
        } else {
            "The task works in place (isolation: none) and the stopped run was killed before it wrote its diff, so its changes are still there: restore the starting state (`git stash -u` or `git checkout`), then resume again.".to_string()
        }
    } else {
        format!(
            "It changed since the run (a commit, a checkout, an edit): restore the state the run started from{started_at}, or pass --workspace with a checkout of it."
        )
    };
    Err(PlanError::Resume(Box::new(ResumeError::WorkspaceChanged {
        transcript,
        workspace: plan.workspace.origin.clone(),
        recorded,
        now,
        advice,
    })))
}
