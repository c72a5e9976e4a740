//! WebSearch end to end: Anthropic's server-side search is offered to the model only when
//! a rule allows it, with the rules' domains, and its blocks are recorded and sent back
//! as they came; other providers are never offered it.

use crate::common;
use crate::mock_server;
use crate::providers;

use common::{events, transcript};
use mock_server::{MockServer, Reply};
use providers::{KEY, anthropic_end, anthropic_start, anthropic_text, run, sse, task};
use serde_json::{Value, json};

/// A turn in which the server searched the web and answered with what it found.
fn searched_turn() -> String {
    let mut stream = anthropic_start(120, 0, 0);
    stream += &anthropic_text(0, "Let me search.");
    stream += &sse(
        "content_block_start",
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search", "input": {}}}),
    );
    stream += &sse(
        "content_block_delta",
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"query\": \"rust 2024 edition\"}"}}),
    );
    stream += &sse(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 1}),
    );
    stream += &sse(
        "content_block_start",
        json!({"type": "content_block_start", "index": 2, "content_block": {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01", "content": [{"type": "web_search_result", "title": "Rust 2024", "url": "https://docs.example.org/edition-guide/rust-2024/", "encrypted_content": "EncRypted==", "page_age": "1 year"}]}}),
    );
    stream += &sse(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 2}),
    );
    stream += &anthropic_text(3, "Rust 2024 is the newest edition.");
    stream += &sse(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 40, "server_tool_use": {"web_search_requests": 1}}}),
    );
    stream + &sse("message_stop", json!({"type": "message_stop"}))
}

/// providers' task for `provider` at `base_url`, with `extra` top-level YAML added.
fn task_with(
    provider: &str,
    base_url: &str,
    extra: &str,
) -> (tempfile::TempDir, std::path::PathBuf) {
    let (dir, spec) = task(provider, base_url, "");
    let text = std::fs::read_to_string(&spec).unwrap() + extra;
    std::fs::write(&spec, text).unwrap();
    (dir, spec)
}

