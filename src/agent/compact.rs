//! When the loop compacts its conversation (`limits.context`): before a request that
//! would pass the threshold, once more when the API refuses a request as too long, and
//! in a replay exactly where the recording did. Each compaction is a `compaction` event
//! that holds what a replay needs to rebuild the same conversation (a summary is never
//! asked for twice).

use super::context::{
    ContextConfig, Goal, SUMMARY_PROMPT, clear, compactable, kept, refusal_figures,
};
use super::session::Session;
use super::{Agent, AgentConfig, Bounded, Stop, bounded, interrupted, limits, run_cost};
use crate::message::Usage;
use crate::model::{ModelRequest, ToolChoice};
use crate::record::context::Compaction;
use crate::record::transcript::TranscriptError;
use crate::record::{EndReason, Event};
use crate::spec::{ContextStrategy, HookEvent};

/// The characters of PreCompact hooks' instructions a summary request carries at most.
const HOOK_INSTRUCTIONS_MAX: usize = 8_000;

/// What a summary request came to.
enum Summary {
    Written {
        text: String,
        usage: Usage,
    },
    /// No summary: why, and what the attempt used.
    Failed {
        why: String,
        usage: Usage,
    },
    Stopped(Stop),
}

/// What a compaction came to.
enum Compacted {
    Done,
    /// Nothing was left to take out.
    Nothing {
        tokens: u64,
        window: u64,
    },
    Stopped(Stop),
}

/// What set a compaction off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Trigger {
    Threshold,
    Refused,
}

impl Trigger {
    fn as_str(self) -> &'static str {
        match self {
            Trigger::Threshold => "threshold",
            Trigger::Refused => "refused",
        }
    }
}

