//! Assembling one streamed Anthropic Messages response from its events.
//!
//! `message_start` carries the input usage, each content block arrives as
//! `content_block_start`, deltas and `content_block_stop`, `message_delta` carries the
//! stop reason, the output usage and (with server-side context editing) the edits the
//! server applied, and `message_stop` ends it. Unknown events and block types
//! (thinking, server tools, whatever comes next) are skipped, never fatal.

use std::collections::BTreeMap;

use serde_json::Value;

use super::http_errors::is_context_error;
use super::sse::SseEvent;
use super::transport::{Decoder, Failure};
use super::{AppliedContextEdits, ModelError, anthropic_context};
use crate::message::{ContentBlock, ModelResponse, StopReason, Usage};

/// A content block being streamed.
#[derive(Debug)]
enum Partial {
    Text(String),
    ToolUse {
        id: String,
        name: String,
        /// The concatenated `input_json_delta` fragments.
        json: String,
        /// The input as `content_block_start` gave it (used when no deltas follow).
        start: Value,
    },
    /// A call of a server tool (web search): its input streams like a tool call's.
    ServerToolUse {
        id: String,
        name: String,
        json: String,
        start: Value,
    },
    /// A server tool's result, complete in its `content_block_start`.
    WebSearchResult {
        tool_use_id: String,
        content: Value,
    },
    /// A block type drover does not use (e.g. `thinking`).
    Skipped,
}

/// The decoder for one response.
#[derive(Debug, Default)]
pub(super) struct AnthropicStream {
    blocks: BTreeMap<u64, Partial>,
    usage: Usage,
    stop_reason: Option<String>,
    done: bool,
    /// The request asked for server-side context editing: an error event that names
    /// it is a refusal of the editing.
    context_edit: bool,
    /// The edits the server reported (`context_management.applied_edits`).
    applied: Option<AppliedContextEdits>,
}

impl AnthropicStream {
    /// The decoder for one response; `context_edit`: its request asked for server-side
    /// context editing.
    pub(super) fn new(context_edit: bool) -> Self {
        AnthropicStream {
            context_edit,
            ..Self::default()
        }
    }

    /// A `context_management` report, on the message of `message_start` or on
    /// `message_delta` (where the API puts it when streaming); the latest one stands.
    fn read_context_management(&mut self, report: Option<&Value>) {
        if let Some(report) = report.filter(|report| !report.is_null()) {
            self.applied = anthropic_context::applied(report);
        }
    }

    fn read_usage(&mut self, usage: &Value) {
        let field = |name: &str| usage.get(name).and_then(Value::as_u64);
        // Each figure, when present, is the running total for the message.
        if let Some(n) = field("input_tokens") {
            self.usage.input_tokens = n;
        }
        if let Some(n) = field("output_tokens") {
            self.usage.output_tokens = n;
        }
        if let Some(n) = field("cache_creation_input_tokens") {
            self.usage.cache_creation_input_tokens = n;
        }
        if let Some(n) = field("cache_read_input_tokens") {
            self.usage.cache_read_input_tokens = n;
        }
        if let Some(n) = usage
            .get("server_tool_use")
            .and_then(|s| s.get("web_search_requests"))
            .and_then(Value::as_u64)
        {
            self.usage.web_search_requests = n;
        }
    }

    fn block_start(&mut self, data: &Value) {
        let Some(index) = data.get("index").and_then(Value::as_u64) else {
            return;
        };
        let block = data.get("content_block").unwrap_or(&Value::Null);
        let text = |key: &str| {
            block
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let partial = match block.get("type").and_then(Value::as_str) {
            Some("text") => Partial::Text(text("text")),
            Some("tool_use") => Partial::ToolUse {
                id: text("id"),
                name: text("name"),
                json: String::new(),
                start: block.get("input").cloned().unwrap_or(Value::Null),
            },
            Some("server_tool_use") => Partial::ServerToolUse {
                id: text("id"),
                name: text("name"),
                json: String::new(),
                start: block.get("input").cloned().unwrap_or(Value::Null),
            },
            Some("web_search_tool_result") => Partial::WebSearchResult {
                tool_use_id: text("tool_use_id"),
                content: block.get("content").cloned().unwrap_or(Value::Null),
            },
            _ => Partial::Skipped,
        };
        self.blocks.insert(index, partial);
    }

    fn block_delta(&mut self, data: &Value) {
        let index = data.get("index").and_then(Value::as_u64);
        let delta = data.get("delta").unwrap_or(&Value::Null);
        let piece = |key: &str| delta.get(key).and_then(Value::as_str).unwrap_or_default();
        let Some(block) = index.and_then(|i| self.blocks.get_mut(&i)) else {
            return;
        };
        match (block, delta.get("type").and_then(Value::as_str)) {
            (Partial::Text(text), Some("text_delta")) => text.push_str(piece("text")),
            (
                Partial::ToolUse { json, .. } | Partial::ServerToolUse { json, .. },
                Some("input_json_delta"),
            ) => {
                json.push_str(piece("partial_json"));
            }
            _ => {} // thinking, signature, citations, …
        }
    }

    fn error(&self, data: &Value) -> Failure {
        let error = data.get("error").unwrap_or(data);
        let kind = error.get("type").and_then(Value::as_str).unwrap_or("error");
        let message = error
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("(no message)");
        let text = format!("{kind}: {message}");
        if self.context_edit
            && kind == "invalid_request_error"
            && let Some(refused) = anthropic_context::refusal(400, &text)
        {
            return Failure::Fatal(refused);
        }
        if is_context_error(400, &text) {
            return Failure::Fatal(ModelError::ContextExhausted(text));
        }
        match kind {
            "overloaded_error" | "api_error" | "rate_limit_error" | "timeout_error" => {
                Failure::retry(format!("the stream reported {text}"))
            }
            _ => Failure::Fatal(ModelError::Provider(format!(
                "the API ended the stream with {text}"
            ))),
        }
    }
}

impl Decoder for AnthropicStream {
    type Extra = Option<AppliedContextEdits>;

