// Test-only module: its parent includes it under #[cfg(test)].
use super::*;

/// What rmcp makes of `line`.
fn reading(line: &[u8]) -> Reading {
    let mut envelope = Envelope::default();
    envelope.feed(line);
    read(line, &envelope)
}

/// Why rmcp cannot read `line`, as said.
fn why_not(line: &[u8]) -> String {
    match reading(line) {
        Reading::Unreadable(why) => why.to_string(),
        other => panic!("{other:?}: {}", String::from_utf8_lossy(line)),
    }
}

#[test]
fn the_messages_rmcp_reads_are_messages() {
    for line in [
        &br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}"#[..],
        br#"{"jsonrpc":"2.0","id":"s","result":{}}"#,
        br#"{"jsonrpc":"2.0","id":1.0,"result":{}}"#,
        br#"{"jsonrpc":"2.0","id":null,"error":{"code":-1,"message":"null id"}}"#,
        br#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hi"}}"#,
        br#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#,
        b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}",
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\r",
    ] {
        assert!(
            matches!(reading(line), Reading::Message),
            "{}: {:?}",
            String::from_utf8_lossy(line),
            reading(line)
        );
    }
    assert!(matches!(reading(b""), Reading::Blank));
    assert!(matches!(reading(b"\r"), Reading::Blank));
}

#[test]
fn logs_and_text_on_stdout_are_no_messages() {
    for line in [
        &br#"{"level":"info","msg":"processing item","n":12345}"#[..],
        br#"{"jsonrpc":"2.0","foo":1}"#,
        br#"{"level":"error","msg":"failed","error":"boom"}"#,
        b"garbage line without id",
        b"   ",
        &[0u8; 100],
        b"[1,2,3]",
        b"42",
    ] {
        assert!(
            matches!(reading(line), Reading::Unreadable(_)),
            "{}",
            String::from_utf8_lossy(line)
        );
    }
}

#[test]
fn an_answer_rmcp_cannot_read_says_why() {
    assert_eq!(
        why_not(b"{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"bad \xff\"}]}}"),
        "invalid UTF-8 at byte 73"
    );
    let answer = br#"{"jsonrpc":"2.0","id":3,"result":{}}"#;
    let mut twice = answer.to_vec();
    twice.push(b'\r');
    twice.extend_from_slice(answer);
    assert_eq!(
        why_not(&twice),
        "a carriage return at byte 37 inside it (a message ends with a newline)"
    );
    assert_eq!(
        why_not(br#"{"jsonrpc":"2.0","id":3,"id":3,"result":{}}"#),
        "it has its \"id\" twice"
    );
    assert_eq!(
        why_not(br#"{"jsonrpc":"2.0","id":3}"#),
        "an answer with neither result nor error"
    );
    assert_eq!(
        why_not(br#"{"jsonrpc":"2.0","id":3,"result":{},"error":{"code":1,"message":"x"}}"#),
        "an answer with both result and error"
    );
    assert_eq!(
        why_not(br#"{"id":3,"result":{}}"#),
        "missing field `jsonrpc`"
    );
    assert_eq!(
        why_not(br#"{"jsonrpc":"2.0","id":3,"error":"boom"}"#),
        "invalid type: string \"boom\", expected struct ErrorData"
    );
    assert_eq!(
        why_not(br#"{"jsonrpc":"2.0","id":3,"result":{}"#),
        "it is not JSON (EOF while parsing an object at byte 35)"
    );
}
