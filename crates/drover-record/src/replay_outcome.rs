//! A replay's outcome, told truthfully. A replay without `--checks` verifies the
//! recorded turns, not the result: nothing judged the replayed workspace, so its
//! outcome is the recorded run's (a recorded failure stays a failure), unless the replay
//! itself ended worse (a strict drift, a sandbox that cannot be enforced). With
//! `--checks` the checks judge the replayed result and decide, as in a run; an outcome
//! the checks did not decide (a turn limit, a budget, an invalid final answer) is never
//! made better by the replay. Every report says which it was (docs/replay.md, "What a
//! replay's outcome says").

use serde::{Deserialize, Serialize};

use crate::{EndReason, Status};

/// Whether the spec's checks ran on the replayed result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChecksRun {
    /// No `--checks`: the result was not judged by the checks.
    NotRun,
    /// `--checks`: they ran on the replayed result.
    Rerun,
}

/// Whose outcome the task's status and reason are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeFrom {
    /// The recorded run's (its `run_end`), as recorded.
    Recording,
    /// The replay's own.
    Replay,
}

/// How the recorded run ended, as its `run_end` says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedOutcome {
    pub status: Status,
    pub reason: EndReason,
    pub message: String,
}

/// What a replay's report says about its outcome: `summary.json`'s `replay` of a task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplayJudgement {
    pub checks: ChecksRun,
    pub outcome_from: OutcomeFrom,
    /// The recorded run's end; absent when the recording has none to read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded: Option<RecordedOutcome>,
}

/// The most of a recorded message a report repeats: the recording may come from anyone.
const MAX_RECORDED_MESSAGE: usize = 2000;

impl RecordedOutcome {
    /// The outcome a recorded `run_end` gives: its status is the one its reason implies
    /// (a recording that says `passed` beside `checks_failed` is read as failed), its
    /// message cut to a length a report can hold.
    pub fn from_run_end(reason: EndReason, message: &str) -> RecordedOutcome {
        let message = match message.char_indices().nth(MAX_RECORDED_MESSAGE) {
            Some((cut, _)) => format!("{}…", &message[..cut]),
            None => message.to_string(),
        };
        RecordedOutcome {
            status: reason.status(),
            reason,
            message,
        }
    }
}

impl ReplayJudgement {
    /// Before the replay has ended: the recorded outcome and whether checks run.
    pub fn new(checks: ChecksRun, recorded: Option<RecordedOutcome>) -> ReplayJudgement {
        ReplayJudgement {
            checks,
            outcome_from: OutcomeFrom::Replay,
            recorded,
        }
    }

    /// The task's reason and message once the replay ended with `own`, and whose
    /// outcome that is (kept in `self`). Without `--checks` the recorded outcome stands
    /// unless the replay's own status is worse; with them, the replay's own stands
    /// unless the recorded end was not the checks' to decide and was worse.
    pub fn settle(&mut self, own: (EndReason, String)) -> (EndReason, String) {
        let (reason, message) = own;
        let Some(recorded) = &self.recorded else {
            self.outcome_from = OutcomeFrom::Replay;
            return (reason, self.own_message(message));
        };
        let keep_recorded = match self.checks {
            ChecksRun::NotRun => recorded.status >= reason.status(),
            ChecksRun::Rerun => {
                !decided_by_checks(recorded.reason) && recorded.status > reason.status()
            }
        };
        if !keep_recorded {
            self.outcome_from = OutcomeFrom::Replay;
            return (reason, self.own_message(message));
        }
        self.outcome_from = OutcomeFrom::Recording;
        let mut text = format!("{}: {}", self.label_words(), recorded.message);
        if reason.status() != Status::Passed && reason != recorded.reason {
            text.push_str(&format!(
                "; the replay itself ended with {}: {message}",
                reason.as_str()
            ));
        }
        (recorded.reason, text)
    }

    /// The replay's own message, saying what it rests on when the recording ended
    /// otherwise.
    fn own_message(&self, message: String) -> String {
        let checks = match self.checks {
            ChecksRun::NotRun => "checks not re-run",
            ChecksRun::Rerun => "checks re-run",
        };
        match &self.recorded {
            Some(recorded) => format!(
                "{message} ({checks}; the recorded run ended {}, {})",
                crate::junit::status_str(recorded.status),
                recorded.reason.as_str()
            ),
            None => format!("{message} ({checks})"),
        }
    }

    /// How the task's outcome was reached, in a few words for a task's lines:
    /// `as recorded; checks not re-run`.
    pub fn label_words(&self) -> &'static str {
        match (self.outcome_from, self.checks) {
            (OutcomeFrom::Recording, ChecksRun::NotRun) => "as recorded; checks not re-run",
            (OutcomeFrom::Recording, ChecksRun::Rerun) => "as recorded",
            (OutcomeFrom::Replay, ChecksRun::NotRun) => "replayed; checks not re-run",
            (OutcomeFrom::Replay, ChecksRun::Rerun) => "replayed; checks re-run",
        }
    }
}

