// Test-only module: its parent includes it under #[cfg(test)].
//! The notebook JSON tree reads what any JSON writer writes and writes it back unchanged;
//! values written anew follow the file's layout.

use super::*;

/// Forget every span, so the whole document is written anew.
fn forget_spans(node: &mut Node) {
    node.raw = None;
    match &mut node.value {
        Json::Array(items) => items.iter_mut().for_each(forget_spans),
        Json::Object(members) => members.iter_mut().for_each(|(_, v)| forget_spans(v)),
        _ => {}
    }
}

fn rewritten(text: &str) -> String {
    let mut doc = Document::parse(text.to_string()).unwrap();
    forget_spans(&mut doc.root);
    doc.render()
}

/// As Python's `json.dumps(value, indent=1, ensure_ascii=False)` writes it.
const PYTHON_INDENT_1: &str = "{\n \"b\": [\n  1,\n  1e-05,\n  -0.5,\n  NaN,\n  {\n   \"é\": \"line\\n\\t\\\"q\\\" \\\\ \\u001b[0m\"\n  }\n ],\n \"a\": {},\n \"c\": [],\n \"d\": null,\n \"e\": true\n}\n";

#[test]
fn untouched_documents_are_written_back_byte_for_byte() {
    let texts = [
        PYTHON_INDENT_1,
        "{\n  \"x\": [1, 2],\n  \"y\": {\"z\": \"\\u00e9\"}\n}",
        "\u{FEFF}{\"a\":1,\"b\":[true,false]}   \n\n",
        "{\n\t\"a\": 1\n}\n",
        "[]",
    ];
    for text in texts {
        let doc = Document::parse(text.to_string()).unwrap();
        assert_eq!(doc.render(), text);
    }
}

#[test]
fn values_written_anew_follow_the_files_layout() {
    // Python's own output is reproduced exactly: indentation, separators, escapes,
    // numbers as written, empty containers, the final newline.
    assert_eq!(rewritten(PYTHON_INDENT_1), PYTHON_INDENT_1);
    let two = "{\n  \"a\": [\n    \"x\"\n  ],\n  \"b\": 2\n}";
    assert_eq!(rewritten(two), two);
    let tabs = "{\n\t\"a\": {\n\t\t\"b\": 1\n\t}\n}\n";
    assert_eq!(rewritten(tabs), tabs);
    let compact = "{\"a\": [1, 2], \"b\": {\"c\": null}}";
    assert_eq!(rewritten(compact), compact);
    let minified = "{\"a\":[1,2],\"b\":{\"c\":null}}";
    assert_eq!(rewritten(minified), minified);
    let style = Document::parse(two.to_string()).unwrap().style;
    assert_eq!(style.indent.as_deref(), Some("  "));
    assert_eq!(style.colon, ": ");
    // A file saved on Windows keeps its line breaks (and its byte-order mark).
    let crlf = "\u{FEFF}{\r\n \"a\": [\r\n  \"x\",\r\n  1\r\n ],\r\n \"b\": {}\r\n}\r\n";
    assert_eq!(rewritten(crlf), crlf);
}

#[test]
fn key_order_is_the_files() {
    let doc = Document::parse("{\"z\": 1, \"a\": 2, \"m\": 3}".to_string()).unwrap();
    let Json::Object(members) = &doc.root.value else {
        panic!("an object")
    };
    let keys: Vec<&str> = members.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["z", "a", "m"]);
    assert_eq!(doc.root.get("a").and_then(Node::as_u64), Some(2));
}

#[test]
fn bad_json_is_an_error_that_says_where() {
    let cases = [
        ("{\"a\": 1,}", "expected a key"),
        ("{\"a\" 1}", "expected ':'"),
        ("{\"a\": 1} x", "unexpected text"),
        ("{\"a\": \"b", "unterminated string"),
        ("{\"a\": \"\\q\"}", "invalid string"),
        ("{\"a\": \"\n\"}", "control character"),
        ("[01x]", "expected ',' or ']'"),
        ("[-]", "invalid number"),
        ("[1.]", "invalid number"),
        ("", "unexpected end"),
        ("{\"é\": \"\\é", "unterminated string"),
        ("{\"a\": 1, \"a\": 2}", "appears twice"),
        ("{\"c\": [{\"s\": 1, \"t\": 2, \"s\": 3}]}", "appears twice"),
    ];
    for (text, expected) in cases {
        let error = Document::parse(text.to_string()).unwrap_err();
        assert!(error.to_string().contains(expected), "{text:?}: {error}");
    }
    let error = Document::parse("{\n \"a\": [\n  1,\n  ]\n}".to_string()).unwrap_err();
    assert_eq!((error.line, error.column), (4, 3), "{error}");
}

#[test]
fn deep_nesting_is_refused_not_overflowed() {
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let error = Document::parse(deep).unwrap_err();
    assert!(error.message.contains("nested deeper"), "{error}");
    let objects = "{\"a\":".repeat(50_000);
    assert!(Document::parse(objects).is_err());
    let fine = format!("{}{}", "[".repeat(MAX_DEPTH - 1), "]".repeat(MAX_DEPTH - 1));
    assert!(Document::parse(fine).is_ok());
}

#[test]
fn strings_are_escaped_as_nbformat_escapes_them() {
    let mut out = String::new();
    write_string("a\"b\\c\nd\te\u{1}f/é\u{2028}", false, &mut out);
    assert_eq!(out, "\"a\\\"b\\\\c\\nd\\te\\u0001f/é\u{2028}\"");
    let back: String = serde_json::from_str(&out).unwrap();
    assert_eq!(back, "a\"b\\c\nd\te\u{1}f/é\u{2028}");
    // Python's default (ensure_ascii): `json.dumps("é😀")` is "\u00e9\ud83d\ude00".
    let mut out = String::new();
    write_string("é😀", true, &mut out);
    assert_eq!(out, "\"\\u00e9\\ud83d\\ude00\"");
}

#[test]
fn a_file_that_escapes_non_ascii_gets_escapes_in_new_strings() {
    let ascii = "{\"a\": \"caf\\u00e9\", \"b\": \"x\"}";
    assert!(Document::parse(ascii.to_string()).unwrap().style.ascii);
    assert_eq!(rewritten(ascii), ascii);
    let raw = "{\"a\": \"café\", \"b\": \"caf\\u00e9\"}";
    assert!(!Document::parse(raw.to_string()).unwrap().style.ascii);
    assert!(
        !Document::parse(PYTHON_INDENT_1.to_string())
            .unwrap()
            .style
            .ascii
    );
}

#[test]
fn no_truncation_or_corruption_of_a_real_notebook_panics() {
    let text = include_str!("../../fixtures/notebooks/sales.ipynb");
    let cuts = text.char_indices().map(|(at, _)| at);
    for at in cuts {
        // Every prefix short of the closing brace is an error: the root is unclosed.
        let prefix = Document::parse(text[..at].to_string());
        assert_eq!(prefix.is_ok(), at == text.trim_end().len(), "{at}");
        for junk in ["\"", "\\", "{", "]", ",", "\u{0}", "é", "-"] {
            let mut broken = text.to_string();
            broken.replace_range(at..at + text[at..].chars().next().unwrap().len_utf8(), junk);
            if let Ok(doc) = Document::parse(broken.clone()) {
                assert_eq!(doc.render(), broken);
            }
        }
    }
    assert_eq!(Document::parse(text.to_string()).unwrap().render(), text);
}
