// Test-only module: its parent includes it under #[cfg(test)].
use serde_json::{Value, json};

use super::*;
use crate::tools::read::ReadTool;
use crate::tools::text::{Encoding, encode};
use crate::tools::{CallJson, ToolOutput};

fn setup(name: &str, content: &[u8]) -> (tempfile::TempDir, ToolContext) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(name), content).unwrap();
    let ctx = ToolContext::new(dir.path().canonicalize().unwrap());
    (dir, ctx)
}

async fn read(ctx: &ToolContext, name: &str) {
    let out = ReadTool.call(json!({"file_path": name}), ctx).await;
    assert!(!out.is_error, "{}", out.content);
}

async fn edit(ctx: &ToolContext, input: Value) -> ToolOutput {
    EditTool.call(input, ctx).await
}

fn contents(dir: &tempfile::TempDir, name: &str) -> Vec<u8> {
    std::fs::read(dir.path().join(name)).unwrap()
}

#[tokio::test]
async fn replaces_once_literally_and_shows_a_snippet() {
    let (dir, ctx) = setup("a.rs", b"fn a() {\n    old();\n}");
    read(&ctx, "a.rs").await;
    let out = edit(
        &ctx,
        json!({"file_path": "a.rs", "old_string": "old();", "new_string": "new($1, $&);"}),
    )
    .await;
    assert!(!out.is_error, "{}", out.content);
    assert!(out.content.contains("a.rs has been updated"));
    assert!(
        out.content.contains("2\t    new($1, $&);"),
        "{}",
        out.content
    );
    // No final newline before, none after.
    assert_eq!(contents(&dir, "a.rs"), b"fn a() {\n    new($1, $&);\n}");
    // The edit was recorded: a second edit needs no new Read.
    let out = edit(
        &ctx,
        json!({"file_path": "a.rs", "old_string": "fn a", "new_string": "fn b"}),
    )
    .await;
    assert!(!out.is_error, "{}", out.content);
}

#[tokio::test]
async fn keeps_crlf_and_bom() {
    let (dir, ctx) = setup("w.txt", b"\xEF\xBB\xBFone\r\ntwo\r\nthree\r\n");
    read(&ctx, "w.txt").await;
    let out = edit(
        &ctx,
        json!({"file_path": "w.txt", "old_string": "one\ntwo", "new_string": "uno\ndos\nmas"}),
    )
    .await;
    assert!(!out.is_error, "{}", out.content);
    assert_eq!(
        contents(&dir, "w.txt"),
        b"\xEF\xBB\xBFuno\r\ndos\r\nmas\r\nthree\r\n"
    );
}

#[tokio::test]
async fn keeps_utf16() {
    let (dir, ctx) = setup("u.txt", &encode("a\nb", Encoding::Utf16Be));
    read(&ctx, "u.txt").await;
    let out = edit(
        &ctx,
        json!({"file_path": "u.txt", "old_string": "b", "new_string": "ß"}),
    )
    .await;
    assert!(!out.is_error, "{}", out.content);
    assert_eq!(contents(&dir, "u.txt"), encode("a\nß", Encoding::Utf16Be));
}

#[tokio::test]
async fn utf16_with_an_odd_trailing_byte_is_refused_not_truncated() {
    let mut bytes = encode("a\nb", Encoding::Utf16Le);
    bytes.push(0x41);
    let (dir, ctx) = setup("u.txt", &bytes);
    let out = ReadTool.call(json!({"file_path": "u.txt"}), &ctx).await;
    assert!(out.is_error, "{}", out.content);
    assert!(
        out.content.contains("odd number of bytes"),
        "{}",
        out.content
    );
    let out = edit(
        &ctx,
        json!({"file_path": "u.txt", "old_string": "b", "new_string": "c"}),
    )
    .await;
    assert!(out.is_error, "{}", out.content);
    assert_eq!(contents(&dir, "u.txt"), bytes, "the file is untouched");
}

#[tokio::test]
async fn refuses_unread_and_stale_files() {
    let (dir, ctx) = setup("a.txt", b"alpha");
    let input = json!({"file_path": "a.txt", "old_string": "alpha", "new_string": "beta"});
    let out = edit(&ctx, input.clone()).await;
    assert!(out.is_error && out.content.contains("has not been read yet"));
    read(&ctx, "a.txt").await;
    std::fs::write(dir.path().join("a.txt"), "alpha, changed").unwrap();
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
    std::fs::File::options()
        .write(true)
        .open(dir.path().join("a.txt"))
        .unwrap()
        .set_modified(later)
        .unwrap();
    let out = edit(&ctx, input).await;
    assert!(out.is_error && out.content.contains("modified since it was read"));
    assert_eq!(contents(&dir, "a.txt"), b"alpha, changed");
}

