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
}

impl Steering {
    /// The steering recorded among one agent's `events`.
    pub(crate) fn of(events: &[Event]) -> Steering {
        let mut steering = Steering::default();
        for event in events {
            match event {
                Event::Compaction(compaction) => {
                    steering.compactions.push_back((**compaction).clone());
                }
                Event::WrapUp {
                    turn,
                    reason,
                    message,
                    ..
                } if steering.wrap_up.is_none() => {
                    steering.wrap_up = Some((*turn, *reason, message.clone()));
                }
                _ => {}
            }
        }
        steering
    }

    /// The next compaction recorded before the request of turn `turns + 1`; those of
    /// earlier turns the replay passed without are dropped.
    pub(crate) fn compaction(&mut self, turns: u32) -> Option<Compaction> {
        while self.compactions.front().is_some_and(|c| c.turn < turns) {
            self.compactions.pop_front();
        }
        if self.compactions.front().is_some_and(|c| c.turn == turns) {
            return self.compactions.pop_front();
        }
        None
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

    #[test]
    fn compactions_and_the_wrap_up_come_back_at_their_turns_once() {
        let events = vec![
            compaction(4),
            compaction(9),
            compaction(9),
            Event::WrapUp {
                turn: 12,
                reason: EndReason::MaxTurns,
                message: "used 12 turns".into(),
                prompt: "last turn".into(),
            },
        ];
        let mut steering = Steering::of(&events);
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
    }
}
