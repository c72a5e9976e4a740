//! Where a resumed run picks up a recorded one: just after the last turn the recording
//! holds whole. A turn is whole when its model response and a real result for each of
//! its tool calls were recorded; a turn cut short (kill -9 mid-stream or mid-tool, or
//! tools cancelled by a signal or the clock) is asked of the model again.

use std::collections::HashSet;

use crate::EndReason;
use crate::transcript::ScopedEvent;
use crate::{Event, Status};
use drover_message::{ContentBlock, StopReason, Usage};

/// What a tool call is answered with when the run ends before it finished: never the
/// tool's own result, so a turn holding one is not whole.
pub fn cancelled_result(reason: EndReason) -> &'static str {
    match reason {
        EndReason::Interrupted => "Cancelled: drover was interrupted before this call finished.",
        EndReason::Timeout => {
            "Cancelled: the run reached its time limit before this call finished."
        }
        EndReason::ReplayDrift => {
            "Cancelled: the replay drifted from the recording before this call ran."
        }
        EndReason::InternalError => "Cancelled: drover hit an internal error before this call ran.",
        _ => "Cancelled: the run ended before this call ran.",
    }
}

/// A result drover gave in place of running the call (hook notes may follow it). A
/// tool whose own error reads the same makes its turn be asked again, no more: the
/// recording, dropped lines included, is kept beside the resumed transcript.
pub fn is_cancelled_result(is_error: bool, content: &str) -> bool {
    is_error
        && [
            EndReason::Interrupted,
            EndReason::Timeout,
            EndReason::ReplayDrift,
            EndReason::InternalError,
            EndReason::EndTurn,
        ]
        .iter()
        .any(|reason| content.starts_with(cancelled_result(*reason)))
}

/// How a recorded run ended, as its `run_end` says.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedEnd {
    pub status: Status,
    pub reason: EndReason,
    pub message: String,
    pub turns: u32,
    pub usage: Usage,
    pub cost_usd: Option<f64>,
}

/// Where a resumed run continues a recording.
#[derive(Debug, Clone, PartialEq)]
pub struct ResumePoint {
    /// How many of the recording's lines are kept: through the end of its last whole
    /// turn (only its `run_start` when it has none).
    pub kept: usize,
    /// The main agent's whole turns, replayed before the live model takes over.
    pub turns: u32,
    /// The recorded `run_end`; None when the run was killed before it.
    pub end: Option<RecordedEnd>,
}

/// The resume point of a recording's events (one per line, in order).
pub fn resume_point(events: &[ScopedEvent]) -> ResumePoint {
    let mut kept = usize::from(!events.is_empty());
    let mut turns = 0;
    let mut open: Option<Turn> = None;
    for (index, scoped) in events.iter().enumerate() {
        if scoped.scope.is_some() {
            continue;
        }
        match &scoped.event {
            // The wrap-up turn was the run's last word under a limit: a resumed run goes
            // on working from the turn before it.
            Event::WrapUp { .. } => break,
            Event::ModelResponse {
                content,
                stop_reason,
                ..
            } => {
                if let Some(turn) = open.take() {
                    if !turn.whole() {
                        break;
                    }
                    turns += 1;
                    kept = turn.last + 1;
                }
                open = Some(Turn::new(content, *stop_reason, index));
            }
            Event::ToolResult {
                tool_use_id,
                is_error,
                content,
                ..
            } => {
                // A result of the turn's calls (an id the model repeated in the turn
                // has as many results: each is the turn's).
                if let Some(turn) = &mut open
                    && (turn.pending.remove(tool_use_id) || turn.ids.contains(tool_use_id))
                {
                    turn.last = index;
                    if is_cancelled_result(*is_error, content) {
                        turn.cancelled = true;
                    }
                }
            }
            _ => {}
        }
    }
    if let Some(turn) = open
        && turn.whole()
    {
        turns += 1;
        kept = turn.last + 1;
    }
    let end = match events.last().map(|last| &last.event) {
        Some(Event::RunEnd {
            status,
            reason,
            message,
            turns,
            usage,
            cost_usd,
            ..
        }) => Some(RecordedEnd {
            status: *status,
            reason: *reason,
            message: message.clone(),
            turns: *turns,
            usage: *usage,
            cost_usd: *cost_usd,
        }),
        _ => None,
    };
    ResumePoint { kept, turns, end }
}

/// A recorded turn of the main agent while its results are read.
struct Turn {
    /// Its tool calls' ids.
    ids: HashSet<String>,
    /// Its tool calls still without a result.
    pending: HashSet<String>,
    /// The model stopped without finishing it (its calls were never run).
    cut: bool,
    /// A call was cancelled rather than run.
    cancelled: bool,
    /// The turn's last line so far.
    last: usize,
}

impl Turn {
    fn new(content: &[ContentBlock], stop_reason: StopReason, index: usize) -> Turn {
        let ids: HashSet<String> = content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::ToolUse { id, .. } => Some(id.clone()),
                _ => None,
            })
            .collect();
        Turn {
            pending: ids.clone(),
            ids,
            cut: matches!(stop_reason, StopReason::MaxTokens | StopReason::Refusal),
            cancelled: false,
            last: index,
        }
    }

    fn whole(&self) -> bool {
        self.pending.is_empty() && !self.cut && !self.cancelled
    }
}

#[cfg(test)]
#[path = "resume_point_tests.rs"]
mod tests;
