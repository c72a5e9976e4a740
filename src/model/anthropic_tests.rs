// Test-only module: its parent includes it under #[cfg(test)].
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use super::*;
use crate::message::{ContentBlock, Role};
use crate::model::ServerContextEdit;

#[test]
fn only_the_newest_images_are_sent() {
    let image = |n: usize| crate::message::Image {
        media_type: "image/png".into(),
        data: format!("iVBORw0K{n}"),
    };
    let messages: Vec<Message> = (0..25)
        .map(|n| Message {
            role: Role::User,
            content: vec![ContentBlock::ToolResult {
                tool_use_id: format!("t{n}"),
                content: format!("result {n}"),
                is_error: false,
                images: vec![image(n)],
            }],
        })
        .collect();
    let sent = super::messages(&messages);
    let sent = sent.as_array().unwrap();
    let part = |m: usize| sent[m]["content"][0]["content"][1].clone();
    assert_eq!(part(24)["type"], "image");
    assert_eq!(part(5)["type"], "image");
    assert_eq!(part(4)["type"], "text");
    assert!(part(0)["text"].as_str().unwrap().contains("no longer sent"));
}

#[test]
fn the_body_carries_three_cache_breakpoints() {
    let tools = vec![
        ToolDefinition {
            name: "Read".into(),
            description: "read".into(),
            input_schema: json!({"type": "object"}),
        },
        ToolDefinition {
            name: "Write".into(),
            description: "write".into(),
            input_schema: json!({"type": "object"}),
        },
    ];
    let messages = vec![
        Message::user_text("fix it"),
        Message {
            role: Role::Assistant,
            content: vec![
                ContentBlock::Text { text: "".into() },
                ContentBlock::ToolUse {
                    id: "t1".into(),
                    name: "Read".into(),
                    input: json!("{\"file_pa"),
                },
            ],
        },
        Message {
            role: Role::User,
            content: vec![
                ContentBlock::ToolResult {
                    tool_use_id: "t0".into(),
                    content: "[image 1: image/png, 12 bytes, attached]".into(),
                    is_error: false,
                    images: vec![crate::message::Image {
                        media_type: "image/png".into(),
                        data: "iVBORw0KGgpyZXN0".into(),
                    }],
                },
                ContentBlock::ToolResult {
                    tool_use_id: "t1".into(),
                    content: "bad".into(),
                    is_error: true,
                    images: Vec::new(),
                },
            ],
        },
    ];
    let request = ModelRequest {
        system: "be good",
        messages: &messages,
        tools: &tools,
        tool_choice: ToolChoice::Auto,
        output_schema: None,
        web_search: None,
        context_edit: None,
    };
    let body = request_body("claude-x", 1000, Some(0.0), &request);
    assert_eq!(body["stream"], true);
    assert_eq!(body["max_tokens"], 1000);
    assert_eq!(body["temperature"], 0.0);
    assert_eq!(body["system"][0]["cache_control"]["type"], "ephemeral");
    assert!(body["tools"][0].get("cache_control").is_none());
    assert_eq!(body["tools"][1]["cache_control"]["type"], "ephemeral");
    let sent = body["messages"].as_array().unwrap();
    assert!(sent[0]["content"][0].get("cache_control").is_none());
    assert_eq!(sent[1]["content"].as_array().unwrap().len(), 1);
    assert_eq!(sent[1]["content"][0]["input"], json!({}));
    // An MCP image goes as an image block inside the tool result.
    let with_image = &sent[2]["content"][0];
    assert_eq!(with_image["type"], "tool_result");
    assert!(with_image.get("images").is_none(), "{with_image}");
    assert_eq!(with_image["content"][0]["type"], "text");
    assert_eq!(
        with_image["content"][1],
        json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgpyZXN0"}})
    );
    assert_eq!(sent[2]["content"][1]["type"], "tool_result");
    assert_eq!(sent[2]["content"][1]["content"], "bad");
    assert_eq!(sent[2]["content"][1]["is_error"], true);
    assert_eq!(sent[2]["content"][1]["cache_control"]["type"], "ephemeral");
}

