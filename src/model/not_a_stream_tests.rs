// Test-only module: its parent includes it under #[cfg(test)].
use super::*;

/// No key to take out.
fn keep(text: &str) -> String {
    text.to_string()
}

fn verdict(pieces: &[&[u8]]) -> Verdict {
    let mut start = StreamStart::default();
    let mut verdict = Verdict::Undecided;
    for piece in pieces {
        verdict = start.push(piece);
    }
    if verdict == Verdict::Undecided {
        verdict = start.end();
    }
    verdict
}

#[test]
fn event_streams_are_told_from_pages_by_their_first_line() {
    for stream in [
        &b"event: message_start\ndata: {}\n\n"[..],
        b"data: {\"choices\":[]}\n\n",
        b"\n\n: keep-alive\n\n",
        b"\xef\xbb\xbfevent: ping\n",
        b"retry: 100\n",
        b"data\n",
    ] {
        assert_eq!(verdict(&[stream]), Verdict::Stream, "{stream:?}");
    }
    for page in [
        &b"<!DOCTYPE html>\n<html>"[..],
        b"{\"id\":\"chatcmpl-1\",\"choices\":[]}",
        b"\r\n  <html><title>Login</title>",
        b"Bad gateway",
    ] {
        assert_eq!(verdict(&[page]), Verdict::NotStream, "{page:?}");
    }
    // Split anywhere: undecided until the first line is whole.
    let mut start = StreamStart::default();
    assert_eq!(start.push(b"\n da"), Verdict::Undecided);
    assert_eq!(start.push(b"ta: x"), Verdict::Undecided);
    assert_eq!(
        start.push(b"\n"),
        Verdict::NotStream,
        "a line opening with a space names no field"
    );
    let mut start = StreamStart::default();
    assert_eq!(start.push(b"eve"), Verdict::Undecided);
    assert_eq!(start.push(b"nt: x\r"), Verdict::Stream);
    // Nothing at all is no verdict (a cut connection, retried as before).
    assert_eq!(verdict(&[b"", b"\n\n"]), Verdict::Undecided);
    // A first line longer than what is looked at is judged by its start.
    assert_eq!(verdict(&[&[b'x'; 5000]]), Verdict::NotStream);
    let mut long = b"data: ".to_vec();
    long.extend([b'x'; 5000]);
    assert_eq!(StreamStart::default().push(&long), Verdict::Stream);
}

#[test]
fn the_description_names_status_type_and_first_line_cleanly() {
    let page = "\n<!DOCTYPE html>\n<html><head><title>Hotel   WiFi\n Login</title></head>\n";
    let text = describe(
        "http://127.0.0.1:9/v1/messages",
        200,
        Some("text/html; charset=utf-8"),
        page.as_bytes(),
        &keep,
    );
    assert!(
        text.contains("http://127.0.0.1:9/v1/messages answered HTTP 200"),
        "{text}"
    );
    assert!(
        text.contains("content type text/html; charset=utf-8"),
        "{text}"
    );
    assert!(
        text.contains("its first line is \"<!DOCTYPE html>\""),
        "{text}"
    );
    assert!(text.contains("its title \"Hotel WiFi Login\""), "{text}");
    assert!(text.contains("not retried"), "{text}");

    let hostile = format!("\u{1b}[31mred\u{7}{}", "y".repeat(1000));
    let text = describe("u", 200, None, hostile.as_bytes(), &keep);
    assert!(text.contains("no content type"), "{text}");
    assert!(!text.chars().any(|c| c.is_control()), "{text:?}");
    assert!(
        text.contains(&format!("\"[31mred{}…\"", "y".repeat(MAX_QUOTE - 7))),
        "{text}"
    );

    let json = r#"{"error":{"type":"gateway_error","message":"upstream unavailable"}}"#;
    let text = describe("u", 200, Some("application/json"), json.as_bytes(), &keep);
    assert!(
        text.contains("its message is \"gateway_error: upstream unavailable\""),
        "{text}"
    );
}