impl Agent<'_> {
    /// Before a request: a replay's recorded compactions of this turn, or one of the
    /// loop's own when the request would pass the threshold.
    pub(super) async fn fit_context(
        &mut self,
        config: &AgentConfig,
        session: &mut Session,
    ) -> Result<Option<Stop>, TranscriptError> {
        if self.replay.is_some() {
            return self.replay_compactions(config, session).await;
        }
        let Some(limit) = drover_limit(&config.context, session, self.model.provider()) else {
            return Ok(None);
        };
        let bytes = session.request_bytes(&config.system);
        if session.context.size.tokens(bytes) <= limit {
            return Ok(None);
        }
        Ok(
            match self
                .compact(config, session, Trigger::Threshold, bytes, None)
                .await?
            {
                Compacted::Stopped(stop) => Some(stop),
                Compacted::Done | Compacted::Nothing { .. } => None,
            },
        )
    }

    /// The API refused the last request as too long: compact once so the next fits.
    /// None: compacted, ask again; else the run ends (nothing left to take out).
    pub(super) async fn compact_refused(
        &mut self,
        config: &AgentConfig,
        session: &mut Session,
        refusal: &str,
    ) -> Result<Option<Stop>, TranscriptError> {
        let bytes = session.request_bytes(&config.system);
        let mut window = None;
        if let Some((tokens, server_window)) = refusal_figures(refusal) {
            session.context.size.refused(tokens, bytes);
            window = Some(server_window);
        }
        Ok(
            match self
                .compact(config, session, Trigger::Refused, bytes, window)
                .await?
            {
                Compacted::Done => None,
                Compacted::Stopped(stop) => Some(stop),
                Compacted::Nothing { tokens, window } => Some((
                    EndReason::ContextExhausted,
                    format!(
                        "the conversation no longer fits the model's context window; the API said: {refusal}; nothing was left to clear (the request of turn {} was ~{tokens} tokens by drover's estimate, window {window}): the task's prompt, tools and newest turns alone do not fit",
                        session.turns + 1
                    ),
                )),
            },
        )
    }

    /// Compact the conversation of a request of `bytes` down to the target (of the
    /// window the API named, when it is smaller than the spec's): PreCompact first, then
    /// the strategy's way, drover's clearing when a summary cannot be had.
    async fn compact(
        &mut self,
        config: &AgentConfig,
        session: &mut Session,
        trigger: Trigger,
        bytes: u64,
        server_window: Option<u64>,
    ) -> Result<Compacted, TranscriptError> {
        let mut context = config.context;
        if trigger == Trigger::Refused {
            // The API said no: the newest results are not kept whole any more (the newest
            // turn still is), rather than end the task with results left to clear.
            context.keep_tool_results = 0;
        }
        let summarizable =
            context.strategy == ContextStrategy::Summarize && session.messages.len() > 1;
        if !summarizable && !compactable(&session.messages, context.keep_tool_results) {
            // Nothing to take out: no hook, no record of a compaction that was not.
            return Ok(Compacted::Nothing {
                tokens: session.context.size.tokens(bytes),
                window: server_window.unwrap_or(config.context.window),
            });
        }
        let fields = super::compact_replay::pre_compact_fields();
        let instructions = match self
            .raise(config, session, HookEvent::PreCompact, "auto", None, fields)
            .await?
        {
            Ok(answer) => answer.additional_context,
            Err(stop) => return Ok(Compacted::Stopped(stop)),
        };
        if let Some(window) = server_window.filter(|w| *w < context.window) {
            context.window = window;
        }
        session.context.keep_opening(&session.messages);
        let target = session.context.size.bytes_for(context.target_tokens());
        let target = if trigger == Trigger::Refused {
            target.min(bytes / 2)
        } else {
            target
        };
        let mut record = self.compaction_record(&context, session, trigger, bytes);
        if context.strategy == ContextStrategy::Summarize {
            match self
                .summarize(config, session, &context, &instructions, &mut record)
                .await?
            {
                Summary::Written { text, usage } => {
                    record.removed_turns += assistant_turns(session);
                    session
                        .context
                        .summarized(&mut session.messages, text.clone());
                    record.summary = Some(text);
                    self.spent_on_summary(config, session, &mut record, usage);
                }
                Summary::Failed { why, usage } => {
                    record.fallback = Some(format!("{why}; drover cleared old results instead"));
                    self.spent_on_summary(config, session, &mut record, usage);
                    let now = session.request_bytes(&config.system);
                    clear_to(session, &context, now, target, &mut record);
                }
                Summary::Stopped(stop) => return Ok(Compacted::Stopped(stop)),
            }
        } else {
            clear_to(session, &context, bytes, target, &mut record);
        }
        self.finish_compaction(config, session, record)
    }

    /// The record of a compaction about to be made of a request of `bytes`.
    fn compaction_record(
        &self,
        context: &ContextConfig,
        session: &Session,
        trigger: Trigger,
        bytes: u64,
    ) -> Compaction {
        let strategy = match context.strategy {
            // Server-side editing is the API's; what drover does itself is clearing.
            ContextStrategy::Server => ContextStrategy::ClearToolResults,
            other => other,
        };
        Compaction {
            turn: session.turns,
            strategy: strategy.as_str().to_string(),
            trigger: trigger.as_str().to_string(),
            window: context.window,
            tokens_before: session.context.size.tokens(bytes),
            tokens_after: 0,
            bytes_before: bytes,
            bytes_after: 0,
            kept: String::new(),
            cleared_results: 0,
            removed_turns: 0,
            summary: None,
            usage: Usage::default(),
            cost_usd: None,
            fallback: session.context.fallback.clone(),
        }
    }

    /// Record a compaction that was made (none when nothing could be taken out).
    fn finish_compaction(
        &mut self,
        config: &AgentConfig,
        session: &mut Session,
        mut record: Compaction,
    ) -> Result<Compacted, TranscriptError> {
        let bytes_after = session.request_bytes(&config.system);
        record.bytes_after = bytes_after;
        record.tokens_after = session.context.size.tokens(bytes_after);
        record.kept = kept(&session.messages);
        // A summary asked for is recorded even when nothing changed: its tokens were
        // spent, and a resumed script must know the entry it took.
        let changed = record.summary.is_some()
            || record.fallback.is_some()
            || record.cleared_results > 0
            || record.removed_turns > 0;
        if !changed {
            // No record of a compaction that was not.
            return Ok(Compacted::Nothing {
                tokens: record.tokens_before,
                window: record.window,
            });
        }
        // The reason drover clears instead of the server is said once.
        session.context.fallback = None;
        session.context.tally.add(&record);
        self.transcript.write(Event::Compaction(Box::new(record)))?;
        Ok(Compacted::Done)
    }

    /// Ask the model for a summary of the conversation (with the PreCompact hooks'
    /// instructions), without tools; the conversation is cleared first (counted in
    /// `record`, as a replay clears it too) when the summary request would not fit.
    async fn summarize(
        &mut self,
        config: &AgentConfig,
        session: &mut Session,
        context: &ContextConfig,
        instructions: &[String],
        record: &mut Compaction,
    ) -> Result<Summary, TranscriptError> {
        let bytes = record.bytes_before;
        if session.context.size.tokens(bytes) > context.window / 10 * 9 {
            let target = session.context.size.bytes_for(context.threshold_tokens());
            clear_to(session, context, bytes, target, record);
        }
        let mut prompt = SUMMARY_PROMPT.to_string();
        // A hook's words are bounded: a summary request must fit the window it is for.
        let mut room = HOOK_INSTRUCTIONS_MAX;
        for text in instructions {
            let taken: String = text.chars().take(room).collect();
            room -= taken.chars().count();
            prompt.push_str("\n\nInstructions from the PreCompact hook:\n");
            prompt.push_str(&taken);
            if taken.len() < text.len() {
                prompt.push_str("\n[drover cut the hook's instructions here]");
            }
        }
        let added = session.push_transient(prompt);
        let request = ModelRequest {
            system: &config.system,
            messages: &session.messages,
            tools: &session.tools,
            tool_choice: ToolChoice::Nothing,
            output_schema: None,
            web_search: config.web_search.as_ref(),
            context_edit: None,
        };
        let answer = super::respond::respond_recorded(
            &mut *self.model,
            &mut session.notices,
            &mut *self.transcript,
            request,
        );
        let answer = bounded(session.clock.deadline, &config.interrupt, answer).await;
        session.take_transient(added);
        Ok(match answer {
            Bounded::TimedOut => Summary::Stopped(limits::timeout(
                config,
                session.clock.started,
                session.turns,
            )),
            Bounded::Interrupted => Summary::Stopped(interrupted(session.turns)),
            Bounded::Done(answer) => match answer? {
                Err(error) => Summary::Failed {
                    why: format!("the summary request failed: {error}"),
                    usage: Usage::default(),
                },
                Ok(response) => summary_of(
                    response,
                    session.context.size.bytes_for(context.target_tokens()),
                ),
            },
        })
    }

    /// A summary request's tokens count toward the task's budgets and figures, but it is
    /// no model turn (the meter's turns less the task's are its sub-agents' turns).
    fn spent_on_summary(
        &self,
        config: &AgentConfig,
        session: &mut Session,
        record: &mut Compaction,
        usage: Usage,
    ) {
        let cost = run_cost(config, &usage);
        config.meter.add_spent(&usage, cost);
        session.usage.add(&usage);
        record.usage = usage;
        record.cost_usd = cost;
    }
}

