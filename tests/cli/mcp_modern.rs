//! A server written with the official Python SDK (`mcp`, installed by .ci/run into
//! .ci/venv), which speaks the stateless 2026-07-28 revision: drover discovers it with
//! `server/discover` rather than the legacy handshake.

use std::path::{Path, PathBuf};

use crate::common::{self, events, transcript};
use crate::mcp::{stderr, task};

/// The Python that has the `mcp` package, and the test server. The build found the SDK
/// in .ci/venv (`drover_has_python_mcp`; a test that calls this carries
/// `#[cfg_attr(not(drover_has_python_mcp), ignore = …)]`): if it is gone, the test fails.
pub(crate) fn modern_server() -> (PathBuf, PathBuf) {
    let python = common::require_installed(".ci/venv/bin/python");
    let script = common::repo().join("tests/cli/fixtures/modern_server.py");
    let has_sdk = std::process::Command::new(&python)
        .args(["-c", "import mcp"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        has_sdk,
        "drover_has_python_mcp is set (the build found the Python MCP SDK in .ci/venv, or CI=true runs every test), but it cannot be imported; run .ci/run"
    );
    (python, script)
}

/// The `mcp.servers` entry that starts `script` over stdio as server `modern`.
fn stdio_entry(python: &Path, script: &Path) -> String {
    format!(
        "    modern:\n      command: {}\n      args: [{}, stdio]\n",
        serde_json::to_string(python).unwrap(),
        serde_json::to_string(script).unwrap()
    )
}

#[test]
#[cfg_attr(
    not(drover_has_python_mcp),
    ignore = "needs the Python MCP SDK in .ci/venv: .ci/run installs it"
)]
fn a_python_sdk_server_is_discovered_with_the_2026_07_28_revision_over_stdio() {
    let (python, script) = modern_server();
    let server = stdio_entry(&python, &script);
    let (dir, spec) = task(
        &server,
        "mcp__modern",
        r#"{ name: mcp__modern__add, input: { a: 2, b: 40 } }, { name: mcp__modern__add, input: { a: "two", b: 1 } }"#,
    );
    let output = crate::mcp::run(dir.path(), &spec);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines = transcript(&dir.path().join("out/t/transcript.jsonl"));
    let started = events(&lines, "mcp_server")[0];
    assert_eq!(started["protocol_version"], "2026-07-28", "{started}");
    let offered: Vec<&str> = started["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        offered,
        [
            "mcp__modern__add",
            "mcp__modern__gif_of",
            "mcp__modern__pixel",
            "mcp__modern__whoami"
        ]
    );
    let results = events(&lines, "tool_result");
    assert_eq!(results[0]["is_error"], false, "{}", results[0]);
    assert_eq!(results[0]["content"], "42");
    // The server's inputSchema is enforced before the call leaves drover.
    assert_eq!(results[1]["is_error"], true, "{}", results[1]);
    assert!(
        results[1]["content"].as_str().unwrap().contains("schema"),
        "{}",
        results[1]
    );
}

