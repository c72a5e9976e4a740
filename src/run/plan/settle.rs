//! The last of planning, once the artifacts directory is known and before any agent
//! runs: drover's own outputs resolved, and the git index of each repository a task
//! edits in place saved.

use std::path::Path;
use std::sync::Arc;

use crate::run::artifacts::{LOCK_FILE, RUN_FILES};
use crate::spec::Isolation;
use crate::workspace::baseline::IndexSnapshot;

use super::task_plan::{OwnOutputs, TaskPlan};

/// What drover writes in the artifacts directory, and the directories no task's files
/// include, as absolute paths resolved now: before any agent has run, so a symlink an
/// agent plants later at one of them redirects nothing.
pub(crate) fn settle_outputs(plans: &mut [TaskPlan], artifacts: &Path) {
    let resolved = |path: &Path| {
        let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        crate::workspace::paths::canonicalize_for_write(&absolute).unwrap_or(absolute)
    };
    let artifacts_dir = resolved(artifacts);
    let own_outputs = Arc::new(OwnOutputs {
        artifacts: artifacts_dir.clone(),
        folders: plans
            .iter()
            .map(|plan| artifacts_dir.join(plan.spec.name()))
            .collect(),
        // The lock file too: its holder changes with each run, and it is never the
        // agent's work.
        files: RUN_FILES
            .iter()
            .chain([&LOCK_FILE])
            .map(|file| artifacts_dir.join(file))
            .collect(),
    });
    for plan in plans {
        plan.workspace.own_outputs = Arc::clone(&own_outputs);
        plan.workspace.excluded = plan
            .workspace
            .excluded
            .iter()
            .map(|path| resolved(path))
            .collect();
    }
}

/// Save the index of each repository a task edits in place (see [`IndexSnapshot`]).
pub(crate) fn save_indexes(plans: &mut [TaskPlan]) {
    let mut saved: Vec<Arc<IndexSnapshot>> = Vec::new();
    for plan in plans
        .iter_mut()
        .filter(|plan| plan.workspace.isolation == Isolation::None)
        // A clone's index is saved when it is made (`run::task::repo`).
        .filter(|plan| plan.workspace.repo.is_none())
    {
        let origin = plan
            .workspace
            .origin
            .canonicalize()
            .unwrap_or_else(|_| plan.workspace.origin.clone());
        let Some(top) = crate::workspace::baseline::repository_top(&origin) else {
            continue;
        };
        plan.workspace.saved_index = match saved.iter().find(|index| index.top() == top) {
            Some(index) => Some(Arc::clone(index)),
            None => IndexSnapshot::take(&origin).map(Arc::new).inspect(|index| {
                saved.push(Arc::clone(index));
            }),
        };
    }
}
