//! A server written with the official Python SDK (`mcp`, installed by .ci/run into
//! .ci/venv), which speaks the stateless 2026-07-28 revision: drover discovers it with
//! `server/discover` rather than the legacy handshake.

use std::path::PathBuf;

use crate::common::{self, events, transcript};
use crate::mcp::{stderr, task};

/// The Python that has the `mcp` package, and the test server, or None (with a note)
/// when it is not installed; under CI=true a missing one fails the test.
pub(crate) fn modern_server() -> Option<(PathBuf, PathBuf)> {
    let python = common::repo().join(".ci/venv/bin/python");
    let script = common::repo().join("tests/cli/fixtures/modern_server.py");
    let has_sdk = std::process::Command::new(&python)
        .args(["-c", "import mcp"])
        .output()
        .is_ok_and(|o| o.status.success());
    if has_sdk {
        return Some((python, script));
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "the Python MCP SDK is not installed in .ci/venv, and CI=true: run .ci/run"
    );
    eprintln!(
        "note: .ci/venv with the mcp package is not installed (.ci/run installs it); skipping"
    );
    None
}

#[test]
fn a_python_sdk_server_is_discovered_with_the_2026_07_28_revision_over_stdio() {
    let Some((python, script)) = modern_server() else {
        return;
    };
    let server = format!(
        "    modern:\n      command: {}\n      args: [{}, stdio]\n",
        serde_json::to_string(&python).unwrap(),
        serde_json::to_string(&script).unwrap()
    );
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
