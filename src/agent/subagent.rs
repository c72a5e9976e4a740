//! Sub-agents: an `Agent` call runs a loop of its own, in the same workspace, under the
//! same policy, hooks and sandbox as its parent, with the tools its type allows (never
//! more than the parent's), and its final text comes back as the call's result.
//!
//! Its events go to the task's transcript with its `agent_id`; its tokens and cost are
//! metered with the task's, so the task's budgets hold; it shares the task's clock and
//! interrupt; its own `max_turns` bounds it; and nesting stops at `max_depth`.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::time::Instant;

use super::session::Clock;
use super::{Agent, AgentConfig, ReplayCheck, system_prompt};
use crate::model::Model;
use crate::policy::Policy;
use crate::record::transcript::AgentScope;
use crate::record::{AgentRun, EndReason, Event, Redactor, TranscriptWriter};
use crate::spec::Pricing;
use crate::tools::agent::AgentRequest;
use crate::tools::{InternalFault, Registry, ToolContext, ToolOutput};

/// One kind of sub-agent, ready to run.
pub(crate) struct SubAgentType {
    /// What the project brings to its system prompt (the instruction files, the skills
    /// its tools let it load), as its parent's.
    pub project: String,
    /// What its system prompt adds to drover's own and the project's.
    pub prompt: String,
    /// The tools it is offered: its parent's, narrowed to the type's `tools`.
    pub registry: Registry,
    /// Every tool it has only reads: several may run at once.
    pub read_only: bool,
    /// Each run of it ends after this many turns.
    pub max_turns: Option<u32>,
    /// It may use the web search its parent has.
    pub web_search: bool,
}

/// Where a sub-agent's turns come from: the run layer knows the task's model spec,
/// the key, and (in a replay) the recording.
pub(crate) trait SubAgentModels: Send + Sync {
    /// The model for one run of `agent_type`, named `agent_id`; `requested`: the model
    /// alias the call asked for (`sonnet`, `opus`, `haiku`).
    fn model(&self, agent_type: &str, agent_id: &str, requested: Option<&str>) -> Box<dyn Model>;
    /// That model's prices; None when unknown.
    fn pricing(&self, agent_type: &str, requested: Option<&str>) -> Option<Pricing>;
    /// In a replay, the recorded results of `agent_id`'s tool calls.
    fn replay(&self, agent_id: &str) -> Option<Box<dyn ReplayCheck>>;
}

/// The task's sub-agents.
pub(crate) struct SubAgents {
    pub types: BTreeMap<String, SubAgentType>,
    pub models: Box<dyn SubAgentModels>,
    /// 1: only the main agent starts sub-agents; 2: they may start their own.
    pub max_depth: u32,
    /// The agent ids used so far.
    pub started: std::sync::Mutex<std::collections::HashSet<String>>,
}

impl SubAgents {
    /// Take `agent_id` for a run; false when a run already had it.
    fn claim(&self, agent_id: &str) -> bool {
        self.started
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(agent_id.to_string())
    }

    /// Whether an `Agent` call with this input may run beside other read-only calls.
    pub(crate) fn reads_only(&self, input: &serde_json::Value) -> bool {
        input
            .get("subagent_type")
            .and_then(serde_json::Value::as_str)
            .and_then(|name| self.types.get(name))
            .is_some_and(|kind| kind.read_only)
    }
}

/// How an `Agent` call's result ends: the figures of the run. They vary from run to
/// run (the duration), so a replay compares what comes before them.
const USAGE_OPEN: &str = "\n\n<agent_usage>";

/// `content` without the figures an `Agent` result ends with.
pub(crate) fn without_usage(content: &str) -> &str {
    content
        .rfind(USAGE_OPEN)
        .map_or(content, |at| &content[..at])
}

/// `1 turn`, `2 turns`.
fn counted(count: u64, what: &str) -> String {
    if count == 1 {
        format!("1 {what}")
    } else {
        format!("{count} {what}s")
    }
}

/// A sub-agent's run, as the parent's dispatcher awaits it.
pub(super) type AgentRunFuture<'a> =
    Pin<Box<dyn Future<Output = Result<ToolOutput, InternalFault>> + Send + 'a>>;

