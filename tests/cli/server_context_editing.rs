//! `limits.context: {strategy: server}` end to end: the binary asks Anthropic's API for
//! its own context editing, records the edits the API reports, and clears results
//! itself from the moment the server refuses the editing — against a mock server on
//! 127.0.0.1.

use serde_json::json;

use crate::common::{events, transcript};
use crate::mock_server::{MockServer, Reply};
use crate::providers::{KEY, anthropic_final_turn, anthropic_start, run, sse, task};

const SERVER_STRATEGY: &str = "  max_tokens: 1000\nlimits:\n  context: { strategy: server, window: 50000, keep_tool_results: 2 }\n";

/// A turn that reads notes.txt, after which the API reports the edits it made.
fn read_turn_with_edits(cleared_tool_uses: u64, cleared_input_tokens: u64) -> String {
    let call = sse(
        "content_block_start",
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_01", "name": "Read", "input": {}}}),
    ) + &sse(
        "content_block_delta",
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"file_path\": \"notes.txt\"}"}}),
    ) + &sse(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    );
    let delta = sse(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9},
               "context_management": {"applied_edits": [{"type": "clear_tool_uses_20250919", "cleared_tool_uses": cleared_tool_uses, "cleared_input_tokens": cleared_input_tokens}]}}),
    );
    anthropic_start(4000, 0, 0)
        + &call
        + &delta
        + &sse("message_stop", json!({"type": "message_stop"}))
}

#[test]
fn the_api_is_asked_for_its_editing_and_the_edits_it_reports_are_recorded() {
    let server = MockServer::start(vec![
        Reply::sse(&read_turn_with_edits(2, 3000)),
        Reply::sse(&anthropic_final_turn()),
    ]);
    let (dir, spec) = task("anthropic", &server.base_url, SERVER_STRATEGY);
    let artifacts = dir.path().join("out");
    let output = run(&spec, &artifacts, Some(KEY));
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        let beta = request.header("anthropic-beta").unwrap_or_default();
        assert!(beta.contains("context-management-2025-06-27"), "{beta}");
        let edit = &request.json()["context_management"]["edits"][0];
        assert_eq!(edit["type"], "clear_tool_uses_20250919");
        assert_eq!(
            edit["trigger"],
            json!({"type": "input_tokens", "value": 35000})
        );
        assert_eq!(edit["keep"], json!({"type": "tool_uses", "value": 2}));
    }
    let lines = transcript(&artifacts.join("t/transcript.jsonl"));
    let compactions = events(&lines, "compaction");
    assert_eq!(compactions.len(), 1, "{compactions:?}");
    let compaction = compactions[0];
    assert_eq!(compaction["strategy"], "server");
    assert_eq!(compaction["trigger"], "server");
    assert_eq!(compaction["turn"], 0);
    assert_eq!(compaction["cleared_results"], 2);
    assert_eq!(compaction["tokens_after"], 4000);
    assert_eq!(compaction["tokens_before"], 7000);
    // drover's own conversation is whole: the second request still holds the result.
    let second = requests[1].json().to_string();
    assert!(
        second.contains("h\\u00e9llo") || second.contains("h\u{e9}llo"),
        "{second}"
    );
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(artifacts.join("summary.json")).unwrap()).unwrap();
    let tally = &summary["tasks"][0]["context"];
    assert_eq!(tally["strategy"], "server");
    assert_eq!(tally["compactions"], 1);
    assert_eq!(tally["cleared_results"], 2);
}

#[test]
fn a_server_that_refuses_the_editing_is_asked_again_without_it_and_drover_clears() {
    let refusal = r#"{"type":"error","error":{"type":"invalid_request_error","message":"context_management: Extra inputs are not permitted"}}"#;
    let server = MockServer::start(vec![
        Reply::status(400, refusal),
        Reply::sse(&anthropic_final_turn()),
    ]);
    let (dir, spec) = task("anthropic", &server.base_url, SERVER_STRATEGY);
    let artifacts = dir.path().join("out");
    let output = run(&spec, &artifacts, Some(KEY));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("drover clears old tool results itself from now on"),
        "{stderr}"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "asked once more, not retried as a fault");
    assert!(requests[0].json().get("context_management").is_some());
    assert!(requests[1].json().get("context_management").is_none());
    assert!(
        !requests[1]
            .header("anthropic-beta")
            .unwrap_or_default()
            .contains("context-management"),
    );
    let lines = transcript(&artifacts.join("t/transcript.jsonl"));
    let end = lines.last().unwrap();
    assert_eq!(end["reason"], "end_turn");
}
