// Test-only module: its parent includes it under #[cfg(test)].
use serde_json::json;

use super::*;
use crate::model::sse::SseParser;

/// A recorded-shape stream: thinking, text with multi-byte characters, a tool call whose
/// JSON arrives in fragments that split an escape and a character, a tool call with no
/// deltas, an unknown event, and usage in both message_start and message_delta.
const STREAM: &str = concat!(
    "event: message_start\n",
    "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude\",\"stop_reason\":null,\"usage\":{\"input_tokens\":12,\"cache_creation_input_tokens\":3000,\"cache_read_input_tokens\":500,\"output_tokens\":1}}}\n\n",
    "event: ping\ndata: {\"type\": \"ping\"}\n\n",
    "event: content_block_start\n",
    "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"hmm\"}}\n\n",
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
    "event: content_block_start\n",
    "data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"Voil\u{e0} \u{1f600}\"}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\", reading.\"}}\n\n",
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
    "event: content_block_start\n",
    "data: {\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_01\",\"name\":\"Read\",\"input\":{}}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\"}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"file_path\\\": \\\"src/\\\\\"}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"u00e9t\u{e9}.rs\\\"}\"}}\n\n",
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":2}\n\n",
    "event: content_block_start\n",
    "data: {\"type\":\"content_block_start\",\"index\":3,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_02\",\"name\":\"TodoWrite\",\"input\":{}}}\n\n",
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":3}\n\n",
    "event: brand_new_event\ndata: {\"type\":\"brand_new_event\",\"x\":1}\n\n",
    "event: message_delta\n",
    "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":87}}\n\n",
    "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
);

fn decode(chunks: &[&[u8]]) -> Result<ModelResponse, Failure> {
    let mut parser = SseParser::new();
    let mut decoder = AnthropicStream::new();
    for chunk in chunks {
        for event in parser.push(chunk) {
            decoder.event(event)?;
        }
    }
    decoder.finish(true)
}

fn expected() -> ModelResponse {
    ModelResponse {
        content: vec![
            ContentBlock::Text {
                text: "Voil\u{e0} \u{1f600}, reading.".into(),
            },
            ContentBlock::ToolUse {
                id: "toolu_01".into(),
                name: "Read".into(),
                input: json!({"file_path": "src/\u{e9}t\u{e9}.rs"}),
            },
            ContentBlock::ToolUse {
                id: "toolu_02".into(),
                name: "TodoWrite".into(),
                input: json!({}),
            },
        ],
        stop_reason: StopReason::ToolUse,
        usage: Usage {
            input_tokens: 12,
            output_tokens: 87,
            cache_creation_input_tokens: 3000,
            cache_read_input_tokens: 500,
            web_search_requests: 0,
            estimated: false,
        },
    }
}

#[test]
fn assembles_the_whole_stream() {
    assert_eq!(decode(&[STREAM.as_bytes()]).unwrap(), expected());
}

#[test]
fn assembles_the_stream_split_at_every_byte() {
    let bytes = STREAM.as_bytes();
    for cut in 0..=bytes.len() {
        let response = decode(&[&bytes[..cut], &bytes[cut..]]).unwrap();
        assert_eq!(response, expected(), "cut at {cut}");
    }
}

#[test]
fn a_stream_without_message_stop_is_retried() {
    let cut = STREAM.find("event: message_delta").unwrap();
    assert!(matches!(
        decode(&[&STREAM.as_bytes()[..cut]]),
        Err(Failure::Retry { .. })
    ));
}

#[test]
fn invalid_tool_json_is_kept_as_a_string() {
    assert_eq!(tool_input("{\"a\": ", json!({})), json!("{\"a\": "));
    assert_eq!(tool_input("", Value::Null), json!({}));
    assert_eq!(tool_input("  ", json!({"x": 1})), json!({"x": 1}));
    assert_eq!(tool_input("{\"a\":1}", json!({})), json!({"a": 1}));
}

#[test]
fn max_tokens_mid_tool_call_is_reported_with_the_cut_input() {
    let stream = concat!(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"Write\",\"input\":{}}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"file_path\\\": \\\"a\"}}\n\n",
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\"},\"usage\":{\"output_tokens\":9}}\n\n",
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    );
    let response = decode(&[stream.as_bytes()]).unwrap();
    assert_eq!(response.stop_reason, StopReason::MaxTokens);
    assert_eq!(response.usage.output_tokens, 9);
    let (_, _, input) = response.tool_calls().next().unwrap();
    assert!(input.is_string());
}

#[test]
fn stop_reasons() {
    for (name, reason) in [
        ("end_turn", StopReason::EndTurn),
        ("tool_use", StopReason::ToolUse),
        ("max_tokens", StopReason::MaxTokens),
        ("stop_sequence", StopReason::StopSequence),
        ("pause_turn", StopReason::PauseTurn),
        ("refusal", StopReason::Refusal),
    ] {
        assert_eq!(stop_reason(Some(name), false), reason);
    }
    assert_eq!(
        stop_reason(Some("something_new"), true),
        StopReason::ToolUse
    );
    assert_eq!(stop_reason(None, false), StopReason::EndTurn);
}

#[test]
fn error_events() {
    let event = |data: &str| SseEvent {
        event: "error".into(),
        data: data.into(),
    };
    let mut decoder = AnthropicStream::new();
    let overloaded = decoder.event(event(
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
    ));
    assert!(matches!(overloaded, Err(Failure::Retry { .. })));
    let invalid = decoder.event(event(
        r#"{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}"#,
    ));
    assert!(matches!(
        invalid,
        Err(Failure::Fatal(ModelError::Provider(_)))
    ));
    let garbage = decoder.event(event("not json"));
    assert!(matches!(garbage, Err(Failure::Retry { .. })));
}