    fn event(&mut self, event: SseEvent) -> Result<(), Failure> {
        if self.done {
            return Ok(());
        }
        let data: Value = serde_json::from_str(&event.data).map_err(|e| {
            Failure::retry(format!(
                "the stream carried an unreadable {} event: {e}",
                event.event
            ))
        })?;
        // The `type` inside the data is authoritative; the SSE event name is a copy.
        let kind = data
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(event.event.as_str());
        match kind {
            "message_start" => {
                let message = data.get("message");
                if let Some(usage) = message.and_then(|m| m.get("usage")) {
                    self.read_usage(usage);
                }
                self.read_context_management(message.and_then(|m| m.get("context_management")));
            }
            "content_block_start" => self.block_start(&data),
            "content_block_delta" => self.block_delta(&data),
            "message_delta" => {
                if let Some(reason) = data
                    .get("delta")
                    .and_then(|d| d.get("stop_reason"))
                    .and_then(Value::as_str)
                {
                    self.stop_reason = Some(reason.to_string());
                }
                if let Some(usage) = data.get("usage") {
                    self.read_usage(usage);
                }
                self.read_context_management(data.get("context_management"));
            }
            "message_stop" => self.done = true,
            "error" => return Err(self.error(&data)),
            _ => {} // ping, content_block_stop, and events added after this was written
        }
        Ok(())
    }

    fn complete(&self) -> bool {
        self.done
    }

    /// `message_stop` without a `message_delta` carrying the stop reason is an
    /// incomplete response: retried like a cut stream, never taken as complete.
    fn finish(self, _clean: bool) -> Result<(ModelResponse, Self::Extra), Failure> {
        if !self.done {
            return Err(Failure::retry(
                "the response stream ended before message_stop",
            ));
        }
        if self.stop_reason.is_none() {
            return Err(Failure::retry(
                "incomplete_response: message_stop came without a stop_reason (no message_delta)",
            ));
        }
        let content: Vec<ContentBlock> = self
            .blocks
            .into_values()
            .filter_map(|block| match block {
                Partial::Text(text) if text.is_empty() => None,
                Partial::Text(text) => Some(ContentBlock::Text { text }),
                Partial::ToolUse {
                    id,
                    name,
                    json,
                    start,
                } => Some(ContentBlock::ToolUse {
                    id,
                    name,
                    input: tool_input(&json, start),
                }),
                Partial::ServerToolUse {
                    id,
                    name,
                    json,
                    start,
                } => Some(ContentBlock::ServerToolUse {
                    id,
                    name,
                    input: match tool_input(&json, start) {
                        // Sent back as it came; a cut input cannot be a string there.
                        Value::String(_) => Value::Object(Default::default()),
                        input => input,
                    },
                }),
                Partial::WebSearchResult {
                    tool_use_id,
                    content,
                } => Some(ContentBlock::WebSearchToolResult {
                    tool_use_id,
                    content,
                }),
                Partial::Skipped => None,
            })
            .collect();
        let has_calls = content
            .iter()
            .any(|b| matches!(b, ContentBlock::ToolUse { .. }));
        let stop_reason = stop_reason(self.stop_reason.as_deref(), has_calls);
        let response = ModelResponse {
            content,
            stop_reason,
            usage: self.usage,
        };
        Ok((response, self.applied))
    }
}

/// A tool call's input from its streamed JSON. No deltas: the start's input, or `{}`.
/// JSON that does not parse (cut off, or malformed by the model) is kept as a string;
/// the loop answers such a call with an input error the model can act on.
pub(super) fn tool_input(json: &str, start: Value) -> Value {
    if json.trim().is_empty() {
        return match start {
            Value::Object(_) => start,
            _ => Value::Object(Default::default()),
        };
    }
    serde_json::from_str(json).unwrap_or_else(|_| Value::String(json.to_string()))
}

/// The loop's stop reason for the API's. An unknown (newer) reason ends the turn, or asks
/// for the tools when there are calls; `model_context_window_exceeded` cut the output.
fn stop_reason(reason: Option<&str>, has_calls: bool) -> StopReason {
    match reason {
        Some("end_turn") => StopReason::EndTurn,
        Some("tool_use") => StopReason::ToolUse,
        Some("max_tokens") | Some("model_context_window_exceeded") => StopReason::MaxTokens,
        Some("stop_sequence") => StopReason::StopSequence,
        Some("pause_turn") => StopReason::PauseTurn,
        Some("refusal") => StopReason::Refusal,
        _ if has_calls => StopReason::ToolUse,
        _ => StopReason::EndTurn,
    }
}

#[cfg(test)]
#[path = "anthropic_stream_tests.rs"]
mod tests;