/// The recorded ends the checks decided: the model ended its turn and the checks passed
/// or failed. Any other was reached before the checks could say (a limit, an invalid
/// answer, a refusal) and a replay's checks do not undo it.
fn decided_by_checks(reason: EndReason) -> bool {
    matches!(reason, EndReason::EndTurn | EndReason::ChecksFailed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recorded(reason: EndReason) -> ReplayJudgement {
        ReplayJudgement::new(
            ChecksRun::NotRun,
            Some(RecordedOutcome::from_run_end(reason, "recorded words")),
        )
    }

    fn rerun(reason: EndReason) -> ReplayJudgement {
        ReplayJudgement {
            checks: ChecksRun::Rerun,
            ..recorded(reason)
        }
    }

    fn own(reason: EndReason) -> (EndReason, String) {
        (reason, "replay words".to_string())
    }

    #[test]
    fn without_checks_a_recorded_failure_stays_a_failure() {
        let mut judgement = recorded(EndReason::ChecksFailed);
        let (reason, message) = judgement.settle(own(EndReason::EndTurn));
        assert_eq!(reason, EndReason::ChecksFailed);
        assert_eq!(
            message, "as recorded; checks not re-run: recorded words",
            "{message}"
        );
        assert_eq!(judgement.outcome_from, OutcomeFrom::Recording);
    }

    #[test]
    fn without_checks_a_recorded_pass_says_the_checks_did_not_run() {
        let mut judgement = recorded(EndReason::EndTurn);
        let (reason, message) = judgement.settle(own(EndReason::EndTurn));
        assert_eq!(reason, EndReason::EndTurn);
        assert!(message.starts_with("as recorded; checks not re-run"));
        assert_eq!(judgement.outcome_from, OutcomeFrom::Recording);
    }

    #[test]
    fn a_replay_that_ended_worse_decides_and_names_the_recorded_end() {
        let mut judgement = recorded(EndReason::EndTurn);
        let (reason, message) = judgement.settle(own(EndReason::ReplayDrift));
        assert_eq!(reason, EndReason::ReplayDrift);
        assert_eq!(judgement.outcome_from, OutcomeFrom::Replay);
        assert!(
            message.ends_with("(checks not re-run; the recorded run ended passed, end_turn)"),
            "{message}"
        );
        let mut judgement = recorded(EndReason::ChecksFailed);
        let (reason, _) = judgement.settle(own(EndReason::SandboxUnavailable));
        assert_eq!(reason, EndReason::SandboxUnavailable);
    }

    #[test]
    fn drift_never_makes_a_recorded_failure_look_better() {
        // A recorded error stays an error, whatever the replay ended with.
        for ended in [EndReason::ReplayDrift, EndReason::EndTurn] {
            let mut judgement = recorded(EndReason::ProviderError);
            let (reason, message) = judgement.settle(own(ended));
            assert_eq!(reason, EndReason::ProviderError);
            assert_eq!(reason.status(), Status::Error);
            if ended != EndReason::EndTurn {
                assert!(message.contains("the replay itself ended with replay_drift"));
            }
        }
        // As bad as the recording: the recording's reason, the replay's end named.
        let mut judgement = recorded(EndReason::ChecksFailed);
        let (reason, message) = judgement.settle(own(EndReason::ReplayDrift));
        assert_eq!(reason, EndReason::ChecksFailed);
        assert!(message.contains("replay_drift: replay words"), "{message}");
    }

    #[test]
    fn with_checks_the_replayed_result_decides_what_the_checks_decided() {
        let mut judgement = rerun(EndReason::ChecksFailed);
        assert_eq!(
            judgement.settle(own(EndReason::EndTurn)).0,
            EndReason::EndTurn
        );
        assert_eq!(judgement.outcome_from, OutcomeFrom::Replay);
        let mut judgement = rerun(EndReason::EndTurn);
        assert_eq!(
            judgement.settle(own(EndReason::ChecksFailed)).0,
            EndReason::ChecksFailed
        );
    }

    #[test]
    fn with_checks_an_end_the_checks_did_not_decide_is_not_made_better() {
        // A recorded time limit the replay could not reach: failed, not passed.
        let mut judgement = rerun(EndReason::Timeout);
        let (reason, message) = judgement.settle(own(EndReason::EndTurn));
        assert_eq!(reason, EndReason::Timeout);
        assert_eq!(judgement.outcome_from, OutcomeFrom::Recording);
        assert!(message.starts_with("as recorded: "), "{message}");
        // Reached again by the replay: the replay's own.
        let mut judgement = rerun(EndReason::MaxTurns);
        assert_eq!(
            judgement.settle(own(EndReason::MaxTurns)).0,
            EndReason::MaxTurns
        );
        assert_eq!(judgement.outcome_from, OutcomeFrom::Replay);
    }

    #[test]
    fn a_recorded_message_is_cut_and_its_status_follows_its_reason() {
        let long = "x".repeat(10_000);
        let outcome = RecordedOutcome::from_run_end(EndReason::ChecksFailed, &long);
        assert_eq!(outcome.status, Status::Failed);
        assert!(outcome.message.chars().count() <= MAX_RECORDED_MESSAGE + 1);
    }

    #[test]
    fn it_reads_as_summary_json_spells_it() {
        let judgement = recorded(EndReason::ChecksFailed);
        let value = serde_json::to_value(&judgement).unwrap();
        assert_eq!(value["checks"], "not_run");
        assert_eq!(value["outcome_from"], "replay");
        assert_eq!(value["recorded"]["reason"], "checks_failed");
        assert_eq!(value["recorded"]["status"], "failed");
    }
}
