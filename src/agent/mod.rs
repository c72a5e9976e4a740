//! The agentic loop: model turn → tool calls → tool results → model turn …, until the
//! model ends its turn or a limit ends the run. Every step is a transcript event,
//! written before the loop moves on.

mod dispatch;
mod limits;
mod prompt;
mod respond;

use std::collections::HashMap;
use std::time::Duration;

use tokio::sync::mpsc::UnboundedReceiver;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub(crate) use dispatch::Call;
pub(crate) use prompt::system_prompt;

use crate::message::{
    ContentBlock, Message, ModelResponse, Role, StopReason, ToolDefinition, Usage,
};
use crate::model::pricing::cost;
use crate::model::{Model, ModelError, ModelRequest, RetryNotice};
use crate::policy::Policy;
use crate::record::transcript::{Decision, TranscriptError};
use crate::record::{Denial, EndReason, Event, Redactor, TranscriptWriter};
use crate::spec::Pricing;
use crate::tools::{InternalFault, Registry, ToolContext, ToolOutput};
use dispatch::Prepared;

/// The limits and inputs of one loop.
#[derive(Debug, Clone, Default)]
pub(crate) struct AgentConfig {
    pub system: String,
    pub prompt: String,
    pub max_turns: Option<u32>,
    pub timeout: Option<Duration>,
    /// Stop (reason `budget`) once the run's cost reaches this many USD.
    pub max_cost_usd: Option<f64>,
    /// Stop (reason `budget`) once the run's tokens, all four counts, reach this.
    pub max_tokens: Option<u64>,
    /// The model's prices; None when unknown (cost is then reported as null).
    pub pricing: Option<Pricing>,
    /// Cancelled when drover is interrupted (SIGINT/SIGTERM): the loop stops at once,
    /// cancelling the request or tools in flight, and ends with reason `interrupted`.
    pub interrupt: CancellationToken,
}

/// Recorded tool results a replay is expected to reproduce, by tool_use id.
#[derive(Debug, Default)]
pub(crate) struct ReplayExpectations {
    pub results: HashMap<String, ToolOutput>,
    /// Under `--strict` the first difference ends the run with `replay_drift`.
    pub strict: bool,
}

/// How the loop ended.
#[derive(Debug, Clone)]
pub(crate) struct LoopOutcome {
    pub reason: EndReason,
    pub message: String,
    pub turns: u32,
    pub usage: Usage,
    /// What the run's tokens cost; None when the model's price is unknown.
    pub cost_usd: Option<f64>,
    pub final_text: String,
    pub denials: Vec<Denial>,
    /// Calls the policy allowed, by tool name.
    pub calls: std::collections::BTreeMap<String, u64>,
    /// Tool results that differed from the recording (replay only).
    #[expect(
        dead_code,
        reason = "counted but not reported yet: the drift report is issue 17's"
    )]
    pub drifts: u32,
}

/// The loop's collaborators.
pub(crate) struct Agent<'a> {
    pub model: &'a mut dyn Model,
    pub registry: &'a Registry,
    pub policy: &'a Policy,
    pub ctx: ToolContext,
    pub transcript: &'a mut TranscriptWriter,
    pub replay: Option<ReplayExpectations>,
    /// Secret values taken out of every tool result before it is recorded or sent.
    pub redactor: &'a Redactor,
}

/// Mutable state of one run of the loop.
struct State {
    messages: Vec<Message>,
    turns: u32,
    usage: Usage,
    final_text: String,
    denials: Vec<Denial>,
    drifts: u32,
    /// Calls the policy allowed, by tool name.
    calls: std::collections::BTreeMap<String, u64>,
    /// The tools offered, the same in every request.
    tools: Vec<ToolDefinition>,
    /// Where the provider reports its retries (taken once: the receiver is the model's).
    notices: Option<UnboundedReceiver<RetryNotice>>,
}

/// Why tool dispatch ended the run, with a message for people.
type Stop = (EndReason, String);

/// What `usage` cost; None when the model's price is unknown.
fn run_cost(config: &AgentConfig, usage: &Usage) -> Option<f64> {
    config.pricing.map(|pricing| cost(usage, &pricing))
}

