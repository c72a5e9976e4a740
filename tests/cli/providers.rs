//! `provider: anthropic` and `provider: openai` end to end: the binary against a mock
//! server on 127.0.0.1 that speaks both wire formats, with faults injected.

use crate::common;
use crate::mock_server;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{drover, events, transcript, write_spec};
use mock_server::{MockServer, Reply};
use serde_json::{Value, json};

pub(crate) const KEY: &str = "sk-test-SECRET-d41d8cd98f00b204";
const KEY_ENV: &str = "DROVER_TEST_PROVIDER_KEY";

pub(crate) fn sse(event: &str, data: Value) -> String {
    format!("event: {event}\ndata: {data}\n\n")
}

pub(crate) fn anthropic_start(input: u64, cache_write: u64, cache_read: u64) -> String {
    sse(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg", "type": "message", "role": "assistant", "content": [], "usage": {"input_tokens": input, "cache_creation_input_tokens": cache_write, "cache_read_input_tokens": cache_read, "output_tokens": 1}}}),
    )
}

pub(crate) fn anthropic_end(stop: &str, output: u64) -> String {
    sse(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": output}}),
    ) + &sse("message_stop", json!({"type": "message_stop"}))
}

pub(crate) fn anthropic_text(index: u64, text: &str) -> String {
    sse(
        "content_block_start",
        json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
    ) + &sse(
        "content_block_delta",
        json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}}),
    ) + &sse(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": index}),
    )
}

/// A turn that reads notes.txt; the file name is written with a JSON escape (`\u006f`)
/// so a split can land inside it.
fn anthropic_read_turn() -> String {
    let mut stream = anthropic_start(100, 2000, 0);
    stream += "event: ping\ndata: {\"type\": \"ping\"}\n\n";
    stream += &anthropic_text(0, "Je lis le fichier \u{e9}\u{1f600}.");
    stream += &sse(
        "content_block_start",
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_01", "name": "Read", "input": {}}}),
    );
    for piece in ["{\"file_path\": \"n\\u00", "6ftes.txt\"}"] {
        stream += &sse(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": piece}}),
        );
    }
    stream += &sse(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 1}),
    );
    stream + &anthropic_end("tool_use", 30)
}

pub(crate) fn anthropic_final_turn() -> String {
    anthropic_start(50, 0, 2100)
        + &anthropic_text(0, "Done: the notes say h\u{e9}llo.")
        + &anthropic_end("end_turn", 12)
}

pub(crate) fn openai_chunk(delta: Value, finish: Option<&str>) -> String {
    format!(
        "data: {}\n\n",
        json!({"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    )
}

pub(crate) fn openai_usage(prompt: u64, completion: u64, cached: u64) -> String {
    format!(
        "data: {}\n\ndata: [DONE]\n\n",
        json!({"choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion, "prompt_tokens_details": {"cached_tokens": cached}}})
    )
}

fn openai_read_turn() -> String {
    openai_chunk(
        json!({"role": "assistant", "content": "Je lis \u{e9}"}),
        None,
    ) + &openai_chunk(
        json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"file_path\": \"n\\u00"}}]}),
        None,
    ) + &openai_chunk(
        json!({"tool_calls": [{"index": 0, "id": "call_abc", "type": "function", "function": {"name": "Read", "arguments": "6ftes.txt\"}"}}]}),
        None,
    ) + &openai_chunk(json!({}), Some("tool_calls"))
        + &openai_usage(1200, 40, 1024)
}

pub(crate) fn openai_final_turn() -> String {
    openai_chunk(json!({"content": "Done."}), None)
        + &openai_chunk(json!({}), Some("stop"))
        + &openai_usage(1300, 5, 1200)
}

/// A temp dir with a workspace holding notes.txt and a spec for `provider`.
pub(crate) fn task(
    provider: &str,
    base_url: &str,
    extra_model: &str,
) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    std::fs::write(dir.path().join("ws/notes.txt"), "h\u{e9}llo\n").unwrap();
    let spec = format!(
        "version: 1\nname: t\nprompt: Read notes.txt and report.\nworkspace: ws\nsandbox: off\nmodel:\n  provider: {provider}\n  name: test-model\n  base_url: {base_url}\n  api_key_env: {KEY_ENV}\n  retry: {{ max_retries: 6, initial_backoff: 10ms, max_backoff: 20ms }}\n{extra_model}"
    );
    let path = write_spec(dir.path(), "task.yaml", &spec);
    (dir, path)
}

