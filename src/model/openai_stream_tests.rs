// Test-only module: its parent includes it under #[cfg(test)].
use serde_json::json;

use super::*;
use crate::model::sse::SseParser;

/// Two tool calls interleaved by index, the second's id and name arriving after its
/// first argument piece, arguments split inside an escape and a character, a usage chunk
/// with cached tokens and no choices, then [DONE].
const STREAM: &str = concat!(
    "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}],\"usage\":null}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Je lis \u{e9}\u{1f600}\"},\"finish_reason\":null}]}\n\n",
    ": keep-alive comment\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_a\",\"type\":\"function\",\"function\":{\"name\":\"Read\",\"arguments\":\"\"}}]},\"finish_reason\":null}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"function\":{\"arguments\":\"{\\\"pattern\\\":\"}}]},\"finish_reason\":null}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"file_path\\\":\\\"a\\\\\"}}]},\"finish_reason\":null}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"call_b\",\"function\":{\"name\":\"Glob\",\"arguments\":\"\\\"*.rs\\\"}\"}}]},\"finish_reason\":null}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"u00e9\u{e9}.rs\\\"}\"}}]},\"finish_reason\":null}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1200,\"completion_tokens\":40,\"total_tokens\":1240,\"prompt_tokens_details\":{\"cached_tokens\":1024}}}\n\n",
    "data: [DONE]\n\n",
);

fn decode(chunks: &[&[u8]], clean: bool) -> Result<ModelResponse, Failure> {
    let mut parser = SseParser::new();
    let mut decoder = OpenAiStream::new("t1".into());
    for chunk in chunks {
        for event in parser.push(chunk) {
            decoder.event(event)?;
        }
    }
    decoder.finish(clean).map(|(response, ())| response)
}

fn expected() -> ModelResponse {
    ModelResponse {
        content: vec![
            ContentBlock::Text {
                text: "Je lis \u{e9}\u{1f600}".into(),
            },
            ContentBlock::ToolUse {
                id: "call_a".into(),
                name: "Read".into(),
                input: json!({"file_path": "a\u{e9}\u{e9}.rs"}),
            },
            ContentBlock::ToolUse {
                id: "call_b".into(),
                name: "Glob".into(),
                input: json!({"pattern": "*.rs"}),
            },
        ],
        stop_reason: StopReason::ToolUse,
        usage: Usage {
            input_tokens: 176,
            output_tokens: 40,
            cache_creation_input_tokens: 0,
            cache_read_input_tokens: 1024,
            web_search_requests: 0,
            estimated: false,
        },
    }
}

#[test]
fn assembles_the_whole_stream() {
    assert_eq!(decode(&[STREAM.as_bytes()], false).unwrap(), expected());
}

#[test]
fn assembles_the_stream_split_at_every_byte() {
    let bytes = STREAM.as_bytes();
    for cut in 0..=bytes.len() {
        let response = decode(&[&bytes[..cut], &bytes[cut..]], false).unwrap();
        assert_eq!(response, expected(), "cut at {cut}");
    }
}

#[test]
fn a_cut_stream_is_retried_but_a_closed_one_after_finish_is_complete() {
    let before_finish = STREAM
        .find("data: {\"choices\":[{\"index\":0,\"delta\":{},")
        .unwrap();
    assert!(matches!(
        decode(&[&STREAM.as_bytes()[..before_finish]], true),
        Err(Failure::Retry { .. })
    ));
    let before_done = STREAM.find("data: [DONE]").unwrap();
    assert!(matches!(
        decode(&[&STREAM.as_bytes()[..before_done]], false),
        Err(Failure::Retry { .. })
    ));
    let response = decode(&[&STREAM.as_bytes()[..before_done]], true).unwrap();
    assert_eq!(response, expected());
}

#[test]
fn finish_reasons() {
    assert_eq!(stop_reason(Some("stop"), false), StopReason::EndTurn);
    assert_eq!(stop_reason(Some("stop"), true), StopReason::ToolUse);
    assert_eq!(stop_reason(Some("tool_calls"), true), StopReason::ToolUse);
    assert_eq!(stop_reason(Some("length"), true), StopReason::MaxTokens);
    assert_eq!(
        stop_reason(Some("content_filter"), false),
        StopReason::Refusal
    );
    assert_eq!(stop_reason(None, false), StopReason::EndTurn);
}

#[test]
fn calls_without_ids_get_generated_ones_and_bad_json_stays_a_string() {
    let stream = concat!(
        "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"function\":{\"name\":\"Read\",\"arguments\":\"{oops\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n",
        "data: [DONE]\n\n",
    );
    let response = decode(&[stream.as_bytes()], true).unwrap();
    let calls: Vec<_> = response.tool_calls().collect();
    assert_eq!(calls[0].0, "call_t1_0");
    assert_eq!(calls[0].2, &json!("{oops"));
}

#[test]
fn error_chunks() {
    let event = |data: &str| SseEvent {
        event: String::new(),
        data: data.into(),
    };
    let mut decoder = OpenAiStream::new("t".into());
    let context = decoder.event(event(
        r#"{"error":{"message":"This model's maximum context length is 8192 tokens","code":"context_length_exceeded"}}"#,
    ));
    assert!(matches!(
        context,
        Err(Failure::Fatal(ModelError::ContextExhausted(_)))
    ));
    let other = decoder.event(event(r#"{"error":{"message":"server busy"}}"#));
    assert!(matches!(other, Err(Failure::Retry { .. })));
}
