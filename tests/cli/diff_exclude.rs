//! `diff: {exclude: [...]}`: build by-products (a `Cargo.lock` a `cargo check` writes, a
//! `target/` tree) are left out of `diff.patch`, `files_changed` and the expectations,
//! and every path left out is named in summary.json and summary.md.

use crate::common;

use std::path::{Path, PathBuf};

use common::{drover, summary, write_spec};

/// A task that writes `src/a.rs` and then, as a build would, `Cargo.lock` and
/// `target/debug/x`, with the given `diff:` block and `files_changed.only: [src/**]`.
fn building(dir: &Path, name: &str, diff: &str) -> PathBuf {
    std::fs::create_dir_all(dir.join("ws")).unwrap();
    write_spec(
        dir,
        &format!("{name}.yaml"),
        &format!(
            r#"version: 1
name: {name}
prompt: p
workspace: ws
isolation: copy
sandbox: off
model:
  provider: script
  script:
    - tool_calls:
        - {{ name: Write, input: {{ file_path: src/a.rs, content: "a\n" }} }}
        - {{ name: Write, input: {{ file_path: Cargo.lock, content: "lock\n" }} }}
        - {{ name: Write, input: {{ file_path: target/debug/x, content: "x\n" }} }}
    - text: done
permissions:
  allow: [Write]
expect:
  files_changed:
    only: ["src/**"]
{diff}"#
        ),
    )
}

#[test]
fn excluded_paths_leave_the_diff_and_the_expectations_and_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let spec = building(
        dir.path(),
        "build",
        "diff:\n  exclude: [Cargo.lock, target/]\n",
    );
    let artifacts = dir.path().join("out");
    let output = drover()
        .args(["run", "--quiet", "--artifacts"])
        .arg(&artifacts)
        .arg(&spec)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let report = summary(&artifacts);
    let task = &report["tasks"][0];
    assert_eq!(task["status"], "passed");
    assert_eq!(task["files_changed"], serde_json::json!(["src/a.rs"]));
    assert_eq!(
        task["excluded_from_diff"],
        serde_json::json!({"count": 2, "paths": ["Cargo.lock", "target/debug/x"]})
    );
    let patch = std::fs::read_to_string(artifacts.join("build/diff.patch")).unwrap();
    assert!(patch.contains("b/src/a.rs"), "{patch}");
    assert!(
        !patch.contains("Cargo.lock") && !patch.contains("target/"),
        "{patch}"
    );
    let markdown = std::fs::read_to_string(artifacts.join("summary.md")).unwrap();
    assert!(
        markdown.contains(
            "### `build`: left out of the diff\n\nBy the spec's `diff.exclude` (2 files): `Cargo.lock`, `target/debug/x`."
        ),
        "{markdown}"
    );
}

#[test]
fn without_diff_exclude_the_by_products_count_as_changes() {
    let dir = tempfile::tempdir().unwrap();
    let spec = building(dir.path(), "plain", "");
    let artifacts = dir.path().join("out");
    let output = drover()
        .args(["run", "--quiet", "--artifacts"])
        .arg(&artifacts)
        .arg(&spec)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let report = summary(&artifacts);
    let task = &report["tasks"][0];
    assert_eq!(task["reason"], "checks_failed");
    assert!(task.get("excluded_from_diff").is_none(), "{task}");
    let patch = std::fs::read_to_string(artifacts.join("plain/diff.patch")).unwrap();
    assert!(patch.contains("Cargo.lock"), "{patch}");
}

#[test]
fn a_bad_exclude_glob_is_a_spec_error_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let spec = building(dir.path(), "bad", "diff:\n  exclude: [\"src/[a\"]\n");
    let output = drover().arg("validate").arg(&spec).output().unwrap();
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("bad.yaml:21:13: invalid glob"), "{stderr}");
    let output = drover()
        .arg("validate")
        .arg(building(
            dir.path(),
            "typo",
            "diff:\n  excludes: [Cargo.lock]\n",
        ))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{output:?}");
}
