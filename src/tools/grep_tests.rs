// Test-only module: its parent includes it under #[cfg(test)].
use serde_json::{Value, json};

use super::*;
use crate::tools::{CallJson, Tool, ToolOutput};

fn setup() -> (tempfile::TempDir, ToolContext) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::create_dir_all(root.join("target")).unwrap();
    std::fs::write(
        root.join("src/lib.rs"),
        "fn add(a: i32) -> i32 {\n    a + 1\n}\n\nfn sub() {}\nfn Add_two() {}\n",
    )
    .unwrap();
    std::fs::write(root.join("src/notes.md"), "add more docs\n").unwrap();
    std::fs::write(root.join("target/gen.rs"), "fn add_gen() {}\n").unwrap();
    std::fs::write(root.join("blob.bin"), b"fn add\0\x01\x02").unwrap();
    std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
    let ctx = ToolContext::new(root.canonicalize().unwrap());
    (dir, ctx)
}

async fn grep(ctx: &ToolContext, input: Value) -> ToolOutput {
    GrepTool.call(input, ctx).await
}

#[tokio::test]
async fn files_with_matches_is_default_sorted_and_ignores_gitignored_and_binary() {
    let (_dir, ctx) = setup();
    let out = grep(&ctx, json!({"pattern": "add"})).await;
    assert_eq!(
        out,
        ToolOutput::ok("Found 2 files\nsrc/lib.rs\nsrc/notes.md")
    );
    let out = grep(&ctx, json!({"pattern": "add", "type": "rust"})).await;
    assert_eq!(out.content, "Found 1 file\nsrc/lib.rs");
    let out = grep(
        &ctx,
        json!({"pattern": "add", "glob": "*.md", "path": "src"}),
    )
    .await;
    assert_eq!(out.content, "Found 1 file\nnotes.md");
}

#[tokio::test]
async fn content_mode_with_numbers_and_context() {
    let (_dir, ctx) = setup();
    let out = grep(
        &ctx,
        json!({"pattern": "^fn (add|sub)", "path": "src", "output_mode": "content", "-A": 1}),
    )
    .await;
    assert_eq!(
        out.content,
        "lib.rs:1:fn add(a: i32) -> i32 {\nlib.rs-2-    a + 1\n--\nlib.rs:5:fn sub() {}\nlib.rs-6-fn Add_two() {}"
    );
    let out = grep(
        &ctx,
        json!({"pattern": "add", "path": "src/lib.rs", "output_mode": "content", "-n": false, "-i": true}),
    )
    .await;
    assert_eq!(
        out.content,
        "src/lib.rs:fn add(a: i32) -> i32 {\nsrc/lib.rs:fn Add_two() {}"
    );
}

#[tokio::test]
async fn count_mode_has_per_file_counts_and_a_total() {
    let (_dir, ctx) = setup();
    let out = grep(&ctx, json!({"pattern": "(?i)add", "output_mode": "count"})).await;
    assert_eq!(
        out.content,
        "src/lib.rs:2\nsrc/notes.md:1\n\nFound 3 total matches across 2 files."
    );
}

#[tokio::test]
async fn multiline_spans_lines() {
    let (_dir, ctx) = setup();
    let input = json!({"pattern": "i32 \\{.*a \\+ 1", "output_mode": "content"});
    assert_eq!(grep(&ctx, input.clone()).await.content, "No matches found");
    let mut input = input;
    input["multiline"] = json!(true);
    let out = grep(&ctx, input).await;
    assert_eq!(
        out.content,
        "src/lib.rs:1:fn add(a: i32) -> i32 {\nsrc/lib.rs:2:    a + 1"
    );
}

