//! MCP servers that flood: an answer over the 16 MiB bound of one message (its id first,
//! last, mid-line or missing; the line ended or not), and a server writing 50 MB to
//! stderr. Every answer comes back at once, cut with a note, or the calls it may have
//! answered fail at once: none waits for `timeouts.call` (600 s in these specs; the
//! test's own limit, far shorter, catches a call that would), and drover's memory does
//! not grow with the line; the log keeps its head and tail.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{self, events, peak_kib, transcript};
use crate::mcp::{run, stderr, task, task_with_call_timeout};

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
        r#"{ name: mcp__flood__answer, input: { bytes: 17000000, id: last } }"#,
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
        let over = content.starts_with("[the server's answer was ");
        assert_eq!(over, bytes != "15900000", "{bytes}: {}", &content[..300]);
        if over {
            assert!(content.contains("bytes, over the 16 MiB"), "{bytes}");
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

/// How long a run of the flood server may take before the test fails it: far less than
/// the 600 s `timeouts.call` of its spec.
const RUN_LIMIT: Duration = Duration::from_secs(120);

/// Run the flood server's task with `calls` and `mcp.timeouts.call: 600s`: a call left
/// to its call timeout fails the test at [`RUN_LIMIT`]. The task ends normally; its tool
/// results are returned, and drover's peak resident memory in KiB (VmHWM, sampled while
/// it ran).
fn run_within_the_limit(allow: &str, calls: &[&str]) -> (Vec<Value>, u64) {
    let (dir, spec) = task_with_call_timeout(&flood_server(""), allow, &calls.join(", "), "600s");
    let mut command = Command::new(assert_cmd::cargo::cargo_bin("drover"));
    command
        .arg("run")
        .arg(&spec)
        .arg("--artifacts")
        .arg(dir.path().join("out"))
        .env_remove("GITHUB_ACTIONS")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    for proxy in [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ] {
        command.env_remove(proxy);
    }
    let mut child = command.spawn().unwrap();
    let started = Instant::now();
    let mut peak = 0;
    let status = loop {
        if let Some(kib) = peak_kib(child.id()) {
            peak = peak.max(kib);
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > RUN_LIMIT {
            // Its MCP server's launcher ends the server when drover's end of the
            // channel closes.
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("the run did not end within {RUN_LIMIT:?}: a call waited for its call timeout");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    assert_eq!(status.code(), Some(0));
    let lines = transcript(&dir.path().join("out/t/transcript.jsonl"));
    assert_eq!(lines.last().unwrap()["reason"], "end_turn");
    let results = events(&lines, "tool_result").into_iter().cloned().collect();
    (results, peak)
}

/// A tool result's text.
fn text(result: &Value) -> &str {
    result["content"].as_str().unwrap()
}

/// The first 600 bytes of a (plain ASCII) text, for a failure's message.
fn start(text: &str) -> &str {
    &text[..text.len().min(600)]
}

#[test]
#[cfg_attr(
    not(drover_has_python3),
    ignore = "needs python3, which runs the flood server"
)]
fn an_answer_whose_id_lies_mid_line_is_cut_at_once_and_the_next_call_is_answered() {
    common::require_program("python3");
    // The id follows 8 MB of result and precedes 12 MB of padding: in neither the first
    // MiB nor the last 64 KiB of the line.
    let (results, _) = run_within_the_limit(
        "mcp__flood",
        &[
            r#"{ name: mcp__flood__answer, input: { bytes: 20000000, id: middle } }"#,
            r#"{ name: mcp__flood__answer, input: { bytes: 5 } }"#,
        ],
    );
    assert_eq!(results.len(), 2);
    let cut = text(&results[0]);
    assert_eq!(results[0]["is_error"], false, "{}", start(cut));
    assert!(
        cut.starts_with("[the server's answer was more than 16777216 bytes, over the 16 MiB drover reads of one MCP message; what follows is its start, cut at 1024 KiB]"),
        "{}",
        start(cut)
    );
    assert!(cut.contains("xxxxxxxxxx") && !cut.contains("yyy"));
    assert_eq!(text(&results[1]), "xxxxx");
}

#[test]
#[cfg_attr(
    not(drover_has_python3),
    ignore = "needs python3, which runs the flood server"
)]
fn a_line_with_no_id_fails_the_waiting_call_at_once_and_the_next_call_is_answered() {
    common::require_program("python3");
    let (results, _) = run_within_the_limit(
        "mcp__flood",
        &[
            r#"{ name: mcp__flood__answer, input: { bytes: 20000000, id: none } }"#,
            r#"{ name: mcp__flood__answer, input: { bytes: 5 } }"#,
        ],
    );
    assert_eq!(results.len(), 2);
    let failed = text(&results[0]);
    assert_eq!(results[0]["is_error"], true, "{}", start(failed));
    // The server's line: {"jsonrpc": "2.0", "result": {"content": [{"type": "text",
    // "text": "x…"}]}} and its newline.
    let length = 20_000_000 + 74;
    assert!(
        failed.contains(&format!("MCP server flood wrote a message of {length} bytes, over the 16 MiB drover reads of one MCP message, in which drover found no id: it may have answered any call waiting on the server, so each of them failed")),
        "{}",
        start(failed)
    );
    assert_eq!(text(&results[1]), "xxxxx");
}

#[test]
#[cfg_attr(
    not(drover_has_python3),
    ignore = "needs python3, which runs the flood server"
)]
fn a_line_that_never_ends_fails_the_waiting_call_and_the_next_at_once() {
    common::require_program("python3");
    // The server writes 20 MB with no id and no newline, then sleeps: nothing it could
    // answer later can be read, so the next call fails too, as soon as it is sent.
    let (results, _) = run_within_the_limit(
        "mcp__flood",
        &[
            r#"{ name: mcp__flood__answer, input: { bytes: 20000000, id: none, ends: false } }"#,
            r#"{ name: mcp__flood__answer, input: { bytes: 5 } }"#,
        ],
    );
    assert_eq!(results.len(), 2);
    for result in &results {
        let failed = text(result);
        assert_eq!(result["is_error"], true, "{}", start(failed));
        assert!(
            failed.contains("MCP server flood is writing a message of more than 16777216 bytes, over the 16 MiB drover reads of one MCP message, that did not end within 5s of passing it; nothing the server answers can be read before that message ends, so every call waiting on it failed"),
            "{}",
            start(failed)
        );
    }
}

#[test]
#[cfg_attr(
    not(drover_has_python3),
    ignore = "needs python3, which runs the flood server"
)]
fn a_line_of_300_mb_costs_drover_no_more_memory_than_the_bound() {
    common::require_program("python3");
    // The call is answered at the bound; Bash then waits until the server has written the
    // whole line (all but a pipe's buffer of it read by drover, and dropped).
    let wait = "for i in $(seq 600); do [ -e written ] && exit 0; sleep 0.1; done; exit 1";
    let (results, peak) = run_within_the_limit(
        "mcp__flood, Bash",
        &[
            r#"{ name: mcp__flood__answer, input: { bytes: 300000000, marker: written } }"#,
            &format!("{{ name: Bash, input: {{ command: {wait:?} }} }}"),
        ],
    );
    let cut = text(&results[0]);
    assert!(
        cut.starts_with("[the server's answer was more than 16777216 bytes"),
        "{}",
        start(cut)
    );
    assert_eq!(results[1]["is_error"], false, "{}", text(&results[1]));
    // rmcp's 16 MiB line and drover's own, not the line's 300 MB.
    assert!(
        peak < 150 * 1024,
        "drover's peak resident memory: {peak} KiB"
    );
}
