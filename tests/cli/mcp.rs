//! MCP servers end to end: the reference server `@modelcontextprotocol/server-everything`
//! (installed by .ci/run into .ci/node) started over stdio in the task's sandbox, its
//! tools offered as `mcp__everything__*`, judged by the policy, and stopped with the task.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

use crate::common::{self, drover, events, transcript, write_spec};

/// The reference server's entry point. The build found node and the servers in
/// .ci/node (`drover_has_node_servers`; a test that calls this carries
/// `#[cfg_attr(not(drover_has_node_servers), ignore = …)]`): if either is gone, the
/// test fails.
pub(crate) fn everything() -> PathBuf {
    common::require_program("node");
    common::require_installed(
        ".ci/node/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    )
}

/// A task in a fresh directory whose script calls `calls` (tool, JSON input) in one turn.
pub(crate) fn task(servers: &str, allow: &str, calls: &str) -> (tempfile::TempDir, PathBuf) {
    task_with_call_timeout(servers, allow, calls, "20s")
}

/// [`task`] with `mcp.timeouts.call` set to `call`.
pub(crate) fn task_with_call_timeout(
    servers: &str,
    allow: &str,
    calls: &str,
    call: &str,
) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    let spec = format!(
        "version: 1\nname: t\nprompt: use the tools\nworkspace: ws\nmodel:\n  provider: script\n  script:\n    - tool_calls: [{calls}]\n    - text: done\npermissions:\n  allow: [{allow}]\nmcp:\n  timeouts: {{ startup: 60s, call: {call} }}\n  servers:\n{servers}"
    );
    let path = write_spec(dir.path(), "task.yaml", &spec);
    (dir, path)
}

fn everything_server(path: &Path) -> String {
    format!(
        "    everything:\n      command: node\n      args: [{}, stdio]\n",
        serde_json::to_string(&path.display().to_string()).unwrap()
    )
}

pub(crate) fn run(dir: &Path, spec: &Path) -> Output {
    crate::common::drover_without_proxy()
        .arg("run")
        .arg(spec)
        .arg("--artifacts")
        .arg(dir.join("out"))
        .output()
        .unwrap()
}

pub(crate) fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
#[cfg_attr(
    not(drover_has_node_servers),
    ignore = "needs node and the MCP servers in .ci/node: .ci/run installs them"
)]
fn a_reference_server_tool_is_offered_allowed_called_and_its_server_stopped() {
    let server = everything();
    let (dir, spec) = task(
        &everything_server(&server),
        "mcp__everything",
        r#"{ name: mcp__everything__echo, input: { message: "hello from drover" } }"#,
    );
    let output = run(dir.path(), &spec);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines = transcript(&dir.path().join("out/t/transcript.jsonl"));
    let start = events(&lines, "run_start")[0];
    let tools: Vec<&str> = start["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(tools.contains(&"mcp__everything__echo"), "{tools:?}");
    let started = events(&lines, "mcp_server")[0];
    assert_eq!(started["status"], "started");
    assert!(!started["protocol_version"].as_str().unwrap().is_empty());
    assert!(
        started["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["tool"] == "echo"
                && t["name"] == "mcp__everything__echo"
                && t.get("renamed").is_none())
    );
    let result = events(&lines, "tool_result")[0];
    assert_eq!(result["is_error"], false, "{result}");
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .contains("hello from drover"),
        "{result}"
    );
    // The server's stderr is kept with the task's artifacts.
    assert!(dir.path().join("out/t/mcp-everything.log").is_file());
    // summary.json lists the server and the calls of its tools.
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("out/summary.json")).unwrap(),
    )
    .unwrap();
    let servers = &summary["tasks"][0]["mcp_servers"];
    assert_eq!(servers[0]["name"], "everything", "{servers}");
    assert_eq!(servers[0]["status"], "started");
    assert_eq!(servers[0]["calls"], 1);
    assert!(servers[0]["tools"].as_u64().unwrap() > 5);
}

#[test]
#[cfg_attr(
    not(drover_has_node_servers),
    ignore = "needs node and the MCP servers in .ci/node: .ci/run installs them"
)]
fn an_mcp_tool_no_rule_allows_is_denied_and_never_called() {
    let server = everything();
    let (dir, spec) = task(
        &everything_server(&server),
        "Read",
        r#"{ name: mcp__everything__echo, input: { message: "x" } }"#,
    );
    let output = run(dir.path(), &spec);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines = transcript(&dir.path().join("out/t/transcript.jsonl"));
    let permission = events(&lines, "permission")[0];
    assert_eq!(permission["decision"], "deny");
    let result = events(&lines, "tool_result")[0];
    assert_eq!(result["is_error"], true);
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .contains("Permission denied")
    );
}