/// What a parent lends the sub-agents it starts in one turn.
pub(super) struct Launcher<'a> {
    pub subagents: &'a SubAgents,
    /// The launching agent's tools: a sub-agent's are never more.
    pub registry: &'a Registry,
    pub policy: &'a Policy,
    pub redactor: &'a Redactor,
    pub hooks: &'a crate::hooks::Hooks,
    pub transcript: TranscriptWriter,
    pub ctx: ToolContext,
    pub config: AgentConfig,
    pub clock: Clock,
    /// The parent's depth.
    pub depth: u32,
}

impl<'a> Launcher<'a> {
    /// Run the sub-agent an `Agent` call (`call_id`) asks for.
    /// `beside_others`: the call runs at the same time as other calls of its turn
    /// (its agent was found read-only when the turn was split into batches).
    pub(super) fn launch(
        &self,
        call_id: String,
        input: serde_json::Value,
        beside_others: bool,
    ) -> AgentRunFuture<'a> {
        // The future owns what it lends the sub-agent: it outlives this borrow.
        let own = Launcher {
            subagents: self.subagents,
            registry: self.registry,
            policy: self.policy,
            redactor: self.redactor,
            hooks: self.hooks,
            transcript: self.transcript.share(),
            ctx: self.ctx.clone(),
            config: self.config.clone(),
            clock: self.clock,
            depth: self.depth,
        };
        Box::pin(own.run(call_id, input, beside_others))
    }

    /// A sub-agent's settings: its type's prompt, turns and web search, its own model's
    /// prices and window, the task's other limits.
    fn child_config(
        &self,
        kind: &SubAgentType,
        request: &AgentRequest,
        model: &dyn Model,
        pricing: Option<Pricing>,
    ) -> AgentConfig {
        AgentConfig {
            system: system_prompt(&self.ctx.workspace, &kind.project, Some(&kind.prompt)),
            prompt: request.prompt.clone(),
            max_turns: kind.max_turns,
            pricing,
            output: None,
            web_search: self.config.web_search.clone().filter(|_| kind.web_search),
            context: self.config.context.for_model(model.name()),
            ..self.config.clone()
        }
    }

    /// The sub-agent's run: admitted, started, run and ended in the transcript, metered,
    /// and answered.
    async fn run(
        self,
        call_id: String,
        input: serde_json::Value,
        beside_others: bool,
    ) -> Result<ToolOutput, InternalFault> {
        let depth = self.depth + 1;
        let request = match AgentRequest::of(&input) {
            Ok(request) => request,
            Err(error) => return Ok(ToolOutput::error(error.to_string())),
        };
        let admitted = match self.admit(&request, &call_id, depth, beside_others) {
            Ok(admitted) => admitted,
            Err(refusal) => return Ok(refusal),
        };
        let Admitted {
            kind,
            agent_id,
            mut model,
            pricing,
        } = admitted;
        let narrowed = self.narrowed_tools(kind)?;
        let tools = narrowed.as_ref().unwrap_or(&kind.registry);
        let mut transcript = self.transcript.scoped(AgentScope {
            agent_id: agent_id.clone(),
            parent_tool_use_id: call_id.clone(),
        });
        transcript
            .write(agent_start(&request, model.as_ref(), tools, depth))
            .map_err(fault)?;
        let config = self.child_config(kind, &request, model.as_ref(), pricing);
        let started = Instant::now();
        let mut child = Agent {
            model: model.as_mut(),
            registry: tools,
            policy: self.policy,
            ctx: self.ctx.for_subagent(),
            transcript: &mut transcript,
            replay: self.subagents.models.replay(&agent_id),
            redactor: self.redactor,
            hooks: self.hooks,
            subagents: Some(self.subagents),
            depth,
        };
        let mut session = child.begin_on(&config, self.clock);
        // SessionStart and UserPromptSubmit are the task's, raised once by the main
        // agent; a sub-agent's prompt comes from its parent's call.
        session.opened = true;
        let outcome = child.run(&config, &mut session).await.map_err(fault)?;
        let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        transcript
            .write(Event::AgentEnd {
                agent_type: request.subagent_type.clone(),
                reason: outcome.reason,
                message: outcome.message.clone(),
                turns: outcome.turns,
                usage: outcome.usage,
                cost_usd: outcome.cost_usd,
                duration_ms,
            })
            .map_err(fault)?;
        let run = AgentRun {
            agent_id: agent_id.clone(),
            agent_type: request.subagent_type.clone(),
            parent_tool_use_id: call_id,
            depth,
            reason: outcome.reason,
            turns: outcome.turns,
            usage: outcome.usage,
            cost_usd: outcome.cost_usd,
            duration_ms,
        };
        config
            .meter
            .record_agent(run, &outcome.denials, &outcome.calls);
        answer_of(outcome, &request.subagent_type, &agent_id, duration_ms)
    }

    /// Whether the sub-agent `request` asks for may start at `depth`: its type, its id
    /// and its model; or the refusal the model is told.
    fn admit(
        &self,
        request: &AgentRequest,
        call_id: &str,
        depth: u32,
        beside_others: bool,
    ) -> Result<Admitted<'a>, ToolOutput> {
        let subagents = self.subagents;
        if depth > subagents.max_depth {
            return Err(ToolOutput::error(format!(
                "Sub-agents may nest at most {} deep (limits.max_agent_depth), and this agent is at that depth: do this work yourself instead of starting another agent.",
                subagents.max_depth
            )));
        }
        let Some(kind) = subagents.types.get(&request.subagent_type) else {
            return Err(ToolOutput::error(format!(
                "No agent type {:?}. The available types are: {}.",
                request.subagent_type,
                subagents
                    .types
                    .keys()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        };
        // A PreToolUse hook may have rewritten the call to another agent type since
        // the turn was split: one that writes never runs beside other calls.
        if beside_others && !kind.read_only {
            return Err(ToolOutput::error(format!(
                "The agent type {:?} can change files or run commands, so it cannot run at the same time as this turn's other calls (a hook rewrote this call). Call it again on its own.",
                request.subagent_type
            )));
        }
        let agent_id = format!("{}@{call_id}", request.subagent_type);
        // A provider that repeats a tool_use id would merge two runs' records.
        if !subagents.claim(&agent_id) {
            return Err(ToolOutput::error(format!(
                "Another Agent call already used the id {call_id}; each call needs its own id."
            )));
        }
        let requested = request.model.as_deref();
        let model = subagents
            .models
            .model(&request.subagent_type, &agent_id, requested);
        let pricing = subagents.models.pricing(&request.subagent_type, requested);
        if pricing.is_none() && self.config.max_cost_usd.is_some() {
            return Err(ToolOutput::error(format!(
                "The model {:?} has no known price, and this task has a cost limit (limits.max_cost_usd) it could not hold to: start the agent without `model`, or with another model.",
                model.name()
            )));
        }
        Ok(Admitted {
            kind,
            agent_id,
            model,
            pricing,
        })
    }

    /// Never more than the agent that starts it: a nested agent's tools are its type's,
    /// narrowed to its parent's (the main agent has all of its types'). None: the type's
    /// tools as they are.
    fn narrowed_tools(&self, kind: &SubAgentType) -> Result<Option<Registry>, InternalFault> {
        let parent = self.registry;
        if kind
            .registry
            .names()
            .iter()
            .all(|name| parent.facts(name).is_some())
        {
            return Ok(None);
        }
        kind.registry
            .subset(|name| parent.facts(name).is_some())
            .map(Some)
            .map_err(|error| InternalFault::Drover {
                tool: crate::tools::agent::AGENT.to_string(),
                message: error.to_string(),
            })
    }
}

/// A sub-agent cleared to start: its type, its id, its model and that model's prices.
struct Admitted<'a> {
    kind: &'a SubAgentType,
    agent_id: String,
    model: Box<dyn Model>,
    pricing: Option<Pricing>,
}