fn edit() -> ServerContextEdit {
    ServerContextEdit {
        trigger_tokens: 30_000,
        keep_tool_uses: 3,
        clear_at_least_tokens: 5_000,
    }
}

fn request<'a>(messages: &'a [Message], edit: Option<&'a ServerContextEdit>) -> ModelRequest<'a> {
    ModelRequest {
        system: "be good",
        messages,
        tools: &[],
        tool_choice: ToolChoice::Auto,
        output_schema: None,
        web_search: None,
        context_edit: edit,
    }
}

#[test]
fn the_body_asks_for_context_editing_only_when_the_request_does() {
    let messages = [Message::user_text("fix it")];
    let edit = edit();
    let body = request_body("claude-x", 1000, None, &request(&messages, Some(&edit)));
    assert_eq!(
        body["context_management"],
        json!({"edits": [{
            "type": "clear_tool_uses_20250919",
            "trigger": {"type": "input_tokens", "value": 30_000},
            "keep": {"type": "tool_uses", "value": 3},
            "clear_at_least": {"type": "input_tokens", "value": 5_000},
        }]})
    );
    // The conversation is sent whole all the same: the server edits what the model sees.
    assert_eq!(body["messages"][0]["content"][0]["text"], "fix it");
    let body = request_body("claude-x", 1000, None, &request(&messages, None));
    assert!(body.get("context_management").is_none(), "{body}");
}

fn model(url: String) -> AnthropicModel {
    let config = RemoteConfig {
        provider: crate::spec::Provider::Anthropic,
        name: "claude-x".into(),
        url,
        api_key: None,
        key_env: None,
        max_tokens: 1000,
        temperature: None,
        retry: super::super::retry::RetryPolicy {
            max_retries: 3,
            initial_backoff: std::time::Duration::from_millis(1),
            max_backoff: std::time::Duration::from_millis(2),
        },
        timeouts: crate::spec::TimeoutsSpec::default().into(),
    };
    let mut model = AnthropicModel::new(config);
    model.transport = model.transport.without_proxy();
    model
}

#[test]
fn the_beta_header_and_the_refusal_are_the_requests_own() {
    let model = model("http://127.0.0.1:9/v1/messages".into());
    let messages = [Message::user_text("fix it")];
    let edit = edit();
    let with = model.per_request(&request(&messages, Some(&edit)));
    assert_eq!(
        with.headers.get(BETA_HEADER).unwrap(),
        "context-management-2025-06-27"
    );
    assert!(with.refusal.is_some());
    let without = model.per_request(&request(&messages, None));
    assert!(without.headers.is_empty(), "{:?}", without.headers);
    assert!(without.refusal.is_none());
    // The model's own headers never carry the beta: a request without the edit goes
    // without it.
    assert!(model.transport.header(BETA_HEADER).is_none());
}

/// One request as a server on 127.0.0.1 received it.
struct Received {
    head: String,
    body: Value,
}

impl Received {
    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim()
                .eq_ignore_ascii_case(name)
                .then(|| value.trim().to_string())
        })
    }
}

/// A server on 127.0.0.1 answering each request with the next of `replies` (a whole
/// HTTP response), and what it received.
fn serve(replies: Vec<String>) -> (String, Arc<Mutex<Vec<Received>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1/messages", listener.local_addr().unwrap());
    let received = Arc::new(Mutex::new(Vec::new()));
    let noted = Arc::clone(&received);
    std::thread::spawn(move || {
        let mut replies = replies.into_iter();
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let Some(request) = read_request(&mut stream) else {
                continue;
            };
            noted.lock().unwrap().push(request);
            let reply = replies
                .next()
                .unwrap_or_else(|| answer(500, "text/plain", "no more"));
            let _ = stream.write_all(reply.as_bytes());
        }
    });
    (url, received)
}