#[test]
fn a_required_server_that_cannot_start_ends_the_task_before_any_model_request() {
    let (dir, spec) = task(
        "    broken:\n      command: /nonexistent/mcp-server\n",
        "mcp__broken",
        r#"{ name: Read, input: { file_path: x } }"#,
    );
    let output = run(dir.path(), &spec);
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    let lines = transcript(&dir.path().join("out/t/transcript.jsonl"));
    assert!(events(&lines, "model_response").is_empty());
    let failed = events(&lines, "mcp_server")[0];
    assert_eq!(failed["status"], "failed");
    let end = lines.last().unwrap();
    assert_eq!(end["reason"], "mcp_unavailable");
    assert!(end["message"].as_str().unwrap().contains("broken"), "{end}");
}

#[test]
fn an_optional_server_that_cannot_start_is_left_out_with_a_warning() {
    let (dir, spec) = task(
        "    extra:\n      command: /nonexistent/mcp-server\n      required: false\n",
        "Read",
        r#"{ name: LS, input: { path: "." } }"#,
    );
    let output = run(dir.path(), &spec);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stderr(&output).contains("optional MCP server extra did not start"));
}

#[test]
fn server_names_that_would_blur_tool_names_are_spec_errors() {
    for name in ["a__b", "a_", "_a", "a.b"] {
        let (_dir, spec) = task(
            &format!("    {name:?}:\n      command: node\n"),
            "Read",
            r#"{ name: LS, input: { path: "." } }"#,
        );
        let output = drover().arg("validate").arg(&spec).output().unwrap();
        assert_eq!(output.status.code(), Some(2), "{name}: {}", stderr(&output));
        assert!(
            stderr(&output).contains("MCP server name"),
            "{}",
            stderr(&output)
        );
    }
}

#[test]
#[cfg_attr(
    not(drover_has_node_servers),
    ignore = "needs node and the MCP servers in .ci/node: .ci/run installs them"
)]
fn results_of_every_kind_reach_the_model_and_a_slow_call_is_cut_at_its_limit() {
    let server = everything();
    let calls = [
        r#"{ name: mcp__everything__get-tiny-image, input: {} }"#,
        r#"{ name: mcp__everything__get-resource-links, input: { count: 2 } }"#,
        r#"{ name: mcp__everything__get-env, input: {} }"#,
        r#"{ name: mcp__everything__trigger-long-running-operation, input: { duration: 30, steps: 3 } }"#,
        r#"{ name: mcp__everything__get-sum, input: { a: 2, b: 3 } }"#,
        r#"{ name: mcp__everything__get-structured-content, input: { location: "New York" } }"#,
    ];
    let (dir, spec) = task(
        &everything_server(&server),
        "mcp__everything",
        &calls.join(", "),
    );
    let text = std::fs::read_to_string(&spec)
        .unwrap()
        .replace("call: 20s", "call: 2s");
    std::fs::write(&spec, text).unwrap();
    let output = drover()
        .arg("run")
        .arg(&spec)
        .arg("--artifacts")
        .arg(dir.path().join("out"))
        .env("DROVER_TEST_MCP_SECRET_TOKEN", "s3cr3t-value-for-mcp-test")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines = transcript(&dir.path().join("out/t/transcript.jsonl"));
    let results: Vec<&Value> = events(&lines, "tool_result");
    let content = |i: usize| results[i]["content"].as_str().unwrap().to_string();
    assert!(content(0).contains("[image 1: image/png"), "{}", content(0));
    assert_eq!(results[0]["images"][0]["media_type"], "image/png");
    assert!(content(1).contains("[resource link: "), "{}", content(1));
    // The server runs with the scrubbed environment: drover's secrets are not in it.
    assert!(
        !content(2).contains("s3cr3t-value-for-mcp-test"),
        "{}",
        content(2)
    );
    assert!(!content(2).contains("DROVER_TEST_MCP_SECRET_TOKEN"));
    assert_eq!(results[3]["is_error"], true);
    assert!(content(3).contains("timeouts.call"), "{}", content(3));
    // The server still answers after a cancelled call.
    assert_eq!(results[4]["is_error"], false, "{}", content(4));
    assert!(content(4).contains('5'), "{}", content(4));
    // Structured content that matches the tool's outputSchema passes the check.
    assert_eq!(results[5]["is_error"], false, "{}", content(5));
    assert!(content(5).contains("temperature"), "{}", content(5));
}