/// When the loop started and when it must end.
#[derive(Clone, Copy)]
struct Clock {
    started: Instant,
    deadline: Option<Instant>,
}

/// What a model turn asks of the loop next.
enum Next {
    /// Run these tool calls, then ask the model again.
    Calls(Vec<Call>),
    /// Ask the model again (`pause_turn`: a server-side tool paused the turn).
    Ask,
    /// The loop ends.
    Stop(Stop),
}

impl Agent<'_> {
    /// Run the loop to its end. An error means the transcript could not be written: the
    /// run cannot be trusted and the caller reports an internal error.
    pub(crate) async fn run(
        &mut self,
        config: &AgentConfig,
    ) -> Result<LoopOutcome, TranscriptError> {
        let started = Instant::now();
        let clock = Clock {
            started,
            deadline: config.timeout.map(|t| started + t),
        };
        let mut state = State {
            messages: vec![Message::user_text(config.prompt.clone())],
            turns: 0,
            usage: Usage::default(),
            final_text: String::new(),
            denials: Vec::new(),
            drifts: 0,
            calls: Default::default(),
            tools: self.registry.definitions(),
            notices: self.model.retry_notices(),
        };
        let (reason, message) = loop {
            let response = match self.request_turn(config, clock, &mut state).await? {
                Ok(response) => response,
                Err(stop) => break stop,
            };
            let calls = match self.take_turn(response, config, &mut state)? {
                Next::Calls(calls) => calls,
                Next::Ask => continue,
                Next::Stop(stop) => break stop,
            };
            match self
                .dispatch(&calls, clock.deadline, &config.interrupt, &mut state)
                .await?
            {
                Some((EndReason::Timeout, _)) => {
                    break limits::timeout(config, clock.started, state.turns);
                }
                Some((EndReason::Interrupted, _)) => break interrupted(state.turns),
                Some(stop) => break stop,
                None => {}
            }
        };
        Ok(LoopOutcome {
            reason,
            message,
            turns: state.turns,
            usage: state.usage,
            cost_usd: run_cost(config, &state.usage),
            final_text: state.final_text,
            denials: state.denials,
            calls: state.calls,
            drifts: state.drifts,
        })
    }

    /// Ask the model for its next turn, unless a limit or a signal ends the loop first
    /// (or while it waits: the request is cancelled).
    async fn request_turn(
        &mut self,
        config: &AgentConfig,
        clock: Clock,
        state: &mut State,
    ) -> Result<Result<ModelResponse, Stop>, TranscriptError> {
        if config.interrupt.is_cancelled() {
            return Ok(Err(interrupted(state.turns)));
        }
        let spent = limits::Spent {
            turns: state.turns,
            usage: &state.usage,
            cost_usd: run_cost(config, &state.usage),
        };
        if let Some(stop) = limits::before_request(config, clock.started, &spent) {
            return Ok(Err(stop));
        }
        let request = ModelRequest {
            system: &config.system,
            messages: &state.messages,
            tools: &state.tools,
        };
        let answer = respond::respond_recorded(
            &mut *self.model,
            &mut state.notices,
            &mut *self.transcript,
            request,
        );
        let answer = match bounded(clock.deadline, &config.interrupt, answer).await {
            Bounded::TimedOut => {
                return Ok(Err(limits::timeout(config, clock.started, state.turns)));
            }
            Bounded::Interrupted => return Ok(Err(interrupted(state.turns))),
            Bounded::Done(answer) => answer?,
        };
        Ok(answer.map_err(|error| match error {
            ModelError::ReplayExhausted { turn } => (
                EndReason::ReplayDrift,
                format!(
                    "the recording has no model response for turn {turn}: the replay took a different path"
                ),
            ),
            error @ ModelError::ContextExhausted(_) => {
                (EndReason::ContextExhausted, error.to_string())
            }
            error => (EndReason::ProviderError, error.to_string()),
        }))
    }

    /// Record a model turn and say what follows it: its tool calls, another request, or
    /// the end (the model ended its turn, refused, or was cut at its token limit).
    fn take_turn(
        &mut self,
        response: ModelResponse,
        config: &AgentConfig,
        state: &mut State,
    ) -> Result<Next, TranscriptError> {
        state.turns += 1;
        state.usage.add(&response.usage);
        self.transcript.write(Event::ModelResponse {
            turn: state.turns,
            content: response.content.clone(),
            stop_reason: response.stop_reason,
            usage: response.usage,
            cost_usd: run_cost(config, &response.usage),
        })?;
        let text = response.text();
        if !text.is_empty() {
            state.final_text = text;
        }
        let calls: Vec<Call> = response
            .tool_calls()
            .map(|(id, name, input)| Call {
                id: id.to_string(),
                name: name.to_string(),
                input: input.clone(),
            })
            .collect();
        let stop_reason = response.stop_reason;
        state.messages.push(Message {
            role: Role::Assistant,
            content: response.content,
        });
        let turn = state.turns;
        Ok(match stop_reason {
            StopReason::MaxTokens => Next::Stop((
                EndReason::MaxTokens,
                format!(
                    "the model's output was cut at its token limit in turn {turn}; its tool calls were not run"
                ),
            )),
            StopReason::Refusal => Next::Stop((
                EndReason::Refusal,
                format!("the model refused to continue in turn {turn}"),
            )),
            _ if !calls.is_empty() => Next::Calls(calls),
            StopReason::PauseTurn => Next::Ask,
            _ => Next::Stop((
                EndReason::EndTurn,
                format!("the model ended its turn after {turn} turns"),
            )),
        })
    }

    /// Run one turn's tool calls and append their results as the next user message.
    async fn dispatch(
        &mut self,
        calls: &[Call],
        deadline: Option<Instant>,
        interrupt: &CancellationToken,
        state: &mut State,
    ) -> Result<Option<Stop>, TranscriptError> {
        let mut results: Vec<ContentBlock> = Vec::with_capacity(calls.len());
        let mut stop = None;
        for range in dispatch::batches(calls, self.registry) {
            let mut prepared = Vec::new();
            for call in &calls[range] {
                self.transcript.write(Event::ToolCall {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    input: call.input.clone(),
                })?;
                let (outcome, verdict) = if stop.is_some() {
                    (
                        Prepared::Done(cancelled(
                            stop.as_ref().map_or(EndReason::Timeout, |(r, _)| *r),
                        )),
                        None,
                    )
                } else {
                    dispatch::prepare(call, self.registry, self.policy, &self.ctx.shell.current())
                };
                if let Some(verdict) = verdict {
                    self.transcript.write(Event::Permission {
                        tool_use_id: call.id.clone(),
                        decision: if verdict.allowed {
                            Decision::Allow
                        } else {
                            Decision::Deny
                        },
                        rule: verdict.rule.clone(),
                        reason: verdict.reason.clone(),
                    })?;
                    if verdict.allowed {
                        *state.calls.entry(call.name.clone()).or_default() += 1;
                    } else {
                        state.denials.push(dispatch::denial(call, &verdict));
                    }
                }
                prepared.push((call.clone(), outcome));
            }
            let batch: Vec<Call> = prepared.iter().map(|(call, _)| call.clone()).collect();
            let execution = dispatch::execute(prepared, &self.ctx);
            let (executed, why) = match bounded(deadline, interrupt, execution).await {
                Bounded::Done(executed) => (executed, None),
                Bounded::TimedOut => (Vec::new(), Some(EndReason::Timeout)),
                Bounded::Interrupted => (Vec::new(), Some(EndReason::Interrupted)),
            };
            let executed = match why {
                None => executed,
                Some(reason) => {
                    stop = Some((reason, String::new()));
                    batch
                        .into_iter()
                        .map(|call| dispatch::Executed {
                            call,
                            output: cancelled(reason),
                            duration: Duration::ZERO,
                            fault: None,
                        })
                        .collect()
                }
            };
            for dispatch::Executed {
                call,
                output,
                duration,
                fault,
            } in executed
            {
                if let Some(fault) = fault {
                    let reason = match fault {
                        InternalFault::Drover { .. } => EndReason::InternalError,
                        InternalFault::Unavailable { .. } => EndReason::McpUnavailable,
                    };
                    stop.get_or_insert((reason, fault.to_string()));
                }
                // A command can print drover's own environment (`/proc/$PPID/environ`) or
                // a key file: what the transcript records and the model reads is the
                // same text, with every secret value replaced.
                // An image holding a secret value (a file of secrets dressed as a GIF)
                // is dropped whole: binary data cannot be redacted in place.
                let mut content = self.redactor.redact_owned(output.content);
                let mut images = output.images;
                let before = images.len();
                images.retain(|image| {
                    image
                        .bytes()
                        .is_some_and(|bytes| !self.redactor.finds_in(&bytes))
                });
                if images.len() < before {
                    content.push_str(&format!(
                        "\n\n[{} image(s) withheld: they hold a secret value]",
                        before - images.len()
                    ));
                }
                let output = ToolOutput {
                    content,
                    images,
                    ..output
                };
                self.transcript.write(Event::ToolResult {
                    tool_use_id: call.id.clone(),
                    is_error: output.is_error,
                    content: output.content.clone(),
                    images: output.images.clone(),
                    duration_ms: u64::try_from(duration.as_millis()).unwrap_or(u64::MAX),
                })?;
                if let Some(drift) = self.check_replay(&call, &output, state)? {
                    stop.get_or_insert(drift);
                }
                results.push(ContentBlock::ToolResult {
                    tool_use_id: call.id,
                    content: output.content,
                    is_error: output.is_error,
                    images: output.images,
                });
            }
        }
        state.messages.push(Message {
            role: Role::User,
            content: results,
        });
        Ok(stop)
    }

    /// Compare a replayed result with the recording.
    fn check_replay(
        &mut self,
        call: &Call,
        output: &ToolOutput,
        state: &mut State,
    ) -> Result<Option<Stop>, TranscriptError> {
        let Some(replay) = &self.replay else {
            return Ok(None);
        };
        let expected = replay.results.get(&call.id);
        if expected == Some(output) {
            return Ok(None);
        }
        let strict = replay.strict;
        let expected_text = expected.map_or_else(
            || "(no recorded result)".to_string(),
            |expected| expected.content.clone(),
        );
        self.transcript.write(Event::ReplayDrift {
            tool_use_id: call.id.clone(),
            expected: expected_text,
            actual: output.content.clone(),
        })?;
        state.drifts += 1;
        Ok(strict.then(|| {
            (
                EndReason::ReplayDrift,
                format!(
                    "the result of {} call {} differs from the recording (--strict)",
                    call.name, call.id
                ),
            )
        }))
    }
}