/// Lower the spec's `model.retry.max_retries` (the task helper sets 6).
fn with_max_retries(spec: &Path, retries: u32) {
    let text = std::fs::read_to_string(spec)
        .unwrap()
        .replace("max_retries: 6", &format!("max_retries: {retries}"));
    std::fs::write(spec, text).unwrap();
}

pub(crate) fn run(spec: &Path, artifacts: &Path, key: Option<&str>) -> Output {
    let mut command = drover();
    command
        .arg("run")
        .arg(spec)
        .arg("--artifacts")
        .arg(artifacts)
        .env_remove("ANTHROPIC_BASE_URL")
        .env_remove("OPENAI_BASE_URL")
        .env_remove(KEY_ENV);
    no_proxy(&mut command);
    if let Some(key) = key {
        command.env(KEY_ENV, key);
    }
    command.output().unwrap()
}

/// The mock is on 127.0.0.1: no proxy from the environment may stand in between.
fn no_proxy(command: &mut assert_cmd::Command) {
    for var in [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ] {
        command.env_remove(var);
    }
}

fn run_end(lines: &[Value]) -> &Value {
    let last = lines.last().unwrap();
    assert_eq!(last["type"], "run_end", "the transcript is complete");
    last
}

/// Every byte of every file under `dir`, and the process output, are free of the key.
fn assert_no_key(dir: &Path, output: &Output) {
    fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, files);
            } else {
                files.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(dir, &mut files);
    assert!(!files.is_empty());
    for file in files {
        let text = String::from_utf8_lossy(&std::fs::read(&file).unwrap()).into_owned();
        assert!(
            !text.contains(KEY),
            "the key leaked into {}",
            file.display()
        );
    }
    assert!(!String::from_utf8_lossy(&output.stdout).contains(KEY));
    assert!(!String::from_utf8_lossy(&output.stderr).contains(KEY));
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn anthropic_tool_loop_over_awkwardly_split_streams() {
    let first = anthropic_read_turn();
    let in_char = first.find('\u{e9}').unwrap() + 1;
    let in_escape = first.find("u00\"").unwrap() + 1;
    let in_emoji = first.find('\u{1f600}').unwrap() + 2;
    let server = MockServer::start(vec![
        Reply::sse_split(&first, &[7, in_char, in_emoji, in_escape, first.len() - 3]),
        Reply::sse_bytewise(&anthropic_final_turn()),
    ]);
    let (dir, spec) = task("anthropic", &server.base_url, "  max_tokens: 1000\n");
    let artifacts = dir.path().join("out");
    let output = run(&spec, &artifacts, Some(KEY));
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines = transcript(&artifacts.join("t/transcript.jsonl"));
    let responses = events(&lines, "model_response");
    assert_eq!(responses.len(), 2);
    assert_eq!(responses[0]["stop_reason"], "tool_use");
    assert_eq!(
        responses[0]["content"][0]["text"],
        "Je lis le fichier \u{e9}\u{1f600}."
    );
    assert_eq!(
        responses[0]["usage"],
        json!({"input_tokens": 100, "output_tokens": 30, "cache_creation_input_tokens": 2000, "cache_read_input_tokens": 0})
    );
    let call = events(&lines, "tool_call")[0];
    assert_eq!(call["input"], json!({"file_path": "notes.txt"}));
    let result = events(&lines, "tool_result")[0];
    assert_eq!(result["is_error"], false);
    assert!(result["content"].as_str().unwrap().contains("h\u{e9}llo"));
    let end = run_end(&lines);
    assert_eq!(end["reason"], "end_turn");
    assert_eq!(end["usage"]["cache_read_input_tokens"], 2100);
    assert_eq!(end["usage"]["output_tokens"], 42);

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].line, "POST /v1/messages HTTP/1.1");
    assert_eq!(requests[0].header("x-api-key").as_deref(), Some(KEY));
    assert_eq!(
        requests[0].header("anthropic-version").as_deref(),
        Some("2023-06-01")
    );
    for request in &requests {
        let body = request.json();
        assert_eq!(body["model"], "test-model");
        assert_eq!(body["max_tokens"], 1000);
        assert_eq!(body["stream"], true);
        assert_eq!(body["system"][0]["cache_control"]["type"], "ephemeral");
        let tools = body["tools"].as_array().unwrap();
        assert!(
            tools
                .iter()
                .any(|t| t["name"] == "Read" && t["input_schema"]["type"] == "object")
        );
        assert_eq!(tools.last().unwrap()["cache_control"]["type"], "ephemeral");
        assert_eq!(
            tools
                .iter()
                .filter(|t| t.get("cache_control").is_some())
                .count(),
            1
        );
        let last = body["messages"].as_array().unwrap().last().unwrap().clone();
        let last_block = last["content"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(last_block["cache_control"]["type"], "ephemeral");
    }
    let second = requests[1].json();
    let messages = second["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3);
    assert_eq!(messages[1]["content"][1]["type"], "tool_use");
    assert_eq!(messages[2]["content"][0]["type"], "tool_result");
    assert_eq!(messages[2]["content"][0]["tool_use_id"], "toolu_01");
    assert_no_key(&artifacts, &output);
}

#[test]
fn openai_tool_loop_over_a_bytewise_stream() {
    let server = MockServer::start(vec![
        Reply::sse_bytewise(&openai_read_turn()),
        Reply::sse_split(&openai_final_turn(), &[3, 40, 41]),
    ]);
    let (dir, spec) = task("openai", &server.base_url, "");
    let artifacts = dir.path().join("out");
    let output = run(&spec, &artifacts, Some(KEY));
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines = transcript(&artifacts.join("t/transcript.jsonl"));
    let responses = events(&lines, "model_response");
    assert_eq!(responses.len(), 2);
    assert_eq!(responses[0]["content"][0]["text"], "Je lis \u{e9}");
    assert_eq!(responses[0]["content"][1]["id"], "call_abc");
    assert_eq!(
        responses[0]["usage"],
        json!({"input_tokens": 176, "output_tokens": 40, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 1024})
    );
    let result = events(&lines, "tool_result")[0];
    assert!(result["content"].as_str().unwrap().contains("h\u{e9}llo"));
    assert_eq!(run_end(&lines)["reason"], "end_turn");

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].line, "POST /v1/chat/completions HTTP/1.1");
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Bearer {KEY}"))
    );
    let first = requests[0].json();
    assert_eq!(first["stream"], true);
    assert_eq!(first["stream_options"]["include_usage"], true);
    assert_eq!(first["messages"][0]["role"], "system");
    let tools = first["tools"].as_array().unwrap();
    assert!(tools.iter().any(|t| t["type"] == "function"
        && t["function"]["name"] == "Read"
        && t["function"]["parameters"]["type"] == "object"));
    let second = requests[1].json();
    let messages = second["messages"].as_array().unwrap();
    assert_eq!(messages[2]["tool_calls"][0]["id"], "call_abc");
    assert_eq!(messages[3]["role"], "tool");
    assert_eq!(messages[3]["tool_call_id"], "call_abc");
    assert_no_key(&artifacts, &output);
}