/// Processes whose environment holds `marker`.
fn processes_marked(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        if environ
            .windows(marker.len())
            .any(|w| w == marker.as_bytes())
        {
            found.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    found
}

#[test]
#[cfg_attr(
    not(drover_has_node_servers),
    ignore = "needs node and the MCP servers in .ci/node: .ci/run installs them"
)]
fn nothing_a_server_started_outlives_the_task() {
    let server = everything();
    let marker = format!("drover-mcp-marker-{}", std::process::id());
    // The server leaves a detached sleeper behind: the launcher must kill it.
    let servers = format!(
        "    everything:\n      command: bash\n      args: [-c, \"setsid sleep 300 & exec node {} stdio\"]\n      env: {{ MARKER: {marker} }}\n",
        server.display()
    );
    let (dir, spec) = task(
        &servers,
        "mcp__everything",
        r#"{ name: mcp__everything__echo, input: { message: "x" } }"#,
    );
    let output = run(dir.path(), &spec);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    // The launcher may take a moment after drover's exit to finish its work.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let left = processes_marked(&marker);
        if left.is_empty() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "processes outlived the task: {left:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

#[test]
fn policy_check_judges_mcp_tools_by_the_rules_without_starting_servers() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    let spec = write_spec(
        dir.path(),
        "task.yaml",
        "version: 1\nname: t\nprompt: x\nworkspace: ws\nmodel:\n  provider: script\n  script:\n    - text: done\npermissions:\n  allow: [mcp__docs]\n  deny: [mcp__docs__delete]\nmcp:\n  servers:\n    docs:\n      command: /nonexistent/server\n",
    );
    let check = |tool: &str| {
        let output = drover()
            .args(["policy", "check", "--spec"])
            .arg(&spec)
            .args(["--tool", tool, "--input", "{}"])
            .output()
            .unwrap();
        let decision: Value = serde_json::from_slice(&output.stdout).unwrap();
        (output.status.code(), decision)
    };
    let (code, allowed) = check("mcp__docs__search");
    assert_eq!(code, Some(0), "{allowed}");
    assert_eq!(allowed["rule"], "mcp__docs");
    let (code, denied) = check("mcp__docs__delete");
    assert_eq!(code, Some(1), "{denied}");
    assert_eq!(denied["rule"], "mcp__docs__delete");
    let (code, other) = check("mcp__other__x");
    assert_eq!(code, Some(1), "{other}");
}

#[test]
#[cfg_attr(
    not(drover_has_node_servers),
    ignore = "needs node and the MCP servers in .ci/node: .ci/run installs them"
)]
fn servers_of_a_claude_code_mcp_json_join_the_specs() {
    let server = everything();
    let (dir, spec) = task(
        "",
        "mcp__everything",
        r#"{ name: mcp__everything__get-sum, input: { a: 20, b: 22 } }"#,
    );
    let config = serde_json::json!({"mcpServers": {"everything": {
        "command": "node", "args": [server.display().to_string(), "stdio"]}}});
    std::fs::write(dir.path().join(".mcp.json"), config.to_string()).unwrap();
    let text = std::fs::read_to_string(&spec)
        .unwrap()
        .replace("  servers:\n", "  config: .mcp.json\n");
    std::fs::write(&spec, text).unwrap();
    let output = run(dir.path(), &spec);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines = transcript(&dir.path().join("out/t/transcript.jsonl"));
    let result = events(&lines, "tool_result")[0];
    assert!(
        result["content"].as_str().unwrap().contains("42"),
        "{result}"
    );

    // A server named in both places: the spec's is used, the file's named in a note.
    let both = std::fs::read_to_string(&spec).unwrap().replace(
        "  config: .mcp.json\n",
        "  config: .mcp.json\n  servers:\n    everything:\n      command: node\n",
    );
    std::fs::write(&spec, both).unwrap();
    let output = drover().arg("validate").arg(&spec).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stderr(&output).contains(
            "server everything left out: the spec's mcp.servers has a server of that name"
        ),
        "{}",
        stderr(&output)
    );
}

