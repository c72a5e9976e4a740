//! Progress as people see it, on a terminal (a pseudo-terminal made by `script`) and off
//! one (a CI log): a tool error and a denial are shown as such, a retried request says
//! so with its wait, and the check phase shows which check runs.

use crate::common;
use crate::mock_server;
use crate::providers::{KEY, anthropic_end, anthropic_start, anthropic_text};

use std::path::{Path, PathBuf};
use std::process::Command;

use common::write_spec;
use mock_server::{MockServer, Reply};
use serde_json::json;

const KEY_ENV: &str = "DROVER_TEST_PROGRESS_KEY";

/// A turn calling `name` with `input`, its id `id`.
fn tool_turn(id: &str, name: &str, input: serde_json::Value) -> String {
    crate::providers::anthropic_call_turn(id, name, &input)
}

/// The model: overloaded once, then an unknown tool, an Edit that does not match and a
/// denied Bash, then done.
fn server() -> MockServer {
    MockServer::start(vec![
        Reply::status(
            529,
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        ),
        Reply::sse(&tool_turn(
            "toolu_1",
            "Raed",
            json!({"file_path": "lib.rs"}),
        )),
        Reply::sse(&tool_turn(
            "toolu_2",
            "Edit",
            json!({"file_path": "lib.rs", "old_string": "absent", "new_string": "x"}),
        )),
        Reply::sse(&tool_turn(
            "toolu_3",
            "Bash",
            json!({"command": "git push"}),
        )),
        Reply::sse(
            &(anthropic_start(10, 0, 0)
                + &anthropic_text(0, "Done.")
                + &anthropic_end("end_turn", 5)),
        ),
    ])
}

fn task(dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir.join("ws")).unwrap();
    std::fs::write(dir.join("ws/lib.rs"), "fn main() {}\n").unwrap();
    write_spec(
        dir,
        "task.yaml",
        &format!(
            "version: 1\nname: shown\nprompt: p\nworkspace: ws\nisolation: copy\nsandbox: off\nmodel:\n  provider: anthropic\n  name: claude-sonnet-4-5\n  api_key_env: {KEY_ENV}\n  retry: {{ max_retries: 2, initial_backoff: 10ms, max_backoff: 20ms }}\npermissions:\n  allow: [Read, Edit]\nchecks:\n  - name: slow tests\n    run: sleep 1\n"
        ),
    )
}

fn assert_shown(output: &str) {
    for needle in [
        "model request failed (HTTP 529)",
        "trying again (attempt 2) in",
        "✗ Raed",
        "✗ Edit: lib.rs:",
        "✗ denied Bash",
    ] {
        assert!(output.contains(needle), "{needle:?} in:\n{output}");
    }
}

#[test]
fn off_a_terminal_errors_retries_and_checks_are_log_lines() {
    let dir = tempfile::tempdir().unwrap();
    let server = server();
    let spec = task(dir.path());
    let output = common::drover_without_proxy()
        .arg("run")
        .arg(&spec)
        .arg("--artifacts")
        .arg(dir.path().join("out"))
        .env(KEY_ENV, KEY)
        .env("ANTHROPIC_BASE_URL", &server.base_url)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_shown(&stderr);
    assert!(
        stderr.contains("shown: check 1/1 \"slow tests\" started: sleep 1"),
        "{stderr}"
    );
    assert!(
        stderr.contains("shown: check \"slow tests\" passed"),
        "{stderr}"
    );
}

#[test]
fn on_a_terminal_errors_and_retries_are_lines_and_the_check_is_on_the_live_line() {
    let dir = tempfile::tempdir().unwrap();
    let server = server();
    let spec = task(dir.path());
    let drover = assert_cmd::cargo::cargo_bin("drover");
    let command = format!(
        "{} run {} --artifacts {}",
        drover.display(),
        spec.display(),
        dir.path().join("out").display()
    );
    // `script` runs drover on a pseudo-terminal and copies what it drew.
    let output = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .env(KEY_ENV, KEY)
        .env("ANTHROPIC_BASE_URL", &server.base_url)
        .env("TERM", "xterm-256color")
        .env("NO_COLOR", "1")
        .env_remove("HTTP_PROXY")
        .env_remove("http_proxy")
        .env_remove("HTTPS_PROXY")
        .env_remove("https_proxy")
        .env_remove("ALL_PROXY")
        .env_remove("all_proxy")
        .output()
        .expect("script (util-linux) runs");
    let drawn = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{drawn}");
    assert_shown(&drawn);
    assert!(drawn.contains("checks: 1/1 slow tests"), "{drawn}");
    assert!(drawn.contains("1 passed, 0 failed, 0 errors"), "{drawn}");
}

#[test]
fn what_a_model_writes_cannot_drive_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    // An unknown tool whose name, and a command whose output, carry escape sequences:
    // a window title, a clipboard write (OSC 52), a screen clear, a carriage return.
    let spec = write_spec(
        dir.path(),
        "task.yaml",
        "version: 1\nname: t\nprompt: p\nworkspace: ws\nisolation: copy\nsandbox: off\nmodel:\n  provider: script\n  script:\n    - tool_calls:\n        - { name: \"Raed\\e]0;pwned\\a\", input: {} }\n        - { name: Bash, input: { command: \"printf '\\\\033]52;c;ZXZpbA==\\\\007\\\\033[2J\\\\rfake'; exit 1\" } }\n    - text: done\npermissions:\n  allow: [Bash]\n",
    );
    let output = common::drover()
        .arg("run")
        .arg(&spec)
        .arg("--artifacts")
        .arg(dir.path().join("out"))
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("✗ Raed"), "{stderr}");
    assert!(stderr.contains("✗ Bash:"), "{stderr}");
    assert!(
        !stderr.contains(['\u{1b}', '\u{7}', '\r']),
        "no escape, bell or carriage return reaches the terminal: {stderr:?}"
    );
}
