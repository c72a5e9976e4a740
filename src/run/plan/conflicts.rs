//! Tasks of one run that cannot run together: found while planning, so nothing starts
//! before the user has fixed them.

use std::path::PathBuf;

use crate::spec::Isolation;

use crate::run::artifacts::RUN_FILES;

use super::task_plan::TaskPlan;

/// Task names that would collide with the run-wide report files.
pub(super) fn reserved_names(plans: &[TaskPlan]) -> Vec<String> {
    plans
        .iter()
        .filter(|plan| RUN_FILES.contains(&plan.spec.name()))
        .map(|plan| {
            format!(
                "{}: the task name {} is the name of a run-wide report file in the artifacts directory; rename the task",
                plan.spec.path.display(),
                plan.spec.name()
            )
        })
        .collect()
}

/// With `jobs > 1`, a task editing its workspace in place (`isolation: none`) must not
/// share it with any task that reads it as it is: another in-place task would see its
/// half-done edits, and a copy made meanwhile would start from them. Workspaces count as
/// shared when one contains the other. Worktrees start from the committed HEAD, so they
/// are not affected.
pub(super) fn shared_workspaces(plans: &[TaskPlan], jobs: usize) -> Vec<String> {
    let canonical: Vec<PathBuf> = plans
        .iter()
        .map(|plan| {
            plan.workspace
                .origin
                .canonicalize()
                .unwrap_or_else(|_| plan.workspace.origin.clone())
        })
        .collect();
    // A clone into a temp directory is the task's own.
    let own_clone = |plan: &TaskPlan| {
        plan.workspace
            .repo
            .as_ref()
            .is_some_and(|repo| repo.path.is_none())
    };
    let conflict = |i: usize, j: usize| {
        let (plan, other) = (&plans[i], &plans[j]);
        if own_clone(plan) || own_clone(other) {
            return false;
        }
        let in_place = plan.workspace.isolation == Isolation::None
            || other.workspace.isolation == Isolation::None;
        let reads_live = plan.workspace.isolation != Isolation::Worktree
            && other.workspace.isolation != Isolation::Worktree;
        let overlap =
            canonical[i].starts_with(&canonical[j]) || canonical[j].starts_with(&canonical[i]);
        in_place && reads_live && overlap
    };
    // One message per task that conflicts with an earlier one, naming the first: a
    // thousand tasks sharing one workspace give a thousand lines, not half a million.
    let mut errors = Vec::new();
    for (j, other) in plans.iter().enumerate() {
        let mut earlier = (0..j).filter(|&i| conflict(i, j));
        let Some(i) = earlier.next() else {
            continue;
        };
        let more = earlier.count();
        let others = if more == 0 {
            String::new()
        } else {
            format!(" (and {more} more)")
        };
        errors.push(format!(
            "{}: tasks {} and {}{others} share the workspace {} and one edits it in place (isolation: none); with --jobs {jobs} they would run concurrently: use isolation: copy or worktree, or --jobs 1",
            other.spec.path.display(),
            plans[i].spec.name(),
            other.spec.name(),
            canonical[j].display()
        ));
    }
    errors
}

/// Two `repo:` tasks cloning into one `path:` (or one inside the other): the second
/// would find the first's checkout there — or, running at once, both would clone into
/// it and the one that failed would empty it under the other. Refused whatever `--jobs`.
pub(super) fn shared_checkouts(plans: &[TaskPlan]) -> Vec<String> {
    let paths: Vec<(usize, PathBuf)> = plans
        .iter()
        .enumerate()
        .filter_map(|(i, plan)| {
            let path = plan.workspace.repo.as_ref()?.path.as_ref()?;
            Some((
                i,
                std::path::absolute(path).unwrap_or_else(|_| path.clone()),
            ))
        })
        .collect();
    let mut errors = Vec::new();
    for (n, (j, path)) in paths.iter().enumerate() {
        let earlier = paths[..n]
            .iter()
            .find(|(_, other)| other.starts_with(path) || path.starts_with(other));
        if let Some((i, other)) = earlier {
            errors.push(format!(
                "{}: tasks {} and {} clone their repositories into {} and {}, one inside the other; give each task a repo.path of its own (with a matrix: `path: checkouts/${{{{ matrix.KEY }}}}`), or leave path: out for a temp directory",
                plans[*j].spec.path.display(),
                plans[*i].spec.name(),
                plans[*j].spec.name(),
                other.display(),
                path.display()
            ));
        }
    }
    errors
}
