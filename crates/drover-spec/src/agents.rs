//! `agents:` and `agents_from:` — the sub-agents a task's model may start with the
//! `Agent` tool (Claude Code's `Task`). Plain data; running them is the loop's job.
//!
//! `agents_from:` reads Claude Code's agent files unchanged: Markdown with a YAML front
//! matter (`name`, `description`, `tools`, `model`), the body being the agent's prompt.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Pricing;
use super::script::ScriptTurn;
use super::values::TaskName;

/// The sub-agents of a task, by name (`subagent_type`).
pub(crate) type AgentsSpec = BTreeMap<TaskName, AgentSpec>;

/// How deep sub-agents may nest when `limits.max_agent_depth` does not say: the main
/// agent's sub-agents, and theirs.
pub const DEFAULT_MAX_AGENT_DEPTH: u32 = 2;

/// The deepest nesting a spec may allow: each level is a loop inside its parent's call.
pub const MAX_AGENT_DEPTH: u32 = 5;

/// The largest agent file `agents_from:` reads.
pub const MAX_AGENT_FILE_BYTES: u64 = 256 * 1024;

/// One sub-agent. Recorded in `run_start` (without its script), so a replay runs the
/// agents the recording ran.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    /// What the main model reads when it chooses an agent.
    pub description: String,
    /// The sub-agent's system prompt (after drover's own).
    pub prompt: String,
    /// The tools it may use: a subset of its parent's. Absent: all of the parent's
    /// except `Agent` itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Tools it may not use, taken from what `tools` gives it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disallowed_tools: Vec<String>,
    /// Fields of the parent's `model:` this agent changes.
    #[serde(default)]
    pub model: Option<AgentModelSpec>,
    /// Its own turn limit (each run of it); absent: the task's `limits.max_turns`.
    #[serde(default)]
    pub max_turns: Option<u32>,
}

/// The model fields a sub-agent may change; the provider, its endpoint and its key are
/// always the parent's.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentModelSpec {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub max_tokens: Option<u32>,
    #[serde(default)]
    pub temperature: Option<f64>,
    #[serde(default)]
    pub pricing: Option<Pricing>,
    /// provider: script — this agent's own turns (each run of it plays them from the start).
    #[serde(default, skip_serializing)]
    pub script: Option<Vec<ScriptTurn>>,
}

/// The front matter of a Claude Code agent file.
#[derive(Debug, Deserialize)]
struct FrontMatter {
    name: String,
    description: String,
    /// `Read, Grep, Glob` (Claude Code's form) or a YAML list.
    #[serde(default)]
    tools: Option<ToolList>,
    #[serde(default, rename = "disallowedTools")]
    disallowed_tools: Option<ToolList>,
    #[serde(default, rename = "maxTurns")]
    max_turns: Option<u32>,
    /// `sonnet`, `opus`, `haiku`, `inherit`, or a model id.
    #[serde(default)]
    model: Option<String>,
    /// An agent's commands run in the task's sandbox: the file chooses none (see
    /// `referenced`).
    #[serde(default, rename = "sandbox")]
    _sandbox: super::referenced::NoSandbox,
    /// Other keys Claude Code knows (`color`, `permissionMode`, …) mean nothing headless.
    #[serde(flatten)]
    other: BTreeMap<String, serde_json::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum ToolList {
    Text(String),
    List(Vec<String>),
}

impl ToolList {
    fn names(self) -> Vec<String> {
        match self {
            ToolList::Text(text) => text
                .split(',')
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty())
                .collect(),
            ToolList::List(list) => list,
        }
    }
}

/// Claude Code's model aliases, as the names its API takes.
pub fn model_alias(name: &str) -> Option<&'static str> {
    match name {
        "sonnet" => Some("claude-sonnet-4-5"),
        "opus" => Some("claude-opus-4-1"),
        "haiku" => Some("claude-haiku-4-5"),
        _ => None,
    }
}

