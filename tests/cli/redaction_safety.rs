//! Redaction never corrupts what the model and the user see: a dummy key for a local
//! server (`x`, `none`, `ollama`) is not redacted, drover says so once, and a real secret
//! is still redacted everywhere, diff.patch included.

use crate::common;
use crate::mock_server;

use std::path::Path;
use std::process::Output;

use common::{drover, events, transcript, write_spec};
use mock_server::{MockServer, Reply};
use serde_json::{Value, json};

const KEY_ENV: &str = "DROVER_TEST_LOCAL_KEY";
const LONG_KEY: &str = "sk-local-7Hq2ZpW9xKd4";
const ORDINARY: &str = "nonexistent xylophone: none of the ollama models; sandbox text";

fn chunk(delta: Value, finish: Option<&str>) -> String {
    format!(
        "data: {}\n\n",
        json!({"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    )
}

fn done() -> String {
    format!(
        "data: {}\n\ndata: [DONE]\n\n",
        json!({"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}})
    )
}

/// A turn that reads notes.txt and echoes the ordinary text.
fn tool_turn() -> String {
    let calls = json!([
        {"index": 0, "id": "call_1", "type": "function", "function": {"name": "Read", "arguments": json!({"file_path": "notes.txt"}).to_string()}},
        {"index": 1, "id": "call_2", "type": "function", "function": {"name": "Bash", "arguments": json!({"command": format!("echo '{ORDINARY}'")}).to_string()}},
    ]);
    chunk(json!({"role": "assistant", "tool_calls": calls}), None)
        + &chunk(json!({}), Some("tool_calls"))
        + &done()
}

fn final_turn() -> String {
    chunk(json!({"role": "assistant", "content": ORDINARY}), None)
        + &chunk(json!({}), Some("stop"))
        + &done()
}

/// Run `tasks` copies of the task against a local OpenAI-compatible server with `key`.
fn run_with_key(dir: &Path, key: &str, tasks: usize) -> (Output, MockServer) {
    let mut replies = Vec::new();
    for _ in 0..tasks {
        replies.push(Reply::sse(&tool_turn()));
        replies.push(Reply::sse(&final_turn()));
    }
    let server = MockServer::start(replies);
    std::fs::create_dir_all(dir.join("ws")).unwrap();
    std::fs::write(dir.join("ws/notes.txt"), format!("{ORDINARY}\n")).unwrap();
    let specs = dir.join("specs");
    std::fs::create_dir_all(&specs).unwrap();
    for n in 0..tasks {
        let body = format!(
            "version: 1\nname: t{n}\nprompt: p\nworkspace: ../ws\nsandbox: off\nmodel:\n  provider: openai\n  name: local-model\n  base_url: {}\n  api_key_env: {KEY_ENV}\n  retry: {{ max_retries: 0 }}\npermissions:\n  allow: [Read, Bash]\n",
            server.base_url
        );
        write_spec(&specs, &format!("t{n}.yaml"), &body);
    }
    let mut command = common::drover_without_proxy();
    let output = command
        .env(KEY_ENV, key)
        .arg("run")
        .arg(&specs)
        .arg("--jobs")
        .arg("1")
        .arg("--artifacts")
        .arg(dir.join("out"))
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    (output, server)
}

/// What the model was sent and what the transcript recorded, for comparison across keys.
fn observed(dir: &Path, server: &MockServer) -> (Vec<String>, Value) {
    let lines = transcript(&dir.join("out/t0/transcript.jsonl"));
    let results: Vec<String> = events(&lines, "tool_result")
        .iter()
        .map(|r| r["content"].as_str().unwrap().to_string())
        .collect();
    // The system prompt names the workspace, whose temporary path differs between runs.
    let second = server.requests()[1].json().to_string();
    let workspace = dir.join("ws").canonicalize().unwrap();
    let second = second.replace(workspace.to_str().unwrap(), "<ws>");
    let second = second.replace(dir.to_str().unwrap(), "<dir>");
    (results, serde_json::from_str(&second).unwrap())
}

#[test]
fn dummy_keys_leave_every_text_byte_identical_to_a_long_key() {
    let reference_dir = tempfile::tempdir().unwrap();
    let (output, server) = run_with_key(reference_dir.path(), LONG_KEY, 1);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(!stderr.contains("not redacted"), "{stderr}");
    let (reference_results, reference_request) = observed(reference_dir.path(), &server);
    assert_eq!(reference_results.len(), 2);
    assert!(
        reference_results[0].contains(ORDINARY),
        "{reference_results:?}"
    );
    assert_eq!(reference_results[1].trim_end(), ORDINARY);
    let summary = std::fs::read_to_string(reference_dir.path().join("out/summary.json")).unwrap();

    for key in ["x", "none", "ollama", "sk-no-key-required"] {
        let dir = tempfile::tempdir().unwrap();
        let (output, server) = run_with_key(dir.path(), key, 2);
        let (results, request) = observed(dir.path(), &server);
        assert_eq!(results, reference_results, "key {key:?}");
        // Tool descriptions, the system prompt and the tool results the model was sent.
        assert_eq!(request, reference_request, "key {key:?}");
        let lines = transcript(&dir.path().join("out/t0/transcript.jsonl"));
        let start = events(&lines, "run_start")[0];
        let skipped = start["redaction_skipped"].as_array().unwrap();
        assert!(skipped.iter().any(|s| s["variable"] == KEY_ENV), "{start}");
        let end = events(&lines, "run_end")[0];
        assert_eq!(end["redacted"], 0, "{end}");
        let text = std::fs::read_to_string(dir.path().join("out/t0/transcript.jsonl")).unwrap();
        assert!(!text.contains("[redacted]"), "key {key:?}: {text}");
        let this_summary = std::fs::read_to_string(dir.path().join("out/summary.json")).unwrap();
        assert!(!this_summary.contains("[redacted]"), "{this_summary}");
        assert!(summary.contains(ORDINARY) && this_summary.contains(ORDINARY));
        // Said once for the whole run of two tasks, naming the variable.
        let stderr = String::from_utf8_lossy(&output.stderr);
        let warning = format!("the value of {KEY_ENV} is not redacted");
        assert_eq!(stderr.matches(&warning).count(), 1, "key {key:?}: {stderr}");
    }
}

/// A real secret the agent writes into a file is redacted in the tool result, the
/// transcript, the reports and diff.patch, and the count says so.
#[test]
fn a_long_secret_planted_in_a_file_is_redacted_everywhere() {
    let secret = "fake-secret-token-93ac71bd";
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    let write = json!([{ "name": "Write", "input": { "file_path": "leaked.txt", "content": format!("token={secret}\n") } }]);
    let read = json!([{ "name": "Read", "input": { "file_path": "leaked.txt" } }]);
    let body = format!(
        "version: 1\nname: plant\nprompt: p\nworkspace: ws\nisolation: copy\nmodel:\n  provider: script\n  script:\n    - tool_calls: {write}\n    - tool_calls: {read}\n    - text: \"wrote {secret}\"\npermissions:\n  allow: [Read, Write]\n"
    );
    let spec = write_spec(dir.path(), "task.yaml", &body);
    let artifacts = dir.path().join("out");
    let output = drover()
        .env("DEPLOY_TOKEN", secret)
        .env("SHORT_TOKEN", "abc")
        .arg("run")
        .arg(&spec)
        .arg("--artifacts")
        .arg(&artifacts)
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    for file in [
        "plant/transcript.jsonl",
        "plant/diff.patch",
        "summary.json",
        "summary.md",
        "junit.xml",
    ] {
        let text = std::fs::read_to_string(artifacts.join(file)).unwrap();
        assert!(!text.contains(secret), "{file} leaks the secret:\n{text}");
    }
    let patch = std::fs::read_to_string(artifacts.join("plant/diff.patch")).unwrap();
    assert!(patch.contains("+token=[redacted]"), "{patch}");
    let lines = transcript(&artifacts.join("plant/transcript.jsonl"));
    let result = events(&lines, "tool_result")[1]["content"]
        .as_str()
        .unwrap();
    assert!(result.contains("token=[redacted]"), "{result}");
    let end = events(&lines, "run_end")[0];
    assert!(end["redacted"].as_u64().unwrap() >= 2, "{end}");
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(artifacts.join("summary.json")).unwrap())
            .unwrap();
    let task = &summary["tasks"][0];
    assert!(task["redacted"].as_u64().unwrap() >= 3, "{task}");
    assert_eq!(task["final_text"], "wrote [redacted]");
    let md = std::fs::read_to_string(artifacts.join("summary.md")).unwrap();
    assert!(
        md.contains("Secret values were replaced by `[redacted]` in the artifacts of: `plant` ("),
        "{md}"
    );
    // The too-short secret is named (never its value) once.
    let start = events(&lines, "run_start")[0];
    let skipped = start["redaction_skipped"].as_array().unwrap();
    assert!(
        skipped.contains(&json!({ "variable": "SHORT_TOKEN", "reason": "too_short" })),
        "{start}"
    );
    assert!(!start.to_string().contains("\"abc\""), "{start}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        stderr
            .matches("the value of SHORT_TOKEN is not redacted")
            .count(),
        1,
        "{stderr}"
    );
}
