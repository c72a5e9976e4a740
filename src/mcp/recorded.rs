//! MCP tools in a replay: no server is started (a replay acts on nothing outside the
//! workspace), so each MCP tool the recording used answers with the result recorded for
//! that call. The policy judges the call as it judged the recorded one.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::facts_of;
use crate::policy::{CallFacts, ToolFacts};
use crate::tools::recorded::{Answer, RecordedAnswers};
use crate::tools::{Tool, ToolCall, ToolContext, ToolError, ToolOutput};

/// Recorded results by call id.
pub(crate) type RecordedResults = Arc<RecordedAnswers>;

/// An MCP tool of the recording.
pub(crate) struct RecordedTool {
    name: String,
    results: RecordedResults,
}

impl RecordedTool {
    pub(crate) fn new(name: String, results: RecordedResults) -> Self {
        RecordedTool { name, results }
    }
}

#[async_trait]
impl Tool for RecordedTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        "An MCP tool of the recorded run, answering with the recorded result."
    }

    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }

    fn facts(&self) -> ToolFacts {
        facts_of(&self.name)
    }

    fn prepare(self: Arc<Self>, _input: Value) -> Result<Box<dyn ToolCall>, ToolError> {
        Ok(Box::new(RecordedCall { tool: self }))
    }
}

struct RecordedCall {
    tool: Arc<RecordedTool>,
}

#[async_trait]
impl ToolCall for RecordedCall {
    fn facts(&self) -> CallFacts {
        CallFacts::without_subject(self.tool.facts())
    }

    async fn run(self: Box<Self>, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        match self.tool.results.answer(ctx.call_id.as_deref()) {
            Answer::Recorded(output) => Ok(output),
            Answer::Missing | Answer::Live => Err(ToolError::Failed(format!(
                "the recording has no result for this call of {}: the replay took a different path (MCP servers are not started in a replay)",
                self.tool.name
            ))),
        }
    }
}
