//! The agentic loop: model turn → tool calls → tool results → model turn …, until the
//! model ends its turn or a limit ends the run. Every step is a transcript event,
//! written before the loop moves on.

mod calls;
mod compact;
mod compact_replay;
pub(crate) mod context;
mod dispatch;
mod end_turn;
mod hooked;
mod limits;
mod meter;
mod output;
mod prompt;
mod repeats;
mod request;
mod respond;
mod session;
mod subagent;
mod wrap_up;

use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub(crate) use calls::Call;
pub(crate) use meter::Meter;
pub(crate) use output::{OutputSchema, STRUCTURED_OUTPUT};
pub(crate) use prompt::{project_prompt, system_prompt};
pub(crate) use session::Session;
pub(crate) use subagent::{SubAgentModels, SubAgentType, SubAgents, without_usage};

use crate::message::{Message, ModelResponse, Role, StopReason, Usage};
use crate::model::pricing::cost;
use crate::model::{Model, OutputMode};
use crate::policy::Policy;
use crate::record::transcript::TranscriptError;
use crate::record::{Denial, EndReason, Event, Redactor, TranscriptWriter};
use crate::spec::Pricing;
use crate::tools::{Registry, ToolContext, ToolOutput};

/// The limits and inputs of one loop.
#[derive(Debug, Clone, Default)]
pub(crate) struct AgentConfig {
    pub system: String,
    pub prompt: String,
    pub max_turns: Option<u32>,
    /// When the task's clock started, if before this loop (its isolation and `setup:`
    /// count against `timeout`); None: when the loop begins.
    pub clock_from: Option<Instant>,
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
    /// `output.schema`: the final answer must be a JSON value valid against it.
    pub output: Option<std::sync::Arc<OutputSchema>>,
    /// What the task has spent, its sub-agents included: the budgets are checked
    /// against it.
    pub meter: std::sync::Arc<Meter>,
    /// Anthropic's web search, offered when the policy allows `WebSearch`.
    pub web_search: Option<crate::message::WebSearch>,
    /// How the conversation is kept inside the model's window.
    pub context: context::ContextConfig,
    /// The same call with the same result this many times in a row is a loop.
    pub max_identical_calls: Option<u32>,
    /// A limit about to end the run gives the model a last turn without tools.
    pub wrap_up: bool,
}

/// What the loop asks of the recording it replays, supplied by the runner: the recorded
/// results and how they are compared live there (`run::recording`), so the loop holds no
/// recording of its own and only records what differs.
pub(crate) trait ReplayCheck: Send {
    /// Compare the result of call `call_id` with the next one recorded for that id: None
    /// when they agree, else what differs. `agent_result`: the call started a sub-agent,
    /// whose result ends with figures that vary from run to run.
    fn differs(
        &mut self,
        call_id: &str,
        output: &ToolOutput,
        agent_result: bool,
    ) -> Option<Difference>;

    /// Whether the first difference ends the run with `replay_drift` (`--strict`).
    fn strict(&self) -> bool;

    /// A resumed run: where its recorded turns end and the live model takes over.
    fn handover(&self) -> Option<&Handover>;

    /// The next compaction the recording made before the request of turn `turns + 1`.
    fn compaction(&mut self, turns: u32) -> Option<crate::record::context::Compaction>;

    /// The wrap-up the recording asked for before the request of turn `turns + 1`: the
    /// reason and message the run then ended with.
    fn wrap_up(&mut self, turns: u32) -> Option<(EndReason, String)>;
}

/// A replayed result that differs from the recording.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Difference {
    /// What the recording holds (`(no recorded result)` when it holds none).
    pub expected: String,
    /// A short diff of the two, volatile spans masked.
    pub diff: String,
}

/// Where a resumed run's recorded turns end. Past them the transcript records every
/// event again, the recording answers no more calls, and results are not compared.
#[derive(Debug)]
pub(crate) struct Handover {
    /// The recorded turns of the main agent.
    pub turns: u32,
    pub answers: std::sync::Arc<crate::tools::recorded::RecordedAnswers>,
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
    /// Tool results that differed from the recording (replay only), and the first.
    pub drift: Option<crate::record::DriftReport>,
    /// The compactions of the conversation (None when there were none).
    pub context: Option<crate::record::context::ContextTally>,
    /// What the model wrote in its wrap-up turn.
    pub wrap_up: Option<String>,
}