#[test]
fn anthropic_transient_faults_are_retried_and_recorded() {
    let first = anthropic_read_turn();
    let server = MockServer::start(vec![
        Reply::status(429, "{\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"slow down\"}}")
            .with_header("retry-after", "1"),
        Reply::status(529, "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}"),
        Reply::status(500, "internal"),
        Reply::Reset,
        Reply::sse_cut(&first, first.len() / 2),
        Reply::sse(&first),
        Reply::sse(&anthropic_final_turn()),
    ]);
    let (dir, spec) = task("anthropic", &server.base_url, "");
    let artifacts = dir.path().join("out");
    let output = run(&spec, &artifacts, Some(KEY));
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines = transcript(&artifacts.join("t/transcript.jsonl"));
    let retries = events(&lines, "retry");
    assert_eq!(retries.len(), 5, "{retries:?}");
    let attempts: Vec<_> = retries
        .iter()
        .map(|r| r["attempt"].as_u64().unwrap())
        .collect();
    assert_eq!(attempts, vec![1, 2, 3, 4, 5]);
    assert_eq!(retries[0]["status"], 429);
    assert_eq!(retries[0]["delay_ms"], 1000, "retry-after is honoured");
    assert_eq!(retries[1]["status"], 529);
    assert_eq!(retries[2]["status"], 500);
    assert!(retries[3].get("status").is_none());
    assert!(
        retries[4]["reason"].as_str().unwrap().contains("cut"),
        "{}",
        retries[4]
    );
    for retry in &retries[1..] {
        assert!(retry["delay_ms"].as_u64().unwrap() <= 20);
    }
    assert_eq!(run_end(&lines)["reason"], "end_turn");
    assert_eq!(server.requests().len(), 7);
    assert_eq!(events(&lines, "model_response").len(), 2);
}

