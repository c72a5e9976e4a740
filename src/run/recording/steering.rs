//! Where a recording compacted its conversation and wrapped up: a replay does both
//! exactly there, whatever its own estimates or clock would say, so it rebuilds the
//! recorded requests.

use std::collections::VecDeque;

use crate::record::context::Compaction;
use crate::record::{EndReason, Event};

/// One agent's recorded compactions and wrap-up, in order.
#[derive(Debug, Default)]
pub(crate) struct Steering {
    compactions: VecDeque<Compaction>,
    /// The turns before the wrap-up, its reason and message.
    wrap_up: Option<(u32, EndReason, String)>,
    /// The turns before a PreCompact hook stopped the run (`continue: false`): the
    /// compaction it came before was never made, so no `compaction` event says where.
    compaction_stopped: Option<u32>,
}

impl Steering {
    /// The steering recorded among one agent's `events`.
    pub(crate) fn of(events: &[Event]) -> Steering {
        let mut steering = Steering::default();
        let mut turns = 0u32;
        // Model turns recorded after the wrap-up: one, its answer, or none.
        let mut after_wrap_up = 0u32;
        for event in events {
            match event {
                Event::ModelResponse { .. } => {
                    turns = turns.saturating_add(1);
                    if steering.wrap_up.is_some() {
                        after_wrap_up += 1;
                    }
                }
                Event::Hook {
                    event, decision, ..
                } if event == "PreCompact"
                    && decision == "stop"
                    && steering.compaction_stopped.is_none() =>
                {
                    steering.compaction_stopped = Some(turns);
                }
                Event::Compaction(compaction) => {
                    steering.compactions.push_back((**compaction).clone());
                }
                Event::WrapUp {
                    turn,
                    reason,
                    message,
                    ..
                } if steering.wrap_up.is_none() && *turn == turns && is_limit(*reason) => {
                    steering.wrap_up = Some((*turn, *reason, message.clone()));
                }
                _ => {}
            }
        }
        // A wrap-up is the last turn: one that more turns follow is no recording drover
        // made, and is not followed (the replay goes on and compares every turn).
        if after_wrap_up > 1 {
            steering.wrap_up = None;
        }
        steering
    }

    /// The next compaction recorded before the request of turn `turns + 1`, or one of an
    /// earlier turn the replay passed without making it: made late, it rebuilds another
    /// conversation, which is reported as drift rather than passed over in silence.
    pub(crate) fn compaction(&mut self, turns: u32) -> Option<Compaction> {
        if self.compactions.front().is_some_and(|c| c.turn <= turns) {
            return self.compactions.pop_front();
        }
        None
    }

    /// Whether a PreCompact hook stopped the run before the request of turn `turns + 1`.
    pub(crate) fn compaction_stopped(&self, turns: u32) -> bool {
        self.compaction_stopped == Some(turns)
    }

    /// The wrap-up recorded before the request of turn `turns + 1`.
    pub(crate) fn wrap_up(&mut self, turns: u32) -> Option<(EndReason, String)> {
        match &self.wrap_up {
            Some((turn, ..)) if *turn == turns => self
                .wrap_up
                .take()
                .map(|(_, reason, message)| (reason, message)),
            _ => None,
        }
    }
}

/// The limits a wrap-up comes before.
fn is_limit(reason: EndReason) -> bool {
    matches!(
        reason,
        EndReason::MaxTurns | EndReason::Budget | EndReason::Timeout
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Usage;

    fn compaction(turn: u32) -> Event {
        Event::Compaction(Box::new(Compaction {
            turn,
            strategy: "clear_tool_results".into(),
            trigger: "threshold".into(),
            window: 32_000,
            tokens_before: 23_000,
            tokens_after: 15_000,
            bytes_before: 92_000,
            bytes_after: 60_000,
            kept: "ab".into(),
            cleared_results: 4,
            removed_turns: 0,
            summary: None,
            usage: Usage::default(),
            cost_usd: None,
            fallback: None,
        }))
    }

    fn response() -> Event {
        Event::ModelResponse {
            turn: 1,
            content: Vec::new(),
            stop_reason: crate::message::StopReason::ToolUse,
            usage: Usage::default(),
            cost_usd: None,
        }
    }

    fn wrap_up(turn: u32, reason: EndReason) -> Event {
        Event::WrapUp {
            turn,
            reason,
            message: format!("used {turn} turns"),
            prompt: "last turn".into(),
        }
    }

    /// `turns` model responses, the compactions at their turns, then the wrap-up and
    /// its answer.
    fn recording(turns: u32, wrap: Event) -> Vec<Event> {
        let mut events = Vec::new();
        for turn in 0..turns {
            if turn == 4 {
                events.push(compaction(4));
            }
            if turn == 9 {
                events.extend([compaction(9), compaction(9)]);
            }
            events.push(response());
        }
        events.extend([wrap, response()]);
        events
    }

    #[test]
    fn compactions_and_the_wrap_up_come_back_at_their_turns_once() {
        let mut steering = Steering::of(&recording(12, wrap_up(12, EndReason::MaxTurns)));
        assert!(steering.compaction(3).is_none());
        assert_eq!(steering.compaction(4).map(|c| c.turn), Some(4));
        assert!(steering.compaction(4).is_none());
        assert_eq!(steering.compaction(9).map(|c| c.turn), Some(9));
        assert_eq!(steering.compaction(9).map(|c| c.turn), Some(9));
        assert!(steering.compaction(9).is_none());
        assert!(steering.wrap_up(11).is_none());
        assert_eq!(
            steering.wrap_up(12),
            Some((EndReason::MaxTurns, "used 12 turns".to_string()))
        );
        assert!(steering.wrap_up(12).is_none());
        assert!(!steering.compaction_stopped(12));
        // One the replay passed comes back late (and is then drift), never dropped.
        let mut steering = Steering::of(&recording(12, wrap_up(12, EndReason::MaxTurns)));
        assert_eq!(steering.compaction(6).map(|c| c.turn), Some(4));
    }

    #[test]
    fn a_forged_wrap_up_is_not_followed() {
        // Another reason than a limit's.
        let mut steering = Steering::of(&recording(3, wrap_up(3, EndReason::EndTurn)));
        assert!(steering.wrap_up(3).is_none());
        // A turn that is not where it stands.
        let mut steering = Steering::of(&recording(3, wrap_up(0, EndReason::Budget)));
        assert!(steering.wrap_up(0).is_none());
        // Moved before turns the recording goes on with.
        let mut events = vec![response(), wrap_up(1, EndReason::Timeout)];
        events.extend([response(), response(), response()]);
        let mut steering = Steering::of(&events);
        assert!(steering.wrap_up(1).is_none());
    }

    #[test]
    fn a_pre_compact_hook_that_stopped_the_run_is_found_at_its_turn() {
        let hook = |event: &str, decision: &str| Event::Hook {
            event: event.into(),
            matcher: "auto".into(),
            command: "./pre.sh".into(),
            exit_code: Some(0),
            timed_out: false,
            duration_ms: 1,
            decision: decision.into(),
            reason: None,
            tool_use_id: None,
            stdout: String::new(),
            stderr: String::new(),
        };
        let events = vec![
            response(),
            hook("PreToolUse", "stop"),
            response(),
            hook("PreCompact", "none"),
            compaction(2),
            response(),
            hook("PreCompact", "stop"),
        ];
        let steering = Steering::of(&events);
        assert!(!steering.compaction_stopped(2));
        assert!(steering.compaction_stopped(3));
    }
}