/// The loop's collaborators.
pub(crate) struct Agent<'a> {
    pub model: &'a mut dyn Model,
    pub registry: &'a Registry,
    pub policy: &'a Policy,
    pub ctx: ToolContext,
    pub transcript: &'a mut TranscriptWriter,
    pub replay: Option<Box<dyn ReplayCheck>>,
    /// Secret values taken out of every tool result before it is recorded or sent.
    pub redactor: &'a Redactor,
    /// The task's hooks (none: every event passes).
    pub hooks: &'a crate::hooks::Hooks,
    /// The sub-agents the `Agent` tool starts (None: the task has none).
    pub subagents: Option<&'a SubAgents>,
    /// 0 for the main agent, 1 for its sub-agents, 2 for theirs.
    pub depth: u32,
}

/// Why tool dispatch ended the run, with a message for people.
type Stop = (EndReason, String);

/// The compactions of `session`, with the strategy and window they were made under;
/// None when there were none.
fn context_tally(
    config: &AgentConfig,
    session: &Session,
) -> Option<crate::record::context::ContextTally> {
    let tally = &session.context.tally;
    (tally.compactions > 0).then(|| crate::record::context::ContextTally {
        strategy: config.context.strategy.as_str().to_string(),
        window: config.context.window,
        ..tally.clone()
    })
}

/// What `usage` cost; None when the model's price is unknown.
fn run_cost(config: &AgentConfig, usage: &Usage) -> Option<f64> {
    config.pricing.map(|pricing| cost(usage, &pricing))
}

/// What a model turn asks of the loop next.
enum Next {
    /// Run these tool calls, then ask the model again.
    Calls(Vec<Call>),
    /// The model ended its turn: see whether it may stop.
    EndTurn(Stop),
    /// Ask the model again (`pause_turn`: a server-side tool paused the turn).
    Ask,
    /// The loop ends.
    Stop(Stop),
}

impl Agent<'_> {
    /// A new conversation for this task: the prompt, the tools, the clock started.
    pub(crate) fn begin(&mut self, config: &AgentConfig) -> Session {
        let started = config.clock_from.unwrap_or_else(Instant::now);
        let clock = session::Clock {
            started,
            deadline: config.timeout.map(|t| started + t),
        };
        self.begin_on(config, clock)
    }

    /// A new conversation on `clock` (a sub-agent's runs on its task's clock).
    fn begin_on(&mut self, config: &AgentConfig, clock: session::Clock) -> Session {
        let mut tools = self.registry.definitions();
        if let Some(schema) = &config.output
            && self.model.output_mode() == OutputMode::Tool
        {
            tools.push(schema.tool());
        }
        Session::new(
            config.prompt.clone(),
            tools,
            self.model.retry_notices(),
            clock,
        )
    }

    /// Run the loop until it ends (or, for a session sent back to work, until it ends
    /// again). An error means the transcript could not be written: the run cannot be
    /// trusted and the caller reports an internal error.
    pub(crate) async fn run(
        &mut self,
        config: &AgentConfig,
        session: &mut Session,
    ) -> Result<LoopOutcome, TranscriptError> {
        let opening = if session.opened {
            None
        } else {
            self.open(config, session).await?
        };
        let (reason, message) = match opening {
            Some(stop) => stop,
            None => self.turns(config, session).await?,
        };
        Ok(LoopOutcome {
            reason,
            message,
            turns: session.turns,
            usage: session.usage,
            cost_usd: run_cost(config, &session.usage),
            final_text: session.final_text.clone(),
            denials: session.denials.clone(),
            calls: session.calls.clone(),
            drift: session.drift.clone(),
            context: context_tally(config, session),
            wrap_up: session.wrap_up_text.clone(),
        })
    }

    /// Model turn, tool calls, model turn … until something ends the loop.
    async fn turns(
        &mut self,
        config: &AgentConfig,
        session: &mut Session,
    ) -> Result<Stop, TranscriptError> {
        loop {
            let response = match self.request_turn(config, session).await? {
                Ok(response) => response,
                Err(stop) => return Ok(stop),
            };
            let next = self.take_turn(response, config, session)?;
            // The wrap-up turn is the last, whatever the model did in it.
            if let Some(stop) = self.end_wrap_up(session) {
                self.hand_over(session);
                return Ok(stop);
            }
            if !matches!(next, Next::Calls(_)) {
                self.hand_over(session);
            }
            let calls = match next {
                Next::Calls(calls) => calls,
                Next::Ask => continue,
                Next::EndTurn(stop) => match self.at_end_turn(config, session, stop).await? {
                    Some(stop) => return Ok(stop),
                    None => continue,
                },
                Next::Stop(stop) => return Ok(stop),
            };
            let answered = session.output.is_some();
            let dispatched = self.dispatch(&calls, config, session).await?;
            self.hand_over(session);
            match dispatched {
                Some((EndReason::Timeout, _)) => {
                    return Ok(limits::timeout(
                        config,
                        session.clock.started,
                        session.turns,
                    ));
                }
                Some((EndReason::Interrupted, _)) => return Ok(interrupted(session.turns)),
                Some(stop) => return Ok(stop),
                None => {}
            }
            if let Some(stop) = self.watch_repeats(&calls, config, session)? {
                return Ok(stop);
            }
            // A valid StructuredOutput call is the model's last word: the loop ends as
            // if it had ended its turn.
            if !answered && session.output.is_some() {
                let turn = session.turns;
                let done = (
                    EndReason::EndTurn,
                    format!("the model gave its final answer in turn {turn}"),
                );
                if let Some(stop) = self.at_end_turn(config, session, done).await? {
                    return Ok(stop);
                }
            }
        }
    }

    /// Record a model turn and say what follows it: its tool calls, another request, or
    /// the end (the model ended its turn, refused, or was cut at its token limit).
    fn take_turn(
        &mut self,
        response: ModelResponse,
        config: &AgentConfig,
        session: &mut Session,
    ) -> Result<Next, TranscriptError> {
        session.turns += 1;
        session.usage.add(&response.usage);
        config
            .meter
            .add(&response.usage, run_cost(config, &response.usage));
        self.transcript.write(Event::ModelResponse {
            turn: session.turns,
            content: response.content.clone(),
            stop_reason: response.stop_reason,
            usage: response.usage,
            cost_usd: run_cost(config, &response.usage),
        })?;
        let text = response.text();
        if !text.is_empty() {
            session.final_text.clone_from(&text);
        }
        session.last_turn_text = text;
        let calls: Vec<Call> = response
            .tool_calls()
            .map(|(id, name, input)| Call {
                id: id.to_string(),
                name: name.to_string(),
                input: input.clone(),
            })
            .collect();
        let stop_reason = response.stop_reason;
        session.messages.push(Message {
            role: Role::Assistant,
            content: response.content,
        });
        let turn = session.turns;
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
            _ => Next::EndTurn((
                EndReason::EndTurn,
                format!(
                    "the model ended its turn after {}",
                    crate::output::counted(turn, "turn", "turns")
                ),
            )),
        })
    }
}

