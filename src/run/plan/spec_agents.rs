//! A spec's sub-agents checked: `agents:` and the agent files `agents_from:` names,
//! merged, each tool name and limit checked, errors at the spec's line and column.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::referenced_file::unlinked_beside;
use crate::model::pricing;
use crate::spec::{
    AgentModelSpec, AgentSpec, LoadedSpec, MAX_AGENT_DEPTH, MAX_AGENT_FILE_BYTES, Position,
    SpecError, agent_of_claude_file,
};
use serde_saphyr::Location;

/// What is wrong with an agent's model fields, checked as the task's own are.
fn model_problem(model: &AgentModelSpec) -> Option<String> {
    if model
        .name
        .as_deref()
        .is_some_and(|name| name.trim().is_empty())
    {
        return Some("name is empty; give a model name or leave it out".to_string());
    }
    if model.max_tokens == Some(0) {
        return Some("max_tokens is 0; give at least 1 or leave it out".to_string());
    }
    if let Some(temperature) = model.temperature
        && !(temperature.is_finite() && (0.0..=2.0).contains(&temperature))
    {
        return Some(format!("temperature {temperature} is outside 0 to 2"));
    }
    None
}

/// A task's sub-agents by name, and the notes on what their files held.
type AgentsAndNotes = (BTreeMap<String, AgentSpec>, Vec<String>);

/// The task's sub-agents: `agents:` and the Claude Code agent files in `agents_from:`
/// (an agent of `agents:` wins over a file's of the same name), each checked, with notes
/// on what the files had that means nothing headless.
pub(crate) fn task_agents(
    loaded: &LoadedSpec,
) -> Result<(BTreeMap<String, AgentSpec>, Vec<String>), SpecError> {
    task_agents_every(loaded).map_err(|mut errors| errors.swap_remove(0))
}