#[test]
fn a_page_labelled_as_an_event_stream_is_said_to_have_sent_no_events() {
    let page = "<!DOCTYPE html>\n<html><title>Login</title>";
    let text = describe(
        "http://127.0.0.1:9/v1/messages",
        200,
        Some("text/event-stream; charset=utf-8"),
        page.as_bytes(),
        &keep,
    );
    assert!(
        text.starts_with(
            "http://127.0.0.1:9/v1/messages answered HTTP 200 labelled text/event-stream; charset=utf-8 but sent no events: its first line is \"<!DOCTYPE html>\", its title \"Login\"."
        ),
        "{text}"
    );
    assert!(!text.contains("which is not the event stream"), "{text}");
    assert!(text.contains("not retried"), "{text}");
    let text = describe("u", 200, Some("Text/Event-Stream"), b"Bad gateway", &keep);
    assert!(
        text.contains("labelled Text/Event-Stream but sent no events"),
        "{text}"
    );
    // Any other type keeps saying it is no event stream.
    let text = describe("u", 200, Some("text/event-streams"), b"x", &keep);
    assert!(text.contains("which is not the event stream"), "{text}");
}

#[test]
fn a_page_in_the_middle_of_a_stream_is_quoted_with_what_was_expected() {
    let foreign = "<!DOCTYPE html>\n<html><head><title>502 Bad\nGateway</title>\n";
    let text = describe_midway(
        "http://127.0.0.1:9/v1/messages",
        200,
        Some("text/event-stream"),
        foreign.as_bytes(),
        "the response stream ended before message_stop",
        &keep,
    );
    assert_eq!(
        text,
        "http://127.0.0.1:9/v1/messages answered HTTP 200 with content type text/event-stream and began an event stream, then sent a line that is no server-sent event: \"<!DOCTYPE html>\" (a page titled \"502 Bad Gateway\"); drover expected only `event:`, `data:`, `id:`, `retry:` and `:` lines up to the stream's final event, and then the response stream ended before message_stop. A proxy or a gateway may have put its own page into the stream; not retried, as a server answering something else is no dropped connection"
    );
    let json = r#"{"error":{"type":"proxy_error","message":"upstream \u001b[2Jreset"}}"#;
    let text = describe_midway("u", 200, None, json.as_bytes(), "x", &keep);
    assert!(text.contains("with no content type"), "{text}");
    assert!(
        text.contains("(a JSON error saying \"proxy_error: upstream [2Jreset\")"),
        "{text}"
    );
    assert!(!text.chars().any(|c| c.is_control()), "{text:?}");
    let long = "z".repeat(5000);
    let text = describe_midway("u", 200, None, long.as_bytes(), "x", &keep);
    assert!(
        text.contains(&format!("\"{}…\"", "z".repeat(MAX_QUOTE))),
        "{text}"
    );
}

#[test]
fn a_key_that_cleaning_or_decoding_puts_together_is_taken_out_before_the_cut() {
    let key = "sk-ant-ZZLEAKCANARY-7f3a9b2c41d0e8";
    let scrub = |text: &str| text.replace(key, "[redacted]");
    // A control character inside the key: the raw body does not hold it whole, the
    // cleaned line does; the key straddles the 200-character cut.
    let split = format!("{}{}\u{1}{}", "P".repeat(167), &key[..12], &key[12..]);
    // A JSON escape inside the key: only the decoded message holds it whole.
    let escaped = format!(
        r#"{{"error":{{"message":"{}{}"}}}}"#,
        "Q".repeat(170),
        key.replace('L', "\\u004c")
    );
    for text in [
        describe("u", 200, Some("text/html"), split.as_bytes(), &scrub),
        describe_midway("u", 200, None, split.as_bytes(), "x", &scrub),
        describe(
            "u",
            200,
            Some("application/json"),
            escaped.as_bytes(),
            &scrub,
        ),
    ] {
        assert!(!text.contains("ZZLEAK"), "{text}");
        assert!(!text.contains("sk-ant-"), "{text}");
    }
}
