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
    let mut decoder = AnthropicStream::new(false);
    for chunk in chunks {
        for event in parser.push(chunk) {
            decoder.event(event)?;
        }
    }
    decoder.finish(true).map(|(response, _)| response)
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
    let mut decoder = AnthropicStream::new(false);
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

/// A stream as the API sends it with context editing on: the edits it applied ride on
/// `message_delta`, beside `delta` and `usage`.
const EDITED: &str = concat!(
    "event: message_start\n",
    "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_2\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude\",\"stop_reason\":null,\"context_management\":null,\"usage\":{\"input_tokens\":31000,\"output_tokens\":1}}}\n\n",
    "event: content_block_start\n",
    "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Still here.\"}}\n\n",
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
    "event: message_delta\n",
    "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":4},\"context_management\":{\"applied_edits\":[{\"type\":\"clear_tool_uses_20250919\",\"cleared_tool_uses\":12,\"cleared_input_tokens\":48210}]}}\n\n",
    "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
);

fn decode_with_edits(stream: &str) -> (ModelResponse, Option<AppliedContextEdits>) {
    let mut parser = SseParser::new();
    let mut decoder = AnthropicStream::new(true);
    for event in parser.push(stream.as_bytes()) {
        decoder.event(event).unwrap();
    }
    decoder.finish(true).unwrap()
}

#[test]
fn the_edits_the_server_applied_are_read_from_message_delta() {
    let (response, applied) = decode_with_edits(EDITED);
    assert_eq!(response.text(), "Still here.");
    assert_eq!(response.usage.input_tokens, 31000);
    assert_eq!(
        applied,
        Some(AppliedContextEdits {
            cleared_tool_uses: 12,
            cleared_input_tokens: 48210,
        })
    );
    // A stream that reports nothing, or an empty list, applied nothing.
    let (_, applied) = decode_with_edits(STREAM);
    assert_eq!(applied, None);
    let empty = EDITED.replace(
        "\"applied_edits\":[{\"type\":\"clear_tool_uses_20250919\",\"cleared_tool_uses\":12,\"cleared_input_tokens\":48210}]",
        "\"applied_edits\":[]",
    );
    assert_ne!(empty, EDITED);
    assert_eq!(decode_with_edits(&empty).1, None);
}

#[test]
fn the_edits_may_come_on_the_message_of_message_start() {
    let start = EDITED
        .replace(
            "\"context_management\":null",
            "\"context_management\":{\"applied_edits\":[{\"type\":\"clear_tool_uses_20250919\",\"cleared_tool_uses\":2,\"cleared_input_tokens\":900}]}",
        )
        .replace(
            ",\"context_management\":{\"applied_edits\":[{\"type\":\"clear_tool_uses_20250919\",\"cleared_tool_uses\":12,\"cleared_input_tokens\":48210}]}",
            "",
        );
    assert!(!start.contains("48210"));
    assert_eq!(
        decode_with_edits(&start).1,
        Some(AppliedContextEdits {
            cleared_tool_uses: 2,
            cleared_input_tokens: 900,
        })
    );
}

#[test]
fn an_error_event_naming_the_editing_refuses_it_only_when_it_was_asked_for() {
    let event = || {
        SseEvent {
        event: "error".into(),
        data: r#"{"type":"error","error":{"type":"invalid_request_error","message":"context management is not supported for this model"}}"#.into(),
    }
    };
    assert!(matches!(
        AnthropicStream::new(true).event(event()),
        Err(Failure::Fatal(ModelError::ContextEditRefused(_)))
    ));
    assert!(matches!(
        AnthropicStream::new(false).event(event()),
        Err(Failure::Fatal(ModelError::Provider(_)))
    ));
    let too_long = SseEvent {
        event: "error".into(),
        data: r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#.into(),
    };
    assert!(matches!(
        AnthropicStream::new(true).event(too_long),
        Err(Failure::Fatal(ModelError::ContextExhausted(_)))
    ));
}
