//! A `repo:` task's first step, before isolation and `setup:`: the repository cloned
//! (outside the sandbox, see `workspace::repo`) and its checkout made the task's
//! workspace. A clone that fails ends the task `repo_unavailable` (worth another try)
//! or `repo_refused`, and the other tasks of the run go on.

use std::path::PathBuf;
use std::sync::Arc;

use crate::record::{EndReason, StartCommit, StartRepository};
use crate::run::plan::TaskPlan;
use crate::spec::Isolation;
use crate::workspace::baseline::IndexSnapshot;
use crate::workspace::repo::{Checkout, RepoErrorKind, check_out};

use super::error::Halt;
use super::interrupt::Interrupt;

/// Clone the task's repository, when it has one, and make the checkout the plan's
/// workspace (with its index saved, for a task working in place). The checkout lives
/// as long as what is returned: a temp one is removed with it.
pub(super) async fn clone_repo(
    plan: &mut TaskPlan,
    interrupt: &Interrupt,
) -> Result<Option<Checkout>, Halt> {
    let Some(request) = plan.workspace.repo.clone() else {
        return Ok(None);
    };
    let stop = interrupt.clone();
    let cloned =
        tokio::task::spawn_blocking(move || check_out(&request, &move || stop.is_cancelled()))
            .await;
    let checkout = match cloned {
        Ok(Ok(checkout)) => checkout,
        Ok(Err(error)) => {
            let reason = match error.kind {
                RepoErrorKind::Unavailable => EndReason::RepoUnavailable,
                RepoErrorKind::Refused => EndReason::RepoRefused,
                RepoErrorKind::Interrupted => EndReason::Interrupted,
            };
            return Err(Halt::Early(reason, error.message));
        }
        Err(join) => {
            return Err(Halt::Early(
                EndReason::InternalError,
                format!("the clone of the task's repository stopped: {join}"),
            ));
        }
    };
    plan.workspace.origin = checkout.dir.clone();
    if plan.workspace.isolation == Isolation::None {
        plan.workspace.saved_index = IndexSnapshot::take(&checkout.dir).map(Arc::new);
    }
    Ok(Some(checkout))
}

/// The start of a cloned task, with its repository: the URL without credentials, the
/// ref asked for, and the commit the clone checked out (whatever the workspace's own
/// start says, which is the same commit).
pub(super) fn start_with_repository(
    plan: &TaskPlan,
    checkout: Option<&Checkout>,
    start: Option<StartCommit>,
) -> Option<StartCommit> {
    let (Some(request), Some(checkout)) = (&plan.workspace.repo, checkout) else {
        return start;
    };
    Some(StartCommit {
        commit: checkout.commit.clone(),
        dirty: start.is_some_and(|start| start.dirty),
        repository: Some(StartRepository {
            url: request.url.clean.clone(),
            git_ref: request.git_ref.as_ref().map(|r| r.as_str().to_string()),
        }),
    })
}

/// The files that hold the token of a `repo.url` with a password (the spec file and its
/// directory's defaults file), kept unreadable to the task's commands and file tools:
/// redaction takes the token out of what a command prints, not out of what it
/// encodes (`base64 spec.yaml > out.txt` would carry it into the diff). A token from
/// `credentials.env` lives in drover's environment only, which no command sees.
pub(super) fn files_holding_the_url_token(plan: &TaskPlan) -> Vec<PathBuf> {
    let carries_token = plan
        .workspace
        .repo
        .as_ref()
        .is_some_and(|request| request.url.password.is_some());
    if !carries_token {
        return Vec::new();
    }
    let spec = &plan.spec;
    std::iter::once(&spec.path)
        .chain(spec.defaults.as_ref().map(|defaults| &defaults.path))
        .map(|path| {
            let absolute = std::path::absolute(path).unwrap_or_else(|_| path.clone());
            absolute.canonicalize().unwrap_or(absolute)
        })
        .collect()
}
