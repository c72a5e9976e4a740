//! Assembling one streamed OpenAI chat completion from its chunks.
//!
//! Text arrives as `delta.content`, tool calls as `delta.tool_calls` fragments keyed by
//! `index` (the id and the name may come in any fragment, the arguments in pieces), the
//! `finish_reason` in the last choice chunk, usage in a final chunk with no choices, and
//! `data: [DONE]` ends the stream. Servers that are "compatible" differ in the details,
//! so everything is optional and nothing unknown is fatal.

use std::collections::BTreeMap;

use serde_json::Value;

use super::ModelError;
use super::anthropic_stream::tool_input;
use super::http_errors::{error_message, is_context_error};
use super::sse::SseEvent;
use super::transport::{Decoder, Failure};
use crate::message::{ContentBlock, ModelResponse, StopReason, Usage};

#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// The decoder for one response.
#[derive(Debug, Default)]
pub(super) struct OpenAiStream {
    text: String,
    calls: BTreeMap<u64, PartialCall>,
    finish_reason: Option<String>,
    usage: Usage,
    done: bool,
    /// Names tool calls that arrive without an id (some local servers send none).
    turn_tag: String,
}

impl OpenAiStream {
    /// `turn_tag` makes generated tool call ids unique across turns.
    pub(super) fn new(turn_tag: String) -> Self {
        OpenAiStream {
            turn_tag,
            ..Self::default()
        }
    }

    fn chunk(&mut self, chunk: &Value) -> Result<(), Failure> {
        if let Some(error) = chunk.get("error") {
            let message = error_message(&serde_json::json!({ "error": error }).to_string());
            if is_context_error(400, &message) {
                return Err(Failure::Fatal(ModelError::ContextExhausted(message)));
            }
            return Err(Failure::retry(format!(
                "the stream reported an error: {message}"
            )));
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            let field = |name: &str| usage.get(name).and_then(Value::as_u64).unwrap_or(0);
            let cached = usage
                .get("prompt_tokens_details")
                .and_then(|d| d.get("cached_tokens"))
                .and_then(Value::as_u64)
                .unwrap_or(0);
            let prompt = field("prompt_tokens");
            // OpenAI counts cached tokens inside prompt_tokens; drover keeps them apart
            // (as Anthropic does) so that no token is counted twice.
            self.usage = Usage {
                input_tokens: prompt.saturating_sub(cached),
                output_tokens: field("completion_tokens"),
                cache_creation_input_tokens: 0,
                cache_read_input_tokens: cached.min(prompt),
                web_search_requests: 0,
                estimated: false,
            };
        }
        let choices = chunk.get("choices").and_then(Value::as_array);
        for choice in choices.into_iter().flatten() {
            if choice.get("index").and_then(Value::as_u64).unwrap_or(0) != 0 {
                continue;
            }
            let delta = choice.get("delta").unwrap_or(&Value::Null);
            if let Some(text) = delta.get("content").and_then(Value::as_str) {
                self.text.push_str(text);
            }
            let calls = delta.get("tool_calls").and_then(Value::as_array);
            for (position, call) in calls.into_iter().flatten().enumerate() {
                let index = call
                    .get("index")
                    .and_then(Value::as_u64)
                    .unwrap_or(position as u64);
                let partial = self.calls.entry(index).or_default();
                let id = str_field(call, "id");
                if partial.id.is_empty() {
                    partial.id = id.to_string();
                }
                let function = call.get("function").unwrap_or(&Value::Null);
                let name = str_field(function, "name");
                if partial.name.is_empty() {
                    partial.name = name.to_string();
                }
                match function.get("arguments") {
                    Some(Value::String(piece)) => partial.arguments.push_str(piece),
                    // Some servers send the arguments as an object rather than a string.
                    Some(value @ Value::Object(_)) => partial.arguments = value.to_string(),
                    _ => {}
                }
            }
            if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                self.finish_reason = Some(reason.to_string());
            }
        }
        Ok(())
    }
}

impl Decoder for OpenAiStream {
    type Extra = ();

    fn event(&mut self, event: SseEvent) -> Result<(), Failure> {
        let data = event.data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        if self.done || data.is_empty() {
            return Ok(());
        }
        let chunk: Value = serde_json::from_str(data)
            .map_err(|e| Failure::retry(format!("the stream carried an unreadable chunk: {e}")))?;
        self.chunk(&chunk)
    }

    fn complete(&self) -> bool {
        self.done
    }

    /// Complete with `[DONE]`, or when the server closed the stream normally after a
    /// finish reason (some servers never send `[DONE]`).
    ///
    /// A stream with `[DONE]` but no finish reason is cut too: an answer without its stop
    /// reason may miss its end (a tool call cut mid-arguments), so it is retried like a
    /// cut stream, never taken as complete.
    fn finish(self, clean: bool) -> Result<(ModelResponse, ()), Failure> {
        if self.finish_reason.is_none() {
            return Err(Failure::retry(
                "incomplete_response: the response ended without a finish_reason",
            ));
        }
        if !(self.done || clean) {
            return Err(Failure::retry(
                "the response stream ended before its finish_reason and [DONE]",
            ));
        }
        let mut content = Vec::new();
        if !self.text.is_empty() {
            content.push(ContentBlock::Text { text: self.text });
        }
        for (index, call) in self.calls {
            let id = if call.id.is_empty() {
                format!("call_{}_{index}", self.turn_tag)
            } else {
                call.id
            };
            content.push(ContentBlock::ToolUse {
                id,
                name: call.name,
                input: tool_input(&call.arguments, Value::Null),
            });
        }
        let has_calls = content.len() > usize::from(content.first().is_some_and(is_text));
        let response = ModelResponse {
            content,
            stop_reason: stop_reason(self.finish_reason.as_deref(), has_calls),
            usage: self.usage,
        };
        Ok((response, ()))
    }
}

fn str_field<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn is_text(block: &ContentBlock) -> bool {
    matches!(block, ContentBlock::Text { .. })
}

/// The loop's stop reason for a finish reason. Tool calls win over `stop` (Ollama and
/// some others report `stop` even when the turn made calls).
fn stop_reason(reason: Option<&str>, has_calls: bool) -> StopReason {
    match reason {
        Some("length") => StopReason::MaxTokens,
        Some("content_filter") => StopReason::Refusal,
        _ if has_calls => StopReason::ToolUse,
        _ => StopReason::EndTurn,
    }
}

#[cfg(test)]
#[path = "openai_stream_tests.rs"]
mod tests;
