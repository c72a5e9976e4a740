// Test-only module: its parent includes it under #[cfg(test)].
use serde_json::json;

use super::*;

#[test]
fn a_cut_message_closes_into_what_it_began_with() {
    let whole = br#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"abcdef"}],"isError":false}}"#;
    let cut = |at: &str| {
        let at = std::str::from_utf8(whole).unwrap().find(at).unwrap();
        close_prefix(&whole[..at])
    };
    // Inside a text value: kept up to the cut.
    assert_eq!(
        cut("def"),
        Some(json!({"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"abc"}]}}))
    );
    // Inside a key, or after a key without its value: the member is left out.
    assert_eq!(
        cut("ext\":\"abc"),
        Some(json!({"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text"}]}}))
    );
    assert_eq!(
        cut("\"abcdef"),
        Some(json!({"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text"}]}}))
    );
    // Inside a number: left out.
    assert_eq!(
        close_prefix(br#"{"id":12"#),
        Some(json!({})),
        "12 may go on"
    );
    assert_eq!(close_prefix(br#"{"id":12,"r"#), Some(json!({"id": 12})));
    assert_eq!(close_prefix(br#"[true, fal"#), Some(json!([true])));
    assert_eq!(close_prefix(whole), serde_json::from_slice(whole).ok());
    assert_eq!(close_prefix(b""), None);
    assert_eq!(close_prefix(b"\xff{}"), None);
}

#[test]
fn a_cut_string_keeps_no_half_escape_or_character() {
    assert_eq!(close_prefix(br#"["ab\"#), Some(json!(["ab"])));
    assert_eq!(close_prefix(br#"["ab\n"#), Some(json!(["ab\n"])));
    assert_eq!(close_prefix(br#"["ab\u00"#), Some(json!(["ab"])));
    assert_eq!(close_prefix(br#"["ab\u00e9"#), Some(json!(["abé"])));
    // A leading surrogate without its trailing one is no character.
    assert_eq!(close_prefix(br#"["a\ud83d"#), Some(json!(["a"])));
    assert_eq!(close_prefix(br#"["a\ud83d\ude00"#), Some(json!(["a😀"])));
    // A character cut in two at the end.
    let mut bytes = br#"["a"#.to_vec();
    bytes.extend_from_slice(&"é".as_bytes()[..1]);
    assert_eq!(close_prefix(&bytes), Some(json!(["a"])));
}
