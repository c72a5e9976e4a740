//! `<task>/result.json`: one task's outcome in the few fields an orchestrator acts on
//! (a Kubernetes Job, an Argo step, a Temporal activity running one task each), so it
//! reads one small file instead of parsing a run's summary: did it pass, and is it worth
//! running again.

use serde::{Deserialize, Serialize};

use crate::{EndReason, Status, TaskReport};
use drover_message::Usage;

/// The `result.json` of one task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskResult {
    pub task: String,
    pub status: Status,
    pub reason: EndReason,
    /// The exit code a run of this task alone exits with (0 passed, 1 failed, 3 error).
    pub exit_code: i32,
    /// Whether running the task again may end otherwise: a failure of the provider,
    /// the machine or drover, not of the work.
    pub retryable: bool,
    pub message: String,
    pub turns: u32,
    pub usage: Usage,
    pub cost_usd: Option<f64>,
    pub duration_ms: u64,
    /// The commit the task's workspace started from (absent outside a git repository),
    /// with the repository `repo:` cloned it from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<crate::StartCommit>,
    /// Rounds of the agent loop (`retry.max_attempts`).
    pub attempts: u32,
}

/// Whether a task that ended for `reason` may end otherwise when run again: the
/// provider failed after its retries, the run was interrupted, the machine could not
/// sandbox, a required MCP server did not start, the repository could not be reached,
/// drover failed. A limit, failed checks, a loop, a refusal or a repository that refused
/// the clone would come again.
pub fn retryable(reason: EndReason) -> bool {
    matches!(
        reason,
        EndReason::ProviderError
            | EndReason::Interrupted
            | EndReason::SandboxUnavailable
            | EndReason::McpUnavailable
            | EndReason::RepoUnavailable
            | EndReason::InternalError
    )
}

impl TaskResult {
    pub fn of(task: &TaskReport) -> TaskResult {
        TaskResult {
            task: task.name.clone(),
            status: task.status,
            reason: task.reason,
            exit_code: task.status.exit_code(),
            retryable: retryable(task.reason),
            message: task.message.clone(),
            turns: task.turns,
            usage: task.usage,
            cost_usd: task.cost_usd,
            duration_ms: u64::try_from(task.duration.as_millis()).unwrap_or(u64::MAX),
            start: task.start.clone(),
            attempts: task.attempts,
        }
    }

    /// The file's text: pretty JSON and a final newline.
    pub fn json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_of_the_machinery_are_retryable_and_of_the_work_final() {
        for reason in [
            EndReason::ProviderError,
            EndReason::Interrupted,
            EndReason::SandboxUnavailable,
            EndReason::RepoUnavailable,
        ] {
            assert!(retryable(reason), "{reason:?}");
        }
        for reason in [
            EndReason::ChecksFailed,
            EndReason::Budget,
            EndReason::Loop,
            EndReason::MaxTurns,
            EndReason::EndTurn,
            EndReason::ContextExhausted,
            EndReason::RepoRefused,
        ] {
            assert!(!retryable(reason), "{reason:?}");
        }
    }
}