/// Run `spec` into `artifacts` with the key, expecting exit 0.
fn run_passing(spec: &std::path::Path, artifacts: &std::path::Path) {
    let output = run(spec, artifacts, Some(KEY));
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn web_search_tool(request: &Value) -> Option<&Value> {
    request["tools"]
        .as_array()?
        .iter()
        .find(|tool| tool["name"] == "web_search")
}

#[test]
fn allowed_web_search_is_offered_with_its_domains_and_recorded() {
    let server = MockServer::start(vec![Reply::sse(&searched_turn())]);
    let (dir, spec) = task_with(
        "anthropic",
        &server.base_url,
        "permissions:\n  allow: [\"WebSearch(domain:rust-lang.org)\", \"WebSearch(domain:*.docs.rs)\"]\n",
    );
    let artifacts = dir.path().join("out");
    run_passing(&spec, &artifacts);
    let requests = server.requests();
    let tool = web_search_tool(&requests[0].json())
        .expect("web search offered")
        .clone();
    assert_eq!(tool["type"], "web_search_20250305");
    assert_eq!(tool["allowed_domains"], json!(["docs.rs", "rust-lang.org"]));
    assert!(tool.get("blocked_domains").is_none());
    assert_eq!(tool["max_uses"], 8);

    let lines = transcript(&artifacts.join("t/transcript.jsonl"));
    let start = &events(&lines, "run_start")[0];
    assert!(
        start["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "WebSearch")
    );
    let response = events(&lines, "model_response")[0];
    let content = response["content"].as_array().unwrap();
    assert_eq!(content[1]["type"], "server_tool_use");
    assert_eq!(content[1]["input"], json!({"query": "rust 2024 edition"}));
    assert_eq!(content[2]["type"], "web_search_tool_result");
    assert_eq!(content[2]["content"][0]["encrypted_content"], "EncRypted==");
    assert_eq!(response["usage"]["web_search_requests"], 1);
    // No tool of drover's ran: the search was the server's.
    assert!(events(&lines, "tool_call").is_empty());
    let end = lines.last().unwrap();
    assert_eq!(end["reason"], "end_turn");
    assert_eq!(end["usage"]["web_search_requests"], 1);

    // A replay gives the recorded search blocks again, with no network.
    let replayed = dir.path().join("replayed");
    let replay = common::drover()
        .current_dir(dir.path())
        .arg("replay")
        .arg(artifacts.join("t/transcript.jsonl"))
        .arg("--strict")
        .arg("--artifacts")
        .arg(&replayed)
        .output()
        .unwrap();
    assert_eq!(
        replay.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&replay.stderr)
    );
    let again = transcript(&replayed.join("t/transcript.jsonl"));
    let content = &events(&again, "model_response")[0]["content"];
    assert_eq!(content[2]["type"], "web_search_tool_result");
    assert_eq!(server.requests().len(), 1, "the replay made no request");
}

#[test]
fn search_blocks_go_back_to_the_api_unchanged_in_the_next_request() {
    // The first turn searches, then calls Read; the second request must carry the
    // server blocks exactly as they came.
    let mut first = searched_turn();
    first = first.replace(
        "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"}",
        "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"}",
    );
    let call = sse(
        "content_block_start",
        json!({"type": "content_block_start", "index": 4, "content_block": {"type": "tool_use", "id": "toolu_r", "name": "Read", "input": {"file_path": "notes.txt"}}}),
    ) + &sse(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 4}),
    );
    let at = first.find("event: message_delta").unwrap();
    first.insert_str(at, &call);
    let final_turn =
        anthropic_start(10, 0, 0) + &anthropic_text(0, "ok") + &anthropic_end("end_turn", 2);
    let server = MockServer::start(vec![Reply::sse(&first), Reply::sse(&final_turn)]);
    let (dir, spec) = task_with(
        "anthropic",
        &server.base_url,
        "permissions:\n  allow: [WebSearch]\n  deny: [\"WebSearch(domain:evil.example)\"]\ntools:\n  web_search:\n    max_uses: 3\n",
    );
    let artifacts = dir.path().join("out");
    run_passing(&spec, &artifacts);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let tool = web_search_tool(&requests[0].json()).unwrap().clone();
    assert_eq!(tool["blocked_domains"], json!(["evil.example"]));
    assert_eq!(tool["max_uses"], 3);
    let second = requests[1].json();
    let assistant = &second["messages"][1];
    assert_eq!(assistant["role"], "assistant");
    let blocks = assistant["content"].as_array().unwrap();
    assert_eq!(blocks[1]["type"], "server_tool_use");
    assert_eq!(blocks[1]["id"], "srvtoolu_01");
    assert_eq!(blocks[2]["type"], "web_search_tool_result");
    assert_eq!(blocks[2]["tool_use_id"], "srvtoolu_01");
    assert_eq!(blocks[2]["content"][0]["encrypted_content"], "EncRypted==");
}

