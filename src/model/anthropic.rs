//! The Anthropic Messages API, streamed: `POST {base_url}/v1/messages`.
//!
//! Prompt caching is set up the way Claude Code does it: a `cache_control` breakpoint on
//! the system prompt, on the last tool definition and on the last block of the newest
//! message, so every turn re-reads the whole previous conversation from the cache and
//! pays full price only for what is new.
//!
//! A request may ask for the API's own context editing (`anthropic_context`): its body
//! and beta header are that request's alone, and the edits the server reports are kept
//! for the loop until it takes them.

use async_trait::async_trait;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderValue};
use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedReceiver;

use super::anthropic_context::{self, BETA_HEADER};
use super::anthropic_stream::AnthropicStream;
use super::remote::RemoteConfig;
use super::transport::{PerRequest, RetryNotice, Transport};
use super::{AppliedContextEdits, Model, ModelError, ModelRequest, ToolChoice};
use crate::message::{Message, ModelResponse, ToolDefinition, WebSearch};

/// The API version drover speaks.
pub(crate) const API_VERSION: &str = "2023-06-01";

pub(crate) struct AnthropicModel {
    name: String,
    max_tokens: u32,
    temperature: Option<f64>,
    transport: Transport,
    notices: Option<UnboundedReceiver<RetryNotice>>,
    /// The context edits the server reported for the last response, until taken.
    applied: Option<AppliedContextEdits>,
}

impl AnthropicModel {
    pub(crate) fn new(config: RemoteConfig) -> Self {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert("anthropic-version", HeaderValue::from_static(API_VERSION));
        if let Some(key) = &config.api_key
            && let Ok(mut value) = HeaderValue::from_str(key.expose())
        {
            value.set_sensitive(true);
            headers.insert("x-api-key", value);
        }
        let (transport, notices) = config.transport(headers);
        AnthropicModel {
            name: config.name,
            max_tokens: config.max_tokens,
            temperature: config.temperature,
            transport,
            notices: Some(notices),
            applied: None,
        }
    }

    /// What this request adds to the model's headers: with context editing, the beta
    /// (beside any the model sends already), and its refusals read as such.
    fn per_request(&self, request: &ModelRequest<'_>) -> PerRequest {
        let mut per_request = PerRequest::default();
        if request.context_edit.is_some() {
            let beta = anthropic_context::beta_header(self.transport.header(BETA_HEADER));
            per_request.headers.insert(BETA_HEADER, beta);
            per_request.refusal = Some(anthropic_context::refusal);
        }
        per_request
    }
}

