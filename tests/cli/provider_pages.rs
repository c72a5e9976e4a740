//! A model endpoint answering 200 with something other than an event stream (a captive
//! portal's login page, a gateway's error page, a JSON error): the task ends at once
//! with an error saying what came, never "the stream ended" after every retry.

use crate::common::{events, transcript};
use crate::mock_server::{MockServer, Reply};
use crate::providers::{KEY, run, task};

/// Run a task of `provider` against a server answering `reply` (once; any retry would
/// get a 500); the run's end event, after checking nothing was retried.
fn ends_with(provider: &str, reply: Reply) -> serde_json::Value {
    let server = MockServer::start(vec![reply]);
    let (dir, spec) = task(provider, &server.base_url, "");
    let artifacts = dir.path().join("out");
    let output = run(&spec, &artifacts, Some(KEY));
    assert_eq!(
        output.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let lines = transcript(&artifacts.join("t/transcript.jsonl"));
    assert!(
        events(&lines, "retry").is_empty(),
        "{provider}: not retried"
    );
    assert_eq!(server.requests().len(), 1, "{provider}: asked once");
    let recorded = std::fs::read_to_string(artifacts.join("t/transcript.jsonl")).unwrap();
    assert!(!recorded.contains(KEY), "{provider}: the key stays out");
    assert!(!String::from_utf8_lossy(&output.stderr).contains(KEY));
    let end = lines.last().unwrap().clone();
    assert_eq!(end["type"], "run_end", "{end}");
    assert_eq!(end["reason"], "provider_error", "{end}");
    end
}

#[test]
fn a_200_html_page_instead_of_a_stream_says_what_the_server_answered() {
    let portal = "\n<!DOCTYPE html>\n<html><head><title>GuestNet \u{2013} Sign in</title></head>\n<body><form>Accept the terms</form></body></html>\n";
    for provider in ["anthropic", "openai"] {
        let end = ends_with(
            provider,
            Reply::status(200, portal).with_header("Content-Type", "text/html; charset=utf-8"),
        );
        let message = end["message"].as_str().unwrap();
        assert!(
            message.contains("answered HTTP 200"),
            "{provider}: {message}"
        );
        assert!(
            message.contains("content type text/html; charset=utf-8"),
            "{provider}: {message}"
        );
        assert!(
            message.contains("its first line is \"<!DOCTYPE html>\""),
            "{provider}: {message}"
        );
        assert!(
            message.contains("its title \"GuestNet \u{2013} Sign in\""),
            "{provider}: {message}"
        );
        assert!(message.contains("captive portal"), "{provider}: {message}");
        assert!(!message.contains("message_stop"), "{provider}: {message}");
        assert!(!message.contains("gave up after"), "{provider}: {message}");
    }
}

#[test]
fn a_page_echoing_the_key_or_a_json_error_is_quoted_cleanly() {
    // A gateway page quoting the request's key, with terminal escapes: the key is
    // redacted and the control characters are gone.
    let page = format!("Proxy error \u{1b}[31mfor key {KEY}\u{7}: upstream refused\nmore");
    let end = ends_with(
        "openai",
        Reply::status(200, &page).with_header("Content-Type", "text/plain"),
    );
    let message = end["message"].as_str().unwrap();
    assert!(message.contains("content type text/plain"), "{message}");
    assert!(message.contains("\"Proxy error [31mfor key "), "{message}");
    assert!(message.contains(": upstream refused\""), "{message}");
    assert!(!message.chars().any(char::is_control), "{message:?}");

    // A server that ignored `stream: true`, or a gateway's JSON error sent with 200.
    let end = ends_with(
        "anthropic",
        Reply::status(
            200,
            "{\"error\":{\"type\":\"gateway_error\",\"message\":\"no route to the model\"}}",
        ),
    );
    let message = end["message"].as_str().unwrap();
    assert!(
        message.contains("content type application/json"),
        "{message}"
    );
    assert!(
        message.contains("its message is \"gateway_error: no route to the model\""),
        "{message}"
    );
}
