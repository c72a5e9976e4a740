//! How a task ended: the loop's reason, unless a check failed (`checks_failed`) or a
//! signal stopped one (`interrupted`), with what the message must add.

use crate::agent::LoopOutcome;
use crate::record::{EndReason, Redactor, TaskReport, TranscriptWriter};
use crate::run::plan::TaskPlan;

use super::commands::TaskCommands;
use super::diff::Changes;
use super::error::TaskError;
use super::evaluation::{Evaluation, evaluate};
use super::interrupt::Interrupt;
use super::start::Started;

/// Run the checks and expectations after a loop that ended on its own (unless the
/// last round was judged already), and say how the task ended: the loop's reason unless
/// a check failed (`checks_failed`) or a signal stopped a check (`interrupted`).
#[expect(
    clippy::too_many_arguments,
    reason = "the task's parts, each used once"
)]
pub(super) async fn judge(
    plan: &TaskPlan,
    started: &Started,
    commands: &TaskCommands,
    rounds: (LoopOutcome, Option<Evaluation>),
    changes: &Changes,
    interrupt: Interrupt,
    redactor: &Redactor,
    report: &mut TaskReport,
    transcript: &mut TranscriptWriter,
) -> Result<(EndReason, String), TaskError> {
    let (outcome, settled) = rounds;
    let (mut reason, mut message) = (outcome.reason, outcome.message);
    if runs_checks(reason) {
        let evaluation = match settled {
            Some(evaluation) => evaluation,
            None => {
                evaluate(
                    &plan.spec.spec,
                    started,
                    commands,
                    changes,
                    &interrupt,
                    redactor,
                    transcript,
                )
                .await?
            }
        };
        report.checks = evaluation.checks;
        if let Some(why) = evaluation.interrupted {
            reason = EndReason::Interrupted;
            message = why;
        } else if reason == EndReason::EndTurn && !evaluation.failed.is_empty() {
            reason = EndReason::ChecksFailed;
            message = evaluation.failed.join("; ");
        }
    }
    if report.attempts > 1 {
        message = format!(
            "{message} (attempt {} of {})",
            report.attempts,
            plan.max_attempts()
        );
    }
    if !changes.unreadable.is_empty() {
        message = format!(
            "{message}; {} file(s) could not be read for the diff: {}",
            changes.unreadable.len(),
            changes.unreadable.join(", ")
        );
    }
    if report.cost_usd.is_none() {
        message = format!("{message} ({})", unknown_price(&report.model));
    }
    Ok((reason, message))
}

/// Checks say something useful after any loop that ran to a stop of its own; after a
/// timeout or a runner error they would only add time.
fn runs_checks(reason: EndReason) -> bool {
    !matches!(
        reason,
        EndReason::Timeout
            | EndReason::ProviderError
            | EndReason::InternalError
            | EndReason::McpUnavailable
            | EndReason::Interrupted
    )
}
/// The note for a model the pricing table does not know: its cost is null, not zero.
pub(super) fn unknown_price(model: &str) -> String {
    format!(
        "cost unknown: drover has no price for model {model:?}; set model.pricing to account for it"
    )
}