#[test]
fn openai_cut_stream_and_idle_stream_are_retried() {
    let first = openai_read_turn();
    let cut_at = first.find("6ftes").unwrap();
    let server = MockServer::start(vec![
        Reply::Sse {
            pieces: vec![
                first.as_bytes()[..cut_at].to_vec(),
                first.as_bytes()[cut_at..].to_vec(),
            ],
            pause: std::time::Duration::from_millis(1500),
            complete: true,
        },
        Reply::sse_cut(&first, cut_at),
        Reply::status(503, "{\"error\":{\"message\":\"busy\"}}")
            .with_header("retry-after-ms", "15"),
        Reply::sse(&first),
        Reply::sse(&openai_final_turn()),
    ]);
    let (dir, spec) = task(
        "openai",
        &server.base_url,
        "  timeouts: { idle: 300ms, first_byte: 5s, connect: 5s }\n",
    );
    let artifacts = dir.path().join("out");
    let output = run(&spec, &artifacts, Some(KEY));
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines = transcript(&artifacts.join("t/transcript.jsonl"));
    let retries = events(&lines, "retry");
    assert_eq!(retries.len(), 3, "{retries:?}");
    assert!(
        retries[0]["reason"]
            .as_str()
            .unwrap()
            .contains("timeouts.idle")
    );
    assert!(
        retries[1]["reason"].as_str().unwrap().contains("cut"),
        "{}",
        retries[1]
    );
    assert_eq!(retries[2]["status"], 503);
    assert_eq!(retries[2]["delay_ms"], 15);
    assert_eq!(run_end(&lines)["reason"], "end_turn");
}

#[test]
fn client_errors_are_not_retried_and_the_key_never_leaks() {
    let echo = format!(
        "{{\"type\":\"error\",\"error\":{{\"type\":\"authentication_error\",\"message\":\"invalid x-api-key {KEY}\"}}}}"
    );
    let server = MockServer::start(vec![Reply::status(401, &echo)]);
    let (dir, spec) = task("anthropic", &server.base_url, "");
    let artifacts = dir.path().join("out");
    let output = run(&spec, &artifacts, Some(KEY));
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    let lines = transcript(&artifacts.join("t/transcript.jsonl"));
    assert!(events(&lines, "retry").is_empty());
    let end = run_end(&lines);
    assert_eq!(end["reason"], "provider_error");
    assert_eq!(end["status"], "error");
    let message = end["message"].as_str().unwrap();
    assert!(message.contains(&format!("${KEY_ENV}")), "{message}");
    assert_eq!(server.requests().len(), 1);
    assert_no_key(&artifacts, &output);

    let server = MockServer::start(vec![Reply::status(
        400,
        "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"tools.0: bad schema\"}}",
    )]);
    let (dir, spec) = task("openai", &server.base_url, "");
    let artifacts = dir.path().join("out");
    let output = run(&spec, &artifacts, Some(KEY));
    assert_eq!(output.status.code(), Some(3));
    let lines = transcript(&artifacts.join("t/transcript.jsonl"));
    assert!(
        run_end(&lines)["message"]
            .as_str()
            .unwrap()
            .contains("bad schema")
    );
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn exhausted_retries_end_with_provider_error_and_exit_3() {
    let busy = || Reply::status(503, "{\"error\":{\"message\":\"busy\"}}");
    let server = MockServer::start(vec![busy(), busy(), busy(), busy()]);
    let (dir, spec) = task("anthropic", &server.base_url, "");
    with_max_retries(&spec, 2);
    let artifacts = dir.path().join("out");
    let output = run(&spec, &artifacts, Some(KEY));
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    let lines = transcript(&artifacts.join("t/transcript.jsonl"));
    assert_eq!(lines[0]["type"], "run_start");
    assert_eq!(events(&lines, "retry").len(), 2);
    let end = run_end(&lines);
    assert_eq!(end["reason"], "provider_error");
    assert!(
        end["message"]
            .as_str()
            .unwrap()
            .contains("gave up after 3 attempts")
    );
    assert_eq!(server.requests().len(), 3);
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(artifacts.join("summary.json")).unwrap())
            .unwrap();
    assert!(summary.to_string().contains("provider_error"));
}