/// What is wrong with a Claude Code agent file.
#[derive(Debug, thiserror::Error)]
pub enum AgentFileError {
    #[error(transparent)]
    Split(#[from] super::front_matter::FrontMatterError),
    /// Where and what, in the parser's words (never the text it quotes).
    #[error("front matter{0}")]
    FrontMatter(String),
    #[error("name: {0}")]
    Name(super::values::InvalidValue),
    #[error("the file has no prompt after its front matter")]
    NoPrompt,
}

/// One Claude Code agent file: its name and the agent it defines, with notes on what
/// was ignored. The error says what is wrong with the file.
pub fn agent_of_claude_file(
    text: &str,
) -> Result<(TaskName, AgentSpec, Vec<String>), AgentFileError> {
    let (yaml, body) = super::front_matter::split(text)?;
    let (front, lenient): (FrontMatter, bool) =
        super::front_matter::parse_lenient(yaml).map_err(|invalid| {
            let at = invalid
                .at
                .map(|(line, column)| format!(" at line {line} column {column}"))
                .unwrap_or_default();
            AgentFileError::FrontMatter(format!("{at}: {}", invalid.message))
        })?;
    let name = TaskName::try_from(front.name.clone()).map_err(AgentFileError::Name)?;
    let tools = front.tools.map(ToolList::names);
    let disallowed_tools = front
        .disallowed_tools
        .map(ToolList::names)
        .unwrap_or_default();
    let model = match front.model.as_deref() {
        None | Some("inherit") => None,
        Some(model) => Some(AgentModelSpec {
            name: Some(model_alias(model).unwrap_or(model).to_string()),
            ..AgentModelSpec::default()
        }),
    };
    let mut notes: Vec<String> = front
        .other
        .keys()
        .map(|key| format!("`{key}` ignored: it has no meaning in a headless run"))
        .collect();
    if lenient {
        notes.push(super::front_matter::READ_LINE_BY_LINE.to_string());
    }
    if body.is_empty() {
        return Err(AgentFileError::NoPrompt);
    }
    let agent = AgentSpec {
        description: front.description,
        prompt: body.to_string(),
        tools,
        disallowed_tools,
        model,
        max_turns: front.max_turns,
    };
    Ok((name, agent, notes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claude_code_agent_file_reads_as_an_agent() {
        let text = "---\nname: code-reviewer\ndescription: Reviews code.\ntools: Read, Grep, Glob\ndisallowedTools: Grep\nmaxTurns: 7\nmodel: haiku\ncolor: blue\n---\n\nYou review code.\nBe brief.\n";
        let (name, agent, notes) = agent_of_claude_file(text).unwrap();
        assert_eq!(name.as_str(), "code-reviewer");
        assert_eq!(agent.description, "Reviews code.");
        assert_eq!(agent.prompt, "You review code.\nBe brief.");
        assert_eq!(
            agent.tools,
            Some(vec!["Read".to_string(), "Grep".into(), "Glob".into()])
        );
        assert_eq!(
            agent.model.and_then(|m| m.name).as_deref(),
            Some("claude-haiku-4-5")
        );
        assert_eq!(agent.disallowed_tools, vec!["Grep".to_string()]);
        assert_eq!(agent.max_turns, Some(7));
        assert_eq!(notes.len(), 1, "{notes:?}");
    }

    #[test]
    fn inherit_and_no_tools_mean_the_parents() {
        let text = "---\nname: helper\ndescription: Helps.\nmodel: inherit\n---\nHelp.";
        let (_, agent, _) = agent_of_claude_file(text).unwrap();
        assert!(agent.model.is_none());
        assert!(agent.tools.is_none());
    }

    #[test]
    fn broken_files_say_what_is_wrong() {
        for (text, wanted) in [
            ("no front matter", "front matter"),
            ("---\nname: x\ndescription: y\n", "closing"),
            ("---\nname: x\n---\nbody", "description"),
            ("---\nname: a b\ndescription: y\n---\nbody", "name"),
            ("---\nname: x\ndescription: y\n---\n", "no prompt"),
            (
                "---\nname: x\ndescription: y\nsandbox: off\n---\nbody",
                "front matter at line 4 column 10: `sandbox` cannot be set",
            ),
        ] {
            let error = agent_of_claude_file(text).unwrap_err().to_string();
            assert!(error.contains(wanted), "{text:?}: {error}");
        }
    }
}
