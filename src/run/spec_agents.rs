//! A spec's sub-agents checked: `agents:` and the agent files `agents_from:` names,
//! merged, each tool name and limit checked, errors at the spec's line and column.

use std::collections::BTreeMap;

use super::spec_checks::beside_spec;
use crate::model::pricing;
use crate::spec::{AgentSpec, LoadedSpec, Position, SpecError, agent_of_claude_file};

/// The task's sub-agents: `agents:` and the Claude Code agent files in `agents_from:`
/// (an agent of `agents:` wins over a file's of the same name), each checked, with notes
/// on what the files had that means nothing headless.
pub(crate) fn task_agents(
    loaded: &LoadedSpec,
) -> Result<(BTreeMap<String, AgentSpec>, Vec<String>), SpecError> {
    let spec = &loaded.spec;
    let mut agents = BTreeMap::new();
    let mut notes = Vec::new();
    if let Some(from) = &spec.agents_from {
        let invalid = |message: String| SpecError::Invalid {
            position: Position::at(&loaded.path, Some(from.referenced)),
            message,
        };
        let dir = beside_spec(loaded, &from.value);
        let entries = std::fs::read_dir(&dir).map_err(|e| {
            invalid(format!(
                "agents_from: cannot read the directory {}: {e}",
                dir.display()
            ))
        })?;
        let mut files: Vec<std::path::PathBuf> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "md") && path.is_file())
            .collect();
        files.sort();
        for file in files {
            let text = std::fs::read_to_string(&file).map_err(|e| {
                invalid(format!("agents_from: cannot read {}: {e}", file.display()))
            })?;
            let (name, agent, file_notes) = agent_of_claude_file(&text)
                .map_err(|e| invalid(format!("agents_from {}: {e}", file.display())))?;
            notes.extend(
                file_notes
                    .into_iter()
                    .map(|note| format!("agents_from {}: {note}", file.display())),
            );
            agents.insert(name.as_str().to_string(), agent);
        }
    }
    if let Some(own) = &spec.agents {
        for (name, agent) in &own.value {
            agents.insert(name.as_str().to_string(), agent.clone());
        }
        let invalid = |message: String| SpecError::Invalid {
            position: Position::at(&loaded.path, Some(own.referenced)),
            message,
        };
        for (name, agent) in &own.value {
            if agent.model.as_ref().is_some_and(|m| m.script.is_some())
                && spec.model.value.provider != crate::spec::Provider::Script
            {
                return Err(invalid(format!(
                    "agents.{name}.model.script is for `provider: script` only; this task's provider is {}",
                    spec.model.value.provider.as_str()
                )));
            }
        }
    }
    let position = spec
        .agents
        .as_ref()
        .map(|a| a.referenced)
        .or(spec.agents_from.as_ref().map(|a| a.referenced));
    let invalid = |message: String| SpecError::Invalid {
        position: Position::at(&loaded.path, position),
        message,
    };
    for (name, agent) in &agents {
        if agent.max_turns == Some(0) {
            return Err(invalid(format!(
                "agents.{name}.max_turns is 0: give at least 1, or leave it out for the task's limit"
            )));
        }
        for tool in agent.tools.iter().flatten().chain(&agent.disallowed_tools) {
            let known = crate::policy::Rule::try_from(tool.clone())
                .is_ok_and(|rule| rule.specifier().is_none());
            if !known || tool.contains('*') {
                return Err(invalid(format!(
                    "agents.{name}.tools: {tool:?} is not a tool name (write names such as Read, Grep, Bash or mcp__server__tool)"
                )));
            }
        }
        if let Some(limit) = &spec.limits.max_cost_usd {
            let model = &spec.model.value;
            let agent_model = agent.model.clone().unwrap_or_default();
            let name_used = agent_model
                .name
                .clone()
                .or(model.name.clone())
                .unwrap_or_default();
            let custom = agent_model.pricing.or(model.pricing);
            if pricing::resolve(model.provider.as_str(), &name_used, custom.as_ref()).is_none() {
                return Err(SpecError::Invalid {
                    position: Position::at(&loaded.path, Some(limit.referenced)),
                    message: format!(
                        "limits.max_cost_usd needs every model's price, but drover has no price for agent {name}'s model {name_used:?}; add agents.{name}.model.pricing"
                    ),
                });
            }
        }
    }
    if let Some(depth) = &spec.limits.max_agent_depth
        && depth.value == 0
    {
        return Err(SpecError::Invalid {
            position: Position::at(&loaded.path, Some(depth.referenced)),
            message: "limits.max_agent_depth is 0: give at least 1 (sub-agents that start none of their own), or remove agents:".to_string(),
        });
    }
    Ok((agents, notes))
}
