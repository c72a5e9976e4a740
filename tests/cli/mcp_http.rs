//! MCP servers over streamable HTTP: the reference server (legacy sessions,
//! `Mcp-Session-Id`) and the Python SDK's server (the 2026-07-28 revision), each
//! started by the test on 127.0.0.1, reached by drover at their `url:`.

use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{drover, events, transcript, write_spec};
use crate::mcp::{everything, run, stderr, task};
use crate::mcp_modern::modern_server;

/// A server process the test started, killed when the test ends however it ends.
pub(crate) struct Served {
    child: Child,
    pub(crate) port: u16,
    log: std::path::PathBuf,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Start `command` (which listens on the port it is given in `PORT` or as its last
/// argument) and wait until the port accepts connections.
pub(crate) fn serve(mut command: Command, dir: &Path) -> Served {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let log = dir.join("server.log");
    let child = command
        .arg(port.to_string())
        .env("PORT", port.to_string())
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(std::fs::File::create(dir.join("server.err")).unwrap())
        .spawn()
        .unwrap();
    let served = Served { child, port, log };
    let deadline = Instant::now() + Duration::from_secs(60);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "the server did not listen in 60 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    served
}

/// The Python SDK's server over streamable HTTP.
fn serve_modern(dir: &Path) -> Served {
    let (python, script) = modern_server();
    let mut command = Command::new(python);
    command.arg(script).arg("http");
    serve(command, dir)
}

fn url_server(name: &str, port: u16, extra: &str) -> String {
    format!("    {name}:\n      url: http://127.0.0.1:{port}/mcp\n{extra}")
}

#[test]
#[cfg_attr(
    not(drover_has_node_servers),
    ignore = "needs node and the MCP servers in .ci/node: .ci/run installs them"
)]
fn the_reference_server_over_http_serves_its_tools_and_its_session_is_ended() {
    let server = everything();
    let calls = [
        r#"{ name: mcp__docs__echo, input: { message: "over http" } }"#,
        r#"{ name: mcp__docs__trigger-long-running-operation, input: { duration: 30, steps: 3 } }"#,
        r#"{ name: mcp__docs__get-sum, input: { a: 2, b: 40 } }"#,
        r#"{ name: mcp__docs__get-structured-content, input: { location: "New York" } }"#,
    ];
    let scratch = tempfile::tempdir().unwrap();
    let mut command = Command::new("node");
    command.arg(&server).arg("streamableHttp");
    // The reference server takes its port from PORT only.
    let served = serve(command, scratch.path());
    let (dir, spec) = task(
        &url_server("docs", served.port, ""),
        "mcp__docs",
        &calls.join(", "),
    );
    let text = std::fs::read_to_string(&spec)
        .unwrap()
        .replace("call: 20s", "call: 2s");
    std::fs::write(&spec, text).unwrap();
    let output = run(dir.path(), &spec);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines = transcript(&dir.path().join("out/t/transcript.jsonl"));
    let started = events(&lines, "mcp_server")[0];
    assert_eq!(started["status"], "started", "{started}");
    // The servers users have today: the legacy handshake, with a session.
    assert_eq!(started["protocol_version"], "2025-11-25", "{started}");
    let results = events(&lines, "tool_result");
    let content = |i: usize| results[i]["content"].as_str().unwrap().to_string();
    assert_eq!(content(0), "Echo: over http");
    assert_eq!(results[1]["is_error"], true);
    assert!(content(1).contains("timeouts.call"), "{}", content(1));
    assert_eq!(results[2]["is_error"], false, "{}", content(2));
    assert!(content(2).contains("42"), "{}", content(2));
    assert_eq!(results[3]["is_error"], false, "{}", content(3));
    // No server log of drover's: it started nothing.
    assert!(!dir.path().join("out/t/mcp-docs.log").exists());
    // When the task ended, drover ended its session (DELETE with Mcp-Session-Id).
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let log = std::fs::read_to_string(&served.log).unwrap_or_default();
        if log.contains("session termination request") {
            break;
        }
        assert!(Instant::now() < deadline, "no session termination: {log}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
#[cfg_attr(
    not(drover_has_python_mcp),
    ignore = "needs the Python MCP SDK in .ci/venv: .ci/run installs it"
)]
fn header_secrets_reach_the_server_and_never_the_artifacts_or_the_commands() {
    let scratch = tempfile::tempdir().unwrap();
    let served = serve_modern(scratch.path());
    // A variable whose name does not look secret: naming it in a header makes it one.
    let headers = "      headers: { Authorization: \"Bearer ${DROVER_TEST_DOCS_HEADER}\" }\n";
    let (dir, spec) = task(
        &url_server("modern", served.port, headers),
        "mcp__modern, Bash",
        r#"{ name: mcp__modern__whoami, input: {} }, { name: mcp__modern__add, input: { a: 1, b: 2 } }, { name: Bash, input: { command: "env" } }"#,
    );
    let secret = "hdr-value-7f3a9c1e5b";
    let output = crate::common::drover_without_proxy()
        .arg("run")
        .arg(&spec)
        .arg("--artifacts")
        .arg(dir.path().join("out"))
        .env("DROVER_TEST_DOCS_HEADER", secret)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines = transcript(&dir.path().join("out/t/transcript.jsonl"));
    assert_eq!(
        events(&lines, "mcp_server")[0]["protocol_version"],
        "2026-07-28"
    );
    let results = events(&lines, "tool_result");
    // The server got the header (its echo is redacted on the way to the model).
    let whoami = results[0]["content"].as_str().unwrap();
    assert_eq!(
        whoami, "authorization: [redacted]",
        "the whole credential header is redacted"
    );
    assert!(!whoami.contains("<none>"), "{whoami}");
    assert_eq!(results[1]["content"], "3");
    // A command never sees the variable.
    let env = results[2]["content"].as_str().unwrap();
    assert!(!env.contains("DROVER_TEST_DOCS_HEADER"), "{env}");
    for entry in walk(&dir.path().join("out")) {
        let bytes = std::fs::read(&entry).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            !text.contains(secret),
            "{} holds the secret",
            entry.display()
        );
    }
    assert!(!stderr(&output).contains(secret));
}