impl Agent<'_> {
    /// A resumed run whose recorded turns are all replayed goes live: what follows is
    /// recorded, asked of the live model, and done for real.
    fn hand_over(&mut self, session: &Session) {
        let Some(handover) = self.replay.as_ref().and_then(|r| r.handover()) else {
            return;
        };
        if session.turns >= handover.turns {
            self.hand_over_now();
        }
    }

    /// Go live now, wherever the replay of the recorded turns stands (the loop ended).
    pub(crate) fn hand_over_now(&mut self) {
        let Some(handover) = self.replay.as_ref().and_then(|r| r.handover()) else {
            return;
        };
        handover.answers.close();
        self.transcript.go_live();
        self.replay = None;
    }

    /// Compare a replayed result with the recording, volatile spans masked in both: a
    /// difference is a `replay_drift` event (with a short diff, which progress shows as it
    /// happens) and, under `--strict`, the end of the run.
    fn check_replay(
        &mut self,
        call: &Call,
        output: &ToolOutput,
        session: &mut Session,
    ) -> Result<Option<Stop>, TranscriptError> {
        let Some(replay) = &mut self.replay else {
            return Ok(None);
        };
        // A call drover cancelled (a signal, the clock, an earlier drift) did not run:
        // there is nothing to compare, and the run is ending for its own reason.
        if crate::record::resume_point::is_cancelled_result(output.is_error, &output.content) {
            return Ok(None);
        }
        session.replayed_calls += 1;
        let number = session.replayed_calls;
        let agent_result = self.registry.is_agent(&call.name);
        let Some(Difference { expected, diff }) = replay.differs(&call.id, output, agent_result)
        else {
            return Ok(None);
        };
        let strict = replay.strict();
        self.transcript.write(Event::ReplayDrift {
            tool_use_id: call.id.clone(),
            expected,
            actual: output.content.clone(),
            call: number,
            tool: call.name.clone(),
            diff: diff.clone(),
        })?;
        let drift = session
            .drift
            .get_or_insert_with(|| crate::record::DriftReport {
                count: 0,
                call: number,
                tool: call.name.clone(),
                tool_use_id: call.id.clone(),
                diff,
            });
        drift.count += 1;
        Ok(strict.then(|| {
            (
                EndReason::ReplayDrift,
                format!(
                    "the result of call {number} ({} {}) differs from the recording (--strict)",
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
            "drover was interrupted (SIGINT or SIGTERM) after {}; the work was cut short",
            crate::output::counted(turns, "turn", "turns")
        ),
    )
}

fn cancelled(reason: EndReason) -> ToolOutput {
    ToolOutput::error(crate::record::resume_point::cancelled_result(reason))
}

#[cfg(test)]
mod stop_reason_tests;
#[cfg(test)]
#[path = "agent_tests.rs"]
mod tests;