#[test]
fn web_search_is_not_offered_without_a_rule_or_to_other_providers() {
    // No rule: not offered.
    let final_turn =
        anthropic_start(10, 0, 0) + &anthropic_text(0, "ok") + &anthropic_end("end_turn", 2);
    let server = MockServer::start(vec![Reply::sse(&final_turn)]);
    let (dir, spec) = task("anthropic", &server.base_url, "");
    let output = run(&spec, &dir.path().join("out"), Some(KEY));
    assert_eq!(output.status.code(), Some(0));
    assert!(web_search_tool(&server.requests()[0].json()).is_none());

    // Denied outright: not offered even though allowed.
    let server = MockServer::start(vec![Reply::sse(&final_turn)]);
    let (dir, spec) = task_with(
        "anthropic",
        &server.base_url,
        "permissions:\n  allow: [WebSearch]\n  deny: [WebSearch]\n",
    );
    let output = run(&spec, &dir.path().join("out"), Some(KEY));
    assert_eq!(output.status.code(), Some(0));
    assert!(web_search_tool(&server.requests()[0].json()).is_none());

    // OpenAI-compatible servers have no such tool.
    let openai =
        providers::openai_chunk(json!({"role": "assistant", "content": "ok"}), Some("stop"))
            + "data: [DONE]\n\n";
    let server = MockServer::start(vec![Reply::sse(&openai)]);
    let (dir, spec) = task_with(
        "openai",
        &server.base_url,
        "permissions:\n  allow: [WebSearch]\n",
    );
    let output = run(&spec, &dir.path().join("out"), Some(KEY));
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let request = server.requests()[0].json();
    let names: Vec<&Value> = request["tools"]
        .as_array()
        .map(|tools| tools.iter().collect())
        .unwrap_or_default();
    assert!(
        !names.iter().any(|t| t.to_string().contains("web_search")),
        "{request}"
    );
}

#[test]
fn drover_tools_says_where_web_search_is_offered() {
    let plain = common::drover().arg("tools").output().unwrap();
    let text = String::from_utf8_lossy(&plain.stdout);
    let line = text.lines().find(|l| l.starts_with("WebSearch")).unwrap();
    assert!(line.contains("never to openai"), "{line}");

    let (dir, spec) = task_with(
        "anthropic",
        "http://127.0.0.1:9",
        "permissions:\n  allow: [\"WebSearch(domain:docs.rs)\"]\n",
    );
    let listing = common::drover()
        .args(["tools", "--json", "--spec"])
        .arg(&spec)
        .output()
        .unwrap();
    assert_eq!(
        listing.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&listing.stderr)
    );
    let tools: Value = serde_json::from_slice(&listing.stdout).unwrap();
    let search = web_search_tool(&json!({"tools": tools})).unwrap().clone();
    assert_eq!(search["allowed_domains"], json!(["docs.rs"]));

    let (_openai_dir, openai) = task("openai", "http://127.0.0.1:9", "");
    let text = std::fs::read_to_string(&openai).unwrap() + "permissions:\n  allow: [WebSearch]\n";
    std::fs::write(&openai, text).unwrap();
    let listing = common::drover()
        .args(["tools", "--spec"])
        .arg(&openai)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&listing.stdout);
    let line = text.lines().find(|l| l.starts_with("WebSearch")).unwrap();
    assert!(line.contains("not offered to this task"), "{line}");
    drop(dir);
}

#[test]
fn a_blocked_subdomain_of_an_allowed_domain_is_a_spec_error_and_policy_check_answers() {
    let (dir, spec) = task("anthropic", "http://127.0.0.1:9", "");
    let base = std::fs::read_to_string(&spec).unwrap();
    std::fs::write(
        &spec,
        base.clone()
            + "permissions:\n  allow: [\"WebSearch(domain:docs.rs)\"]\n  deny: [\"WebSearch(domain:evil.docs.rs)\"]\n",
    )
    .unwrap();
    let output = common::drover()
        .arg("validate")
        .arg(&spec)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("evil.docs.rs") && stderr.contains("task.yaml:"),
        "{stderr}"
    );

    std::fs::write(
        &spec,
        base + "permissions:\n  allow: [\"WebSearch(domain:docs.rs)\"]\n",
    )
    .unwrap();
    let check = |spec: &std::path::Path| {
        common::drover()
            .args(["policy", "check", "--spec"])
            .arg(spec)
            .args(["--tool", "WebSearch", "--input", "{\"query\":\"x\"}"])
            .output()
            .unwrap()
    };
    let allowed = check(&spec);
    assert_eq!(allowed.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&allowed.stdout).contains("docs.rs"));
    let (_other, plain) = task("anthropic", "http://127.0.0.1:9", "");
    assert_eq!(check(&plain).status.code(), Some(1));
    drop(dir);
}
