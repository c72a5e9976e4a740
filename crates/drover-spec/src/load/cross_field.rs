//! The checks of a parsed spec that its types cannot express: settings that need each
//! other, ranges, names unique within a task. Each problem is reported, not only the
//! first, at the line and column of what it is about.

use std::collections::HashSet;
use std::path::Path;

use super::checks;
use super::error::{Position, SpecError};
use crate::defaults::Files;
use crate::types::TaskSpec;

/// Every problem of `spec` that spans several fields, in the order of the spec's keys;
/// a value the spec took from its directory's defaults file is reported there.
pub(super) fn problems(files: &Files, spec: &TaskSpec) -> Vec<SpecError> {
    let path = files.spec;
    let mut errors = checks::model_and_limits(files, Some(&spec.model), &spec.limits);
    errors.extend(extension_problems(path, spec));
    errors.extend(repo_problems(path, spec));
    for (list, what) in [(&spec.checks, "checks"), (&spec.setup, "setup steps")] {
        let mut seen = HashSet::new();
        for step in list {
            if !seen.insert(step.name.as_str()) {
                errors.push(SpecError::Invalid {
                    position: Position::at(path, None),
                    message: format!(
                        "two {what} are named {:?}; their names must be unique within a task",
                        step.name
                    ),
                });
            }
        }
    }
    errors
}

/// What is wrong with `retry:`, `output:`, `hooks:` and `tools:`: each says something
/// drover can do.
fn extension_problems(path: &Path, spec: &TaskSpec) -> Vec<SpecError> {
    let at = |location| Position::at(path, Some(location));
    let mut errors = Vec::new();
    if let Some(retry) = &spec.retry {
        let attempts = retry.value.max_attempts;
        if !(1..=crate::MAX_ATTEMPTS).contains(&attempts) {
            errors.push(SpecError::Invalid {
                position: at(retry.referenced),
                message: format!(
                    "retry.max_attempts must be between 1 and {}, not {attempts}",
                    crate::MAX_ATTEMPTS
                ),
            });
        }
    }
    if let Some(output) = &spec.output
        && let Some(message) = crate::output::output_problem(&output.value)
    {
        errors.push(SpecError::Invalid {
            position: at(output.referenced),
            message,
        });
    }
    if let Some(hooks) = &spec.hooks {
        errors.extend(
            crate::hooks::hooks_problems(&hooks.value)
                .into_iter()
                .map(|message| SpecError::Invalid {
                    position: at(hooks.referenced),
                    message,
                }),
        );
    }
    if let Some(tools) = &spec.tools
        && let Some(message) = crate::tools::tools_problem(&tools.value)
    {
        let location = tools.value.web_fetch_model().map(|m| m.referenced);
        errors.push(SpecError::Invalid {
            position: at(location.unwrap_or(tools.referenced)),
            message,
        });
    }
    errors
}

/// What is wrong with `repo:`: its own values ([`crate::RepoSpec::problems`]), and a
/// `workspace:` beside it (which of the two is the task's workspace would be a guess).
fn repo_problems(path: &Path, spec: &TaskSpec) -> Vec<SpecError> {
    let Some(repo) = &spec.repo else {
        return Vec::new();
    };
    let at = |location| Position::at(path, Some(location));
    let mut errors: Vec<SpecError> = repo
        .value
        .problems()
        .into_iter()
        .map(|(location, message)| SpecError::Invalid {
            position: at(location),
            message,
        })
        .collect();
    if spec.workspace.is_some() {
        errors.push(SpecError::Invalid {
            position: at(repo.referenced),
            message: "repo: and workspace: both name the task's workspace; keep repo: to clone the repository, or workspace: for a directory already here".into(),
        });
    }
    errors
}
