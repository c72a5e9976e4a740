//! Where the artifacts directory lies against the trees the run's agents may write: one
//! inside them has its task folders staged; one holding them is refused.

use std::path::Path;

use crate::run::artifacts::ArtifactsError;
use crate::run::plan::TaskPlan;

/// The artifacts directory (`artifacts`, canonical) must not hold a task's workspace or
/// additional directory (`--artifacts .` from the workspace): everything the run leaves
/// there that drover did not write is removed when it ends, an agent's work included.
pub(super) fn holds_no_workspace(
    plans: &[TaskPlan],
    artifacts: &Path,
) -> Result<(), ArtifactsError> {
    for plan in plans {
        let origin = plan
            .workspace
            .origin
            .canonicalize()
            .unwrap_or_else(|_| plan.workspace.origin.clone());
        let mut trees = plan.spec.additional_directories();
        trees.push(origin);
        if let Some(held) = trees.into_iter().find(|tree| tree.starts_with(artifacts)) {
            return Err(ArtifactsError::HoldsWorkspace {
                artifacts: artifacts.to_path_buf(),
                holds: held,
                task: plan.spec.name().to_string(),
                spec: plan.spec.path.display().to_string(),
            });
        }
    }
    Ok(())
}

/// Does the artifacts directory (`artifacts`, canonical) lie where an agent of this run
/// may write: inside a workspace edited in place or an additional directory? Its task
/// folders are then staged (see `run::artifacts::task_folder`). A task with `sandbox: off` is not
/// counted: its commands can write anywhere, a staging directory included, and nothing
/// is contained then.
pub(super) fn exposed(plans: &[TaskPlan], artifacts: &Path) -> bool {
    plans.iter().any(|plan| {
        let in_place = plan.workspace.isolation == crate::spec::Isolation::None
            && plan
                .workspace
                .origin
                .canonicalize()
                .is_ok_and(|origin| artifacts.starts_with(origin));
        let additional = plan
            .spec
            .additional_directories()
            .iter()
            .any(|dir| artifacts.starts_with(dir));
        in_place || additional
    })
}
