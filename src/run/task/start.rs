//! A task's first step: the workspace it works in (in place, a scratch copy, a git
//! worktree) and its starting state, drover's own outputs left out.

use std::path::{Path, PathBuf};

use crate::record::{EndReason, StartCommit, TaskReport};
use crate::run::plan::{Mode, TaskPlan, WorkspacePlan};
use crate::spec::Isolation;
use crate::workspace::Baseline;
use crate::workspace::baseline::{CopyOrigin, Exclusions, IndexSource, StartOptions};
use crate::workspace::isolation::{PreparedWorkspace, git_worktree, in_place, scratch_copy};
use crate::workspace::start_commit::start_of;

use super::error::{Halt, TaskError};

/// The workspace the task works in and its starting state.
pub(super) struct Started {
    pub workspace: PreparedWorkspace,
    pub baseline: Baseline,
    /// What the baseline leaves out: drover's own folders and files.
    pub excluded: Exclusions,
    /// When the task's clock started (before isolation and `setup:`): `limits.timeout`
    /// counts from here, so setup's time is the task's time.
    pub clock: tokio::time::Instant,
    /// The commit the workspace started from and whether it was dirty (None outside
    /// git): `run_start`'s `start`.
    pub start: Option<StartCommit>,
}

/// Isolate the workspace (in place, a copy, a worktree) and take its starting state.
/// A signal stops both at once: nothing has changed yet, so the task ends interrupted.
pub(super) fn workspace(
    plan: &TaskPlan,
    artifacts: &Path,
    report: &TaskReport,
    stop: &dyn Fn() -> bool,
) -> Result<Started, Halt> {
    let clock = tokio::time::Instant::now();
    // drover's own artifacts (this task's transcript, other tasks', earlier runs') are not
    // the agent's work: a copy, the snapshots and the diff leave them out when they lie
    // inside the workspace (the default: `drover-artifacts/` in the current directory).
    // A copy leaves the whole artifacts directory out; the baseline of the workspace
    // leaves out only what drover writes there, so files an agent plants in it are in
    // the diff.
    let workspace = &plan.workspace;
    let mut copy_excluded = workspace.excluded.clone();
    copy_excluded.push(artifacts.to_path_buf());
    let mut excluded_folders = workspace.excluded.clone();
    excluded_folders.extend(workspace.own_outputs.folders.iter().cloned());
    let mut excluded_files = workspace.own_outputs.files.clone();
    // A resumed task leaves out what its recorded run left out.
    if let Mode::Resume(resume) = &plan.mode {
        let recorded = &resume.recorded_outputs;
        copy_excluded.push(recorded.artifacts.clone());
        excluded_folders.extend(recorded.folders.iter().cloned());
        excluded_files.extend(recorded.files.iter().cloned());
    }
    let excluded = Exclusions {
        dirs: excluded_folders,
        files: excluded_files,
    };
    // A replay's worktree is named by drover, not by the recording.
    let label = match plan.mode {
        Mode::Replay(_) | Mode::DiffOnly(_) => "replay",
        Mode::Live | Mode::Resume(_) => plan.spec.name(),
    };
    let prepared = isolate(workspace, label, &copy_excluded, stop).and_then(|dir| {
        let options = start_options(workspace, &excluded, dir.copy_origin(true));
        let baseline = Baseline::take(&dir.dir, options, stop)?;
        Ok((dir, baseline))
    });
    let (prepared, baseline) = prepared.map_err(|error| {
        interrupted_or(
            error,
            "interrupted while the workspace was prepared; the agent never ran",
            |source| TaskError::Prepare {
                workspace: workspace.origin.clone(),
                source,
            },
        )
    })?;
    if !baseline.leftovers.is_empty() {
        let names: Vec<String> = baseline.leftovers.iter().map(ToString::to_string).collect();
        crate::esay!(
            "drover: {}: removed {} temp file(s) a killed drover left in the workspace: {}",
            report.name,
            names.len(),
            names.join(", ")
        );
    }
    let mut drovers: Vec<PathBuf> = copy_excluded;
    drovers.extend(excluded.dirs.iter().cloned());
    drovers.extend(excluded.files.iter().cloned());
    let start = start_commit(workspace, &prepared, &drovers);
    Ok(Started {
        workspace: prepared,
        baseline,
        excluded,
        clock,
        start,
    })
}

/// Where the workspace starts in git, drover's own outputs (`drovers`) left out.
fn start_commit(
    workspace: &WorkspacePlan,
    prepared: &PreparedWorkspace,
    drovers: &[PathBuf],
) -> Option<StartCommit> {
    match prepared.worktree_commit() {
        // A worktree holds its commit and nothing else.
        Some(commit) => Some(StartCommit {
            commit: commit.to_string(),
            dirty: false,
            repository: None,
        }),
        // A checkout drover has just made holds its commit and nothing else (its start,
        // with the repository, is made by `repo::start_with_repository`). No `git
        // status`: every file was written in the same second as the index, so git
        // would read each one again to be sure it is unchanged.
        None if workspace.repo.is_some() => None,
        None => start_of(&workspace.origin, drovers),
    }
}

/// A baseline that could not be taken: the task ends interrupted when a signal stopped
/// it (`Interrupted`), else drover failed as `failed` says.
pub(super) fn interrupted_or(
    error: std::io::Error,
    interrupted: &str,
    failed: impl FnOnce(std::io::Error) -> TaskError,
) -> Halt {
    if error.kind() == std::io::ErrorKind::Interrupted {
        Halt::Early(EndReason::Interrupted, interrupted.to_string())
    } else {
        Halt::Failed(failed(error))
    }
}

fn isolate(
    workspace: &WorkspacePlan,
    task: &str,
    excluded: &[PathBuf],
    stop: &dyn Fn() -> bool,
) -> std::io::Result<PreparedWorkspace> {
    match workspace.isolation {
        Isolation::None => in_place(&workspace.origin),
        Isolation::Copy => scratch_copy(&workspace.origin, excluded, stop),
        Isolation::Worktree => {
            git_worktree(&workspace.origin, task, workspace.at_commit.as_deref())
        }
    }
}

/// How the task's baseline is taken: drover's own paths left out, what a copy leans on,
/// and which git index is trusted (in place: only the one saved when the run started).
pub(super) fn start_options<'a>(
    workspace: &'a WorkspacePlan,
    excluded: &Exclusions,
    origin: Option<CopyOrigin<'a>>,
) -> StartOptions<'a> {
    StartOptions {
        excluded: excluded.clone(),
        origin,
        index: match workspace.isolation {
            Isolation::None => IndexSource::Saved(workspace.saved_index.as_deref()),
            Isolation::Copy | Isolation::Worktree => IndexSource::Discover,
        },
    }
}