#[tokio::test]
async fn missing_file_is_an_error_unless_creating() {
    let (dir, ctx) = setup("x", b"");
    let out = edit(
        &ctx,
        json!({"file_path": "new.txt", "old_string": "a", "new_string": "b"}),
    )
    .await;
    assert!(out.is_error && out.content.starts_with("File does not exist."));
    let out = edit(
        &ctx,
        json!({"file_path": "sub/new.txt", "old_string": "", "new_string": "hi\n"}),
    )
    .await;
    assert!(!out.is_error, "{}", out.content);
    assert_eq!(contents(&dir, "sub/new.txt"), b"hi\n");
}

#[tokio::test]
async fn empty_old_string_on_a_non_empty_file_is_an_error() {
    let (_dir, ctx) = setup("a.txt", b"data");
    read(&ctx, "a.txt").await;
    let out = edit(
        &ctx,
        json!({"file_path": "a.txt", "old_string": "", "new_string": "x"}),
    )
    .await;
    assert!(out.is_error && out.content.contains("already exists"));
}

#[tokio::test]
async fn same_strings_and_not_found_are_errors() {
    let (_dir, ctx) = setup("a.txt", b"alpha beta");
    read(&ctx, "a.txt").await;
    let out = edit(
        &ctx,
        json!({"file_path": "a.txt", "old_string": "alpha", "new_string": "alpha"}),
    )
    .await;
    assert!(out.is_error && out.content.contains("exactly the same"));
    let out = edit(
        &ctx,
        json!({"file_path": "a.txt", "old_string": "gamma", "new_string": "x"}),
    )
    .await;
    assert!(out.is_error);
    assert!(
        out.content
            .starts_with("String to replace not found in file.\nString: gamma")
    );
}

#[tokio::test]
async fn whitespace_near_miss_shows_the_real_text() {
    let (_dir, ctx) = setup("a.py", b"def f():\n\treturn  1\n");
    read(&ctx, "a.py").await;
    let out = edit(
        &ctx,
        json!({"file_path": "a.py", "old_string": "    return 1", "new_string": "    return 2"}),
    )
    .await;
    assert!(out.is_error);
    assert!(
        out.content.contains("differs only in whitespace"),
        "{}",
        out.content
    );
    assert!(out.content.contains("\treturn  1"), "{}", out.content);
}

#[tokio::test]
async fn pasted_line_numbers_are_detected() {
    let (_dir, ctx) = setup("a.txt", b"first\nsecond\n");
    read(&ctx, "a.txt").await;
    let out = edit(
        &ctx,
        json!({"file_path": "a.txt", "old_string": "1\tfirst\n2\tsecond", "new_string": "x"}),
    )
    .await;
    assert!(out.is_error);
    assert!(out.content.contains("line numbers"), "{}", out.content);
    assert!(out.content.ends_with("first\nsecond"), "{}", out.content);
}

#[tokio::test]
async fn several_matches_need_replace_all() {
    let (dir, ctx) = setup("a.txt", b"x = 1; x = 2; x = 3;");
    read(&ctx, "a.txt").await;
    let out = edit(
        &ctx,
        json!({"file_path": "a.txt", "old_string": "x =", "new_string": "y ="}),
    )
    .await;
    assert!(out.is_error && out.content.contains("Found 3 matches"));
    let out = edit(
        &ctx,
        json!({"file_path": "a.txt", "old_string": "x =", "new_string": "y =", "replace_all": true}),
    )
    .await;
    assert!(!out.is_error, "{}", out.content);
    assert!(out.content.contains("All 3 occurrences"));
    assert_eq!(contents(&dir, "a.txt"), b"y = 1; y = 2; y = 3;");
}

#[tokio::test]
async fn bad_input_types_are_tool_errors() {
    let (_dir, ctx) = setup("a.txt", b"");
    let out = edit(&ctx, json!({"file_path": "a.txt", "old_string": 1})).await;
    assert!(out.is_error);
    assert_eq!(
        EditTool
            .judged(json!({"file_path": "a.txt", "old_string": "", "new_string": "x"}))
            .subject,
        Subject::Path("a.txt".into())
    );
}

#[tokio::test]
async fn a_file_larger_than_the_limit_is_refused_not_loaded() {
    let dir = tempfile::tempdir().unwrap();
    let file = std::fs::File::create(dir.path().join("huge.log")).unwrap();
    // Sparse: no disk space used, but 257 MiB to anything that loads it.
    file.set_len(crate::tools::edit_apply::MAX_EDITED_FILE + 1)
        .unwrap();
    let ctx = ToolContext::new(dir.path().canonicalize().unwrap());
    let out = edit(
        &ctx,
        json!({"file_path": "huge.log", "old_string": "a", "new_string": "b"}),
    )
    .await;
    assert!(out.is_error);
    assert!(
        out.content
            .contains("larger than the 256 MiB Edit works on"),
        "{}",
        out.content
    );
}