#[test]
#[cfg_attr(
    not(drover_has_node_servers),
    ignore = "needs node and the MCP servers in .ci/node: .ci/run installs them"
)]
fn variables_with_defaults_expand_in_a_mcp_json_command_and_args() {
    let server = everything();
    let (dir, spec) = task(
        "",
        "mcp__everything",
        r#"{ name: mcp__everything__get-sum, input: { a: 20, b: 22 } }"#,
    );
    // As repositories write them: the variables unset here, so their defaults apply.
    let config = serde_json::json!({"mcpServers": {"everything": {
        "command": "${DROVER_TEST_UNSET_NODE:-node}",
        "args": [format!("${{DROVER_TEST_UNSET_SERVER:-{}}}", server.display()), "stdio"],
        "headersHelper": "./get-token.sh", "alwaysAllow": ["get-sum"]}}});
    std::fs::write(dir.path().join(".mcp.json"), config.to_string()).unwrap();
    let text = std::fs::read_to_string(&spec)
        .unwrap()
        .replace("  servers:\n", "  config: .mcp.json\n");
    std::fs::write(&spec, text).unwrap();
    let output = run(dir.path(), &spec);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    // What the file holds that drover does not use is named, not dropped silently.
    let said = stderr(&output);
    assert!(
        said.contains("headersHelper ignored: it makes the headers of an http server"),
        "{said}"
    );
    assert!(said.contains("key \"alwaysAllow\" ignored"), "{said}");
    let lines = transcript(&dir.path().join("out/t/transcript.jsonl"));
    let notes = events(&lines, "run_start")[0]["notes"].to_string();
    assert!(notes.contains("headersHelper ignored"), "{notes}");
    let result = events(&lines, "tool_result")[0];
    assert!(
        result["content"].as_str().unwrap().contains("42"),
        "{result}"
    );
}

/// A server that serves for `seconds`, then ends.
fn dying_server(server: &Path, seconds: u32, required: bool) -> String {
    format!(
        "    everything:\n      command: bash\n      args: [-c, \"node {} stdio <&0 & sleep {seconds}; kill $!\"]\n      required: {required}\n",
        server.display()
    )
}

/// A script: echo (served), a 6 s pause, echo again (the server is gone by then).
const ECHO_PAUSE_ECHO: &str = r#"{ name: mcp__everything__echo, input: { message: "one" } }, { name: Bash, input: { command: "sleep 6" } }, { name: mcp__everything__echo, input: { message: "two" } }"#;

#[test]
#[cfg_attr(
    not(drover_has_node_servers),
    ignore = "needs node and the MCP servers in .ci/node: .ci/run installs them"
)]
fn a_required_server_that_dies_mid_run_ends_the_task_as_mcp_unavailable() {
    let server = everything();
    let (dir, spec) = task(
        &dying_server(&server, 3, true),
        "mcp__everything, Bash",
        ECHO_PAUSE_ECHO,
    );
    let output = run(dir.path(), &spec);
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    let lines = transcript(&dir.path().join("out/t/transcript.jsonl"));
    let results = events(&lines, "tool_result");
    assert_eq!(results[0]["is_error"], false, "{}", results[0]);
    assert_eq!(results[2]["is_error"], true);
    let end = lines.last().unwrap();
    assert_eq!(end["reason"], "mcp_unavailable", "{end}");
    assert!(
        end["message"].as_str().unwrap().contains("is gone"),
        "{end}"
    );
}

#[test]
#[cfg_attr(
    not(drover_has_node_servers),
    ignore = "needs node and the MCP servers in .ci/node: .ci/run installs them"
)]
fn an_optional_server_that_dies_mid_run_only_fails_its_calls() {
    let server = everything();
    let (dir, spec) = task(
        &dying_server(&server, 3, false),
        "mcp__everything, Bash",
        ECHO_PAUSE_ECHO,
    );
    let output = run(dir.path(), &spec);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines = transcript(&dir.path().join("out/t/transcript.jsonl"));
    let results = events(&lines, "tool_result");
    assert_eq!(results[2]["is_error"], true);
    assert!(
        results[2]["content"].as_str().unwrap().contains("is gone"),
        "{}",
        results[2]
    );
}