#[async_trait]
impl Model for AnthropicModel {
    fn provider(&self) -> &str {
        "anthropic"
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn retry_notices(&mut self) -> Option<UnboundedReceiver<RetryNotice>> {
        self.notices.take()
    }

    fn applied_context_edits(&mut self) -> Option<AppliedContextEdits> {
        self.applied.take()
    }

    async fn respond(&mut self, request: ModelRequest<'_>) -> Result<ModelResponse, ModelError> {
        // A report belongs to the response it came with, never to a later one.
        self.applied = None;
        let body = request_body(&self.name, self.max_tokens, self.temperature, &request);
        let per_request = self.per_request(&request);
        let context_edit = request.context_edit.is_some();
        let (response, applied) = self
            .transport
            .send(body.to_string().into_bytes(), &per_request, || {
                AnthropicStream::new(context_edit)
            })
            .await?;
        self.applied = applied;
        Ok(response)
    }
}

fn ephemeral() -> Value {
    json!({"type": "ephemeral"})
}

/// The request body, with its three cache breakpoints (and `context_management` when
/// the request asks for the server's context editing).
pub(crate) fn request_body(
    model: &str,
    max_tokens: u32,
    temperature: Option<f64>,
    request: &ModelRequest<'_>,
) -> Value {
    let mut body = json!({
        "model": model,
        "max_tokens": max_tokens,
        "stream": true,
    });
    if let Some(temperature) = temperature {
        body["temperature"] = json!(temperature);
    }
    if !request.system.is_empty() {
        body["system"] = json!([{
            "type": "text",
            "text": request.system,
            "cache_control": ephemeral(),
        }]);
    }
    if let Some(edit) = request.context_edit {
        body["context_management"] = anthropic_context::body(edit);
    }
    if !request.tools.is_empty() || request.web_search.is_some() {
        body["tools"] = tools(request.tools, request.web_search);
    }
    match request.tool_choice {
        ToolChoice::Auto => {}
        ToolChoice::Tool(name) => body["tool_choice"] = json!({"type": "tool", "name": name}),
        // Only with tools offered: the API knows no tool choice without them.
        ToolChoice::Nothing if body.get("tools").is_some() => {
            body["tool_choice"] = json!({"type": "none"});
        }
        ToolChoice::Nothing => {}
    }
    body["messages"] = messages(request.messages);
    body
}

/// The version of Anthropic's web search tool drover offers.
pub(crate) const WEB_SEARCH_TOOL: &str = "web_search_20250305";

fn tools(definitions: &[ToolDefinition], web_search: Option<&WebSearch>) -> Value {
    let mut tools: Vec<Value> = web_search.map(web_search_tool).into_iter().collect();
    tools.extend(definitions.iter().map(|tool| {
        json!({
            "name": tool.name,
            "description": tool.description,
            "input_schema": tool.input_schema,
        })
    }));
    if let Some(last) = tools.last_mut() {
        last["cache_control"] = ephemeral();
    }
    Value::Array(tools)
}

/// The server tool as the API takes it: the domains the policy allows or blocks (the
/// API takes one list or the other), at most `max_uses` searches per request.
pub(crate) fn web_search_tool(search: &WebSearch) -> Value {
    let mut tool = json!({"type": WEB_SEARCH_TOOL, "name": "web_search"});
    if !search.allowed_domains.is_empty() {
        tool["allowed_domains"] = json!(search.allowed_domains);
    } else if !search.blocked_domains.is_empty() {
        tool["blocked_domains"] = json!(search.blocked_domains);
    }
    if let Some(max_uses) = search.max_uses {
        tool["max_uses"] = json!(max_uses);
    }
    tool
}

/// The conversation in the API's shape. Empty text blocks (which the API refuses) are
/// left out, a tool input that was not a JSON object is sent as `{}` (the model was told
/// its input was invalid in the tool result), and the newest message's last block
/// carries the cache breakpoint.
fn messages(messages: &[Message]) -> Value {
    let mut out: Vec<Value> = messages
        .iter()
        .map(|message| {
            let mut blocks: Vec<Value> = message
                .content
                .iter()
                .filter_map(|block| {
                    let mut value = serde_json::to_value(block).ok()?;
                    match value.get("type").and_then(Value::as_str) {
                        Some("text") if value["text"].as_str().is_some_and(str::is_empty) => {
                            return None;
                        }
                        Some("tool_use") if !value["input"].is_object() => {
                            value["input"] = json!({});
                        }
                        Some("tool_result") => attach_images(&mut value),
                        _ => {}
                    }
                    Some(value)
                })
                .collect();
            if blocks.is_empty() {
                blocks.push(json!({"type": "text", "text": "(no content)"}));
            }
            json!({"role": message.role, "content": blocks})
        })
        .collect();
    keep_newest_images(&mut out);
    if let Some(last) = out
        .last_mut()
        .and_then(|m| m["content"].as_array_mut())
        .and_then(|blocks| blocks.last_mut())
    {
        last["cache_control"] = ephemeral();
    }
    Value::Array(out)
}

/// The most images one request carries, and their most base64 in all: well inside the
/// API's limits on images and request size, so images piling up over a long run do
/// not get every later request refused.
const MAX_REQUEST_IMAGES: usize = 20;
const MAX_REQUEST_IMAGE_BYTES: usize = 20 * 1024 * 1024;

/// Keep the newest images within the request's limits; older ones become a line of text.
fn keep_newest_images(messages: &mut [Value]) {
    let (mut count, mut bytes) = (0, 0);
    for message in messages.iter_mut().rev() {
        let Some(blocks) = message["content"].as_array_mut() else {
            continue;
        };
        for block in blocks.iter_mut().rev() {
            let Some(parts) = block["content"].as_array_mut() else {
                continue;
            };
            for part in parts.iter_mut().rev() {
                if part["type"] != "image" {
                    continue;
                }
                let size = part["source"]["data"].as_str().map_or(0, str::len);
                if count < MAX_REQUEST_IMAGES && bytes + size <= MAX_REQUEST_IMAGE_BYTES {
                    count += 1;
                    bytes += size;
                } else {
                    *part = json!({"type": "text", "text": format!(
                        "[an earlier image, no longer sent: a request carries only the newest {MAX_REQUEST_IMAGES} images]"
                    )});
                }
            }
        }
    }
}

/// A tool result with images carries its content as blocks: the text, then each image
/// as a base64 image block.
fn attach_images(result: &mut Value) {
    let Some(Value::Array(images)) = result.as_object_mut().and_then(|o| o.remove("images")) else {
        return;
    };
    let mut blocks = Vec::new();
    if result["content"]
        .as_str()
        .is_some_and(|text| !text.is_empty())
    {
        blocks.push(json!({"type": "text", "text": result["content"]}));
    }
    blocks.extend(images.into_iter().map(|image| {
        json!({"type": "image", "source": {
            "type": "base64",
            "media_type": image["media_type"],
            "data": image["data"],
        }})
    }));
    result["content"] = Value::Array(blocks);
}

#[cfg(test)]
#[path = "anthropic_tests.rs"]
mod tests;
