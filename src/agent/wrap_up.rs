//! A soft landing (`limits.wrap_up`): when a limit is about to end the run, the model
//! gets one last turn without tools to say where the work stands, and the run then ends
//! with that limit's reason all the same.
//!
//! The wrap-up never spends past a budget or the clock knowingly: for `max_cost_usd`,
//! `max_tokens` and `timeout` it is the last turn they allow (the next turn's cost,
//! tokens and time projected from the turns so far). `max_turns` counts working turns:
//! the wrap-up is one more, after them.

use std::time::Duration;

use super::session::Session;
use super::{Agent, AgentConfig, Stop, limits};
use crate::message::Usage;
use crate::model::pricing::cost;
use crate::output::counted;
use crate::record::transcript::TranscriptError;
use crate::record::{EndReason, Event};

/// The least time kept for the wrap-up turn, and the most (as a share of the limit).
const LEAST_RESERVE: Duration = Duration::from_secs(10);
const MOST_RESERVE_SHARE: u32 = 4;

impl Agent<'_> {
    /// Whether a limit may give this agent a wrap-up turn: asked for, the main agent's,
    /// live (a replay's come from its recording), and not given yet.
    pub(super) fn may_wrap_up(&self, config: &AgentConfig, session: &Session) -> bool {
        config.wrap_up && self.depth == 0 && self.replay.is_none() && !session.wrapped_up
    }

    /// Make the next request the wrap-up turn of a run `stop` ends.
    pub(super) fn begin_wrap_up(
        &mut self,
        session: &mut Session,
        stop: Stop,
    ) -> Result<(), TranscriptError> {
        let (reason, message) = stop;
        let prompt = format!(
            "drover: this is your last turn: {}. You cannot call tools any more. Write, for the people who will pick this up, where the work stands: what you did, what works and what does not yet, what remains to be done and how you would go on. Name files, functions and commands exactly.",
            why(reason)
        );
        self.transcript.write(Event::WrapUp {
            turn: session.turns,
            reason,
            message: message.clone(),
            prompt: prompt.clone(),
        })?;
        session.push_user_text(prompt);
        session.force_output = false;
        session.wrap_up = Some((reason, message));
        Ok(())
    }

    /// The wrap-up turn was taken: its text kept, and the stop it was for.
    pub(super) fn end_wrap_up(&mut self, session: &mut Session) -> Option<Stop> {
        let (reason, message) = session.wrap_up.take()?;
        session.wrapped_up = true;
        let text = session.last_turn_text.trim();
        let turn = session.turns;
        if text.is_empty() {
            return Some((
                reason,
                format!("{message}; the model was given turn {turn} for a wrap-up but wrote none"),
            ));
        }
        session.wrap_up_text = Some(text.to_string());
        Some((
            reason,
            format!("{message}; the model wrote its wrap-up in turn {turn}, without tools"),
        ))
    }
}

fn why(reason: EndReason) -> &'static str {
    match reason {
        EndReason::MaxTurns => "the run has used all its turns (limits.max_turns)",
        EndReason::Timeout => "the run's time is nearly up (limits.timeout)",
        _ => "the run's budget is nearly spent (limits.max_cost_usd or limits.max_tokens)",
    }
}

/// The limit the next working turn would pass, projected from the turns so far: its
/// request's estimated tokens and the last turn's output for the budgets, twice the
/// longest request so far (10 s at least, a quarter of the limit at most) for the clock.
pub(super) fn ahead(
    config: &AgentConfig,
    session: &mut Session,
    spent: &limits::Spent<'_>,
) -> Option<Stop> {
    if session.turns == 0 {
        return None;
    }
    let bytes = session.request_bytes(&config.system);
    let next = Usage {
        input_tokens: session.context.size.tokens(bytes),
        output_tokens: session.last_output_tokens,
        ..Usage::default()
    };
    let turns = counted(session.turns, "turn", "turns");
    if let (Some(limit), Some(spent_usd), Some(pricing)) =
        (config.max_cost_usd, spent.cost_usd, config.pricing)
    {
        let next_usd = cost(&next, &pricing);
        if spent_usd + next_usd >= limit {
            return Some((
                EndReason::Budget,
                format!(
                    "spent ${spent_usd:.4} of limits.max_cost_usd ${limit} after {turns}; the next turn (~${next_usd:.4}) would have passed it"
                ),
            ));
        }
    }
    if let Some(limit) = config.max_tokens {
        let total = spent.usage.total();
        if total.saturating_add(next.total()) >= limit {
            return Some((
                EndReason::Budget,
                format!(
                    "used {total} tokens of limits.max_tokens {limit} after {turns}; the next turn (~{} tokens) would have passed it",
                    next.total()
                ),
            ));
        }
    }
    let limit = config.timeout?;
    let elapsed = session.clock.started.elapsed();
    let reserve = (session.longest_request * 2)
        .max(LEAST_RESERVE)
        .min(limit / MOST_RESERVE_SHARE);
    (limit.saturating_sub(elapsed) < reserve).then(|| {
        (
            EndReason::Timeout,
            format!(
                "ran {:.1}s of limits.timeout {} after {turns}; too little time was left for another working turn",
                elapsed.as_secs_f64(),
                humantime::format_duration(limit)
            ),
        )
    })
}