#[test]
#[cfg_attr(
    not(drover_has_node_servers),
    ignore = "needs node and the MCP servers in .ci/node: .ci/run installs them"
)]
fn a_servers_resources_are_listed_and_read_through_the_resource_tools() {
    let server = everything();
    let calls = [
        r#"{ name: ListMcpResources, input: {} }"#,
        r#"{ name: ReadMcpResource, input: { server: everything, uri: "demo://resource/static/document/features.md" } }"#,
        r#"{ name: ReadMcpResource, input: { server: nowhere, uri: "x" } }"#,
    ];
    let (dir, spec) = task(
        &everything_server(&server),
        "ListMcpResources, ReadMcpResource",
        &calls.join(", "),
    );
    let output = run(dir.path(), &spec);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines = transcript(&dir.path().join("out/t/transcript.jsonl"));
    let results = events(&lines, "tool_result");
    let listed = results[0]["content"].as_str().unwrap();
    assert!(
        listed.contains("everything\tdemo://resource/static/document/features.md"),
        "{listed}"
    );
    let read = results[1]["content"].as_str().unwrap();
    assert_eq!(results[1]["is_error"], false, "{read}");
    assert!(
        read.starts_with("[resource demo://resource/static/document/features.md]\n"),
        "{read}"
    );
    // The server's name is checked against the schema's list of servers with resources.
    assert_eq!(results[2]["is_error"], true);
    assert!(
        results[2]["content"]
            .as_str()
            .unwrap()
            .contains("InputValidationError")
    );
}

#[test]
#[cfg_attr(
    not(drover_has_node_servers),
    ignore = "needs node and the MCP servers in .ci/node: .ci/run installs them"
)]
fn a_replay_answers_mcp_calls_from_the_recording_without_starting_servers() {
    let server = everything();
    let (dir, spec) = task(
        &everything_server(&server),
        "mcp__everything",
        r#"{ name: mcp__everything__echo, input: { message: "recorded" } }"#,
    );
    let output = run(dir.path(), &spec);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let recorded = dir.path().join("out/t/transcript.jsonl");
    let replay = drover()
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
    assert!(
        events(&lines, "mcp_server").is_empty(),
        "no server was started"
    );
    assert!(events(&lines, "replay_drift").is_empty());
    let result = events(&lines, "tool_result")[0];
    assert!(
        result["content"].as_str().unwrap().contains("recorded"),
        "{result}"
    );
}

#[test]
#[cfg_attr(
    not(drover_has_python3),
    ignore = "needs python3, which runs the fixture server"
)]
fn structured_content_that_breaks_the_output_schema_is_an_error_result() {
    common::require_program("python3");
    let script = common::repo().join("tests/cli/fixtures/bad_structured_server.py");
    let servers = format!(
        "    weather:\n      command: python3\n      args: [{}]\n",
        serde_json::to_string(&script.display().to_string()).unwrap()
    );
    let (dir, spec) = task(
        &servers,
        "mcp__weather",
        r#"{ name: mcp__weather__weather, input: {} }"#,
    );
    let output = run(dir.path(), &spec);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines = transcript(&dir.path().join("out/t/transcript.jsonl"));
    let started = events(&lines, "mcp_server")[0];
    assert_eq!(started["protocol_version"], "2025-11-25", "{started}");
    // get.forecast is on the second page of tools/list: the cursor was followed.
    let renamed = started["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tool"] == "get.forecast")
        .unwrap();
    assert_eq!(renamed["name"], "mcp__weather__get_forecast", "{renamed}");
    assert_eq!(renamed["renamed"], "sanitized");
    let result = events(&lines, "tool_result")[0];
    assert_eq!(result["is_error"], true, "{result}");
    assert!(
        result["content"].as_str().unwrap().contains("outputSchema"),
        "{result}"
    );
}

#[test]
fn a_signal_while_servers_start_ends_the_task_at_once() {
    let marker = format!("drover-mcp-silent-{}", std::process::id());
    // A "server" that never answers the handshake, with a long startup limit.
    let (dir, spec) = task(
        &format!(
            "    silent:\n      command: sleep\n      args: [\"300\"]\n      env: {{ MARKER: {marker} }}\n"
        ),
        "mcp__silent",
        r#"{ name: LS, input: { path: "." } }"#,
    );
    let text = std::fs::read_to_string(&spec)
        .unwrap()
        .replace("startup: 60s", "startup: 120s");
    std::fs::write(&spec, text).unwrap();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("drover"))
        .arg("run")
        .arg(&spec)
        .arg("--quiet")
        .arg("--artifacts")
        .arg(dir.path().join("out"))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_secs(2));
    let pid = rustix::process::Pid::from_child(&child);
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let signalled = std::time::Instant::now();
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if signalled.elapsed() > std::time::Duration::from_secs(20) {
            child.kill().unwrap();
            panic!("drover did not stop within 20 s of the signal while servers started");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(code, Some(3));
    let lines = transcript(&dir.path().join("out/t/transcript.jsonl"));
    assert_eq!(lines.last().unwrap()["reason"], "interrupted");
    // The server that was starting is gone too.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !processes_marked(&marker).is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the starting server outlived the task"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}
