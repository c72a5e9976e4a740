//! NotebookEdit end to end: a scripted model Reads a real notebook (with outputs) and
//! edits one cell; the diff touches only that cell, and `Edit(...)` rules govern it.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::{assert_exit, events, repo, run_spec, transcript, write_spec};

const NOTEBOOK: &str = "analysis/sales.ipynb";
/// The fixture's cell with a stream output.
const CELL: &str = "c9e1f3d0";

/// A git repository holding the fixture notebook, committed.
fn workspace(dir: &Path) -> std::path::PathBuf {
    let ws = dir.join("ws");
    std::fs::create_dir_all(ws.join("analysis")).unwrap();
    std::fs::copy(
        repo().join("fixtures/notebooks/sales.ipynb"),
        ws.join(NOTEBOOK),
    )
    .unwrap();
    git(&ws, &["init", "-q"]);
    git(&ws, &["add", "."]);
    git(&ws, &["commit", "-q", "-m", "start"]);
    ws
}

fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "drover test")
        .env("GIT_AUTHOR_EMAIL", "test@example.com")
        .env("GIT_COMMITTER_NAME", "drover test")
        .env("GIT_COMMITTER_EMAIL", "test@example.com")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(output.status.success(), "git {args:?}: {output:?}");
    String::from_utf8(output.stdout).unwrap()
}

fn spec(name: &str, allow: &str) -> String {
    format!(
        r#"version: 1
name: {name}
prompt: Print the best quarter instead of the summary.
workspace: ws
model:
  provider: script
  script:
    - tool_calls: [{{ name: Read, input: {{ file_path: {NOTEBOOK} }} }}]
    - tool_calls:
        - name: NotebookEdit
          input: {{ notebook_path: {NOTEBOOK}, cell_id: {CELL}, new_source: "best = max(sales)\nprint(best)" }}
    - text: done
permissions:
  allow: {allow}
"#
    )
}

/// The old-side line numbers a unified diff removes or changes.
fn old_lines_changed(patch: &str) -> Vec<usize> {
    let mut changed = Vec::new();
    let mut old = 0;
    for line in patch.lines() {
        if let Some(header) = line.strip_prefix("@@ -") {
            let start = header.split([',', ' ']).next().unwrap();
            old = start.parse::<usize>().unwrap();
        } else if line.starts_with("---") || line.starts_with("+++") {
        } else if line.starts_with('-') {
            changed.push(old);
            old += 1;
        } else if line.starts_with('+') {
            changed.push(old); // an insertion before this old line
        } else if line.starts_with(' ') {
            old += 1;
        }
    }
    changed
}

/// The 1-based lines of the cell `id` in `text` (nbformat layout: cells at indent 2).
fn cell_lines(text: &str, id: &str) -> std::ops::RangeInclusive<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.trim() == format!("\"id\": \"{id}\","))
        .unwrap();
    let start = (0..at).rev().find(|&i| lines[i] == "  {").unwrap();
    let end = (at..lines.len())
        .find(|&i| lines[i].starts_with("  }"))
        .unwrap();
    start + 1..=end + 1
}

/// The top-level keys, in file order.
fn top_level_keys(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.starts_with(" \"") && !l.starts_with("  "))
        .map(|l| l[2..].split('"').next().unwrap().to_string())
        .collect()
}

