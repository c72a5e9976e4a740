//! Asking the model for its next turn: first what may end or shape the run (a signal,
//! a limit, the wrap-up, a compaction), then the request, once more after a compaction
//! when the API refuses it as too long.

use std::time::Instant as StdInstant;

use super::session::Session;
use super::{Agent, AgentConfig, Bounded, STRUCTURED_OUTPUT, Stop, bounded, interrupted, limits};
use crate::message::ModelResponse;
use crate::model::{ModelError, ModelRequest, OutputMode, ServerContextEdit, ToolChoice};
use crate::record::context::Compaction;
use crate::record::transcript::TranscriptError;
use crate::record::{EndReason, Event};
use crate::spec::ContextStrategy;

/// What one request came to.
enum Asked {
    Answer(ModelResponse),
    Failed(ModelError),
    Stopped(Stop),
}

impl Agent<'_> {
    /// Ask the model for its next turn, unless a limit or a signal ends the loop first
    /// (or while it waits: the request is cancelled).
    pub(super) async fn request_turn(
        &mut self,
        config: &AgentConfig,
        session: &mut Session,
    ) -> Result<Result<ModelResponse, Stop>, TranscriptError> {
        self.hand_over(session);
        if config.interrupt.is_cancelled() {
            return Ok(Err(interrupted(session.turns)));
        }
        if let Some(stop) = self.before_asking(config, session).await? {
            return Ok(Err(stop));
        }
        let measured = config.context.strategy != ContextStrategy::Off;
        let mut refused = false;
        loop {
            let bytes = measured.then(|| session.request_bytes(&config.system));
            match self.ask(config, session).await? {
                Asked::Stopped(stop) => return Ok(Err(stop)),
                Asked::Answer(response) => {
                    let cleared = self.record_server_edits(config, session, &response, bytes)?;
                    if let Some(bytes) = bytes {
                        // What drover sends, the server's clearing put back: the rate
                        // must size drover's own conversation, not what the model saw.
                        let mut sent = response.usage;
                        sent.input_tokens = sent.input_tokens.saturating_add(cleared);
                        session.context.size.counted(&sent, bytes);
                        let tally = &mut session.context.tally;
                        let tokens = session.context.size.tokens(bytes);
                        tally.peak_request_tokens = tally.peak_request_tokens.max(tokens);
                    }
                    session.last_output_tokens = response.usage.output_tokens;
                    return Ok(Ok(response));
                }
                Asked::Failed(ModelError::ContextExhausted(message))
                    if measured && !refused && self.replay.is_none() =>
                {
                    refused = true;
                    if let Some(stop) = self.compact_refused(config, session, &message).await? {
                        return Ok(Err(stop));
                    }
                }
                Asked::Failed(ModelError::ContextEditRefused(message))
                    if !session.context.server_refused =>
                {
                    // Asked again without it; drover clears from now on.
                    session.context.server_refused = true;
                    session.context.fallback = Some(format!(
                        "the server refused its own context editing ({message}); drover clears old tool results itself"
                    ));
                    crate::esay!(
                        "drover: warning: {message}; drover clears old tool results itself from now on (limits.context strategy server)"
                    );
                    if let Some(stop) = self.fit_context(config, session).await? {
                        return Ok(Err(stop));
                    }
                }
                // The run was ending on a limit: it still does, whatever became of the
                // wrap-up.
                Asked::Failed(error) if session.wrap_up.is_some() => {
                    let (reason, message) = session
                        .wrap_up
                        .take()
                        .unwrap_or_else(|| (EndReason::InternalError, String::new()));
                    session.wrapped_up = true;
                    return Ok(Err((
                        reason,
                        format!("{message}; the wrap-up request failed: {error}"),
                    )));
                }
                Asked::Failed(error) => return Ok(Err(self.failure(config, session, error))),
            }
        }
    }

    /// What comes before a request: a wrap-up the recording made here (a replay), the
    /// limits (with `wrap_up`, the one about to end the run gives the model a last turn
    /// instead), and the conversation fitted to the window.
    async fn before_asking(
        &mut self,
        config: &AgentConfig,
        session: &mut Session,
    ) -> Result<Option<Stop>, TranscriptError> {
        let recorded = self
            .replay
            .as_mut()
            .and_then(|replay| replay.wrap_up(session.turns));
        if let Some(stop) = recorded {
            self.begin_wrap_up(session, stop)?;
        } else if session.wrap_up.is_none() {
            let task_usage = config.meter.usage();
            let spent = limits::Spent {
                turns: session.turns,
                usage: &task_usage,
                cost_usd: config.meter.cost_usd(),
            };
            if let Some(stop) = limits::before_request(config, session.clock.started, &spent) {
                if stop.0 != EndReason::MaxTurns || !self.may_wrap_up(config, session) {
                    return Ok(Some(stop));
                }
                // The turns are used up: a budget or clock used up too gives no wrap-up.
                let others = limits::Spent { turns: 0, ..spent };
                if let Some(spent_too) =
                    limits::before_request(config, session.clock.started, &others)
                {
                    return Ok(Some(spent_too));
                }
                self.begin_wrap_up(session, stop)?;
            } else if self.may_wrap_up(config, session)
                && let Some(stop) = super::wrap_up::ahead(config, session, &spent)
            {
                self.begin_wrap_up(session, stop)?;
            }
        }
        let before = config.meter.usage().total();
        if let Some(stop) = self.fit_context(config, session).await? {
            return Ok(Some(stop));
        }
        // A summary spends tokens too: a budget it used up stops the run before the
        // turn's own request (the wrap-up, once decided, is still given).
        if config.meter.usage().total() == before || session.wrap_up.is_some() {
            return Ok(None);
        }
        let task_usage = config.meter.usage();
        let spent = limits::Spent {
            turns: session.turns,
            usage: &task_usage,
            cost_usd: config.meter.cost_usd(),
        };
        Ok(
            limits::before_request(config, session.clock.started, &spent)
                .filter(|(reason, _)| *reason == EndReason::Budget),
        )
    }

    /// One request, bounded by the task's deadline and drover's signals.
    async fn ask(
        &mut self,
        config: &AgentConfig,
        session: &mut Session,
    ) -> Result<Asked, TranscriptError> {
        let text_schema = config
            .output
            .as_ref()
            .filter(|_| self.model.output_mode() == OutputMode::Text)
            .map(|schema| &schema.schema);
        let tool_choice = if session.wrap_up.is_some() {
            ToolChoice::Nothing
        } else if session.force_output {
            ToolChoice::Tool(STRUCTURED_OUTPUT)
        } else {
            ToolChoice::Auto
        };
        let edit = self.server_edit(config, session);
        let request = ModelRequest {
            system: &config.system,
            messages: &session.messages,
            tools: &session.tools,
            tool_choice,
            output_schema: text_schema.filter(|_| session.wrap_up.is_none()),
            web_search: config.web_search.as_ref(),
            context_edit: edit.as_ref(),
        };
        let asked_at = StdInstant::now();
        let answer = super::respond::respond_recorded(
            &mut *self.model,
            &mut session.notices,
            &mut *self.transcript,
            request,
        );
        let answer = bounded(session.clock.deadline, &config.interrupt, answer).await;
        session.longest_request = session.longest_request.max(asked_at.elapsed());
        Ok(match answer {
            Bounded::TimedOut => Asked::Stopped(limits::timeout(
                config,
                session.clock.started,
                session.turns,
            )),
            Bounded::Interrupted => Asked::Stopped(interrupted(session.turns)),
            Bounded::Done(answer) => match answer? {
                Ok(response) => {
                    session.force_output = false;
                    Asked::Answer(response)
                }
                Err(error) => Asked::Failed(error),
            },
        })
    }

    /// Anthropic's own context editing for this request (`strategy: server`), unless
    /// the server refused it or this is a replay.
    fn server_edit(&self, config: &AgentConfig, session: &Session) -> Option<ServerContextEdit> {
        let context = &config.context;
        let asked = context.strategy == ContextStrategy::Server
            && self.model.provider() == "anthropic"
            && !session.context.server_refused
            && self.replay.is_none();
        asked.then(|| ServerContextEdit {
            trigger_tokens: context.threshold_tokens(),
            keep_tool_uses: u32::try_from(context.keep_tool_results).unwrap_or(u32::MAX),
            clear_at_least_tokens: context.threshold_tokens() - context.target_tokens(),
        })
    }

    /// What the API's own editing cleared before the model saw the request: a
    /// `compaction` event with trigger `server` when it cleared other than last time
    /// (the API edits every request past its trigger again: drover's conversation is
    /// unchanged). The input tokens it cleared.
    fn record_server_edits(
        &mut self,
        config: &AgentConfig,
        session: &mut Session,
        response: &ModelResponse,
        bytes: Option<u64>,
    ) -> Result<u64, TranscriptError> {
        let Some(edits) = self.model.applied_context_edits() else {
            session.context.server_edits = None;
            return Ok(0);
        };
        if session.context.server_edits == Some(edits) {
            return Ok(edits.cleared_input_tokens);
        }
        session.context.server_edits = Some(edits);
        let usage = &response.usage;
        let after = usage
            .input_tokens
            .saturating_add(usage.cache_creation_input_tokens)
            .saturating_add(usage.cache_read_input_tokens);
        let bytes = bytes.unwrap_or_default();
        let record = Compaction {
            turn: session.turns,
            strategy: ContextStrategy::Server.as_str().to_string(),
            trigger: "server".to_string(),
            window: config.context.window,
            tokens_before: after.saturating_add(edits.cleared_input_tokens),
            tokens_after: after,
            bytes_before: bytes,
            bytes_after: bytes,
            kept: super::context::kept(&session.messages),
            cleared_results: edits.cleared_tool_uses,
            removed_turns: 0,
            summary: None,
            usage: Default::default(),
            cost_usd: None,
            fallback: None,
        };
        session.context.tally.add(&record);
        self.transcript.write(Event::Compaction(Box::new(record)))?;
        Ok(edits.cleared_input_tokens)
    }

    /// How a failed request ends the run.
    fn failure(&mut self, config: &AgentConfig, session: &mut Session, error: ModelError) -> Stop {
        match error {
            ModelError::ReplayExhausted { turn } => (
                EndReason::ReplayDrift,
                format!(
                    "the recording has no model response for turn {turn}: the replay took a different path"
                ),
            ),
            error @ ModelError::ContextExhausted(_) => {
                let bytes = session.request_bytes(&config.system);
                let tokens = session.context.size.tokens(bytes);
                let management = match config.context.strategy {
                    ContextStrategy::Off => "limits.context is off".to_string(),
                    strategy => format!(
                        "it was refused again after a compaction ({})",
                        strategy.as_str()
                    ),
                };
                (
                    EndReason::ContextExhausted,
                    format!(
                        "{error} (the request of turn {} was ~{tokens} tokens, {bytes} bytes; {management})",
                        session.turns + 1
                    ),
                )
            }
            error => (EndReason::ProviderError, error.to_string()),
        }
    }
}
