//! The checks of the model and the limits, settings a spec and its directory's defaults
//! file both hold: each is checked in the file that wrote it, at its position there.

use serde_saphyr::Spanned;

use super::error::SpecError;
use crate::defaults::Files;
use crate::model_check::model_problems;
use crate::types::{Limits, ModelSpec};

/// Every way `model:` says something no provider can do, and every limit drover cannot
/// keep, each at the position of the file that wrote it.
pub(crate) fn model_and_limits(
    files: &Files,
    model: Option<&Spanned<ModelSpec>>,
    limits: &Limits,
) -> Vec<SpecError> {
    let mut errors: Vec<SpecError> = model
        .map(|model| {
            model_problems(&model.value, "model")
                .into_iter()
                .map(|message| files.invalid(Some(model.referenced), message))
                .collect()
        })
        .unwrap_or_default();
    if let Some(limit) = &limits.max_cost_usd
        && !(limit.value.is_finite() && limit.value > 0.0)
    {
        errors.push(files.invalid(
            Some(limit.referenced),
            format!(
                "limits.max_cost_usd must be a positive number, not {}",
                limit.value
            ),
        ));
    }
    if let Some(limit) = limits.max_tokens.as_ref().filter(|l| l.value == 0) {
        errors.push(files.invalid(
            Some(limit.referenced),
            "limits.max_tokens must be at least 1".into(),
        ));
    }
    if let Some(limit) = limits.max_turns.as_ref().filter(|l| l.value == 0) {
        errors.push(files.invalid(
            Some(limit.referenced),
            "limits.max_turns must be at least 1".into(),
        ));
    }
    errors
}
