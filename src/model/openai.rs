//! OpenAI-compatible chat completions, streamed: `POST {base_url}/v1/chat/completions`.
//!
//! The conversation is kept in Anthropic's shape; here it becomes OpenAI's: a system
//! message, assistant messages with `tool_calls`, and one `role: tool` message per tool
//! result. The same wire format is spoken by vLLM, llama.cpp's server, Ollama, OpenRouter
//! and LiteLLM, so only widely accepted fields are sent (`max_tokens`, not the newer
//! `max_completion_tokens`, which several of them ignore or refuse).

use async_trait::async_trait;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue};
use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedReceiver;

use super::openai_stream::OpenAiStream;
use super::remote::RemoteConfig;
use super::transport::{PerRequest, RetryNotice, Transport};
use super::{Model, ModelError, ModelRequest, OutputMode, ToolChoice};
use crate::message::{ContentBlock, Message, ModelResponse, Role};

pub(crate) struct OpenAiModel {
    name: String,
    max_tokens: u32,
    temperature: Option<f64>,
    transport: Transport,
    notices: Option<UnboundedReceiver<RetryNotice>>,
    turn: u32,
    /// Whether to send `response_format` (until the server refuses it once).
    response_format: bool,
}

/// Whether a provider error is a refusal of `response_format` (a 400 that names it).
fn refuses_response_format(message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    (lower.starts_with("http 400") || lower.starts_with("http 422"))
        && (lower.contains("response_format") || lower.contains("json_schema"))
}

impl OpenAiModel {
    pub(crate) fn new(config: RemoteConfig) -> Self {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if let Some(key) = &config.api_key
            && let Ok(mut value) = HeaderValue::from_str(&format!("Bearer {}", key.expose()))
        {
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }
        let (transport, notices) = config.transport(headers);
        OpenAiModel {
            name: config.name,
            max_tokens: config.max_tokens,
            temperature: config.temperature,
            transport,
            notices: Some(notices),
            turn: 0,
            response_format: true,
        }
    }
}

#[async_trait]
impl Model for OpenAiModel {
    fn provider(&self) -> &str {
        "openai"
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn retry_notices(&mut self) -> Option<UnboundedReceiver<RetryNotice>> {
        self.notices.take()
    }

    fn output_mode(&self) -> OutputMode {
        OutputMode::Text
    }

    async fn respond(&mut self, request: ModelRequest<'_>) -> Result<ModelResponse, ModelError> {
        self.turn += 1;
        let schema = request.output_schema.filter(|_| self.response_format);
        let request = ModelRequest {
            output_schema: schema,
            web_search: None,
            context_edit: None,
            ..request
        };
        let tag = self.turn.to_string();
        let body = request_body(&self.name, self.max_tokens, self.temperature, &request);
        let plain = PerRequest::default();
        let sent = self
            .transport
            .send(body.to_string().into_bytes(), &plain, || {
                OpenAiStream::new(tag.clone())
            })
            .await
            .map(|(response, ())| response);
        match sent {
            // A server without JSON response formats refuses the request: the schema is
            // still in the system prompt and the final text is parsed and validated.
            Err(ModelError::Provider(message))
                if schema.is_some() && refuses_response_format(&message) =>
            {
                self.response_format = false;
                crate::esay!(
                    "drover: warning: the server refused response_format json_schema ({message}); asking again without it: the final text is parsed and validated by drover"
                );
                let request = ModelRequest {
                    output_schema: None,
                    web_search: None,
                    ..request
                };
                let body = request_body(&self.name, self.max_tokens, self.temperature, &request);
                self.transport
                    .send(body.to_string().into_bytes(), &plain, || {
                        OpenAiStream::new(tag.clone())
                    })
                    .await
                    .map(|(response, ())| response)
            }
            sent => sent,
        }
    }
}

/// The request body.
pub(crate) fn request_body(
    model: &str,
    max_tokens: u32,
    temperature: Option<f64>,
    request: &ModelRequest<'_>,
) -> Value {
    let mut messages = Vec::new();
    if !request.system.is_empty() {
        messages.push(json!({"role": "system", "content": request.system}));
    }
    for message in request.messages {
        translate(message, &mut messages);
    }
    let mut body = json!({
        "model": model,
        "messages": messages,
        "max_tokens": max_tokens,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if let Some(temperature) = temperature {
        body["temperature"] = json!(temperature);
    }
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "type": "function",
                    "function": {
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": tool.input_schema,
                    }
                })
            })
            .collect();
        body["tools"] = Value::Array(tools);
        if request.tool_choice == ToolChoice::Nothing {
            body["tool_choice"] = json!("none");
        }
    }
    if let Some(schema) = request.output_schema {
        body["response_format"] = json!({
            "type": "json_schema",
            "json_schema": {"name": "final_answer", "schema": schema, "strict": false},
        });
    }
    body
}