#[test]
fn a_missing_key_is_bad_input_before_any_request() {
    for provider in ["anthropic", "openai"] {
        let server = MockServer::start(vec![]);
        let (dir, spec) = task(provider, &server.base_url, "");
        let artifacts = dir.path().join("out");
        let output = run(&spec, &artifacts, None);
        assert_eq!(output.status.code(), Some(2), "{provider}");
        assert!(stderr(&output).contains(KEY_ENV), "{}", stderr(&output));
        assert!(!artifacts.exists(), "nothing ran");
        let empty = run(&spec, &artifacts, Some("  "));
        assert_eq!(empty.status.code(), Some(2), "{provider}: empty key");
        assert!(server.requests().is_empty());
    }
}

#[test]
fn a_conversation_too_long_ends_with_context_exhausted() {
    let cases = [
        (
            "anthropic",
            "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"prompt is too long: 212000 tokens > 200000 maximum\"}}",
        ),
        (
            "openai",
            "{\"error\":{\"message\":\"This model's maximum context length is 128000 tokens.\",\"type\":\"invalid_request_error\",\"code\":\"context_length_exceeded\"}}",
        ),
    ];
    for (provider, body) in cases {
        let server = MockServer::start(vec![Reply::status(400, body)]);
        let (dir, spec) = task(provider, &server.base_url, "");
        let artifacts = dir.path().join("out");
        let output = run(&spec, &artifacts, Some(KEY));
        assert_eq!(
            output.status.code(),
            Some(1),
            "{provider}: {}",
            stderr(&output)
        );
        let lines = transcript(&artifacts.join("t/transcript.jsonl"));
        let end = run_end(&lines);
        assert_eq!(end["reason"], "context_exhausted", "{provider}");
        assert_eq!(end["status"], "failed");
        assert!(end["message"].as_str().unwrap().contains("context window"));
        assert_eq!(server.requests().len(), 1, "not retried");
    }
}

