//! A task's sub-agents made ready to run: each type's tools (its parent's, narrowed),
//! and where each run's turns come from (the task's provider with the type's model
//! fields, its script, or the recording).

use std::collections::BTreeMap;

use crate::agent::{ReplayCheck, SubAgentModels, SubAgentType, SubAgents};
use crate::model::Model;
use crate::model::pricing;
use crate::model::replay::ReplayModel;
use crate::model::script::ScriptModel;
use crate::record::Event;
use crate::run::plan::{Mode, ModelSource, TaskPlan};
use crate::run::recording::{RecordedResults, Steering, recorded_results};
use crate::spec::{
    AgentModelSpec, AgentSpec, DEFAULT_MAX_AGENT_DEPTH, ModelSpec, Pricing, Provider, model_alias,
};
use crate::tools::agent::{AGENT, AGENT_ALIAS, AgentChoice, AgentTool};
use crate::tools::{Registry, RegistryError};

use super::project::project_context;
use crate::policy::Policy;
use crate::record::transcript::InstructionFile;

/// The task's sub-agents, given the tools the main agent is offered; None when the task
/// has none (or its policy withholds the Agent tool). `strict`: a replay under
/// `--strict` (None: not a replay).
pub(super) fn sub_agents(
    plan: &TaskPlan,
    (registry, policy): (&Registry, &Policy),
    instructions: &[InstructionFile],
    replay: Option<&RecordedResults>,
) -> Result<Option<SubAgents>, RegistryError> {
    if plan.agents.is_empty() || registry.facts(AGENT).is_none() {
        return Ok(None);
    }
    let mut types = BTreeMap::new();
    for (name, agent) in &plan.agents {
        let tools = registry.subset(|tool| offers(agent, tool))?;
        let read_only = tools
            .names()
            .iter()
            .all(|tool| tools.facts(tool).is_some_and(|facts| facts.read_only));
        types.insert(
            name.clone(),
            SubAgentType {
                // Sub-agents get the project's instructions, as Claude Code's do, and the
                // catalog of the skills their own tools let them load.
                project: project_context(instructions, &plan.skills, &tools, policy),
                prompt: agent.prompt.clone(),
                registry: tools,
                read_only,
                // The task's turn limit bounds every agent; a type's may only lower it.
                max_turns: match (agent.max_turns, plan.limits.max_turns) {
                    (Some(own), Some(task)) => Some(own.min(task)),
                    (own, task) => own.or(task),
                },
                web_search: !agent.disallowed_tools.iter().any(|t| t == "WebSearch")
                    && agent
                        .tools
                        .as_ref()
                        .is_none_or(|tools| tools.iter().any(|t| t == "WebSearch")),
            },
        );
    }
    // A resumed run's recorded sub-agent runs are played back; new ones are live.
    let resumed = match &plan.mode {
        Mode::Resume(resume) => Some(Resumed {
            events: resume.agent_events.clone(),
            strict: resume.strict,
            masks: std::sync::Arc::clone(&resume.masks),
        }),
        Mode::Live | Mode::Replay(_) | Mode::DiffOnly(_) => None,
    };
    let models = TaskAgentModels {
        resumed,
        source: match &plan.model {
            ModelSource::Script { name, .. } => Source::Script { name: name.clone() },
            ModelSource::Recorded(recording) => Source::Replay {
                events: recording.agent_events.clone(),
                compare: replay.map(|r| (r.strict, std::sync::Arc::clone(&r.masks))),
            },
            ModelSource::Remote(config) => Source::Remote(config.as_ref().clone()),
        },
        agents: plan.agents.clone(),
        parent: parent_model(plan),
    };
    let max_depth = plan
        .spec
        .spec
        .limits
        .max_agent_depth
        .as_ref()
        .map_or(DEFAULT_MAX_AGENT_DEPTH, |depth| depth.value);
    Ok(Some(SubAgents {
        types,
        models: Box::new(models),
        max_depth,
        started: Default::default(),
    }))
}

/// Offer the `Agent` tool, listing `agents`, when there are any.
pub(crate) fn add_agent_tool(
    registry: &mut Registry,
    agents: &BTreeMap<String, AgentSpec>,
) -> Result<(), RegistryError> {
    if agents.is_empty() {
        return Ok(());
    }
    let choices: Vec<AgentChoice> = agents
        .iter()
        .map(|(name, agent)| AgentChoice {
            name: name.clone(),
            description: agent.description.clone(),
        })
        .collect();
    registry.add(std::sync::Arc::new(AgentTool::new(&choices)))
}

/// The task's model as it runs: the spec's, with `--provider` / `--model` applied.
fn parent_model(plan: &TaskPlan) -> ModelSpec {
    let mut model = plan.spec.spec.model.value.clone();
    match &plan.model {
        ModelSource::Remote(config) => {
            model.provider = config.provider;
            model.name = Some(config.name.clone());
        }
        ModelSource::Script { name, .. } => {
            model.provider = Provider::Script;
            model.name = name.clone();
        }
        ModelSource::Recorded(_) => model.provider = Provider::Replay,
    }
    model
}

/// Whether `agent` is offered its parent's tool `tool`: the tools it lists (an MCP
/// server's name covers its tools), or, when it lists none, all but `Agent`.
fn offers(agent: &AgentSpec, tool: &str) -> bool {
    let names = |entry: &String| {
        entry == tool
            || (entry == AGENT_ALIAS && tool == AGENT)
            || (entry.starts_with("mcp__")
                && !entry["mcp__".len()..].contains("__")
                && tool
                    .strip_prefix(entry.as_str())
                    .is_some_and(|rest| rest.starts_with("__")))
    };
    if agent.disallowed_tools.iter().any(names) {
        return false;
    }
    match &agent.tools {
        Some(listed) => listed.iter().any(names),
        None => tool != AGENT,
    }
}