#[test]
#[cfg_attr(
    not(drover_has_python_mcp),
    ignore = "needs the Python MCP SDK in .ci/venv: .ci/run installs it"
)]
fn an_mcp_image_reaches_the_anthropic_model_as_an_image_block_and_replays_exactly() {
    use crate::mock_server::{MockServer, Reply};
    use crate::providers::{anthropic_final_turn, anthropic_tool_turn};

    let (python, script) = modern_server();
    let model = MockServer::start(vec![
        Reply::sse(&anthropic_tool_turn(
            "mcp__modern__pixel",
            &["{}"],
            "tool_use",
        )),
        Reply::sse(&anthropic_final_turn()),
    ]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    let spec = common::write_spec(
        dir.path(),
        "task.yaml",
        &format!(
            "version: 1\nname: t\nprompt: show me the pixel\nworkspace: ws\nmodel:\n  provider: anthropic\n  name: test-model\n  base_url: {}\n  api_key_env: DROVER_TEST_IMAGE_KEY\npermissions:\n  allow: [mcp__modern]\nmcp:\n  servers:\n    modern:\n      command: {}\n      args: [{}, stdio]\n",
            model.base_url,
            serde_json::to_string(&python).unwrap(),
            serde_json::to_string(&script).unwrap()
        ),
    );
    let output = common::drover_without_proxy()
        .arg("run")
        .arg(&spec)
        .arg("--artifacts")
        .arg(dir.path().join("out"))
        .env("DROVER_TEST_IMAGE_KEY", "sk-test-image-key-0123456789")
        .env_remove("ANTHROPIC_BASE_URL")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let requests = model.requests();
    let second = requests[1].json();
    let messages = second["messages"].as_array().unwrap();
    let result = &messages.last().unwrap()["content"][0];
    assert_eq!(result["type"], "tool_result", "{result}");
    let blocks = result["content"].as_array().unwrap();
    assert_eq!(blocks[0]["type"], "text");
    assert!(
        blocks[0]["text"]
            .as_str()
            .unwrap()
            .contains("[image 1: image/png"),
        "{result}"
    );
    assert_eq!(blocks[1]["type"], "image", "{result}");
    assert_eq!(blocks[1]["source"]["type"], "base64");
    assert_eq!(blocks[1]["source"]["media_type"], "image/png");
    assert!(
        blocks[1]["source"]["data"]
            .as_str()
            .unwrap()
            .starts_with("iVBORw0KGgo")
    );

    // The transcript keeps the image, so a replay gives the model the same result.
    let recorded = dir.path().join("out/t/transcript.jsonl");
    let lines = transcript(&recorded);
    let event = events(&lines, "tool_result")[0];
    assert_eq!(event["images"][0]["media_type"], "image/png", "{event}");
    let replay = common::drover()
        .current_dir(dir.path())
        .arg("replay")
        .arg(&recorded)
        .arg("--strict")
        .arg("--artifacts")
        .arg(dir.path().join("replayed"))
        .output()
        .unwrap();
    assert_eq!(replay.status.code(), Some(0), "{}", stderr(&replay));
    let lines = transcript(&dir.path().join("replayed/t/transcript.jsonl"));
    assert!(events(&lines, "replay_drift").is_empty());
    assert_eq!(events(&lines, "tool_result")[0]["images"], event["images"]);
}

#[test]
#[cfg_attr(
    not(drover_has_python_mcp),
    ignore = "needs the Python MCP SDK in .ci/venv: .ci/run installs it"
)]
fn tools_with_a_spec_lists_what_the_task_would_offer_its_mcp_tools_included() {
    let (python, script) = modern_server();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    let spec = common::write_spec(
        dir.path(),
        "task.yaml",
        &format!(
            "version: 1\nname: t\nprompt: x\nworkspace: ws\nmodel: {{ provider: script, script: [{{ text: done }}] }}\npermissions:\n  allow: [mcp__modern]\n  deny: [Bash, mcp__modern__whoami]\nmcp:\n  servers:\n    modern:\n      command: {}\n      args: [{}, stdio]\n    broken:\n      command: /nonexistent/mcp-server\n      required: false\n",
            serde_json::to_string(&python).unwrap(),
            serde_json::to_string(&script).unwrap()
        ),
    );
    let output = common::drover()
        .args(["tools", "--json", "--spec"])
        .arg(&spec)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let tools: Vec<serde_json::Value> = serde_json::from_slice(&output.stdout).unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"Read"), "{names:?}");
    // Denied outright: not offered, so not listed.
    assert!(!names.contains(&"Bash"), "{names:?}");
    assert!(!names.contains(&"mcp__modern__whoami"), "{names:?}");
    let add = tools
        .iter()
        .find(|t| t["name"] == "mcp__modern__add")
        .unwrap();
    assert_eq!(
        add["mcp"],
        serde_json::json!({"server": "modern", "tool": "add"})
    );
    assert_eq!(add["input_schema"]["properties"]["a"]["type"], "integer");
    // The optional server that did not start is named, with what it said.
    let said = stderr(&output);
    assert!(
        said.contains("optional MCP server broken did not start"),
        "{said}"
    );
    assert!(said.contains("/nonexistent/mcp-server"), "{said}");

    // A required one that does not start makes the listing incomplete: exit 3.
    let text = std::fs::read_to_string(&spec)
        .unwrap()
        .replace("      required: false\n", "");
    std::fs::write(&spec, text).unwrap();
    let output = common::drover()
        .args(["tools", "--spec"])
        .arg(&spec)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    assert!(stderr(&output).contains("required MCP server broken did not start"));
}

