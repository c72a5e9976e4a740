//! What the mock model sends back, in the Anthropic Messages API's own shapes: a turn
//! streamed as server-sent events (`message_start` with the input usage, each content
//! block as `content_block_start`, its deltas and `content_block_stop`, `message_delta`
//! with the stop reason and the output usage, `message_stop`), and the API's error body
//! for a prompt that does not fit the window.

use serde_json::{Value, json};

use super::scenario::Step;
use crate::message::Usage;

/// One server-sent event.
fn event(name: &str, data: &Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

/// A text block at `index`, its text in one delta.
fn text_block(index: u32, text: &str) -> String {
    event(
        "content_block_start",
        &json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
    ) + &event(
        "content_block_delta",
        &json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}}),
    ) + &event(
        "content_block_stop",
        &json!({"type": "content_block_stop", "index": index}),
    )
}

/// A tool call at `index`, its input streamed in two `input_json_delta` pieces as the
/// API splits it.
fn tool_block(index: u32, id: &str, name: &str, input: &Value) -> String {
    let json = input.to_string();
    let mut cut = json.len() / 2;
    while !json.is_char_boundary(cut) {
        cut -= 1;
    }
    let mut stream = event(
        "content_block_start",
        &json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
    );
    for piece in [&json[..cut], &json[cut..]] {
        stream += &event(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": piece}}),
        );
    }
    stream
        + &event(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        )
}

/// The whole stream of one answer: `step` played at scenario turn `turn` (its call's
/// id names the turn, so ids never repeat), for a request of `input_tokens`.
pub(crate) fn stream(step: &Step, turn: u32, input_tokens: u64) -> String {
    let id = format!("toolu_mock_{turn:05}");
    let (blocks, stop, output_bytes) = match step {
        Step::Read { path } => {
            let said = format!("Reading {path}.");
            let input = json!({"file_path": path});
            let bytes = said.len() + input.to_string().len();
            (
                text_block(0, &said) + &tool_block(1, &id, "Read", &input),
                "tool_use",
                bytes,
            )
        }
        Step::Write { path, content } => {
            let said = format!("Writing {path}.");
            let input = json!({"file_path": path, "content": content});
            let bytes = said.len() + input.to_string().len();
            (
                text_block(0, &said) + &tool_block(1, &id, "Write", &input),
                "tool_use",
                bytes,
            )
        }
        Step::Finish { text } => (text_block(0, text), "end_turn", text.len()),
    };
    let output_tokens = output_bytes.div_ceil(Usage::BYTES_PER_TOKEN) as u64;
    event(
        "message_start",
        &json!({"type": "message_start", "message": {
            "id": format!("msg_mock_{turn:05}"), "type": "message", "role": "assistant",
            "model": "drover-mock", "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": input_tokens, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 1}
        }}),
    ) + &event("ping", &json!({"type": "ping"}))
        + &blocks
        + &event(
            "message_delta",
            &json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": output_tokens}}),
        )
        + &event("message_stop", &json!({"type": "message_stop"}))
}

/// The API's error body: `{"type":"error","error":{"type":…,"message":…}}`, its keys
/// in the API's order (a `json!` map would sort them).
pub(crate) fn error_body(kind: &str, message: &str) -> String {
    format!(
        "{{\"type\":\"error\",\"error\":{{\"type\":{},\"message\":{}}}}}",
        Value::from(kind),
        Value::from(message)
    )
}

/// The API's words for a prompt of `tokens` over a window of `maximum` (its 400 is an
/// `invalid_request_error` with them).
pub(crate) fn too_long_message(tokens: u64, maximum: u64) -> String {
    format!("prompt is too long: {tokens} tokens > {maximum} maximum")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::transport::{error_message, is_context_error};

    #[test]
    fn a_refusal_is_the_apis_body_and_drover_takes_it_for_a_full_window() {
        let body = error_body("invalid_request_error", &too_long_message(40123, 32000));
        assert_eq!(
            body,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 40123 tokens > 32000 maximum"}}"#
        );
        let message = error_message(&body);
        assert_eq!(
            message,
            "invalid_request_error: prompt is too long: 40123 tokens > 32000 maximum"
        );
        assert!(is_context_error(400, &message));
    }

    /// The data of each event, with the event names checked against its `type`.
    fn events(stream: &str) -> Vec<Value> {
        stream
            .split("\n\n")
            .filter(|chunk| !chunk.is_empty())
            .map(|chunk| {
                let (name, data) = chunk.split_once('\n').unwrap();
                let data: Value =
                    serde_json::from_str(data.strip_prefix("data: ").unwrap()).unwrap();
                assert_eq!(name.strip_prefix("event: ").unwrap(), data["type"]);
                data
            })
            .collect()
    }

    #[test]
    fn a_read_turn_streams_a_text_and_a_call_whose_pieces_make_its_input() {
        let step = Step::Read {
            path: "src/f07.txt".into(),
        };
        let data = events(&stream(&step, 1, 5000));
        let kinds: Vec<&str> = data.iter().map(|d| d["type"].as_str().unwrap()).collect();
        assert_eq!(
            kinds,
            [
                "message_start",
                "ping",
                "content_block_start",
                "content_block_delta",
                "content_block_stop",
                "content_block_start",
                "content_block_delta",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop"
            ]
        );
        assert_eq!(data[0]["message"]["usage"]["input_tokens"], 5000);
        assert_eq!(data[5]["content_block"]["id"], "toolu_mock_00001");
        assert_eq!(data[5]["content_block"]["name"], "Read");
        let json = data[6]["delta"]["partial_json"]
            .as_str()
            .unwrap()
            .to_string()
            + data[7]["delta"]["partial_json"].as_str().unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&json).unwrap(),
            json!({"file_path": "src/f07.txt"})
        );
        assert_eq!(data[9]["delta"]["stop_reason"], "tool_use");
        assert!(data[9]["usage"]["output_tokens"].as_u64().unwrap() > 0);
    }

    #[test]
    fn a_finish_ends_the_turn_with_its_text() {
        let step = Step::Finish {
            text: "Done.".into(),
        };
        let data = events(&stream(&step, 300, 100));
        assert_eq!(data[3]["delta"]["text"], "Done.");
        assert_eq!(data[5]["delta"]["stop_reason"], "end_turn");
        assert_eq!(data.len(), 7);
    }
}
