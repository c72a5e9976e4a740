//! PLACEHOLDER — to be implemented.
use async_trait::async_trait;
use serde_json::{Value, json};

use super::{Subject, Tool, ToolContext, ToolOutput};

pub struct EditTool;

#[async_trait]
impl Tool for EditTool {
    fn name(&self) -> &'static str {
        "Edit"
    }
    fn description(&self) -> &'static str {
        "placeholder"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn is_read_only(&self) -> bool {
        true
    }
    fn subject(&self, _input: &Value) -> Subject {
        Subject::None
    }
    async fn call(&self, _input: Value, _ctx: &ToolContext) -> ToolOutput {
        ToolOutput::error("not implemented")
    }
}
