//! `output.schema`: the final answer as a JSON value valid against the task's schema.
//!
//! Two ways to get it, by provider: a `StructuredOutput` tool whose input schema is the
//! schema (Anthropic, scripts), forced with `tool_choice` when the model ends its turn
//! without calling it; or the provider's JSON response format, with the final text
//! parsed (OpenAI-compatible). Either way drover validates the value itself: an invalid
//! answer is sent back with the errors, at most twice.

use serde_json::{Value, json};

use crate::message::ToolDefinition;
use crate::model::OutputMode;

/// The tool the final answer is given with (Claude Code's name for it).
pub(crate) const STRUCTURED_OUTPUT: &str = "StructuredOutput";

/// How many invalid answers are sent back before the task fails with `invalid_output`.
pub(super) const MAX_RESENDS: u32 = 2;

/// The task's output schema, ready to validate against.
#[derive(Debug)]
pub(crate) struct OutputSchema {
    pub schema: Value,
    validator: jsonschema::Validator,
    /// The schema is not an object type, so the tool's input wraps it as `{value: …}`.
    wrapped: bool,
}

/// Why a final message is no JSON answer.
#[derive(Debug, thiserror::Error)]
pub(super) enum NotJson {
    #[error("the final message is empty; it must be a JSON value")]
    Empty,
    #[error("the final message is not a JSON value")]
    Other,
}

impl OutputSchema {
    /// None when the schema does not compile (checked when the spec was loaded).
    pub(crate) fn new(schema: Value) -> Option<OutputSchema> {
        let validator = crate::tools::schema_validator(&schema).ok()?;
        let wrapped = schema.get("type").and_then(Value::as_str) != Some("object");
        Some(OutputSchema {
            schema,
            validator,
            wrapped,
        })
    }

    /// The `StructuredOutput` tool, for providers that take the answer as a tool call
    /// (and for `drover tools --spec`, which lists what the requests carry).
    pub(crate) fn tool(&self) -> ToolDefinition {
        let input_schema = if self.wrapped {
            json!({
                "type": "object",
                "properties": {"value": self.schema},
                "required": ["value"],
                "additionalProperties": false,
            })
        } else {
            self.schema.clone()
        };
        ToolDefinition {
            name: STRUCTURED_OUTPUT.to_string(),
            description: "Give your final answer as structured data. Call this exactly once, when the work is done, with the answer as the input; it must be valid against the input schema.".to_string(),
            input_schema,
        }
    }

    /// What the system prompt adds so the model knows the schema and how to answer.
    pub(crate) fn instructions(&self, mode: OutputMode) -> String {
        let schema = serde_json::to_string_pretty(&self.schema).unwrap_or_default();
        match mode {
            OutputMode::Tool => format!(
                "When the work is done, give your final answer by calling the {STRUCTURED_OUTPUT} tool{}. The answer must be valid against this JSON Schema:\n{schema}",
                if self.wrapped {
                    " with the answer as `value`"
                } else {
                    ""
                }
            ),
            OutputMode::Text => format!(
                "When the work is done, your final message must be only a JSON value valid against this JSON Schema, with no other text:\n{schema}"
            ),
        }
    }

    /// The answer given as the tool's input.
    pub(super) fn answer_in_input(&self, input: &Value) -> Value {
        if self.wrapped {
            input.get("value").cloned().unwrap_or(Value::Null)
        } else {
            input.clone()
        }
    }

    /// The answer given as the final text: the whole text, or the one fenced block.
    pub(super) fn from_text(text: &str) -> Result<Value, NotJson> {
        let trimmed = text.trim();
        if let Ok(value) = serde_json::from_str(trimmed) {
            return Ok(value);
        }
        let fenced = trimmed
            .split_once("```")
            .and_then(|(_, rest)| rest.rsplit_once("```"))
            .map(|(inner, _)| inner.strip_prefix("json").unwrap_or(inner));
        match fenced.map(|inner| serde_json::from_str(inner.trim())) {
            Some(Ok(value)) => Ok(value),
            _ if trimmed.is_empty() => Err(NotJson::Empty),
            _ => Err(NotJson::Other),
        }
    }

    /// Every way `value` breaks the schema (at most 10, with where).
    pub(super) fn errors(&self, value: &Value) -> Vec<String> {
        self.validator
            .iter_errors(value)
            .take(10)
            .map(|error| {
                let at = error.instance_path().to_string();
                if at.is_empty() {
                    error.to_string()
                } else {
                    format!("at {at}: {error}")
                }
            })
            .collect()
    }
}

/// The message an invalid answer is sent back with.
pub(super) fn resend_message(errors: &[String], mode: OutputMode, left: u32) -> String {
    let how = match mode {
        OutputMode::Tool => format!("Call {STRUCTURED_OUTPUT} again with a corrected answer."),
        OutputMode::Text => "Reply again with only the corrected JSON value.".to_string(),
    };
    format!(
        "Your final answer is not valid against the output schema:\n- {}\n{how} ({left} more invalid answer(s) and the task fails.)",
        errors.join("\n- ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict_schema() -> OutputSchema {
        OutputSchema::new(json!({
            "type": "object",
            "required": ["verdict"],
            "properties": {"verdict": {"enum": ["approve", "request_changes"]}}
        }))
        .unwrap()
    }

    #[test]
    fn object_schemas_are_the_tool_input_and_others_are_wrapped() {
        let object = verdict_schema();
        assert_eq!(object.tool().input_schema, object.schema);
        let list = OutputSchema::new(json!({"type": "array"})).unwrap();
        assert_eq!(list.tool().input_schema["required"], json!(["value"]));
        assert_eq!(list.answer_in_input(&json!({"value": [1]})), json!([1]));
    }

    #[test]
    fn text_answers_are_parsed_whole_or_from_one_fence() {
        assert_eq!(
            OutputSchema::from_text(" {\"a\": 1}\n").unwrap(),
            json!({"a": 1})
        );
        let fenced = "Here it is:\n```json\n{\"verdict\": \"approve\"}\n```\n";
        assert_eq!(
            OutputSchema::from_text(fenced).unwrap(),
            json!({"verdict": "approve"})
        );
        assert!(OutputSchema::from_text("looks good to me").is_err());
    }

    #[test]
    fn errors_say_where_the_answer_breaks_the_schema() {
        let schema = verdict_schema();
        assert!(schema.errors(&json!({"verdict": "approve"})).is_empty());
        let errors = schema.errors(&json!({"verdict": "maybe"}));
        assert_eq!(errors.len(), 1);
        assert!(errors[0].starts_with("at /verdict"), "{errors:?}");
        assert!(!schema.errors(&json!({})).is_empty());
    }
}
