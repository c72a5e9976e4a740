//! Secret values never reach an artifact or the model: drover's own environment is not
//! readable from `/proc/<pid>/environ` by the agent's commands, a command that reads a
//! secret from a file gets `[redacted]` in its result, and checks run with the scrubbed
//! environment and have their output redacted too. Sandbox on and off alike.

use crate::common;
use crate::mock_server;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{drover, events, transcript, write_spec};
use mock_server::{MockServer, Reply};
use serde_json::{Value, json};

/// A secret-looking variable of drover's environment.
const FAKE_KEY: &str = "fake-api-key-value-7c6d5e4f3a2b";
/// A provider key in drover's environment (the scripted model does not use it).
const PROVIDER_KEY: &str = "sk-ant-provider-key-0f1e2d3c4b5a";

/// Every file under `dir`.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(files(&path));
        } else {
            found.push(path);
        }
    }
    found
}

/// No file under `dir`, and not drover's output, holds any of `secrets`.
fn assert_nowhere(dir: &Path, output: &Output, secrets: &[&str]) {
    let all = files(dir);
    assert!(all.len() >= 5, "{all:?}");
    for file in all {
        let text = String::from_utf8_lossy(&std::fs::read(&file).unwrap()).into_owned();
        for secret in secrets {
            assert!(
                !text.contains(secret),
                "{secret} leaked into {}:\n{text}",
                file.display()
            );
        }
    }
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    for secret in secrets {
        assert!(!printed.contains(secret), "{secret} printed:\n{printed}");
    }
}

/// The scripted spec: Bash tricks to read drover's environment, a final text that quotes
/// a key (as a model might), and a failing check that tries the same.
fn spec(dir: &Path, sandbox: &str) -> PathBuf {
    std::fs::create_dir_all(dir.join("ws")).unwrap();
    std::fs::write(
        dir.join("ws/creds.env"),
        format!("FAKE_API_KEY={FAKE_KEY}\nANTHROPIC_API_KEY={PROVIDER_KEY}\n"),
    )
    .unwrap();
    let commands = [
        "cat creds.env",
        "echo \"fake=$FAKE_API_KEY model=$ANTHROPIC_API_KEY\"",
        "for p in /proc/[0-9]*; do tr '\\0' '\\n' < $p/environ; done 2>/dev/null | grep -a _API_KEY= | sort -u",
    ];
    let mut script = String::new();
    for command in commands {
        let call = json!([{ "name": "Bash", "input": { "command": command } }]);
        script.push_str(&format!("    - tool_calls: {call}\n"));
    }
    script.push_str(&format!("    - text: \"The key is {FAKE_KEY}.\"\n"));
    let check = "echo \"check-fake=$FAKE_API_KEY\"; echo \"check-model=$ANTHROPIC_API_KEY\"; grep -a _API_KEY= creds.env; for p in /proc/[0-9]*; do tr '\\0' '\\n' < $p/environ; done 2>/dev/null | grep -a _API_KEY= | sort -u; exit 1";
    let body = format!(
        "version: 1\nname: leaky\nprompt: p\nworkspace: ws\n{sandbox}model:\n  provider: script\n  script:\n{script}permissions:\n  allow: [Bash]\nchecks:\n  - name: env check\n    run: {}\n",
        json!(check)
    );
    write_spec(dir, "task.yaml", &body)
}

fn run(dir: &Path, spec: &Path) -> (PathBuf, Output) {
    let artifacts = dir.join("out");
    let output = drover()
        .env("FAKE_API_KEY", FAKE_KEY)
        .env("ANTHROPIC_API_KEY", PROVIDER_KEY)
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_STEP_SUMMARY", artifacts.join("step-summary.md"))
        .arg("run")
        .arg(spec)
        .arg("--artifacts")
        .arg(&artifacts)
        .output()
        .unwrap();
    (artifacts, output)
}

