//! The scripted model: plays the assistant turns written in the spec, one per request.
//!
//! It needs no network and no key, and it is deterministic (tool call ids derive from the
//! turn and position), so scripted runs are reproducible byte for byte. When the script
//! runs out, the model ends its turn, as a real model that has nothing more to do.

use async_trait::async_trait;

use super::{Model, ModelError, ModelRequest};
use crate::message::{ContentBlock, ModelResponse, StopReason, Usage};
use crate::spec::{ScriptTurn, ScriptUsage};

pub(crate) struct ScriptModel {
    name: String,
    /// What tool call ids start with after `toolu_` (`script`; a sub-agent's own, so
    /// its ids never equal its parent's).
    id_prefix: String,
    turns: std::vec::IntoIter<ScriptTurn>,
    turn: u32,
}

impl ScriptModel {
    pub(crate) fn new(name: Option<&str>, turns: Vec<ScriptTurn>) -> Self {
        ScriptModel {
            name: name.unwrap_or("script").to_string(),
            id_prefix: "script".to_string(),
            turns: turns.into_iter(),
            turn: 0,
        }
    }
}

impl ScriptModel {
    /// The same model with its first `turns` turns already played (a resumed run
    /// replays them from its recording): the next request gets the turn after them,
    /// with the ids that turn had in an uninterrupted run.
    pub(crate) fn resumed_after(mut self, turns: u32) -> Self {
        for _ in 0..turns {
            if self.turns.next().is_none() {
                break;
            }
        }
        self.turn = turns;
        self
    }

    /// The same model, its tool call ids made from `owner` (a sub-agent's id): ids stay
    /// unique across the agents of one transcript.
    pub(crate) fn with_id_prefix(mut self, owner: &str) -> Self {
        let safe: String = owner
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        self.id_prefix = format!("script_{safe}");
        self
    }
}

#[async_trait]
impl Model for ScriptModel {
    fn provider(&self) -> &str {
        "script"
    }

    fn name(&self) -> &str {
        &self.name
    }

    async fn respond(&mut self, _request: ModelRequest<'_>) -> Result<ModelResponse, ModelError> {
        self.turn += 1;
        let Some(turn) = self.turns.next() else {
            return Ok(ModelResponse {
                content: Vec::new(),
                stop_reason: StopReason::EndTurn,
                usage: Usage::default(),
            });
        };
        let usage = turn.usage.map(usage_of).unwrap_or_default();
        let mut content = Vec::new();
        if let Some(text) = turn.text {
            content.push(ContentBlock::Text { text });
        }
        for (index, call) in turn.tool_calls.into_iter().enumerate() {
            content.push(ContentBlock::ToolUse {
                id: format!("toolu_{}_{:02}_{:02}", self.id_prefix, self.turn, index + 1),
                name: call.name,
                input: call.input,
            });
        }
        let stop_reason = if content
            .iter()
            .any(|block| matches!(block, ContentBlock::ToolUse { .. }))
        {
            StopReason::ToolUse
        } else {
            StopReason::EndTurn
        };
        Ok(ModelResponse {
            content,
            stop_reason,
            usage,
        })
    }
}

/// The counts a scripted turn declares, as the loop sees a real model's.
fn usage_of(usage: ScriptUsage) -> Usage {
    Usage {
        input_tokens: usage.input_tokens,
        output_tokens: usage.output_tokens,
        cache_creation_input_tokens: usage.cache_creation_input_tokens,
        cache_read_input_tokens: usage.cache_read_input_tokens,
        web_search_requests: 0,
        estimated: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::ScriptToolCall;
    use serde_json::json;

    fn request() -> ModelRequest<'static> {
        ModelRequest {
            system: "",
            messages: &[],
            tools: &[],
            tool_choice: crate::model::ToolChoice::Auto,
            output_schema: None,
            web_search: None,
            context_edit: None,
        }
    }

    #[tokio::test]
    async fn plays_turns_in_order_then_ends() {
        let turns = vec![
            ScriptTurn {
                text: Some("Looking.".into()),
                tool_calls: vec![
                    ScriptToolCall {
                        name: "Read".into(),
                        input: json!({"file_path": "a"}),
                    },
                    ScriptToolCall {
                        name: "Glob".into(),
                        input: json!({"pattern": "*"}),
                    },
                ],
                usage: None,
            },
            ScriptTurn {
                text: Some("Done.".into()),
                tool_calls: vec![],
                usage: Some(ScriptUsage {
                    input_tokens: 1000,
                    output_tokens: 200,
                    cache_creation_input_tokens: 0,
                    cache_read_input_tokens: 500,
                }),
            },
        ];
        let mut model = ScriptModel::new(None, turns);
        let first = model.respond(request()).await.unwrap();
        assert_eq!(first.stop_reason, StopReason::ToolUse);
        let ids: Vec<_> = first
            .tool_calls()
            .map(|(id, _, _)| id.to_string())
            .collect();
        assert_eq!(ids, vec!["toolu_script_01_01", "toolu_script_01_02"]);
        let second = model.respond(request()).await.unwrap();
        assert_eq!(second.stop_reason, StopReason::EndTurn);
        assert_eq!(second.text(), "Done.");
        assert_eq!(first.usage, Usage::default());
        assert_eq!(second.usage.total(), 1700);
        assert_eq!(second.usage.cache_read_input_tokens, 500);
        let after = model.respond(request()).await.unwrap();
        assert_eq!(after.stop_reason, StopReason::EndTurn);
        assert!(after.content.is_empty());
    }
}
