//! A model endpoint answering 200 with something other than an event stream (a captive
//! portal's login page, a gateway's error page, a JSON error), or a stream a proxy put
//! its own page into: the task ends at once with an error saying what came, never "the
//! stream ended" after every retry. A stream that merely ends early is still retried.

use std::time::Duration;

use crate::common::{events, transcript};
use crate::mock_server::{MockServer, Reply};
use crate::providers::{
    KEY, anthropic_final_turn, anthropic_start, anthropic_text, openai_chunk, openai_final_turn,
    run, task,
};

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

#[test]
fn a_page_labelled_as_an_event_stream_says_it_sent_no_events() {
    let login =
        "<!DOCTYPE html>\n<html><head><title>Login</title></head><body>Sign in</body></html>\n";
    for provider in ["anthropic", "openai"] {
        let end = ends_with(
            provider,
            Reply::status(200, login).with_header("Content-Type", "text/event-stream"),
        );
        let message = end["message"].as_str().unwrap();
        assert!(
            message.contains(
                "answered HTTP 200 labelled text/event-stream but sent no events: its first line is \"<!DOCTYPE html>\", its title \"Login\"."
            ),
            "{provider}: {message}"
        );
        assert!(
            !message.contains("which is not the event stream"),
            "{provider}: the message does not contradict itself: {message}"
        );
        assert!(message.contains("not retried"), "{provider}: {message}");
    }
}

/// The first events of a turn of `provider`, as a real API sends them.
fn stream_start(provider: &str) -> String {
    match provider {
        "anthropic" => anthropic_start(10, 0, 0) + &anthropic_text(0, "Half an ans"),
        _ => openai_chunk(
            serde_json::json!({"role": "assistant", "content": "Half an ans"}),
            None,
        ),
    }
}

/// What each provider's stream lacks when it ends early.
fn final_event(provider: &str) -> &'static str {
    match provider {
        "anthropic" => "message_stop",
        _ => "finish_reason",
    }
}

/// A proxy that cuts into a 200 text/event-stream with its own error page, then closes
/// the stream (`complete`) or drops the connection.
fn stream_then_page(provider: &str, page: &str, complete: bool) -> Reply {
    Reply::Sse {
        pieces: vec![
            stream_start(provider).into_bytes(),
            page.as_bytes().to_vec(),
        ],
        pause: Duration::from_millis(5),
        complete,
    }
}

#[test]
fn a_page_put_into_a_stream_is_quoted_and_not_retried() {
    let page = "<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head>\n<body>nginx</body></html>\n";
    for provider in ["anthropic", "openai"] {
        for complete in [true, false] {
            let end = ends_with(provider, stream_then_page(provider, page, complete));
            let message = end["message"].as_str().unwrap();
            let case = format!("{provider}, closed cleanly: {complete}: {message}");
            assert!(
                message.contains("answered HTTP 200 with content type text/event-stream and began an event stream, then sent a line that is no server-sent event: \"<!DOCTYPE html>\" (a page titled \"502 Bad Gateway\")"),
                "{case}"
            );
            assert!(
                message.contains("drover expected only `event:`, `data:`, `id:`, `retry:` and `:` lines up to the stream's final event"),
                "{case}"
            );
            if complete {
                assert!(message.contains(final_event(provider)), "{case}");
            } else {
                assert!(message.contains("the response stream was cut"), "{case}");
            }
            assert!(message.contains("not retried"), "{case}");
            assert!(!message.contains("gave up after"), "{case}");
        }
    }
}

#[test]
fn text_put_into_a_stream_is_quoted_with_the_key_redacted() {
    // No HTML, no trailing line break: a proxy's plain message quoting the key, then the
    // connection closes.
    let text = format!("\nProxy error \u{1b}[31mfor key {KEY}: upstream timed out");
    for provider in ["anthropic", "openai"] {
        let end = ends_with(provider, stream_then_page(provider, &text, true));
        let message = end["message"].as_str().unwrap();
        assert!(
            message.contains("sent a line that is no server-sent event: \"Proxy error [31mfor key [redacted]: upstream timed out\""),
            "{provider}: {message}"
        );
        assert!(
            !message.chars().any(char::is_control),
            "{provider}: {message:?}"
        );
    }
}

#[test]
fn a_stream_that_merely_ends_early_is_still_retried() {
    for provider in ["anthropic", "openai"] {
        // Where the event that would end the turn begins.
        let (whole, at) = match provider {
            "anthropic" => {
                let whole = anthropic_final_turn();
                let at = whole.find("event: message_delta").unwrap();
                (whole, at)
            }
            _ => {
                let whole = openai_final_turn();
                let at = whole.match_indices("data: ").nth(1).unwrap().0;
                (whole, at)
            }
        };
        let server = MockServer::start(vec![
            // Closed cleanly between two events, before the final one.
            Reply::sse(&whole[..at]),
            // Dropped in the middle of a field name (`ev`, `da`): no foreign text.
            Reply::sse_cut(&whole, at + 2),
            Reply::sse(&whole),
        ]);
        let (dir, spec) = task(provider, &server.base_url, "");
        let artifacts = dir.path().join("out");
        let output = run(&spec, &artifacts, Some(KEY));
        assert_eq!(
            output.status.code(),
            Some(0),
            "{provider}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let lines = transcript(&artifacts.join("t/transcript.jsonl"));
        let retries = events(&lines, "retry");
        assert_eq!(retries.len(), 2, "{provider}: {retries:?}");
        let first = retries[0]["reason"].as_str().unwrap();
        assert!(first.contains(final_event(provider)), "{provider}: {first}");
        let second = retries[1]["reason"].as_str().unwrap();
        assert!(second.contains("cut"), "{provider}: {second}");
        assert_eq!(server.requests().len(), 3, "{provider}");
        let end = lines.last().unwrap();
        assert_eq!(end["reason"], "end_turn", "{provider}: {end}");
    }
}

#[test]
fn a_key_where_a_quote_is_cut_is_redacted_not_cut_in_half() {
    // The quote keeps 200 characters: the key starts ten before that bound, so quoting
    // first and redacting after would leave its first ten characters in the message.
    let line = format!("{}{KEY} denied\n", "a".repeat(190));
    for provider in ["anthropic", "openai"] {
        for reply in [
            Reply::status(200, &line).with_header("Content-Type", "text/plain"),
            stream_then_page(provider, &line, true),
        ] {
            let end = ends_with(provider, reply);
            let message = end["message"].as_str().unwrap();
            assert!(
                message.contains(&format!("\"{}[redacted]…\"", "a".repeat(190))),
                "{provider}: {message}"
            );
            assert!(!message.contains(&KEY[..10]), "{provider}: {message}");
        }
    }
}