enum Source {
    Script {
        name: Option<String>,
    },
    Replay {
        events: BTreeMap<String, Vec<Event>>,
        /// `--strict`, and the masks; None: not a replay that compares.
        compare: Option<(bool, std::sync::Arc<crate::record::volatile::Masks>)>,
    },
    Remote(crate::model::remote::RemoteConfig),
}

/// The sub-agent runs a resumed run recorded, by agent id, and how their results are
/// compared.
struct Resumed {
    events: BTreeMap<String, Vec<Event>>,
    strict: bool,
    masks: std::sync::Arc<crate::record::volatile::Masks>,
}

struct TaskAgentModels {
    resumed: Option<Resumed>,
    source: Source,
    agents: BTreeMap<String, AgentSpec>,
    parent: ModelSpec,
}

impl TaskAgentModels {
    /// The model fields of `agent_type`, with the name a call asked for (an alias of
    /// Anthropic's, for Anthropic's API only).
    fn model_of(&self, agent_type: &str, requested: Option<&str>) -> AgentModelSpec {
        let mut own = self
            .agents
            .get(agent_type)
            .and_then(|agent| agent.model.clone())
            .unwrap_or_default();
        if self.parent.provider == Provider::Anthropic
            && let Some(name) = requested.and_then(model_alias)
        {
            own.name = Some(name.to_string());
            // The type's own prices were for its own model.
            own.pricing = None;
        }
        own
    }
}

impl SubAgentModels for TaskAgentModels {
    fn model(&self, agent_type: &str, agent_id: &str, requested: Option<&str>) -> Box<dyn Model> {
        if let Some(events) = self
            .resumed
            .as_ref()
            .and_then(|resumed| resumed.events.get(agent_id))
        {
            return Box::new(ReplayModel::from_events(events));
        }
        let own = self.model_of(agent_type, requested);
        match &self.source {
            Source::Script { name } => {
                let name = own.name.or(name.clone());
                let turns = own.script.unwrap_or_default();
                Box::new(ScriptModel::new(name.as_deref(), turns).with_id_prefix(agent_id))
            }
            Source::Replay { events, .. } => Box::new(ReplayModel::from_events(
                events.get(agent_id).map_or(&[][..], Vec::as_slice),
            )),
            Source::Remote(config) => {
                let mut config = config.clone();
                if let Some(name) = own.name {
                    config.name = name;
                }
                if let Some(max_tokens) = own.max_tokens {
                    config.max_tokens = max_tokens;
                }
                if own.temperature.is_some() {
                    config.temperature = own.temperature;
                }
                crate::model::remote_model::build(config)
            }
        }
    }

    fn pricing(&self, agent_type: &str, requested: Option<&str>) -> Option<Pricing> {
        // A model the call asked for is priced by the table only: the spec's prices are
        // for the models it names.
        if self.parent.provider == Provider::Anthropic
            && let Some(name) = requested.and_then(model_alias)
        {
            return pricing::lookup(name);
        }
        let own = self.model_of(agent_type, requested);
        let name = own.name.or(self.parent.name.clone()).unwrap_or_default();
        let custom = own.pricing.or(self.parent.pricing);
        let provider = match &self.source {
            Source::Replay { .. } => "replay",
            _ => self.parent.provider.as_str(),
        };
        pricing::resolve(provider, &name, custom.as_ref())
    }

    fn replay(&self, agent_id: &str) -> Option<Box<dyn ReplayCheck>> {
        if let Some(resumed) = &self.resumed
            && let Some(events) = resumed.events.get(agent_id)
        {
            return Some(Box::new(RecordedResults {
                results: recorded_results(events),
                strict: resumed.strict,
                masks: std::sync::Arc::clone(&resumed.masks),
                handover: None,
                steering: Steering::of(events),
            }));
        }
        let Source::Replay {
            events,
            compare: Some((strict, masks)),
        } = &self.source
        else {
            return None;
        };
        let events = events.get(agent_id).map_or(&[][..], Vec::as_slice);
        Some(Box::new(RecordedResults {
            results: recorded_results(events),
            strict: *strict,
            masks: std::sync::Arc::clone(masks),
            handover: None,
            steering: Steering::of(events),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(tools: Option<&[&str]>) -> AgentSpec {
        AgentSpec {
            description: "d".into(),
            prompt: "p".into(),
            tools: tools.map(|t| t.iter().map(|s| s.to_string()).collect()),
            disallowed_tools: Vec::new(),
            model: None,
            max_turns: None,
        }
    }

    #[test]
    fn an_agent_gets_what_it_lists_or_all_but_agent() {
        let all = agent(None);
        assert!(offers(&all, "Bash"));
        assert!(!offers(&all, "Agent"));
        let listed = agent(Some(&["Read", "Task", "mcp__docs"]));
        assert!(offers(&listed, "Read"));
        assert!(offers(&listed, "Agent"));
        assert!(!offers(&listed, "Bash"));
        assert!(offers(&listed, "mcp__docs__search"));
        assert!(!offers(&listed, "mcp__docsx__search"));
        let mut narrowed = agent(None);
        narrowed.disallowed_tools = vec!["Bash".into(), "mcp__docs".into()];
        assert!(!offers(&narrowed, "Bash"));
        assert!(!offers(&narrowed, "mcp__docs__search"));
        assert!(offers(&narrowed, "Read"));
        let one = agent(Some(&["mcp__docs__search"]));
        assert!(offers(&one, "mcp__docs__search"));
        assert!(!offers(&one, "mcp__docs__search__all"));
    }
}
