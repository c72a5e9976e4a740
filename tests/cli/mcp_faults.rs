//! MCP stdio servers that misbehave without flooding: logs on stdout, answers drover
//! cannot read, a stdout closed while the server lives on, and a call drover fails in
//! the server's place. No call waits for `timeouts.call` (600 s in these specs; the
//! test's own limit, far shorter, catches a call that would); what drover did not pass
//! on is said in the server's log, and a call failed in the server's place is cancelled
//! on the server.

use crate::common;
use crate::mcp_bounds::{flood_server, run_server_within_the_limit, start, text};

/// The end of the error of a call drover failed in the server's place.
const CANCELLED: &str = "; drover asked the server to cancel this call, but it may have run";

#[test]
#[cfg_attr(
    not(drover_has_python3),
    ignore = "needs python3, which runs the flood server"
)]
fn a_server_logging_json_on_stdout_is_answered_and_its_log_says_what_was_not_passed_on() {
    common::require_program("python3");
    // rmcp would answer each log line with an error on the server's stdin, which this
    // server does not read while it writes: 20,000 of them once filled that pipe and
    // blocked the server and rmcp for good.
    let (dir, results, _) = run_server_within_the_limit(
        &flood_server(""),
        "mcp__flood",
        &[
            r#"{ name: mcp__flood__answer, input: { bytes: 5, log: 20000 } }"#,
            r#"{ name: mcp__flood__answer, input: { bytes: 3, log: 20000 } }"#,
        ],
    );
    assert_eq!(results.len(), 2);
    assert_eq!(text(&results[0]), "xxxxx", "{}", start(text(&results[0])));
    assert_eq!(text(&results[1]), "xxx", "{}", start(text(&results[1])));
    let log = std::fs::read_to_string(dir.path().join("out/t/mcp-flood.log")).unwrap();
    assert!(
        log.contains(r#"[drover: the server wrote a line on stdout that is no MCP message drover can read, so it was not passed on, nor will such lines be (a server writes only MCP messages on stdout, its logs on stderr); the first: "{\"level\":\"info\",\"msg\":\"processing item\",\"n\":12345}"]"#),
        "{log}"
    );
    assert!(
        log.ends_with("[drover: in all, 40000 lines the server wrote on stdout were no MCP message drover can read, and not passed on]\n"),
        "{log}"
    );
}

#[test]
#[cfg_attr(
    not(drover_has_python3),
    ignore = "needs python3, which runs the flood server"
)]
fn an_answer_drover_cannot_read_fails_its_call_at_once_saying_why() {
    common::require_program("python3");
    let (dir, results, _) = run_server_within_the_limit(
        &flood_server(""),
        "mcp__flood",
        &[
            r#"{ name: mcp__flood__answer, input: { bad: utf8 } }"#,
            r#"{ name: mcp__flood__answer, input: { bad: cr } }"#,
            r#"{ name: mcp__flood__answer, input: { bad: id_only } }"#,
            r#"{ name: mcp__flood__answer, input: { bytes: 5 } }"#,
        ],
    );
    assert_eq!(results.len(), 4);
    // The calls are requests 3 to 5 (after the handshake and the tool listing).
    for (at, (result, why)) in results
        .iter()
        .zip([
            "invalid UTF-8 at byte 78",
            "a carriage return at byte 42 inside it (a message ends with a newline)",
            "an answer with neither result nor error",
        ])
        .enumerate()
    {
        let failed = text(result);
        assert_eq!(result["is_error"], true, "{failed}");
        assert_eq!(
            failed,
            format!(
                "MCP server flood failed the call of answer: Mcp error: -32603: MCP server flood answered request {} with a message drover cannot read: {why}",
                at + 3
            )
        );
    }
    assert_eq!(text(&results[3]), "xxxxx");
    // The server answered each: no line went unsaid, none is cancelled.
    let log = std::fs::read_to_string(dir.path().join("out/t/mcp-flood.log")).unwrap();
    assert!(!log.contains("[drover:"), "{log}");
}

#[test]
#[cfg_attr(
    not(drover_has_python3),
    ignore = "needs python3, which runs the flood server"
)]
fn a_call_drover_fails_in_the_servers_place_is_cancelled_on_the_server() {
    common::require_program("python3");
    // The answer has no id, so the call fails at once; the server, which may still be
    // running it, is asked to cancel it. Bash waits for the server to have read that.
    let wait = "for i in $(seq 600); do grep -q cancelled calls.log && break; sleep 0.1; done; cat calls.log";
    let (_dir, results, _) = run_server_within_the_limit(
        &flood_server(""),
        "mcp__flood, Bash",
        &[
            r#"{ name: mcp__flood__answer, input: { bytes: 20000000, id: none } }"#,
            &format!("{{ name: Bash, input: {{ command: {wait:?} }} }}"),
        ],
    );
    let failed = text(&results[0]);
    assert_eq!(results[0]["is_error"], true, "{}", start(failed));
    assert!(
        failed.starts_with("MCP server flood failed the call of answer: Mcp error: -32603: MCP server flood wrote a message of 20000074 bytes")
            && failed.ends_with(CANCELLED),
        "{failed}"
    );
    // The server was given the call, then its cancellation.
    let calls = text(&results[1]);
    assert_eq!(
        calls.lines().collect::<Vec<_>>(),
        ["called 3", "cancelled 3"],
        "{calls}"
    );
}

#[test]
#[cfg_attr(
    not(drover_has_python3),
    ignore = "needs python3, which runs the flood server"
)]
fn a_server_that_closes_its_stdout_fails_its_calls_at_once() {
    common::require_program("python3");
    // The server lives on with its stdout closed: the sandbox launcher holds no copy of
    // it, so drover reads the channel's end at once.
    let (_dir, results, _) = run_server_within_the_limit(
        &flood_server("      required: false\n"),
        "mcp__flood",
        &[
            r#"{ name: mcp__flood__answer, input: { close_stdout: true } }"#,
            r#"{ name: mcp__flood__answer, input: { bytes: 5 } }"#,
        ],
    );
    assert_eq!(results.len(), 2);
    for result in &results {
        assert_eq!(
            text(result),
            "MCP server flood is gone (its process ended or closed the connection); its tools cannot be called"
        );
    }
}
