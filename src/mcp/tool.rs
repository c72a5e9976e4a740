//! An MCP server's tool as the registry holds it: the schema the server listed, the
//! facts drover states for it (never the server: it is not read-only, it is governed by
//! rules naming it or its server), and a call that waits at most `timeouts.call`.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use rmcp::RoleClient;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{Peer, ServiceError};
use serde_json::Value;

use super::content;
use crate::policy::{CallFacts, ToolFacts};
use crate::tools::{Tool, ToolCall, ToolContext, ToolError, ToolOutput};

/// One tool of one server.
pub(crate) struct McpTool {
    /// The name offered to the model (`mcp__<server>__<tool>`, made safe).
    pub name: String,
    pub server: String,
    /// The tool's own name on its server.
    pub tool: String,
    pub description: String,
    pub input_schema: Value,
    pub peer: Peer<RoleClient>,
    pub call_timeout: Duration,
    /// The task cannot go on without this tool's server.
    pub required: bool,
    /// The tool's `outputSchema`, compiled: `structuredContent` is checked against it.
    pub output_schema: Option<Arc<jsonschema::Validator>>,
    /// Tokens (estimated) a result may hold.
    pub max_output: u64,
}

#[async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> Value {
        self.input_schema.clone()
    }

    fn facts(&self) -> ToolFacts {
        facts_of(&self.name)
    }

    fn prepare(self: Arc<Self>, input: Value) -> Result<Box<dyn ToolCall>, ToolError> {
        let Value::Object(arguments) = input else {
            return Err(ToolError::Failed(format!(
                "InputValidationError: the input to {} must be a JSON object",
                self.name
            )));
        };
        Ok(Box::new(McpCall {
            tool: self,
            arguments,
        }))
    }
}

/// What the policy knows of the MCP tool offered as `name`, whatever its server says:
/// it may act on anything (not read-only, not only the run's state) and only rules
/// naming it or its server govern it.
pub(crate) fn facts_of(name: &str) -> ToolFacts {
    ToolFacts {
        name: name.to_string(),
        read_only: false,
        governed_by: name.to_string(),
        run_state: false,
        path_family: None,
    }
}

/// One call of an MCP tool.
struct McpCall {
    tool: Arc<McpTool>,
    arguments: serde_json::Map<String, Value>,
}

#[async_trait]
impl ToolCall for McpCall {
    fn facts(&self) -> CallFacts {
        CallFacts::without_subject(self.tool.facts())
    }

    async fn run(self: Box<Self>, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let tool = &self.tool;
        let params = CallToolRequestParams::new(tool.tool.clone()).with_arguments(self.arguments);
        // A call that outlives its limit is dropped, which cancels the request.
        let answer = tokio::time::timeout(tool.call_timeout, tool.peer.call_tool(params)).await;
        let result = match answer {
            Err(_) => {
                return Err(ToolError::Failed(format!(
                    "MCP server {} did not answer {} within {:?} (mcp timeouts.call); the call was cancelled",
                    tool.server, tool.tool, tool.call_timeout
                )));
            }
            Ok(Err(ServiceError::TransportClosed | ServiceError::TransportSend(_))) => {
                let gone = format!(
                    "MCP server {} is gone (its process ended or closed the connection)",
                    tool.server
                );
                return Err(if tool.required {
                    ToolError::Unavailable(format!(
                        "required {gone}; the task cannot go on without it (see mcp-{}.log in the task's artifacts)",
                        tool.server
                    ))
                } else {
                    ToolError::Failed(format!("{gone}; its tools cannot be called"))
                });
            }
            Ok(Err(error)) => {
                return Err(ToolError::Failed(format!(
                    "MCP server {} failed the call of {}: {error}",
                    tool.server, tool.tool
                )));
            }
            Ok(Ok(result)) => result,
        };
        let blocks: Vec<Value> = result
            .content
            .iter()
            .filter_map(|block| serde_json::to_value(block).ok())
            .collect();
        if let (Some(validator), Some(structured)) =
            (&tool.output_schema, &result.structured_content)
        {
            let problems: Vec<String> = validator
                .iter_errors(structured)
                .take(5)
                .map(|error| error.to_string())
                .collect();
            if !problems.is_empty() {
                return Err(ToolError::Failed(format!(
                    "MCP server {} answered {} with structured content that does not match the tool's outputSchema: {}",
                    tool.server,
                    tool.tool,
                    problems.join("; ")
                )));
            }
        }
        let mut rendered = content::render(&blocks);
        if rendered.text.is_empty()
            && let Some(structured) = &result.structured_content
        {
            rendered.text = structured.to_string();
        }
        Ok(ToolOutput {
            content: content::limit(rendered.text, tool.max_output),
            is_error: result.is_error == Some(true),
            images: rendered.images,
        })
    }
}