/// Every file under `dir`.
pub(crate) fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

#[test]
fn a_required_http_server_that_cannot_be_reached_ends_the_task_before_any_model_request() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (dir, spec) = task(
        &url_server("docs", port, ""),
        "mcp__docs",
        r#"{ name: mcp__docs__echo, input: { message: "x" } }"#,
    );
    let text = std::fs::read_to_string(&spec)
        .unwrap()
        .replace("startup: 60s", "startup: 5s");
    std::fs::write(&spec, text).unwrap();
    let output = run(dir.path(), &spec);
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    let lines = transcript(&dir.path().join("out/t/transcript.jsonl"));
    assert!(events(&lines, "model_response").is_empty());
    let failed = events(&lines, "mcp_server")[0];
    assert_eq!(failed["status"], "failed", "{failed}");
    assert_eq!(lines.last().unwrap()["reason"], "mcp_unavailable");
}

#[test]
fn http_server_entries_are_checked_with_the_spec() {
    let cases = [
        (
            "      url: ftp://127.0.0.1/mcp\n",
            "is not an http:// or https:// URL",
        ),
        (
            "      url: http://127.0.0.1:1/mcp\n      headers: { Mcp-Session-Id: x }\n",
            "set by the MCP transport itself",
        ),
        (
            "      url: http://127.0.0.1:1/mcp\n      command: node\n",
            "both command: (a stdio server) and url:",
        ),
        (
            "      url: http://127.0.0.1:1/mcp\n      cwd: tools\n",
            "apply to command: servers only",
        ),
        (
            "      command: node\n      headers: { X-A: b }\n",
            "headers: and headers_helper: apply to url: servers only",
        ),
    ];
    for (entry, expected) in cases {
        let dir = tempfile::tempdir().unwrap();
        let spec = write_spec(
            dir.path(),
            "task.yaml",
            &format!(
                "version: 1\nname: t\nprompt: x\nmodel:\n  provider: script\n  script:\n    - text: done\nmcp:\n  servers:\n    docs:\n{entry}"
            ),
        );
        let output = drover().arg("validate").arg(&spec).output().unwrap();
        assert_eq!(
            output.status.code(),
            Some(2),
            "{entry}: {}",
            stderr(&output)
        );
        let text = stderr(&output);
        assert!(text.contains(expected), "{entry}: {text}");
        assert!(text.contains("task.yaml:"), "{text}");
    }
}

#[test]
#[cfg_attr(
    not(drover_has_python_mcp),
    ignore = "needs the Python MCP SDK in .ci/venv: .ci/run installs it"
)]
fn a_replay_sends_a_server_only_the_variables_given_with_mcp_env() {
    let scratch = tempfile::tempdir().unwrap();
    let served = serve_modern(scratch.path());
    let headers = "      headers: { Authorization: \"Bearer ${DROVER_TEST_REPLAY_HEADER}\" }\n";
    let (dir, spec) = task(
        &url_server("modern", served.port, headers),
        "mcp__modern",
        r#"{ name: mcp__modern__whoami, input: {} }"#,
    );
    let secret = "replay-hdr-5e1f0c9a7b";
    let run = |args: &[&str], out: &str| {
        let output = crate::common::drover_without_proxy()
            .current_dir(dir.path())
            .args(args)
            .arg("--artifacts")
            .arg(dir.path().join(out))
            .env("DROVER_TEST_REPLAY_HEADER", secret)
            .output()
            .unwrap();
        let lines = transcript(&dir.path().join(out).join("t/transcript.jsonl"));
        let whoami = events(&lines, "tool_result")[0]["content"]
            .as_str()
            .unwrap()
            .to_string();
        (output, whoami)
    };
    let (output, recorded) = run(&["run", spec.to_str().unwrap()], "out");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(recorded, "authorization: [redacted]");
    let transcript_path = dir.path().join("out/t/transcript.jsonl");
    let transcript_arg = transcript_path.to_str().unwrap();

    // A transcript does not choose the hosts drover connects to: without --mcp-url the
    // server is left out, and its call fails (drift).
    let output = crate::common::drover()
        .current_dir(dir.path())
        .args(["replay", transcript_arg, "--mcp", "--artifacts"])
        .arg(dir.path().join("no-url"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("give --mcp-url modern=URL"),
        "{}",
        stderr(&output)
    );
    let lines = transcript(&dir.path().join("no-url/t/transcript.jsonl"));
    assert_eq!(events(&lines, "replay_drift").len(), 1);
    let url = format!("modern=http://127.0.0.1:{}/mcp", served.port);

    // The transcript names the variable, but the replay does not send it unasked.
    let (output, replayed) = run(
        &["replay", transcript_arg, "--mcp", "--mcp-url", &url],
        "unasked",
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("${DROVER_TEST_REPLAY_HEADER}, left unset"),
        "{}",
        stderr(&output)
    );
    assert_eq!(replayed, "authorization: Bearer");

    // Given with --mcp-env, it is sent, and the result matches the recording.
    let (output, replayed) = run(
        &[
            "replay",
            transcript_arg,
            "--mcp",
            "--strict",
            "--mcp-url",
            &url,
            "--mcp-env",
            "DROVER_TEST_REPLAY_HEADER",
        ],
        "asked",
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(replayed, "authorization: [redacted]");
}