#[test]
fn provider_and_model_flags_override_the_spec() {
    let server = MockServer::start(vec![Reply::sse(&openai_final_turn())]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    let spec = write_spec(
        dir.path(),
        "task.yaml",
        "version: 1\nname: t\nprompt: p\nworkspace: ws\nsandbox: off\nmodel:\n  provider: script\n  script: [{text: hi}]\n",
    );
    let artifacts = dir.path().join("out");
    let mut command = drover();
    command
        .args(["run", "--provider", "openai", "--model", "gpt-flag"])
        .arg(&spec)
        .arg("--artifacts")
        .arg(&artifacts)
        .env("OPENAI_BASE_URL", format!("{}/v1", server.base_url))
        .env("OPENAI_API_KEY", KEY)
        .env_remove("ANTHROPIC_BASE_URL");
    no_proxy(&mut command);
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines = transcript(&artifacts.join("t/transcript.jsonl"));
    assert_eq!(lines[0]["provider"], "openai");
    assert_eq!(lines[0]["model"], "gpt-flag");
    let requests = server.requests();
    assert_eq!(requests[0].line, "POST /v1/chat/completions HTTP/1.1");
    assert_eq!(requests[0].json()["model"], "gpt-flag");
}

/// An Anthropic turn with one tool call `name(input)` whose id is `id`.
pub(crate) fn anthropic_call_turn(id: &str, name: &str, input: &Value) -> String {
    anthropic_call_counted(10, id, name, input)
}

/// A turn that calls `name` with `input`, its request counted as `input_tokens`.
pub(crate) fn anthropic_call_counted(
    input_tokens: u64,
    id: &str,
    name: &str,
    input: &Value,
) -> String {
    anthropic_start(input_tokens, 0, 0)
        + &sse(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
        )
        + &sse(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": input.to_string()}}),
        )
        + &sse(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        )
        + &anthropic_end("tool_use", 5)
}

pub(crate) fn anthropic_tool_turn(name: &str, pieces: &[&str], stop: &str) -> String {
    let mut stream = anthropic_start(10, 0, 0);
    stream += &sse(
        "content_block_start",
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_x", "name": name, "input": {}}}),
    );
    for piece in pieces {
        stream += &sse(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": piece}}),
        );
    }
    stream + &anthropic_end(stop, 7)
}

#[test]
fn invalid_tool_json_is_a_tool_error_the_model_sees() {
    let server = MockServer::start(vec![
        Reply::sse(&anthropic_tool_turn(
            "Read",
            &["{\"file_path\": \"notes.txt\",,}"],
            "tool_use",
        )),
        Reply::sse(&anthropic_final_turn()),
    ]);
    let (dir, spec) = task("anthropic", &server.base_url, "");
    let artifacts = dir.path().join("out");
    let output = run(&spec, &artifacts, Some(KEY));
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines = transcript(&artifacts.join("t/transcript.jsonl"));
    let result = events(&lines, "tool_result")[0];
    assert_eq!(result["is_error"], true);
    let content = result["content"].as_str().unwrap();
    assert!(content.contains("not valid JSON"), "{content}");
    let second = server.requests()[1].json();
    let messages = second["messages"].as_array().unwrap();
    assert_eq!(messages[1]["content"][0]["input"], json!({}));
    assert_eq!(messages[2]["content"][0]["is_error"], true);
}

#[test]
fn max_tokens_in_the_middle_of_a_tool_call_runs_nothing() {
    let server = MockServer::start(vec![Reply::sse(&anthropic_tool_turn(
        "Write",
        &["{\"file_path\": \"out.txt\", \"content\": \"half"],
        "max_tokens",
    ))]);
    let (dir, spec) = task(
        "anthropic",
        &server.base_url,
        "permissions:\n  allow: [Write]\n",
    );
    let artifacts = dir.path().join("out");
    let output = run(&spec, &artifacts, Some(KEY));
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let lines = transcript(&artifacts.join("t/transcript.jsonl"));
    assert!(events(&lines, "tool_call").is_empty());
    assert_eq!(run_end(&lines)["reason"], "max_tokens");
    assert!(!dir.path().join("ws/out.txt").exists());
}

#[test]
fn real_model_costs_come_from_the_price_table_and_budgets_stop_the_run() {
    // Priced by the built-in table: claude-sonnet-4-5 at $3 / $15 / $3.75 / $0.30 per
    // million input / output / cache-write / cache-read tokens.
    let server = MockServer::start(vec![
        Reply::sse(&anthropic_read_turn()),
        Reply::sse(&anthropic_final_turn()),
    ]);
    let (dir, spec) = task("anthropic", &server.base_url, "");
    let text = std::fs::read_to_string(&spec)
        .unwrap()
        .replace("name: test-model", "name: claude-sonnet-4-5");
    std::fs::write(&spec, text).unwrap();
    let artifacts = dir.path().join("out");
    let output = run(&spec, &artifacts, Some(KEY));
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines = transcript(&artifacts.join("t/transcript.jsonl"));
    let end = run_end(&lines);
    let usage = &end["usage"];
    let tokens = |key: &str| usage[key].as_u64().unwrap() as f64;
    let expected = (tokens("input_tokens") * 3.0
        + tokens("output_tokens") * 15.0
        + tokens("cache_creation_input_tokens") * 3.75
        + tokens("cache_read_input_tokens") * 0.30)
        / 1_000_000.0;
    let cost = end["cost_usd"].as_f64().unwrap();
    assert!((cost - expected).abs() < 1e-9, "{cost} vs {expected}");
    assert!(expected > 0.0);

    // The same conversation with a budget smaller than the first turn's cost: the run
    // stops with reason budget before a second request reaches the server.
    let server = MockServer::start(vec![
        Reply::sse(&anthropic_read_turn()),
        Reply::sse(&anthropic_final_turn()),
    ]);
    let (dir, spec) = task("anthropic", &server.base_url, "");
    let text = std::fs::read_to_string(&spec)
        .unwrap()
        .replace("name: test-model", "name: claude-sonnet-4-5")
        + "limits:\n  max_cost_usd: 0.000001\n";
    std::fs::write(&spec, text).unwrap();
    let artifacts = dir.path().join("out");
    let output = run(&spec, &artifacts, Some(KEY));
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let lines = transcript(&artifacts.join("t/transcript.jsonl"));
    assert_eq!(run_end(&lines)["reason"], "budget");
    assert_eq!(
        server.requests().len(),
        1,
        "no request after the budget was spent"
    );
}

#[test]
fn answers_without_their_stop_reason_are_incomplete_never_a_pass() {
    // OpenAI: text, then [DONE] with no finish_reason; Anthropic: message_stop with no
    // message_delta. Retried like a cut stream; when it never completes, provider_error.
    let openai_cut = || {
        Reply::sse(
            &(openai_chunk(json!({"role": "assistant", "content": "Done."}), None)
                + "data: [DONE]\n\n"),
        )
    };
    let anthropic_cut = || {
        Reply::sse(
            &(anthropic_start(50, 0, 0)
                + &anthropic_text(0, "Done.")
                + &sse("message_stop", json!({"type": "message_stop"}))),
        )
    };
    for (provider, reply) in [
        ("openai", &openai_cut as &dyn Fn() -> Reply),
        ("anthropic", &anthropic_cut as &dyn Fn() -> Reply),
    ] {
        // Incomplete once, then complete: retried, and the task passes on the real answer.
        let complete = if provider == "openai" {
            Reply::sse(&openai_final_turn())
        } else {
            Reply::sse(&anthropic_final_turn())
        };
        let server = MockServer::start(vec![reply(), complete]);
        let (dir, spec) = task(provider, &server.base_url, "");
        let artifacts = dir.path().join("out");
        let output = run(&spec, &artifacts, Some(KEY));
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let lines = transcript(&artifacts.join("t/transcript.jsonl"));
        let retries = events(&lines, "retry");
        assert_eq!(retries.len(), 1, "{provider}: {retries:?}");
        assert!(
            retries[0]["reason"]
                .as_str()
                .unwrap()
                .contains("incomplete_response"),
            "{}",
            retries[0]
        );

        // Never complete: provider_error, exit 3, not passed.
        let server = MockServer::start(vec![reply(), reply(), reply()]);
        let (dir, spec) = task(provider, &server.base_url, "");
        with_max_retries(&spec, 2);
        let artifacts = dir.path().join("out");
        let output = run(&spec, &artifacts, Some(KEY));
        assert_eq!(
            output.status.code(),
            Some(3),
            "{provider}: {}",
            stderr(&output)
        );
        let lines = transcript(&artifacts.join("t/transcript.jsonl"));
        let end = run_end(&lines);
        assert_eq!(end["reason"], "provider_error");
        assert!(
            end["message"]
                .as_str()
                .unwrap()
                .contains("incomplete_response"),
            "{end}"
        );
    }
}

#[test]
fn keep_alives_do_not_extend_the_request_deadline() {
    // A server that sends only SSE keep-alive comments, one every 100 ms: the idle timer
    // never fires; model.timeouts.request ends the attempt.
    let trickle = || Reply::Sse {
        pieces: vec![b": keep-alive\n\n".to_vec(); 60],
        pause: std::time::Duration::from_millis(100),
        complete: false,
    };
    let server = MockServer::start(vec![trickle(), trickle()]);
    let (dir, spec) = task(
        "openai",
        &server.base_url,
        "  timeouts: { request: 1s, idle: 5s }\n",
    );
    with_max_retries(&spec, 1);
    let artifacts = dir.path().join("out");
    let started = std::time::Instant::now();
    let output = run(&spec, &artifacts, Some(KEY));
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
    let lines = transcript(&artifacts.join("t/transcript.jsonl"));
    let retries = events(&lines, "retry");
    assert_eq!(retries.len(), 1);
    assert!(
        retries[0]["reason"]
            .as_str()
            .unwrap()
            .contains("model.timeouts.request"),
        "{}",
        retries[0]
    );
    assert_eq!(run_end(&lines)["reason"], "provider_error");
}

#[test]
fn a_server_that_reports_no_usage_gets_an_estimate_and_the_budget_holds() {
    // The server ignores stream_options.include_usage: no usage chunk at all.
    let without_usage = |stream: String| {
        let cut = stream.find("data: {\"choices\":[],\"usage\"").unwrap();
        Reply::sse(&(stream[..cut].to_string() + "data: [DONE]\n\n"))
    };
    let server = MockServer::start(vec![
        without_usage(openai_read_turn()),
        without_usage(openai_read_turn()),
        without_usage(openai_final_turn()),
    ]);
    let (dir, spec) = task("openai", &server.base_url, "");
    let spec_text = std::fs::read_to_string(&spec).unwrap() + "limits:\n  max_tokens: 100\n";
    std::fs::write(&spec, spec_text).unwrap();
    let artifacts = dir.path().join("out");
    let output = run(&spec, &artifacts, Some(KEY));
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let lines = transcript(&artifacts.join("t/transcript.jsonl"));
    let responses = events(&lines, "model_response");
    assert_eq!(
        responses.len(),
        1,
        "no request after the estimate passed the budget"
    );
    let usage = &responses[0]["usage"];
    assert_eq!(usage["estimated"], true, "{usage}");
    assert!(usage["input_tokens"].as_u64().unwrap() > 100, "{usage}");
    assert!(usage["output_tokens"].as_u64().unwrap() > 0, "{usage}");
    let end = run_end(&lines);
    assert_eq!(end["reason"], "budget", "{end}");
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(artifacts.join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["tasks"][0]["usage"]["estimated"], true);
    let md = std::fs::read_to_string(artifacts.join("summary.md")).unwrap();
    assert!(md.contains("(estimated)"), "{md}");
}

/// An HTTPS server on 127.0.0.1 whose certificate (for `localhost`) is signed by a
/// private certificate authority, as behind a corporate TLS proxy. It answers every
/// connection with `reply` (a whole HTTP response). Returns the port and the CA in PEM.
fn private_ca_server(reply: String) -> (u16, String) {
    use std::io::{Read, Write};
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "drover test corporate CA");
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let leaf_key = rcgen::KeyPair::generate().unwrap();
    let leaf = rcgen::CertificateParams::new(vec!["localhost".to_string()])
        .unwrap()
        .signed_by(&leaf_key, &ca, &ca_key)
        .unwrap();
    let config = rustls::ServerConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(
        vec![leaf.der().clone()],
        rustls::pki_types::PrivateKeyDer::Pkcs8(leaf_key.serialize_der().into()),
    )
    .unwrap();
    let config = std::sync::Arc::new(config);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let Ok(connection) = rustls::ServerConnection::new(config.clone()) else {
                continue;
            };
            let mut tls = rustls::StreamOwned::new(connection, stream);
            // Read the request head and its body (Content-Length), then answer.
            let mut request = Vec::new();
            let mut buffer = [0u8; 8192];
            let complete = loop {
                match tls.read(&mut buffer) {
                    Ok(0) | Err(_) => break false,
                    Ok(n) => request.extend_from_slice(&buffer[..n]),
                }
                let text = String::from_utf8_lossy(&request).to_string();
                if let Some(end) = text.find("\r\n\r\n") {
                    let length = text[..end]
                        .lines()
                        .find_map(|line| {
                            let (name, value) = line.split_once(':')?;
                            name.eq_ignore_ascii_case("content-length")
                                .then(|| value.trim().parse::<usize>().ok())?
                        })
                        .unwrap_or(0);
                    if request.len() >= end + 4 + length {
                        break true;
                    }
                }
            };
            if complete {
                let _ = tls.write_all(reply.as_bytes());
                let _ = tls.flush();
            }
            tls.conn.send_close_notify();
            let _ = tls.flush();
        }
    });
    (port, ca.pem())
}