#[test]
fn a_scripted_notebook_edit_changes_only_that_cell() {
    let dir = tempfile::tempdir().unwrap();
    let ws = workspace(dir.path());
    let before = std::fs::read_to_string(ws.join(NOTEBOOK)).unwrap();
    let spec = write_spec(
        dir.path(),
        "nb.yaml",
        &spec("nb", r#"[Read, "Edit(analysis/**)"]"#),
    );
    let artifacts = dir.path().join("out");
    let output = run_spec(&spec, &artifacts);
    assert_exit(&output, 0);

    let lines = transcript(&artifacts.join("nb/transcript.jsonl"));
    let results = events(&lines, "tool_result");
    assert_eq!(results.len(), 2);
    let read = results[0]["content"].as_str().unwrap();
    assert!(
        read.contains(&format!(
            "<cell id=\"{CELL}\" type=\"code\" execution_count=\"2\">"
        )),
        "{read}"
    );
    assert!(read.contains("mean: 128.375"), "{read}");
    assert_eq!(results[1]["is_error"], false, "{}", results[1]["content"]);

    let after = std::fs::read_to_string(ws.join(NOTEBOOK)).unwrap();
    let json: serde_json::Value = serde_json::from_str(&after).expect("still JSON");
    assert_eq!(
        json["cells"][2]["source"],
        serde_json::json!(["best = max(sales)\n", "print(best)"])
    );
    assert_eq!(json["cells"][2]["outputs"], serde_json::json!([]));
    assert_eq!(json["cells"][2]["execution_count"], serde_json::Value::Null);
    assert_eq!(top_level_keys(&after), top_level_keys(&before));
    assert_eq!(
        top_level_keys(&after),
        ["cells", "metadata", "nbformat", "nbformat_minor"]
    );

    // Both the run's diff and git's touch only the edited cell's lines.
    let cell = cell_lines(&before, CELL);
    let patch = std::fs::read_to_string(artifacts.join("nb/diff.patch")).unwrap();
    let git_diff = git(&ws, &["diff", "-U0", "--", NOTEBOOK]);
    for diff in [&patch, &git_diff] {
        let changed = old_lines_changed(diff);
        assert!(!changed.is_empty(), "{diff}");
        assert!(
            changed.iter().all(|l| cell.contains(l)),
            "{changed:?} outside the cell's lines {cell:?}:\n{diff}"
        );
    }
    assert!(
        git_diff.contains("-      \"mean: 128.375\\n\","),
        "{git_diff}"
    );
    assert!(git_diff.contains("+    \"print(best)\""), "{git_diff}");
    // The run's diff applies to the untouched notebook.
    git(&ws, &["stash", "-q"]);
    let applied = Command::new("git")
        .arg("-C")
        .arg(&ws)
        .args(["apply", "--check"])
        .arg(artifacts.join("nb/diff.patch"))
        .output()
        .unwrap();
    assert!(applied.status.success(), "{applied:?}");
}

#[test]
fn the_notebook_example_task_passes_and_leaves_the_fixture_alone() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = repo().join("fixtures/notebooks/sales.ipynb");
    let before = std::fs::read_to_string(&fixture).unwrap();
    let artifacts = dir.path().join("out");
    let output = run_spec(&repo().join("tasks/notebook.yaml"), &artifacts);
    assert_exit(&output, 0);
    assert_eq!(std::fs::read_to_string(&fixture).unwrap(), before);
    let patch = std::fs::read_to_string(artifacts.join("notebook/diff.patch")).unwrap();
    let edited = cell_lines(&before, CELL);
    let last = cell_lines(&before, "0d4f6a83");
    // The new cell goes in after the last cell's closing brace, nothing else moves.
    let changed = old_lines_changed(&patch);
    assert!(
        changed
            .iter()
            .all(|l| edited.contains(l) || *l == *last.end()),
        "{changed:?}:\n{patch}"
    );
    assert!(
        patch.contains("+    \"print(f\\\"best quarter: {best[0]} ({best[1]})\\\")\""),
        "{patch}"
    );
    assert!(patch.contains("+    \"_Method: figures"), "{patch}");
}

#[test]
fn an_edit_rule_for_src_only_denies_notebook_edit_outside_src() {
    let dir = tempfile::tempdir().unwrap();
    let ws = workspace(dir.path());
    let before = std::fs::read_to_string(ws.join(NOTEBOOK)).unwrap();
    let spec = write_spec(
        dir.path(),
        "deny.yaml",
        &spec("deny", r#"[Read, "Edit(src/**)"]"#),
    );
    let artifacts = dir.path().join("out");
    let output = run_spec(&spec, &artifacts);
    assert_exit(&output, 0);
    let lines = transcript(&artifacts.join("deny/transcript.jsonl"));
    let denied: Vec<_> = events(&lines, "permission")
        .into_iter()
        .filter(|p| p["decision"] == "deny")
        .collect();
    assert_eq!(denied.len(), 1, "{lines:?}");
    let calls = events(&lines, "tool_call");
    let edit = calls.iter().find(|c| c["name"] == "NotebookEdit").unwrap();
    assert_eq!(denied[0]["tool_use_id"], edit["id"]);
    let result = events(&lines, "tool_result")
        .into_iter()
        .find(|r| r["tool_use_id"] == edit["id"])
        .unwrap();
    assert_eq!(result["is_error"], true);
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .contains("Permission denied"),
        "{result}"
    );
    assert_eq!(std::fs::read_to_string(ws.join(NOTEBOOK)).unwrap(), before);
    assert_eq!(
        std::fs::read_to_string(artifacts.join("deny/diff.patch")).unwrap(),
        ""
    );
}