fn read_request(stream: &mut std::net::TcpStream) -> Option<Received> {
    let mut data = Vec::new();
    let mut buf = [0u8; 8192];
    let end = loop {
        if let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break end;
        }
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return None,
            Ok(n) => data.extend_from_slice(&buf[..n]),
        }
    };
    let head = String::from_utf8_lossy(&data[..end]).into_owned();
    let mut received = Received {
        head,
        body: Value::Null,
    };
    let length: usize = received.header("content-length")?.parse().ok()?;
    let mut body = data[end + 4..].to_vec();
    while body.len() < length {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return None,
            Ok(n) => body.extend_from_slice(&buf[..n]),
        }
    }
    received.body = serde_json::from_slice(&body).ok()?;
    Some(received)
}

fn answer(status: u16, content_type: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

fn event(data: Value) -> String {
    format!(
        "event: {}\ndata: {data}\n\n",
        data["type"].as_str().unwrap()
    )
}

/// A turn of text; its `message_delta` carries `context_management` when given.
fn turn(context_management: Option<Value>) -> String {
    let mut delta = json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 3}});
    if let Some(report) = context_management {
        delta["context_management"] = report;
    }
    let stream = [
        event(
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 20_000, "output_tokens": 1}}}),
        ),
        event(
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        event(
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "ok"}}),
        ),
        event(json!({"type": "content_block_stop", "index": 0})),
        event(delta),
        event(json!({"type": "message_stop"})),
    ]
    .concat();
    answer(200, "text/event-stream", &stream)
}

fn refused(message: &str) -> String {
    let body =
        json!({"type": "error", "error": {"type": "invalid_request_error", "message": message}});
    answer(400, "application/json", &body.to_string())
}

/// The whole path against a server: the beta header and the body go with the requests
/// that ask for editing and only with them, the edits the server reports are taken
/// once, a refusal of the editing is its own error and is not retried, and a prompt too
/// long stays what it is.
#[tokio::test]
async fn context_editing_over_the_wire() {
    let (url, received) = serve(vec![
        turn(Some(json!({"applied_edits": [
            {"type": "clear_tool_uses_20250919", "cleared_tool_uses": 8, "cleared_input_tokens": 50_000},
        ]}))),
        refused("context_management: Extra inputs are not permitted"),
        turn(None),
        refused("prompt is too long: 210000 tokens > 200000 maximum"),
    ]);
    let mut model = model(url);
    let messages = [Message::user_text("fix it")];
    let edit = edit();

    let response = model
        .respond(request(&messages, Some(&edit)))
        .await
        .unwrap();
    assert_eq!(response.text(), "ok");
    assert_eq!(
        model.applied_context_edits(),
        Some(AppliedContextEdits {
            cleared_tool_uses: 8,
            cleared_input_tokens: 50_000,
        })
    );
    assert_eq!(model.applied_context_edits(), None, "taken once");

    let error = model
        .respond(request(&messages, Some(&edit)))
        .await
        .unwrap_err();
    match &error {
        ModelError::ContextEditRefused(text) => {
            assert!(text.contains("HTTP 400"), "{text}");
            assert!(text.contains("Extra inputs are not permitted"), "{text}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        received.lock().unwrap().len(),
        2,
        "the refusal is not retried"
    );

    model.respond(request(&messages, None)).await.unwrap();
    assert_eq!(model.applied_context_edits(), None);

    let error = model
        .respond(request(&messages, Some(&edit)))
        .await
        .unwrap_err();
    assert!(
        matches!(error, ModelError::ContextExhausted(_)),
        "{error:?}"
    );

    let received = received.lock().unwrap();
    assert_eq!(received.len(), 4);
    for asked in [0, 1, 3] {
        let request = &received[asked];
        assert_eq!(
            request.header("anthropic-beta").as_deref(),
            Some("context-management-2025-06-27"),
            "request {asked}"
        );
        assert_eq!(
            request.body["context_management"]["edits"][0]["type"],
            "clear_tool_uses_20250919"
        );
    }
    assert_eq!(received[2].header("anthropic-beta"), None);
    assert!(received[2].body.get("context_management").is_none());
    assert_eq!(
        received[2].header("anthropic-version").as_deref(),
        Some(API_VERSION)
    );
}