fn check_run(sandbox: &str) {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(dir.path(), sandbox);
    let (artifacts, output) = run(dir.path(), &spec);
    assert_eq!(
        output.status.code(),
        Some(1),
        "the check fails: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_nowhere(&artifacts, &output, &[FAKE_KEY, PROVIDER_KEY]);

    let lines = transcript(&artifacts.join("leaky/transcript.jsonl"));
    let results: Vec<String> = events(&lines, "tool_result")
        .iter()
        .map(|r| r["content"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(results.len(), 3, "{results:?}");
    // What a command reads from a file is redacted.
    // read of another domain's /proc entry. Either way no value is in the result.
    let file = &results[0];
    assert!(file.contains("FAKE_API_KEY=[redacted]"), "{file}");
    assert!(file.contains("ANTHROPIC_API_KEY=[redacted]"), "{file}");
    assert_eq!(results[1], "fake= model=", "the environment is scrubbed");
    // No process's environment (drover's included, sandbox on or off) shows the keys.
    // Unsandboxed, a command sees every process: another test's drover, in the instant
    // between its start and hiding its environment, can show the same keys, which are
    // redacted all the same (checked above); sandboxed, it sees none.
    let sandboxed = !sandbox.contains("off");
    if sandboxed {
        assert!(!results[2].contains("FAKE_API_KEY="), "{}", results[2]);
        assert!(!results[2].contains("ANTHROPIC_API_KEY="), "{}", results[2]);
    } else {
        assert!(!results[2].contains(FAKE_KEY) && !results[2].contains(PROVIDER_KEY));
    }

    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(artifacts.join("summary.json")).unwrap())
            .unwrap();
    let task = &summary["tasks"][0];
    assert_eq!(task["final_text"], "The key is [redacted].");
    let tail = task["checks"][0]["output_tail"].as_str().unwrap();
    // The check's own environment is scrubbed like Bash's; what it reads from a file is
    // redacted, and no process's environment shows the keys.
    assert!(
        tail.starts_with("check-fake=\ncheck-model=\n"),
        "checks see no secrets: {tail}"
    );
    assert!(tail.contains("FAKE_API_KEY=[redacted]"), "{tail}");
    assert!(tail.contains("ANTHROPIC_API_KEY=[redacted]"), "{tail}");
    if sandboxed {
        assert_eq!(tail.matches("FAKE_API_KEY=").count(), 1, "{tail}");
    }
    let junit = std::fs::read_to_string(artifacts.join("junit.xml")).unwrap();
    assert!(junit.contains("FAKE_API_KEY=[redacted]"), "{junit}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("::error "), "annotated: {stdout}");
}

#[test]
fn secret_values_are_redacted_unsandboxed() {
    check_run("sandbox: off\n");
}

#[test]
fn secret_values_are_redacted_sandboxed() {
    check_run("");
}

/// A passed variable is the spec's choice: not scrubbed, not redacted.
#[test]
fn a_passed_variable_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    let call = json!([{ "name": "Bash", "input": { "command": "echo \"fake=$FAKE_API_KEY\"" } }]);
    let body = format!(
        "version: 1\nname: leaky\nprompt: p\nworkspace: ws\nsandbox: off\nenv:\n  pass: [FAKE_API_KEY]\nmodel:\n  provider: script\n  script:\n    - tool_calls: {call}\n    - text: done\npermissions:\n  allow: [Bash]\nchecks:\n  - name: sees it\n    run: test \"$FAKE_API_KEY\" = {FAKE_KEY}\n"
    );
    let spec = write_spec(dir.path(), "task.yaml", &body);
    let (artifacts, output) = run(dir.path(), &spec);
    assert_eq!(
        output.status.code(),
        Some(0),
        "checks see passed variables: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let lines = transcript(&artifacts.join("leaky/transcript.jsonl"));
    let result = events(&lines, "tool_result")[0]["content"].clone();
    assert_eq!(result, format!("fake={FAKE_KEY}"));
}

const KEY: &str = "sk-test-model-key-a1b2c3d4e5f6";
const KEY_ENV: &str = "DROVER_TEST_REDACT_KEY";

fn sse(event: &str, data: Value) -> String {
    format!("event: {event}\ndata: {data}\n\n")
}

fn anthropic_turn(blocks: &[Value], stop: &str) -> String {
    let mut stream = sse(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg", "type": "message", "role": "assistant", "content": [], "usage": {"input_tokens": 10, "output_tokens": 1}}}),
    );
    for (index, block) in blocks.iter().enumerate() {
        let (start, delta) = match block["type"].as_str() {
            Some("tool_use") => (
                json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}),
                json!({"type": "input_json_delta", "partial_json": block["input"].to_string()}),
            ),
            _ => (
                json!({"type": "text", "text": ""}),
                json!({"type": "text_delta", "text": block["text"]}),
            ),
        };
        stream += &sse(
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": start}),
        );
        stream += &sse(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index, "delta": delta}),
        );
        stream += &sse(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        );
    }
    stream
        + &sse(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 5}}),
        )
        + &sse("message_stop", json!({"type": "message_stop"}))
}

/// With a real provider, the key the requests carry is the one a command reads from
/// drover's environment: the model is sent `[redacted]`, as the transcript records.
#[test]
fn the_model_never_sees_its_own_key() {
    let server = MockServer::start(vec![
        Reply::sse(&anthropic_turn(
            &[
                json!({"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "cat creds.env; for p in /proc/[0-9]*; do tr '\\0' '\\n' < $p/environ; done 2>/dev/null | grep -a _KEY= | sort -u"}}),
            ],
            "tool_use",
        )),
        Reply::sse(&anthropic_turn(
            &[json!({"type": "text", "text": "Done."})],
            "end_turn",
        )),
    ]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    std::fs::write(
        dir.path().join("ws/creds.env"),
        format!("{KEY_ENV}={KEY}\nFAKE_API_KEY={FAKE_KEY}\n"),
    )
    .unwrap();
    let body = format!(
        "version: 1\nname: t\nprompt: p\nworkspace: ws\nsandbox: off\nmodel:\n  provider: anthropic\n  name: test-model\n  base_url: {}\n  api_key_env: {KEY_ENV}\n  retry: {{ max_retries: 0 }}\npermissions:\n  allow: [Bash]\n",
        server.base_url
    );
    let spec = write_spec(dir.path(), "task.yaml", &body);
    let artifacts = dir.path().join("out");
    let mut command = common::drover_without_proxy();
    let output = command
        .env(KEY_ENV, KEY)
        .env("FAKE_API_KEY", FAKE_KEY)
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
    assert_nowhere(&artifacts, &output, &[KEY, FAKE_KEY]);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let second = requests[1].json();
    let messages = second["messages"].as_array().unwrap();
    let sent = messages[2]["content"][0]["content"].to_string();
    assert!(sent.contains(&format!("{KEY_ENV}=[redacted]")), "{sent}");
    assert!(sent.contains("FAKE_API_KEY=[redacted]"), "{sent}");
    assert!(
        !second.to_string().contains(KEY),
        "the model was sent its key"
    );
    assert!(!second.to_string().contains(FAKE_KEY));
    let lines = transcript(&artifacts.join("t/transcript.jsonl"));
    let recorded = events(&lines, "tool_result")[0]["content"].to_string();
    assert_eq!(
        recorded, sent,
        "the model reads what the transcript records"
    );
}
