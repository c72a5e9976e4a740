//! Where a replay starts and what it is judged against: an `isolation: worktree` run
//! is replayed in a worktree at the commit it started from (never today's checkout,
//! whose new commits and untracked files would change the diff and the outcome), and
//! the recorded `run_end` is the outcome a replay without `--checks` reports.

use std::path::Path;

use crate::record::{ChecksRun, Event, RecordedOutcome, ReplayJudgement, StartCommit};
use crate::spec::Isolation;
use crate::workspace::start_commit::{check_commit, is_object_id};

/// How a replay's workspace is made.
pub(super) struct ReplayStart {
    /// A scratch copy of the starting workspace, or a worktree at `at_commit`.
    pub isolation: Isolation,
    /// The recorded commit, checked: a full hex id of a commit of the local repository.
    pub at_commit: Option<String>,
    /// Why a worktree run's recorded commit cannot be the start, and what the replay
    /// does instead.
    pub problem: Option<String>,
    /// The recorded start, when its commit is a full hex id (to name it in messages).
    pub commit: Option<StartCommit>,
}

/// Where the replay of a run recorded with `recorded_isolation` and `recorded` (its
/// `run_start`'s `start`) starts, `origin` being the starting workspace it is given.
/// A worktree run starts from its commit when that passes every check; any other run
/// from a copy of `origin`, which must have the recorded fingerprint (the recorded
/// commit alone says nothing of the files a copy or an in-place run started with).
pub(super) fn replay_start(
    recorded: Option<&StartCommit>,
    recorded_isolation: Isolation,
    origin: &Path,
) -> ReplayStart {
    let commit = recorded
        .filter(|start| is_object_id(&start.commit))
        .cloned();
    let copy = |problem: Option<String>| ReplayStart {
        isolation: Isolation::Copy,
        at_commit: None,
        problem,
        commit: commit.clone(),
    };
    let Some(start) = recorded else {
        return copy(None);
    };
    if recorded_isolation != Isolation::Worktree {
        return copy(None);
    }
    match check_commit(origin, start) {
        Ok(id) => ReplayStart {
            isolation: Isolation::Worktree,
            at_commit: Some(id),
            problem: None,
            commit: commit.clone(),
        },
        Err(why) => copy(Some(format!(
            "{why}; the replay starts from a copy of {} as it is now instead",
            origin.display()
        ))),
    }
}

/// What decides the replay's outcome: the recorded run's end (its last `run_end`) and
/// whether the checks run on the replayed result.
pub(super) fn replay_judgement(events: &[Event], checks: bool) -> ReplayJudgement {
    let recorded = events.iter().rev().find_map(|event| match event {
        Event::RunEnd {
            reason, message, ..
        } => Some(RecordedOutcome::from_run_end(*reason, message)),
        _ => None,
    });
    let checks = if checks {
        ChecksRun::Rerun
    } else {
        ChecksRun::NotRun
    };
    ReplayJudgement::new(checks, recorded)
}
