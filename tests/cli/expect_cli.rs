//! `expect:` end to end: each expectation passes or fails like a check, with a message
//! saying what was wrong, in the transcript, summary.json and junit.xml.

use crate::common;

use std::path::{Path, PathBuf};

use common::{drover, events, summary, transcript, write_spec};
use serde_json::Value;

/// A task changing `src/a.rs` and `README.md`, with the given `expect:` block.
fn expecting(dir: &Path, name: &str, expect: &str) -> PathBuf {
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
model:
  provider: script
  script:
    - tool_calls:
        - {{ name: Write, input: {{ file_path: src/a.rs, content: "a\n" }} }}
        - {{ name: Write, input: {{ file_path: README.md, content: "r\n" }} }}
    - text: done
permissions:
  allow: [Write]
{expect}"#
        ),
    )
}

#[test]
fn expectations_pass_and_fail_like_checks() {
    let dir = tempfile::tempdir().unwrap();
    let good = expecting(
        dir.path(),
        "good",
        "expect:\n  files_changed:\n    only: [\"src/**\", \"*.md\"]\n    max: 2\n    must_include: [src/a.rs]\n",
    );
    let bad = expecting(
        dir.path(),
        "bad",
        "expect:\n  files_changed:\n    only: [\"src/**\"]\n    max: 1\n    must_include: [CHANGELOG.md, \"src/**\"]\n",
    );
    let artifacts = dir.path().join("out");
    let output = drover()
        .args(["run", "--quiet", "--artifacts"])
        .arg(&artifacts)
        .arg(&good)
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let report = summary(&artifacts);
    let good_checks = report["tasks"][0]["checks"].as_array().unwrap();
    assert_eq!(report["tasks"][0]["status"], "passed");
    assert_eq!(good_checks.len(), 3);
    assert!(good_checks.iter().all(|c| c["passed"] == true));
    let bad_task = &report["tasks"][1];
    assert_eq!(bad_task["status"], "failed");
    assert_eq!(bad_task["reason"], "checks_failed");
    let message = bad_task["message"].as_str().unwrap();
    assert!(
        message.contains("files_changed.only failed: 1 changed file outside [src/**]: README.md"),
        "{message}"
    );
    let checks = bad_task["checks"].as_array().unwrap();
    let tail = |name: &str| {
        checks
            .iter()
            .find(|c| c["name"] == name)
            .map(|c| {
                (
                    c["passed"].clone(),
                    c["output_tail"].as_str().unwrap().to_string(),
                )
            })
            .unwrap()
    };
    assert_eq!(
        tail("expect: files_changed.only"),
        (
            Value::Bool(false),
            "1 changed file outside [src/**]: README.md".into()
        )
    );
    assert_eq!(
        tail("expect: files_changed.max"),
        (
            Value::Bool(false),
            "2 files changed, more than the maximum of 1: README.md, src/a.rs".into()
        )
    );
    assert_eq!(
        tail("expect: files_changed.must_include"),
        (
            Value::Bool(false),
            "no changed file matches CHANGELOG.md (changed: README.md, src/a.rs)".into()
        )
    );
    let lines = transcript(&artifacts.join("bad/transcript.jsonl"));
    let checks = events(&lines, "check");
    assert_eq!(checks.len(), 3);
    assert_eq!(checks[0]["name"], "expect: files_changed.only");
    assert_eq!(checks[0]["command"], "files_changed.only: [src/**]");
    let junit = std::fs::read_to_string(artifacts.join("junit.xml")).unwrap();
    for needle in [
        "bad: expect files_changed.only",
        "bad: expect files_changed.max",
        "bad: expect files_changed.must_include",
        "outside [src/**]: README.md",
        "no changed file matches CHANGELOG.md",
        "type=\"expectation_failed\"",
        "expected files_changed.max: 1, but 2 files changed",
        "expected: files_changed.must_include: [CHANGELOG.md, src/**]",
    ] {
        assert!(junit.contains(needle), "{needle} in {junit}");
    }
    // An expectation is no command that was killed.
    for wrong in ["killed or could not start", "$ files_changed"] {
        assert!(!junit.contains(wrong), "{wrong} in {junit}");
    }
    let md = std::fs::read_to_string(artifacts.join("summary.md")).unwrap();
    assert!(md.contains("**Unmet expectations**"), "{md}");
    assert!(
        md.contains("- `files_changed.must_include`: expected `files_changed.must_include: [CHANGELOG.md, src/**]`, but `no changed file matches CHANGELOG.md"),
        "{md}"
    );
    assert!(!md.contains("killed or could not start"), "{md}");
    assert!(!md.contains("**Failed checks**"), "{md}");
}

#[test]
fn a_bad_expectation_is_a_spec_error_at_its_position() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "glob",
            "expect:\n  files_changed:\n    only: [\"src/[\"]\n",
            "glob.yaml:17:12: invalid glob",
        ),
        (
            "key",
            "expect:\n  files_changed:\n    maximum: 3\n",
            "maximum",
        ),
    ];
    for (name, expect, needle) in cases {
        let spec = expecting(dir.path(), name, expect);
        let output = drover().arg("validate").arg(&spec).output().unwrap();
        assert_eq!(output.status.code(), Some(2), "{name}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(needle), "{name}: {stderr}");
    }
}