#[test]
#[cfg_attr(
    not(drover_has_python_mcp),
    ignore = "needs the Python MCP SDK in .ci/venv: .ci/run installs it"
)]
fn a_replay_with_mcp_calls_the_servers_again_and_reports_what_changed_as_drift() {
    let (python, script) = modern_server();
    // The server is a copy the test can change between the recording and the replay.
    let dir = tempfile::tempdir().unwrap();
    let server_copy = dir.path().join("server.py");
    std::fs::copy(&script, &server_copy).unwrap();
    let server = stdio_entry(&python, &server_copy);
    let (task_dir, spec) = task(
        &server,
        "mcp__modern",
        r#"{ name: mcp__modern__add, input: { a: 2, b: 40 } }"#,
    );
    let output = crate::mcp::run(task_dir.path(), &spec);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let recorded = task_dir.path().join("out/t/transcript.jsonl");
    let replay = |name: &str, extra: &[&str]| {
        let output = common::drover()
            .current_dir(task_dir.path())
            .arg("replay")
            .arg(&recorded)
            // The user's own spec: the server's Python may live in a home directory
            // (pyenv), which a replay of a recording alone does not read.
            .arg("--spec")
            .arg(&spec)
            .args(extra)
            .arg("--artifacts")
            .arg(task_dir.path().join(name))
            .output()
            .unwrap();
        let lines = transcript(&task_dir.path().join(name).join("t/transcript.jsonl"));
        (output, lines)
    };

    // The same server: started, called, no drift.
    let (output, lines) = replay("same", &["--mcp", "--strict"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stderr(&output).contains("will start MCP server modern"));
    assert_eq!(events(&lines, "mcp_server")[0]["status"], "started");
    assert!(events(&lines, "replay_drift").is_empty());

    // The server now answers differently: drift, which --strict fails on.
    let changed = std::fs::read_to_string(&server_copy)
        .unwrap()
        .replace("return a + b", "return a + b + 1");
    std::fs::write(&server_copy, changed).unwrap();
    let (output, lines) = replay("strict", &["--mcp", "--strict"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let drift = events(&lines, "replay_drift")[0];
    assert_eq!(drift["expected"], "42", "{drift}");
    assert_eq!(drift["actual"], "43", "{drift}");
    let (output, lines) = replay("lenient", &["--mcp"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(events(&lines, "replay_drift").len(), 1);

    // Without --mcp the recording answers: no server, no drift.
    let (output, lines) = replay("recorded", &["--strict"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(events(&lines, "mcp_server").is_empty());
    assert_eq!(events(&lines, "tool_result")[0]["content"], "42");
}

#[test]
#[cfg_attr(
    not(drover_has_python_mcp),
    ignore = "needs the Python MCP SDK in .ci/venv: .ci/run installs it"
)]
fn an_image_that_holds_a_secret_value_is_withheld() {
    let (python, script) = modern_server();
    let secret = "img-secret-4d2c9e81f7";
    let (dir, spec) = task(
        &stdio_entry(&python, &script),
        "mcp__modern",
        &format!(
            r#"{{ name: mcp__modern__gif_of, input: {{ text: "plain" }} }}, {{ name: mcp__modern__gif_of, input: {{ text: "{secret}" }} }}"#
        ),
    );
    let output = common::drover_without_proxy()
        .arg("run")
        .arg(&spec)
        .arg("--artifacts")
        .arg(dir.path().join("out"))
        .env("DROVER_TEST_IMAGE_SECRET_TOKEN", secret)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines = transcript(&dir.path().join("out/t/transcript.jsonl"));
    let results = events(&lines, "tool_result");
    assert_eq!(results[0]["images"].as_array().unwrap().len(), 1);
    assert!(results[1].get("images").is_none(), "{}", results[1]);
    assert!(
        results[1]["content"]
            .as_str()
            .unwrap()
            .contains("1 image(s) withheld: they hold a secret value"),
        "{}",
        results[1]
    );
}