/// Run `future` until `deadline`; None when the deadline came first.
/// How a bounded wait ended.
enum Bounded<T> {
    Done(T),
    TimedOut,
    Interrupted,
}

/// Run `future` until it finishes, the deadline passes, or drover is interrupted.
async fn bounded<F: std::future::Future>(
    deadline: Option<Instant>,
    interrupt: &CancellationToken,
    future: F,
) -> Bounded<F::Output> {
    let timed = async {
        match deadline {
            Some(deadline) => tokio::time::timeout_at(deadline, future).await.ok(),
            None => Some(future.await),
        }
    };
    tokio::select! {
        outcome = timed => match outcome {
            Some(output) => Bounded::Done(output),
            None => Bounded::TimedOut,
        },
        () = interrupt.cancelled() => Bounded::Interrupted,
    }
}

fn interrupted(turns: u32) -> (EndReason, String) {
    (
        EndReason::Interrupted,
        format!(
            "drover was interrupted (SIGINT or SIGTERM) after {turns} turns; the work was cut short"
        ),
    )
}

fn cancelled(reason: EndReason) -> ToolOutput {
    ToolOutput::error(match reason {
        EndReason::Interrupted => "Cancelled: drover was interrupted before this call finished.",
        EndReason::Timeout => {
            "Cancelled: the run reached its time limit before this call finished."
        }
        EndReason::ReplayDrift => {
            "Cancelled: the replay drifted from the recording before this call ran."
        }
        EndReason::InternalError => "Cancelled: drover hit an internal error before this call ran.",
        _ => "Cancelled: the run ended before this call ran.",
    })
}

#[cfg(test)]
mod stop_reason_tests;
#[cfg(test)]
mod tests;