/// The transcript event of a sub-agent's start: who asked for what, on which model,
/// with which tools.
fn agent_start(request: &AgentRequest, model: &dyn Model, tools: &Registry, depth: u32) -> Event {
    Event::AgentStart {
        agent_type: request.subagent_type.clone(),
        description: request.description.clone(),
        prompt: request.prompt.clone(),
        provider: model.provider().to_string(),
        model: model.name().to_string(),
        tools: tools.names(),
        depth,
    }
}

/// drover's own failure to keep a sub-agent's transcript: the task ends as an internal
/// error.
fn fault(error: crate::record::transcript::TranscriptError) -> InternalFault {
    InternalFault::Drover {
        tool: crate::tools::agent::AGENT.to_string(),
        message: error.to_string(),
    }
}

/// What the parent's `Agent` call answers for a sub-agent's run: its report (or why it
/// stopped) and its figures; drover's own fault in it ends the task as it would in the
/// main loop.
fn answer_of(
    outcome: super::LoopOutcome,
    agent_type: &str,
    agent_id: &str,
    duration_ms: u64,
) -> Result<ToolOutput, InternalFault> {
    let tool_uses: u64 = outcome.calls.values().sum();
    let figures = format!(
        "{USAGE_OPEN}agent {agent_id}: {}, {}, {} tokens, {duration_ms} ms</agent_usage>",
        counted(u64::from(outcome.turns), "turn"),
        counted(tool_uses, "tool use"),
        outcome.usage.total()
    );
    match outcome.reason {
        EndReason::EndTurn => {
            let text = if outcome.final_text.trim().is_empty() {
                "(the sub-agent ended without a report)".to_string()
            } else {
                outcome.final_text
            };
            Ok(ToolOutput::ok(format!("{text}{figures}")))
        }
        EndReason::InternalError => Err(InternalFault::Drover {
            tool: crate::tools::agent::AGENT.to_string(),
            message: format!("sub-agent {agent_id}: {}", outcome.message),
        }),
        EndReason::McpUnavailable => Err(InternalFault::Unavailable {
            message: format!("sub-agent {agent_id}: {}", outcome.message),
        }),
        _ => {
            let last = if outcome.final_text.trim().is_empty() {
                String::new()
            } else {
                format!("\nIts last text:\n{}", outcome.final_text)
            };
            Ok(ToolOutput::error(format!(
                "The sub-agent {agent_type} stopped before finishing ({}): {}.{last}{figures}",
                outcome.reason.as_str(),
                outcome.message
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::Call;
    use serde_json::json;

    struct NoModels;

    impl SubAgentModels for NoModels {
        fn model(&self, _: &str, _: &str, _: Option<&str>) -> Box<dyn Model> {
            Box::new(crate::model::script::ScriptModel::new(None, Vec::new()))
        }
        fn pricing(&self, _: &str, _: Option<&str>) -> Option<Pricing> {
            None
        }
        fn replay(&self, _: &str) -> Option<Box<dyn ReplayCheck>> {
            None
        }
    }

    fn kind(registry: Registry) -> SubAgentType {
        let read_only = registry
            .names()
            .iter()
            .all(|n| registry.facts(n).is_some_and(|f| f.read_only));
        SubAgentType {
            project: String::new(),
            prompt: String::new(),
            registry,
            read_only,
            max_turns: None,
            web_search: false,
        }
    }

    fn agent_call(id: &str, kind: &str) -> Call {
        Call {
            id: id.into(),
            name: "Agent".into(),
            input: json!({"description": "d", "prompt": "p", "subagent_type": kind}),
        }
    }

    #[test]
    fn read_only_agents_share_a_batch_and_writers_run_alone() {
        let mut parent = Registry::builtin().unwrap();
        parent
            .add(std::sync::Arc::new(
                crate::tools::agent::AgentTool::new(&[]),
            ))
            .unwrap();
        let readers = parent
            .subset(|n| matches!(n, "Read" | "Grep" | "Glob"))
            .unwrap();
        let writers = parent.subset(|n| matches!(n, "Read" | "Edit")).unwrap();
        let subagents = SubAgents {
            types: BTreeMap::from([
                ("reviewer".to_string(), kind(readers)),
                ("fixer".to_string(), kind(writers)),
            ]),
            models: Box::new(NoModels),
            max_depth: 2,
            started: Default::default(),
        };
        let calls = vec![
            agent_call("a", "reviewer"),
            agent_call("b", "reviewer"),
            agent_call("c", "fixer"),
            agent_call("d", "reviewer"),
        ];
        let batches = super::super::calls::batches(&calls, &parent, Some(&subagents));
        assert_eq!(batches, vec![0..2, 2..3, 3..4]);
        // At most MAX_PARALLEL_AGENTS at once.
        let many: Vec<Call> = (0..6)
            .map(|i| agent_call(&i.to_string(), "reviewer"))
            .collect();
        let batches = super::super::calls::batches(&many, &parent, Some(&subagents));
        assert_eq!(batches, vec![0..4, 4..6]);
        // Without sub-agents an Agent call is never taken for a read.
        let alone = super::super::calls::batches(&calls, &parent, None);
        assert_eq!(alone.len(), 4);
    }

    #[test]
    fn a_replay_compares_an_agent_result_without_its_figures() {
        let a = format!("report{USAGE_OPEN}agent x: 1 turn, 5 tokens, 12 ms</agent_usage>");
        let b = format!("report{USAGE_OPEN}agent x: 1 turn, 5 tokens, 40 ms</agent_usage>");
        assert_eq!(without_usage(&a), without_usage(&b));
        assert_eq!(without_usage("no figures"), "no figures");
    }
}
