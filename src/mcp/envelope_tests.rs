// Test-only module: its parent includes it under #[cfg(test)].
use serde_json::json;

use super::*;

/// The envelope of `message` fed whole.
fn read(message: &str) -> Envelope {
    let mut envelope = Envelope::default();
    envelope.feed(message.as_bytes());
    envelope
}

#[test]
fn the_id_is_read_as_a_number_or_a_string_wherever_it_lies() {
    assert_eq!(
        read(r#"{"jsonrpc":"2.0","id":7,"result":{}}"#).id(),
        Some(&json!(7))
    );
    assert_eq!(read(r#"{"result":{},"id":-12}"#).id(), Some(&json!(-12)));
    assert_eq!(
        read(r#"{ "id" : "req-1" , "error": {}}"#).id(),
        Some(&json!("req-1"))
    );
    assert_eq!(
        read("{\"result\":\n{}, \"id\"\t:\r\n3\n}").id(),
        Some(&json!(3))
    );
    // Escapes are decoded as serde_json (and rmcp) decode them, in the key as in the value.
    assert_eq!(read(r#"{"\u0069d":"a\"b\\"}"#).id(), Some(&json!("a\"b\\")));
    // Numbers end at whatever ends the member.
    assert_eq!(read(r#"{"id":5}"#).id(), Some(&json!(5)));
    assert_eq!(read(r#"{"id":1.5e3,"x":1}"#).id(), Some(&json!(1500.0)));
}

#[test]
fn an_id_nested_or_inside_a_string_is_not_the_messages() {
    assert_eq!(read(r#"{"result":{"id":3},"x":[{"id":4}]}"#).id(), None);
    assert_eq!(read(r#"{"result":"\"id\":5, \"id\": 6"}"#).id(), None);
    assert_eq!(read(r#"{"result":"a\\","note":"\"id\":5"}"#).id(), None);
    // A value that says `id` is no key.
    assert_eq!(read(r#"{"x":"id","y":["id",1]}"#).id(), None);
    // Nor is the `id` of anything but an object at the top.
    assert_eq!(read(r#"[{"id":1}, "id", 2]"#).id(), None);
    // What follows the message is no part of it.
    assert_eq!(read(r#"{"result":{}} {"id":8}"#).id(), None);
}

#[test]
fn an_id_that_is_no_number_or_string_or_too_long_is_none() {
    assert_eq!(read(r#"{"id":null,"result":{}}"#).id(), None);
    assert_eq!(read(r#"{"id":true}"#).id(), None);
    assert_eq!(read(r#"{"id":{"n":1},"result":{}}"#).id(), None);
    assert_eq!(read(r#"{"id":[1],"result":{}}"#).id(), None);
    let long = "i".repeat(MAX_ID);
    assert_eq!(read(&format!(r#"{{"id":"{long}"}}"#)).id(), None);
    let fits = "i".repeat(MAX_ID - 2);
    assert_eq!(
        read(&format!(r#"{{"id":"{fits}"}}"#)).id(),
        Some(&json!(fits))
    );
    let digits = "9".repeat(MAX_ID + 5);
    assert_eq!(read(&format!(r#"{{"id":{digits}}}"#)).id(), None);
    // A long key is read past, and an `id` after it still counts.
    let key = "k".repeat(MAX_KEY * 3);
    assert_eq!(
        read(&format!(r#"{{"{key}":1,"id":2}}"#)).id(),
        Some(&json!(2))
    );
    // The first id counts: a second cannot change whose answer a message is.
    assert_eq!(read(r#"{"id":1,"id":2}"#).id(), Some(&json!(1)));
}

#[test]
fn an_id_split_across_any_chunks_is_read_the_same() {
    let message = r#"{"jsonrpc":"2.0","result":{"content":[{"type":"text","text":"a \"id\": 9 \\"}]},"id":"r\"-7","pad":"x"}"#;
    for size in 1..=message.len() {
        let mut envelope = Envelope::default();
        for chunk in message.as_bytes().chunks(size) {
            envelope.feed(chunk);
        }
        assert_eq!(envelope.id(), Some(&json!("r\"-7")), "chunks of {size}");
        assert!(envelope.is_answer() && !envelope.is_request());
    }
    // A number split in two.
    let mut envelope = Envelope::default();
    envelope.feed(br#"{"id":12"#);
    assert_eq!(envelope.id(), None, "12 may go on");
    envelope.feed(br#"34,"result":{}}"#);
    assert_eq!(envelope.id(), Some(&json!(1234)));
}

#[test]
fn a_request_and_an_answer_are_told_apart() {
    let request = read(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}"#);
    assert!(request.is_request() && !request.is_answer());
    let notification = read(r#"{"jsonrpc":"2.0","method":"notifications/cancelled"}"#);
    assert!(notification.is_request() && notification.id().is_none());
    let error = read(r#"{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"no"}}"#);
    assert!(error.is_answer() && !error.is_request());
    // Keys of nested objects say nothing of the message.
    let nested = read(r#"{"jsonrpc":"2.0","params":{"method":"x","result":1}}"#);
    assert!(!nested.is_request() && !nested.is_answer());
}

#[test]
fn a_huge_message_is_read_in_bounded_state() {
    let mut envelope = Envelope::default();
    envelope.feed(br#"{"jsonrpc":"2.0","result":{"content":[{"type":"text","text":""#);
    let text = vec![b'x'; 1 << 20];
    for _ in 0..20 {
        envelope.feed(&text);
    }
    envelope.feed(br#""}]},"id":7,"pad":""#);
    assert_eq!(envelope.id(), Some(&json!(7)));
    assert!(matches!(envelope.capture, Capture::Nothing));
}

#[test]
fn the_members_present_and_the_first_repeated_are_told() {
    let answer = read(r#"{"jsonrpc":"2.0","id":1,"result":{"id":2,"jsonrpc":1}}"#);
    assert!(answer.has(Member::Jsonrpc) && answer.has(Member::Result));
    assert!(!answer.has(Member::Error) && !answer.has(Member::Method));
    assert_eq!(
        answer.repeated(),
        None,
        "nested members are not the message's"
    );
    let log = read(r#"{"level":"info","msg":"processing item","n":12345}"#);
    assert!(Member::ALL.iter().all(|member| !log.has(*member)));
    // An escaped key is the key it decodes to.
    let twice = read(r#"{"jsonrpc":"2.0","id":3,"\u0069d":3,"result":{},"result":{}}"#);
    assert_eq!(twice.repeated(), Some(Member::Id));
    assert_eq!(twice.id(), Some(&json!(3)));
    assert_eq!(read(r#"{"x":1,"x":2}"#).repeated(), None);
}