#[test]
fn a_private_certificate_authority_is_trusted_through_ssl_cert_file_and_only_then() {
    let stream = anthropic_final_turn();
    let reply = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{stream}",
        stream.len()
    );
    let (port, ca_pem) = private_ca_server(reply);
    let (dir, spec) = task("anthropic", &format!("https://localhost:{port}"), "");
    with_max_retries(&spec, 0);
    let ca_file = dir.path().join("corporate-ca.pem");
    std::fs::write(&ca_file, ca_pem).unwrap();

    // The platform's trust store, as SSL_CERT_FILE names it, is used: the run passes.
    let mut command = drover();
    command
        .arg("run")
        .arg(&spec)
        .arg("--artifacts")
        .arg(dir.path().join("trusted"))
        .env(KEY_ENV, KEY)
        .env("SSL_CERT_FILE", &ca_file)
        .env_remove("SSL_CERT_DIR");
    no_proxy(&mut command);
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));

    // Without it the certificate is not trusted: the task is a provider error, and the
    // message says why.
    let mut command = drover();
    command
        .arg("run")
        .arg(&spec)
        .arg("--artifacts")
        .arg(dir.path().join("untrusted"))
        .env(KEY_ENV, KEY)
        .env_remove("SSL_CERT_FILE")
        .env("SSL_CERT_DIR", dir.path().join("no-such-dir"));
    no_proxy(&mut command);
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    let lines = transcript(&dir.path().join("untrusted/t/transcript.jsonl"));
    let end = run_end(&lines);
    assert_eq!(end["reason"], "provider_error");
    let message = end["message"].as_str().unwrap().to_lowercase();
    assert!(message.contains("certificate"), "{message}");
}
