//! The checks of the model and the limits, settings a spec and its directory's defaults
//! file both hold: each is checked in the file that wrote it, at its position there.

use serde_saphyr::Spanned;

use super::error::SpecError;
use crate::defaults::Files;
use crate::model_check::model_problem;
use crate::types::{Limits, ModelSpec};

/// `model:` says something a provider can do, and each limit is one drover can keep.
pub(crate) fn model_and_limits(
    files: &Files,
    model: Option<&Spanned<ModelSpec>>,
    limits: &Limits,
) -> Result<(), SpecError> {
    if let Some(model) = model
        && let Some(message) = model_problem(&model.value, "model")
    {
        return Err(files.invalid(Some(model.referenced), message));
    }
    if let Some(limit) = &limits.max_cost_usd
        && !(limit.value.is_finite() && limit.value > 0.0)
    {
        return Err(files.invalid(
            Some(limit.referenced),
            format!(
                "limits.max_cost_usd must be a positive number, not {}",
                limit.value
            ),
        ));
    }
    if let Some(limit) = limits.max_tokens.as_ref().filter(|l| l.value == 0) {
        return Err(files.invalid(
            Some(limit.referenced),
            "limits.max_tokens must be at least 1".into(),
        ));
    }
    if let Some(limit) = limits.max_turns.as_ref().filter(|l| l.value == 0) {
        return Err(files.invalid(
            Some(limit.referenced),
            "limits.max_turns must be at least 1".into(),
        ));
    }
    Ok(())
}