/// [`task_agents`], or every problem: each agent's first (an `agents_from:` directory
/// that cannot be read is one), and the depth limit's.
pub(super) fn task_agents_every(loaded: &LoadedSpec) -> Result<AgentsAndNotes, Vec<SpecError>> {
    let spec = &loaded.spec;
    let mut notes = Vec::new();
    let mut errors = Vec::new();
    let mut agents = match &spec.agents_from {
        Some(from) => {
            agents_from(loaded, &from.value, from.referenced, &mut notes).unwrap_or_else(|error| {
                errors.push(error);
                BTreeMap::new()
            })
        }
        None => BTreeMap::new(),
    };
    if let Some(own) = &spec.agents {
        for (name, agent) in &own.value {
            agents.insert(name.as_str().to_string(), agent.clone());
        }
        for (name, agent) in &own.value {
            if agent.model.as_ref().is_some_and(|m| m.script.is_some())
                && spec.model.value.provider != crate::spec::Provider::Script
            {
                errors.push(SpecError::Invalid {
                    position: Position::at(&loaded.path, Some(own.referenced)),
                    message: format!(
                        "agents.{name}.model.script is for `provider: script` only; this task's provider is {}",
                        spec.model.value.provider.as_str()
                    ),
                });
            }
        }
    }
    errors.extend(
        agents
            .iter()
            .filter_map(|(name, agent)| check_agent(loaded, name, agent).err()),
    );
    if let Some(depth) = &spec.limits.max_agent_depth
        && !(1..=MAX_AGENT_DEPTH).contains(&depth.value)
    {
        errors.push(SpecError::Invalid {
            position: loaded.position(Some(depth.referenced)),
            message: format!(
                "limits.max_agent_depth is {}: give 1 (sub-agents start none of their own) to {MAX_AGENT_DEPTH}",
                depth.value
            ),
        });
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok((agents, notes))
}

/// The agents of the Claude Code agent files (`*.md`) in `agents_from:`'s directory,
/// in name order; what the files have that means nothing headless goes to `notes`.
fn agents_from(
    loaded: &LoadedSpec,
    from: &str,
    referenced: Location,
    notes: &mut Vec<String>,
) -> Result<BTreeMap<String, AgentSpec>, SpecError> {
    let invalid = |message: String| SpecError::Invalid {
        position: Position::at(&loaded.path, Some(referenced)),
        message,
    };
    let dir = unlinked_beside(loaded, from).map_err(|e| invalid(format!("agents_from: {e}")))?;
    let entries = std::fs::read_dir(&dir).map_err(|e| {
        invalid(format!(
            "agents_from: cannot read the directory {}: {e}",
            dir.display()
        ))
    })?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    files.sort();
    let mut agents = BTreeMap::new();
    let mut seen: BTreeMap<String, PathBuf> = BTreeMap::new();
    for file in files {
        let text = read_agent_file(&file, &invalid)?;
        // A file drover cannot read as an agent is left out, the directory's others
        // work; one that asks for a sandbox of its own is refused (see `referenced`).
        let (name, mut agent, file_notes) = match agent_of_claude_file(&text) {
            Ok(read) => read,
            Err(error) if error.to_string().contains("`sandbox` cannot be set") => {
                return Err(invalid(format!("agents_from {}: {error}", file.display())));
            }
            Err(error) => {
                notes.push(format!("agents_from {}: left out: {error}", file.display()));
                continue;
            }
        };
        // A file's tool drover does not have (`chrome-mcp`, `computer-use`) is left out,
        // the rest of the file works: its list only grows narrower.
        for unknown in drop_unknown_tools(&mut agent) {
            let why = if unknown.contains('(') {
                "it is a permission rule, not a tool name (an agent's tools are names; the task's rules decide which calls run)".to_string()
            } else if let Some(known) = crate::policy::KNOWN_TOOLS
                .iter()
                .find(|known| known.eq_ignore_ascii_case(&unknown))
            {
                format!("drover has no such tool (tool names are case-sensitive: {known})")
            } else {
                "drover has no such tool".to_string()
            };
            notes.push(format!(
                "agents_from {}: tool {unknown:?} left out of agent {name}: {why}",
                file.display()
            ));
        }
        notes.extend(
            file_notes
                .into_iter()
                .map(|note| format!("agents_from {}: {note}", file.display())),
        );
        if let Some(first) = seen.insert(name.as_str().to_string(), file.clone()) {
            return Err(invalid(format!(
                "agents_from: {} and {} both define the agent {name}; rename one",
                first.display(),
                file.display()
            )));
        }
        agents.insert(name.as_str().to_string(), agent);
    }
    Ok(agents)
}

/// An agent file's text. A repository's agent files are the repository's: one that is
/// a link (to a key file, to /proc), not a regular file, or too large is refused, never
/// read.
fn read_agent_file(
    file: &Path,
    invalid: &dyn Fn(String) -> SpecError,
) -> Result<String, SpecError> {
    let meta = std::fs::symlink_metadata(file)
        .map_err(|e| invalid(format!("agents_from: cannot read {}: {e}", file.display())))?;
    if !meta.file_type().is_file() {
        return Err(invalid(format!(
            "agents_from: {} is not a regular file (symbolic links and other kinds are refused)",
            file.display()
        )));
    }
    if meta.len() > MAX_AGENT_FILE_BYTES {
        return Err(invalid(format!(
            "agents_from: {} has {} bytes, more than the {MAX_AGENT_FILE_BYTES} an agent file may have",
            file.display(),
            meta.len()
        )));
    }
    std::fs::read_to_string(file)
        .map_err(|e| invalid(format!("agents_from: cannot read {}: {e}", file.display())))
}

/// Whether `tool` names one tool drover knows, as an agent's `tools` entry: a built-in
/// tool, an alias, or an MCP tool or server (`mcp__…`); never a pattern.
fn known_tool(tool: &str) -> bool {
    let known = crate::policy::Rule::try_from(tool.to_string())
        .is_ok_and(|rule| rule.specifier().is_none());
    known && !tool.contains('*')
}

/// Notes for agents' `mcp__` tools naming a server the task does not have: they can
/// never be offered, which must not pass unsaid.
pub(crate) fn agent_tools_naming_no_server(
    agents: &BTreeMap<String, AgentSpec>,
    servers: &[&str],
) -> Vec<String> {
    let mut notes = Vec::new();
    for (name, agent) in agents {
        for tool in agent.tools.iter().flatten() {
            let Some(rest) = tool.strip_prefix("mcp__") else {
                continue;
            };
            let server = rest.split("__").next().unwrap_or_default();
            if !servers.contains(&server) {
                notes.push(format!(
                    "agent {name}: tool {tool} is not offered: the task has no MCP server {server}"
                ));
            }
        }
    }
    notes
}

/// Take the tools drover does not know out of `agent`'s lists; the names taken out. An
/// agent that listed only unknown tools keeps an empty list: it is offered none, not all.
fn drop_unknown_tools(agent: &mut AgentSpec) -> Vec<String> {
    let mut dropped = Vec::new();
    let mut keep = |list: &mut Vec<String>| {
        list.retain(|tool| {
            let known = known_tool(tool);
            if !known {
                dropped.push(tool.clone());
            }
            known
        });
    };
    if let Some(tools) = agent.tools.as_mut() {
        keep(tools);
    }
    keep(&mut agent.disallowed_tools);
    dropped
}

/// One agent's model fields, turn limit, tool names and price (under a cost limit)
/// checked.
fn check_agent(loaded: &LoadedSpec, name: &str, agent: &AgentSpec) -> Result<(), SpecError> {
    let spec = &loaded.spec;
    let position = spec
        .agents
        .as_ref()
        .map(|a| a.referenced)
        .or(spec.agents_from.as_ref().map(|a| a.referenced));
    let invalid = |message: String| SpecError::Invalid {
        position: Position::at(&loaded.path, position),
        message,
    };
    if let Some(problem) = agent.model.as_ref().and_then(model_problem) {
        return Err(invalid(format!("agents.{name}.model: {problem}")));
    }
    if agent.max_turns == Some(0) {
        return Err(invalid(format!(
            "agents.{name}.max_turns is 0: give at least 1, or leave it out for the task's limit"
        )));
    }
    for tool in agent.tools.iter().flatten().chain(&agent.disallowed_tools) {
        if !known_tool(tool) {
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
                position: loaded.position(Some(limit.referenced)),
                message: format!(
                    "limits.max_cost_usd needs every model's price, but drover has no price for agent {name}'s model {name_used:?}; add agents.{name}.model.pricing"
                ),
            });
        }
    }
    Ok(())
}
