// Test-only module: its parent includes it under #[cfg(test)].
use serde_json::{Value, json};

use super::*;
use crate::tools::read::ReadTool;
use crate::tools::{CallJson, ToolOutput};

fn setup(name: &str, content: &str) -> (tempfile::TempDir, ToolContext) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(name), content).unwrap();
    let ctx = ToolContext::new(dir.path().canonicalize().unwrap());
    (dir, ctx)
}

async fn read(ctx: &ToolContext, name: &str) {
    let out = ReadTool.call(json!({"file_path": name}), ctx).await;
    assert!(!out.is_error, "{}", out.content);
}

async fn multi(ctx: &ToolContext, input: Value) -> ToolOutput {
    MultiEditTool.call(input, ctx).await
}

fn contents(dir: &tempfile::TempDir, name: &str) -> String {
    std::fs::read_to_string(dir.path().join(name)).unwrap()
}

#[tokio::test]
async fn applies_edits_in_order_and_shows_the_changes() {
    let (dir, ctx) = setup("a.rs", "fn a() {\n    one();\n    two();\n}\n");
    read(&ctx, "a.rs").await;
    let out = multi(
        &ctx,
        json!({"file_path": "a.rs", "edits": [
            {"old_string": "one();", "new_string": "uno();"},
            {"old_string": "uno();\n    two();", "new_string": "uno();\n    dos();"},
            {"old_string": "fn a", "new_string": "fn b"}
        ]}),
    )
    .await;
    assert!(!out.is_error, "{}", out.content);
    assert!(out.content.contains("3 edits"), "{}", out.content);
    assert!(out.content.contains("3\t    dos();"), "{}", out.content);
    assert_eq!(
        contents(&dir, "a.rs"),
        "fn b() {\n    uno();\n    dos();\n}\n"
    );
}

#[tokio::test]
async fn one_failing_edit_writes_nothing_and_is_named() {
    let original = "alpha\nbeta\ngamma\n";
    let (dir, ctx) = setup("f.txt", original);
    read(&ctx, "f.txt").await;
    let out = multi(
        &ctx,
        json!({"file_path": "f.txt", "edits": [
            {"old_string": "alpha", "new_string": "ALPHA"},
            {"old_string": "delta", "new_string": "DELTA"},
            {"old_string": "gamma", "new_string": "GAMMA"}
        ]}),
    )
    .await;
    assert!(out.is_error);
    assert!(
        out.content.starts_with("Edit 2 of 3 failed"),
        "{}",
        out.content
    );
    assert!(out.content.contains("not found"), "{}", out.content);
    assert!(out.content.contains("unchanged"), "{}", out.content);
    assert_eq!(contents(&dir, "f.txt"), original);
}

#[tokio::test]
async fn edits_follow_edit_rules() {
    let (dir, ctx) = setup("f.txt", "x x x\n");
    let input = json!({"file_path": "f.txt", "edits": [{"old_string": "x", "new_string": "y"}]});
    let out = multi(&ctx, input.clone()).await;
    assert!(out.is_error && out.content.contains("has not been read yet"));
    read(&ctx, "f.txt").await;
    let out = multi(&ctx, input).await;
    assert!(out.content.contains("Found 3 matches"), "{}", out.content);
    let out = multi(
        &ctx,
        json!({"file_path": "f.txt", "edits": [{"old_string": "x", "new_string": "y", "replace_all": true}, {"old_string": "y", "new_string": "y"}]}),
    )
    .await;
    assert!(
        out.content.starts_with("Edit 2 of 2 failed"),
        "{}",
        out.content
    );
    assert!(out.content.contains("exactly the same"), "{}", out.content);
    assert_eq!(contents(&dir, "f.txt"), "x x x\n");
}

#[tokio::test]
async fn a_near_match_is_shown() {
    let (_dir, ctx) = setup(
        "p.py",
        "def total(items):\n    return sum(i.price for i in items)\n",
    );
    read(&ctx, "p.py").await;
    let out = multi(
        &ctx,
        json!({"file_path": "p.py", "edits": [{"old_string": "def total(items):\n    return sum(i.cost for i in items)", "new_string": "pass"}]}),
    )
    .await;
    assert!(out.is_error);
    assert!(out.content.contains("most similar text"), "{}", out.content);
    assert!(out.content.contains("lines 1-2"), "{}", out.content);
    assert!(out.content.contains("i.price for i"), "{}", out.content);
}

#[tokio::test]
async fn creates_a_missing_file_from_an_empty_first_old_string() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolContext::new(dir.path().canonicalize().unwrap());
    let out = multi(
        &ctx,
        json!({"file_path": "new.txt", "edits": [
            {"old_string": "", "new_string": "hello world\n"},
            {"old_string": "world", "new_string": "there"}
        ]}),
    )
    .await;
    assert!(!out.is_error, "{}", out.content);
    assert!(out.content.contains("created"));
    assert_eq!(contents(&dir, "new.txt"), "hello there\n");
    let out = multi(
        &ctx,
        json!({"file_path": "missing.txt", "edits": [{"old_string": "a", "new_string": "b"}]}),
    )
    .await;
    assert!(out.is_error && out.content.contains("File does not exist"));
}
