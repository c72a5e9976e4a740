//! MCP servers that flood: an answer over the 16 MiB bound of one message, and a server
//! writing 50 MB to stderr. Every answer comes back at once, cut with a note; the log
//! keeps its head and tail.

use crate::common::{self, events, transcript};
use crate::mcp::{run, stderr, task};

/// The flood server's entry in `mcp.servers`, with `env` lines of its own.
fn flood_server(env: &str) -> String {
    let script = common::repo().join("tests/cli/fixtures/flood_server.py");
    format!(
        "    flood:\n      command: python3\n      args: [{}]\n{env}",
        serde_json::to_string(&script.display().to_string()).unwrap()
    )
}

#[test]
#[cfg_attr(
    not(drover_has_python3),
    ignore = "needs python3, which runs the flood server"
)]
fn answers_over_the_message_bound_are_cut_with_a_note_not_lost_to_the_call_timeout() {
    common::require_program("python3");
    let calls = [
        r#"{ name: mcp__flood__answer, input: { bytes: 15900000 } }"#,
        r#"{ name: mcp__flood__answer, input: { bytes: 17000000, id_last: true } }"#,
        r#"{ name: mcp__flood__answer, input: { bytes: 20000000 } }"#,
    ]
    .join(", ");
    let (dir, spec) = task(&flood_server(""), "mcp__flood", &calls);
    let output = run(dir.path(), &spec);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines = transcript(&dir.path().join("out/t/transcript.jsonl"));
    let results = events(&lines, "tool_result");
    assert_eq!(results.len(), 3);
    for (result, bytes) in results.iter().zip(["15900000", "17000000", "20000000"]) {
        let content = result["content"].as_str().unwrap();
        assert_eq!(result["is_error"], false, "{bytes}: {}", &content[..200]);
        assert!(!content.contains("did not answer"), "{bytes}: timed out");
        // Each is cut at the task's max_output with its note, whatever its size.
        assert!(content.len() < 200_000, "{bytes}: {}", content.len());
        assert!(content.contains("xxxxxxxxxx"), "{bytes}");
        assert!(
            content.contains("[the result was cut at about 25000 tokens"),
            "{bytes}"
        );
        let over = content.contains(&format!("[the server's answer was {}", &bytes[..5]));
        assert_eq!(over, bytes != "15900000", "{bytes}: {}", &content[..300]);
        if over {
            assert!(content.contains("over the 16 MiB"), "{bytes}");
        }
    }
    assert_eq!(lines.last().unwrap()["reason"], "end_turn");
}

#[test]
#[cfg_attr(
    not(drover_has_python3),
    ignore = "needs python3, which runs the flood server"
)]
fn a_servers_flood_of_stderr_is_logged_by_its_head_and_tail() {
    common::require_program("python3");
    let (dir, spec) = task(
        &flood_server("      env: { FLOOD_STDERR: \"50000000\" }\n"),
        "mcp__flood",
        r#"{ name: mcp__flood__answer, input: { bytes: 5 } }"#,
    );
    let output = run(dir.path(), &spec);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let log = std::fs::read(dir.path().join("out/t/mcp-flood.log")).unwrap();
    assert!(log.len() < 3 << 20, "the log holds {} bytes", log.len());
    let log = String::from_utf8(log).unwrap();
    assert!(log.starts_with("stderr-head\n"), "{}", &log[..100]);
    assert!(
        log.ends_with("stderr-tail\n"),
        "{}",
        &log[log.len() - 100..]
    );
    assert!(log.contains("bytes of output omitted ...]"));
    let lines = transcript(&dir.path().join("out/t/transcript.jsonl"));
    assert_eq!(events(&lines, "tool_result")[0]["content"], "xxxxx");
}
