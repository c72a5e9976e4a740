//! Agent (Claude Code's `Task`): start a sub-agent on a piece of work. The registry
//! holds it like any tool (schema, validation, the policy's judgement); the loop runs it,
//! because a sub-agent is a loop of its own (see `agent::subagent`), which a tool cannot
//! start.

use std::sync::Arc;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Tool, ToolCall, ToolContext, ToolError, ToolOutput};
use crate::policy::{CallFacts, Subject, ToolFacts};

/// The tool's name, and the name Claude Code gave it before (accepted in calls and rules).
pub(crate) use crate::policy::{AGENT_TOOL as AGENT, AGENT_TOOL_ALIAS as AGENT_ALIAS};

/// A sub-agent the model may choose.
#[derive(Debug, Clone)]
pub(crate) struct AgentChoice {
    pub name: String,
    pub description: String,
}

/// The `Agent` tool offering `choices`.
pub(crate) struct AgentTool {
    description: String,
    schema: Value,
}

/// What an `Agent` call asks for, once its input passed the schema.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct AgentRequest {
    pub description: String,
    pub prompt: String,
    pub subagent_type: String,
    /// `sonnet`, `opus` or `haiku`: the model this run uses instead of its type's.
    #[serde(default)]
    pub model: Option<String>,
}

impl AgentRequest {
    /// The request of a call whose input the registry validated.
    pub(crate) fn of(input: &Value) -> Result<AgentRequest, ToolError> {
        serde_json::from_value(input.clone()).map_err(|e| {
            ToolError::Failed(format!(
                "InputValidationError: the input to {AGENT} is invalid: {e}"
            ))
        })
    }
}

impl AgentTool {
    pub(crate) fn new(choices: &[AgentChoice]) -> AgentTool {
        let mut description = String::from(
            "Starts a sub-agent on a piece of work, with its own context, and returns its final report.

Usage:
- Give a short description (3-5 words), the full prompt (the sub-agent sees nothing of this conversation: say everything it needs, and what to report back), and the subagent_type.
- The sub-agent works in the same workspace, under the same permissions, with the tools its type allows. Its final message is the result of this call; it cannot ask you questions.
- Several Agent calls in one turn run at the same time when their agents only read.
- The result ends with the sub-agent's turns, tool uses, tokens and duration.

Available agent types:",
        );
        for choice in choices {
            description.push_str(&format!("\n- {}: {}", choice.name, choice.description));
        }
        let names: Vec<&str> = choices.iter().map(|c| c.name.as_str()).collect();
        let schema = json!({
            "type": "object",
            "properties": {
                "description": {
                    "type": "string",
                    "description": "A short (3-5 word) description of the task"
                },
                "prompt": {
                    "type": "string",
                    "description": "The task for the sub-agent to perform"
                },
                "subagent_type": {
                    "type": "string",
                    "enum": names,
                    "description": "The type of agent to use for this task"
                },
                "model": {
                    "type": "string",
                    "enum": ["sonnet", "opus", "haiku"],
                    "description": "Optional model for this agent run instead of the one its type uses (Anthropic providers only)"
                }
            },
            "required": ["description", "prompt", "subagent_type"],
            "additionalProperties": false
        });
        AgentTool {
            description,
            schema,
        }
    }
}

/// What the policy knows of the Agent tool: it changes nothing itself (the sub-agent's
/// own calls are judged one by one, by the same policy), so, like a to-do list, it is
/// allowed unless a rule denies it.
pub(crate) fn agent_facts() -> ToolFacts {
    ToolFacts {
        name: AGENT.to_string(),
        read_only: false,
        governed_by: AGENT.to_string(),
        run_state: true,
        path_family: None,
    }
}

#[async_trait]
impl Tool for AgentTool {
    fn name(&self) -> &str {
        AGENT
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> Value {
        self.schema.clone()
    }

    fn facts(&self) -> ToolFacts {
        agent_facts()
    }

    fn prepare(self: Arc<Self>, input: Value) -> Result<Box<dyn ToolCall>, ToolError> {
        Ok(Box::new(AgentCall(AgentRequest::of(&input)?)))
    }
}

/// A judged `Agent` call: the loop takes its request and runs the sub-agent.
struct AgentCall(AgentRequest);

#[async_trait]
impl ToolCall for AgentCall {
    fn facts(&self) -> CallFacts {
        CallFacts {
            tool: agent_facts(),
            subject: Subject::Name(self.0.subagent_type.clone()),
        }
    }

    async fn run(self: Box<Self>, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        // invariant: the loop's dispatcher runs every call named Agent (or Task) itself
        // and never hands one to the registry's runner; reaching this is drover's bug.
        Err(ToolError::Internal(format!(
            "the {AGENT} call for {:?} reached the tool runner instead of the loop",
            self.0.subagent_type
        )))
    }
}
