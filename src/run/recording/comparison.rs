//! Comparing a replayed tool result with the recorded one: the next result recorded for
//! the call's id, both with their volatile spans masked (and a sub-agent's figures left
//! out). The loop asks through `agent::ReplayCheck` and records only what differs.

use std::sync::Arc;

use crate::agent::{Difference, Handover, ReplayCheck, without_usage};
use crate::record::EndReason;
use crate::record::context::Compaction;
use crate::record::drift::short_diff;
use crate::record::volatile::Masks;
use crate::tools::ToolOutput;
use crate::tools::recorded::ResultsById;

/// The recorded results one agent's replayed calls are expected to give again.
#[derive(Debug, Default)]
pub(crate) struct RecordedResults {
    /// By tool_use id, in recorded order (a model may repeat an id across turns).
    pub results: ResultsById,
    /// Under `--strict` the first difference ends the run with `replay_drift`.
    pub strict: bool,
    /// What is masked in both results before they are compared (durations, …).
    pub masks: Arc<Masks>,
    /// A resumed run: where its recorded turns end and the live model takes over.
    pub handover: Option<Handover>,
    /// Where the recording compacted its conversation and wrapped up.
    pub steering: super::Steering,
}

impl ReplayCheck for RecordedResults {
    fn differs(
        &mut self,
        call_id: &str,
        output: &ToolOutput,
        agent_result: bool,
    ) -> Option<Difference> {
        let expected = self
            .results
            .get_mut(call_id)
            .and_then(std::collections::VecDeque::pop_front);
        let expected = expected.as_ref();
        if expected == Some(output) {
            return None;
        }
        let comparable = |content: &str| -> String {
            let content = if agent_result {
                without_usage(content)
            } else {
                content
            };
            self.masks.mask(content).into_owned()
        };
        let expected_text = expected.map_or_else(
            || "(no recorded result)".to_string(),
            |expected| expected.content.clone(),
        );
        let (recorded, replayed) = (comparable(&expected_text), comparable(&output.content));
        let same = expected.is_some_and(|expected| {
            expected.is_error == output.is_error
                && expected.images == output.images
                && recorded == replayed
        });
        (!same).then(|| Difference {
            expected: expected_text,
            diff: short_diff(&recorded, &replayed),
        })
    }

    fn strict(&self) -> bool {
        self.strict
    }

    fn handover(&self) -> Option<&Handover> {
        self.handover.as_ref()
    }

    fn compaction(&mut self, turns: u32) -> Option<Compaction> {
        self.steering.compaction(turns)
    }

    fn wrap_up(&mut self, turns: u32) -> Option<(EndReason, String)> {
        self.steering.wrap_up(turns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn output(content: &str) -> ToolOutput {
        ToolOutput {
            content: content.to_string(),
            is_error: false,
            images: Vec::new(),
        }
    }

    fn recorded(id: &str, outputs: &[&str]) -> RecordedResults {
        let mut results = ResultsById::new();
        results.insert(id.to_string(), outputs.iter().map(|o| output(o)).collect());
        RecordedResults {
            results,
            ..Default::default()
        }
    }

    #[test]
    fn the_same_result_again_is_no_difference_and_each_recorded_one_is_used_once() {
        let mut check = recorded("t1", &["first", "second"]);
        assert_eq!(check.differs("t1", &output("first"), false), None);
        assert_eq!(check.differs("t1", &output("second"), false), None);
        let third = check.differs("t1", &output("second"), false);
        assert_eq!(
            third.map(|d| d.expected).as_deref(),
            Some("(no recorded result)")
        );
    }

    #[test]
    fn a_different_result_names_what_the_recording_holds_with_a_diff() {
        let mut check = recorded("t1", &["ok: 3 tests"]);
        let difference = check.differs("t1", &output("FAILED: 1 test"), false);
        let difference = difference.expect("a different result differs");
        assert_eq!(difference.expected, "ok: 3 tests");
        assert!(difference.diff.contains("FAILED"), "{}", difference.diff);
    }

    #[test]
    fn an_error_flag_that_changed_is_a_difference_though_the_text_is_the_same() {
        let mut check = recorded("t1", &["same text"]);
        let mut failed = output("same text");
        failed.is_error = true;
        assert!(check.differs("t1", &failed, false).is_some());
    }
}