#[tokio::test]
async fn head_limit_and_offset_page_through_entries() {
    let (_dir, ctx) = setup();
    let input =
        json!({"pattern": "fn", "path": "src/lib.rs", "output_mode": "content", "head_limit": 2});
    let out = grep(&ctx, input).await;
    assert!(
        out.content.starts_with("src/lib.rs:1:fn add"),
        "{}",
        out.content
    );
    assert!(
        out.content.contains("showing entries 1-2 of 3"),
        "{}",
        out.content
    );
    assert!(out.content.contains("offset=2"));
    let input =
        json!({"pattern": "fn", "path": "src/lib.rs", "output_mode": "content", "offset": 2});
    let out = grep(&ctx, input).await;
    assert!(
        out.content.starts_with("src/lib.rs:6:fn Add_two"),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn long_lines_are_cut_in_content_mode() {
    let (dir, ctx) = setup();
    std::fs::write(
        dir.path().join("long.txt"),
        format!("needle{}\n", "x".repeat(2000)),
    )
    .unwrap();
    let out = grep(&ctx, json!({"pattern": "needle", "output_mode": "content"})).await;
    assert!(out.content.ends_with("[line truncated]"), "{}", out.content);
    assert!(out.content.len() < 600);
}

#[tokio::test]
async fn errors_for_bad_regex_type_and_path() {
    let (_dir, ctx) = setup();
    let out = grep(&ctx, json!({"pattern": "fn ("})).await;
    assert!(
        out.is_error && out.content.contains("regex"),
        "{}",
        out.content
    );
    assert!(out.content.contains("unclosed group"), "{}", out.content);
    // The message quotes the pattern as the model wrote it, not drover's wrapping of it.
    let out = grep(&ctx, json!({"pattern": "("})).await;
    assert!(out.is_error, "{}", out.content);
    assert!(
        out.content.contains("\n    (\n    ^\n") && !out.content.contains("(?:"),
        "{}",
        out.content
    );
    // Balanced only inside the wrapping: still invalid as written.
    let out = grep(&ctx, json!({"pattern": "a)(b"})).await;
    assert!(
        out.is_error && out.content.contains("a)(b"),
        "{}",
        out.content
    );
    let out = grep(&ctx, json!({"pattern": "x", "type": "nosuchtype"})).await;
    assert!(out.is_error && out.content.contains("nosuchtype"));
    let out = grep(&ctx, json!({"pattern": "x", "path": "missing"})).await;
    assert!(out.is_error && out.content.contains("does not exist"));
    let out = grep(&ctx, json!({"pattern": "zzz_nothing"})).await;
    assert_eq!(out, ToolOutput::ok("No matches found"));
    let out = grep(&ctx, json!({"pattern": "x", "-A": "two"})).await;
    assert!(out.is_error);
}

#[test]
fn subject_defaults_to_workspace_root() {
    assert_eq!(
        GrepTool.judged(json!({"pattern": "x"})).subject,
        Subject::Path(".".into())
    );
    assert!(GrepTool.facts().read_only);
}

#[tokio::test]
async fn many_files_from_the_parallel_walk_come_back_sorted_by_path() {
    let dir = tempfile::tempdir().unwrap();
    let mut expected = Vec::new();
    for i in 0..60 {
        let rel = format!("d{}/f{i:02}.txt", i % 5);
        std::fs::create_dir_all(dir.path().join(format!("d{}", i % 5))).unwrap();
        let text = if i % 3 == 0 {
            "hit\nmiss\nhit\n"
        } else {
            "miss\n"
        };
        std::fs::write(dir.path().join(&rel), text).unwrap();
        if i % 3 == 0 {
            expected.push(rel);
        }
    }
    expected.sort();
    let ctx = ToolContext::new(dir.path().canonicalize().unwrap());
    let out = grep(&ctx, json!({"pattern": "hit", "head_limit": 0})).await;
    let header = format!("Found {} files", expected.len());
    assert_eq!(out.content, format!("{header}\n{}", expected.join("\n")));
    let out = grep(
        &ctx,
        json!({"pattern": "hit", "output_mode": "count", "head_limit": 0}),
    )
    .await;
    let counts: Vec<String> = expected.iter().map(|p| format!("{p}:2")).collect();
    assert!(
        out.content.starts_with(&counts.join("\n")),
        "{}",
        out.content
    );
    assert!(
        out.content
            .ends_with("Found 40 total matches across 20 files.")
    );
}

#[tokio::test]
async fn a_file_too_large_to_search_is_named_not_passed_over() {
    let (dir, ctx) = setup();
    // One 65 MiB line: more than one file's search may hold.
    let line = vec![b'a'; crate::tools::grep_search::MAX_SEARCH_HEAP + 1024 * 1024];
    std::fs::write(dir.path().join("src/minified.js"), &line).unwrap();
    let out = grep(&ctx, json!({"pattern": "add", "path": "src"})).await;
    assert!(!out.is_error, "{}", out.content);
    assert!(out.content.contains("lib.rs"), "{}", out.content);
    assert!(
        out.content
            .contains("(Not searched: 1 file: src/minified.js (it needs more than 64 MiB"),
        "{}",
        out.content
    );
}
