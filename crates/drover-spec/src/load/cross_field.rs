//! The checks of a parsed spec that its types cannot express: settings that need each
//! other, ranges, names unique within a task. Each problem is reported, not only the
//! first, at the line and column of what it is about.

use std::collections::HashSet;
use std::path::Path;

use serde_saphyr::Spanned;

use super::{Position, SpecError};
use crate::model_check::model_problems;
use crate::types::TaskSpec;

/// Every problem of `spec` that spans several fields, in the order of the spec's keys.
pub(super) fn problems(path: &Path, spec: &TaskSpec) -> Vec<SpecError> {
    let at = |location| Position::at(path, Some(location));
    let mut errors: Vec<SpecError> = model_problems(&spec.model.value, "model")
        .into_iter()
        .map(|message| SpecError::Invalid {
            position: at(spec.model.referenced),
            message,
        })
        .collect();
    if let Some(limit) = &spec.limits.max_cost_usd {
        errors.extend(budget_is_positive(path, limit));
    }
    if let Some(limit) = spec.limits.max_tokens.as_ref().filter(|l| l.value == 0) {
        errors.push(SpecError::Invalid {
            position: at(limit.referenced),
            message: "limits.max_tokens must be at least 1".into(),
        });
    }
    if let Some(limit) = spec.limits.max_turns.as_ref().filter(|l| l.value == 0) {
        errors.push(SpecError::Invalid {
            position: at(limit.referenced),
            message: "limits.max_turns must be at least 1".into(),
        });
    }
    errors.extend(extension_problems(path, spec));
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

/// `limits.max_cost_usd` is a positive amount. (That the runner can price the model is
/// checked by `run::plan::spec_checks`, which knows the price table.)
fn budget_is_positive(path: &Path, limit: &Spanned<f64>) -> Option<SpecError> {
    (!(limit.value.is_finite() && limit.value > 0.0)).then(|| SpecError::Invalid {
        position: Position::at(path, Some(limit.referenced)),
        message: format!(
            "limits.max_cost_usd must be a positive number, not {}",
            limit.value
        ),
    })
}