/// What an answer to the summary request comes to: a summary, or none when it is empty
/// or longer than `most` bytes (the size a compaction brings a request down to: a
/// summary that large would not make the conversation smaller).
fn summary_of(response: crate::message::ModelResponse, most: u64) -> Summary {
    let text = response.text();
    if text.trim().is_empty() {
        return Summary::Failed {
            why: "the model's summary was empty".to_string(),
            usage: response.usage,
        };
    }
    if text.len() as u64 > most {
        return Summary::Failed {
            why: format!(
                "the model's summary was too long ({} bytes, more than the {most} a compaction leaves the whole request)",
                text.len()
            ),
            usage: response.usage,
        };
    }
    Summary::Written {
        text,
        usage: response.usage,
    }
}

/// The estimated tokens past which drover itself compacts before a request: the
/// threshold, or with the API's own editing in force 95% of the window; None: `off`.
fn drover_limit(context: &ContextConfig, session: &Session, provider: &str) -> Option<u64> {
    match context.strategy {
        ContextStrategy::Off => None,
        // The server clears at the threshold; the estimate follows what it counted
        // (its usage after its edits), so a request still near the window is one the
        // server did not edit after all: drover clears then.
        ContextStrategy::Server if provider == "anthropic" && !session.context.server_refused => {
            Some(context.window / 20 * 19)
        }
        _ => Some(context.threshold_tokens()),
    }
}

/// Clear `session`'s conversation of a request of `bytes` down to `target` bytes, and
/// count what went in `record`.
fn clear_to(
    session: &mut Session,
    context: &ContextConfig,
    bytes: u64,
    target: u64,
    record: &mut Compaction,
) {
    let cleared = clear(
        &mut session.messages,
        context.keep_tool_results,
        bytes,
        Goal::Bytes(target),
    );
    if cleared.turns > 0 {
        session.context.removed(cleared.turns);
        session.context.write_opening(&mut session.messages);
    }
    record.cleared_results += cleared.results;
    record.removed_turns += cleared.turns;
}

/// The model turns the conversation holds.
fn assistant_turns(session: &Session) -> u64 {
    session
        .messages
        .iter()
        .filter(|m| m.role == crate::message::Role::Assistant)
        .count() as u64
}
