// Test-only module: its parent includes it under #[cfg(test)].
use tokio::io::AsyncReadExt;

use super::*;

/// What rmcp reads when the server writes `written`.
async fn relayed(written: Vec<u8>) -> Vec<u8> {
    let mut out = Vec::new();
    relay(std::io::Cursor::new(written))
        .read_to_end(&mut out)
        .await
        .unwrap();
    out
}

fn text_answer(id: &str, text_bytes: usize, id_last: bool) -> Vec<u8> {
    let text = "x".repeat(text_bytes);
    let result = format!(r#""result":{{"content":[{{"type":"text","text":"{text}"}}]}}"#);
    let line = if id_last {
        format!(r#"{{{result},"id":{id},"jsonrpc":"2.0"}}"#)
    } else {
        format!(r#"{{"jsonrpc":"2.0","id":{id},{result}}}"#)
    };
    format!("{line}\n").into_bytes()
}

#[tokio::test]
async fn messages_within_the_bound_pass_as_they_are() {
    let mut written = text_answer("1", 1000, false);
    written.extend(b"not json\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}");
    assert_eq!(relayed(written.clone()).await, written);
}

#[tokio::test]
async fn an_oversized_tool_result_is_answered_cut_with_a_note() {
    let mut written = text_answer("7", 20_000_000, false);
    written.extend(text_answer("8", 10, false));
    let out = relayed(written).await;
    let lines: Vec<&[u8]> = out.split(|b| *b == b'\n').collect();
    // The start rmcp drops, drover's answer, the next message, the end.
    assert_eq!(lines.len(), 4);
    assert_eq!(lines[0].len(), MAX_MESSAGE + 1);
    let answer: Value = serde_json::from_slice(lines[1]).unwrap();
    assert_eq!(answer["id"], 7);
    let content = answer["result"]["content"].as_array().unwrap();
    let note = content[0]["text"].as_str().unwrap();
    assert!(note.contains("20000"), "{note}");
    assert!(note.contains("16 MiB"), "{note}");
    let text = content[1]["text"].as_str().unwrap();
    assert!(
        text.len() > 1_000_000 && text.len() <= HEAD,
        "{}",
        text.len()
    );
    assert!(text.bytes().all(|b| b == b'x'));
    assert_eq!(answer["result"]["isError"], false);
    let next: Value = serde_json::from_slice(lines[2]).unwrap();
    assert_eq!(next["id"], 8);
    assert!(lines[3].is_empty());
}

#[tokio::test]
async fn an_oversized_answer_with_its_id_last_is_still_answered() {
    let out = relayed(text_answer("\"r-1\"", 17_000_000, true)).await;
    let lines: Vec<&[u8]> = out.split(|b| *b == b'\n').collect();
    let answer: Value = serde_json::from_slice(lines[1]).unwrap();
    assert_eq!(answer["id"], "r-1");
    assert!(
        answer["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("17000")
    );
}

#[tokio::test]
async fn an_oversized_answer_of_another_kind_is_an_error_naming_its_size() {
    let listing = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{{\"tools\":[{{\"name\":\"{}\"}}]}}}}\n",
        "n".repeat(MAX_MESSAGE)
    );
    let length = listing.len();
    let out = relayed(listing.into_bytes()).await;
    let lines: Vec<&[u8]> = out.split(|b| *b == b'\n').collect();
    let answer: Value = serde_json::from_slice(lines[1]).unwrap();
    assert_eq!(answer["id"], 3);
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("was {length} bytes")),
        "{message}"
    );
    // A server's own request or notification is nobody's answer: only dropped.
    let notification = format!(
        "{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":\"{}\"}}\n",
        "n".repeat(MAX_MESSAGE)
    );
    let out = relayed(notification.into_bytes()).await;
    assert_eq!(out.len(), MAX_MESSAGE + 2);
}
