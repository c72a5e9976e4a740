//! `retry.max_attempts` end to end: failed checks go back to the model as its next
//! message, the loop goes on under the same limits, and the last attempt decides.

use crate::common;

use std::path::{Path, PathBuf};

use common::{assert_exit, events, run_spec, summary, transcript, write_spec};

/// A task whose check needs `fixed` to exist; the model first ends its turn without
/// it, then writes it (if `fixes`).
fn task(dir: &Path, name: &str, retry: &str, fixes: bool) -> PathBuf {
    std::fs::create_dir_all(dir.join("ws")).unwrap();
    let second = if fixes {
        "    - tool_calls: [{ name: Write, input: { file_path: fixed, content: \"ok\\n\" } }]\n    - text: fixed it\n"
    } else {
        "    - text: still done\n    - text: still done\n"
    };
    write_spec(
        dir,
        &format!("{name}.yaml"),
        &format!(
            "version: 1\nname: {name}\nprompt: p\nworkspace: ws\nisolation: copy\nmodel:\n  provider: script\n  script:\n    - text: done\n{second}permissions:\n  allow: [Write]\nchecks:\n  - name: has-fixed\n    run: \"test -f fixed || {{ echo 'error: the file fixed is missing'; exit 1; }}\"\n{retry}"
        ),
    )
}

#[test]
fn a_failed_check_goes_back_to_the_model_and_the_second_attempt_passes() {
    let dir = tempfile::tempdir().unwrap();
    let spec = task(dir.path(), "retried", "retry:\n  max_attempts: 3\n", true);
    let artifacts = dir.path().join("out");
    let output = run_spec(&spec, &artifacts);
    assert_exit(&output, 0);
    let events_ = transcript(&artifacts.join("retried/transcript.jsonl"));
    let attempts = events(&events_, "attempt");
    assert_eq!(attempts.len(), 2, "{attempts:?}");
    assert_eq!(attempts[0]["attempt"], 1);
    assert_eq!(attempts[1]["attempt"], 2);
    assert_eq!(attempts[1]["failed"], serde_json::json!(["has-fixed"]));
    let message = attempts[1]["message"].as_str().unwrap();
    assert!(message.contains("## has-fixed (exit code 1)"), "{message}");
    assert!(
        message.contains("error: the file fixed is missing"),
        "{message}"
    );
    assert!(message.contains("attempt 2 of 3"), "{message}");
    // The check ran once per attempt: failed, then passed.
    let checks = events(&events_, "check");
    assert_eq!(checks.len(), 2);
    assert_eq!(checks[0]["passed"], false);
    assert_eq!(checks[1]["passed"], true);
    let report = summary(&artifacts);
    let task = &report["tasks"][0];
    assert_eq!(task["status"], "passed");
    assert_eq!(task["attempts"], 2);
    assert_eq!(task["turns"], 3, "turns count across attempts");
    assert_eq!(
        task["checks"].as_array().unwrap().len(),
        1,
        "the last attempt's checks"
    );
    assert_eq!(task["files_changed"], serde_json::json!(["fixed"]));
    let junit = std::fs::read_to_string(artifacts.join("junit.xml")).unwrap();
    assert!(junit.contains("attempts: 2"), "{junit}");
    let md = std::fs::read_to_string(artifacts.join("summary.md")).unwrap();
    assert!(md.contains("`retried` (2 attempts)"), "{md}");
}

#[test]
fn without_retry_a_failed_check_ends_the_task_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let spec = task(dir.path(), "once", "", true);
    let artifacts = dir.path().join("out");
    let output = run_spec(&spec, &artifacts);
    assert_exit(&output, 1);
    let report = summary(&artifacts);
    assert_eq!(report["tasks"][0]["reason"], "checks_failed");
    assert_eq!(report["tasks"][0]["attempts"], 1);
    assert_eq!(report["tasks"][0]["turns"], 1);
    let events_ = transcript(&artifacts.join("once/transcript.jsonl"));
    assert!(events(&events_, "attempt").is_empty());
}

#[test]
fn when_every_attempt_fails_the_last_one_decides_and_says_which_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let spec = task(dir.path(), "stubborn", "retry:\n  max_attempts: 2\n", false);
    let artifacts = dir.path().join("out");
    let output = run_spec(&spec, &artifacts);
    assert_exit(&output, 1);
    let report = summary(&artifacts);
    let task = &report["tasks"][0];
    assert_eq!(task["reason"], "checks_failed");
    assert_eq!(task["attempts"], 2);
    assert!(
        task["message"]
            .as_str()
            .unwrap()
            .contains("(attempt 2 of 2)"),
        "{}",
        task["message"]
    );
}

#[test]
fn attempts_share_the_task_limits() {
    let dir = tempfile::tempdir().unwrap();
    let spec = task(
        dir.path(),
        "limited",
        "retry:\n  max_attempts: 3\nlimits:\n  max_turns: 1\n",
        true,
    );
    let artifacts = dir.path().join("out");
    let output = run_spec(&spec, &artifacts);
    assert_exit(&output, 1);
    let report = summary(&artifacts);
    assert_eq!(report["tasks"][0]["reason"], "max_turns");
    assert_eq!(report["tasks"][0]["turns"], 1);
}

#[test]
fn a_replay_follows_the_recorded_attempts() {
    let dir = tempfile::tempdir().unwrap();
    let spec = task(dir.path(), "again", "retry:\n  max_attempts: 3\n", true);
    let artifacts = dir.path().join("out");
    assert_exit(&run_spec(&spec, &artifacts), 0);
    let replayed = dir.path().join("replayed");
    let output = common::drover()
        .current_dir(dir.path())
        .args(["replay", "--strict", "--quiet", "--artifacts"])
        .arg(&replayed)
        .arg(artifacts.join("again/transcript.jsonl"))
        .output()
        .unwrap();
    assert_exit(&output, 0);
    let report = summary(&replayed);
    assert_eq!(report["tasks"][0]["attempts"], 2);
    assert_eq!(report["tasks"][0]["turns"], 3);
}