/// One conversation message as OpenAI messages. Tool results come first (they must
/// directly follow the assistant message that made the calls), then any user text.
fn translate(message: &Message, out: &mut Vec<Value>) {
    let mut text = Vec::new();
    let mut calls = Vec::new();
    for block in &message.content {
        match block {
            ContentBlock::Text { text: t } if !t.is_empty() => text.push(t.as_str()),
            ContentBlock::Text { .. } => {}
            ContentBlock::ToolUse { id, name, input } => {
                let arguments = match input {
                    // Invalid JSON the model wrote goes back as it wrote it.
                    Value::String(raw) => raw.clone(),
                    other => other.to_string(),
                };
                calls.push(json!({
                    "id": id,
                    "type": "function",
                    "function": {"name": name, "arguments": arguments},
                }));
            }
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error,
                images,
            } => {
                // OpenAI has no error flag on tool results; say it in the content.
                let mut content = if *is_error && !content.starts_with("Error") {
                    format!("Error: {content}")
                } else {
                    content.clone()
                };
                // Tool messages take text only: the images stay named in the text.
                if !images.is_empty() {
                    content.push_str(&format!(
                        "\n\n[the {} attached image(s) are not shown: this provider's tool results take text only]",
                        images.len()
                    ));
                }
                out.push(json!({"role": "tool", "tool_call_id": tool_use_id, "content": content}));
            }
            // Web search is offered to Anthropic models only; a conversation carried
            // over from one keeps its searches out of this provider's view.
            ContentBlock::ServerToolUse { .. } | ContentBlock::WebSearchToolResult { .. } => {}
        }
    }
    let text = text.join("\n");
    match message.role {
        Role::User if !text.is_empty() => out.push(json!({"role": "user", "content": text})),
        Role::User => {}
        Role::Assistant => {
            let mut assistant = json!({"role": "assistant", "content": text});
            if !calls.is_empty() {
                if text.is_empty() {
                    assistant["content"] = Value::Null;
                }
                assistant["tool_calls"] = Value::Array(calls);
            }
            out.push(assistant);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolDefinition;

    #[test]
    fn translates_the_conversation_and_tools() {
        let tools = vec![ToolDefinition {
            name: "Read".into(),
            description: "read a file".into(),
            input_schema: json!({"type": "object", "properties": {"file_path": {"type": "string"}}}),
        }];
        let messages = vec![
            Message::user_text("fix it"),
            Message {
                role: Role::Assistant,
                content: vec![
                    ContentBlock::Text {
                        text: "Reading.".into(),
                    },
                    ContentBlock::ToolUse {
                        id: "call_1".into(),
                        name: "Read".into(),
                        input: json!({"file_path": "a"}),
                    },
                    ContentBlock::ToolUse {
                        id: "call_2".into(),
                        name: "Read".into(),
                        input: json!("{broken"),
                    },
                ],
            },
            Message {
                role: Role::User,
                content: vec![
                    ContentBlock::ToolResult {
                        tool_use_id: "call_1".into(),
                        content: "1\tx".into(),
                        is_error: false,
                        images: vec![crate::message::Image {
                            media_type: "image/png".into(),
                            data: "iVBORw0KGgo=".into(),
                        }],
                    },
                    ContentBlock::ToolResult {
                        tool_use_id: "call_2".into(),
                        content: "InputValidationError: bad".into(),
                        is_error: true,
                        images: Vec::new(),
                    },
                ],
            },
        ];
        let request = ModelRequest {
            system: "sys",
            messages: &messages,
            tools: &tools,
            tool_choice: ToolChoice::Auto,
            output_schema: None,
            web_search: None,
            context_edit: None,
        };
        let body = request_body("gpt-x", 500, None, &request);
        assert_eq!(body["stream_options"]["include_usage"], true);
        assert_eq!(body["max_tokens"], 500);
        assert!(body.get("temperature").is_none());
        assert_eq!(body["tools"][0]["type"], "function");
        assert_eq!(body["tools"][0]["function"]["name"], "Read");
        assert_eq!(body["tools"][0]["function"]["parameters"]["type"], "object");
        let sent = body["messages"].as_array().unwrap();
        assert_eq!(sent.len(), 5);
        assert_eq!(sent[0], json!({"role": "system", "content": "sys"}));
        assert_eq!(sent[1], json!({"role": "user", "content": "fix it"}));
        assert_eq!(sent[2]["content"], "Reading.");
        assert_eq!(
            sent[2]["tool_calls"][0]["function"]["arguments"],
            "{\"file_path\":\"a\"}"
        );
        assert_eq!(sent[2]["tool_calls"][1]["function"]["arguments"], "{broken");
        assert_eq!(sent[3]["role"], "tool");
        assert_eq!(sent[3]["tool_call_id"], "call_1");
        assert_eq!(
            sent[3]["content"],
            "1\tx\n\n[the 1 attached image(s) are not shown: this provider's tool results take text only]"
        );
        assert_eq!(sent[4]["content"], "Error: InputValidationError: bad");
    }
}
