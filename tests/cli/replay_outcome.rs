//! A replay tells its outcome truthfully: without `--checks` it verifies the recorded
//! turns, not the result, so a recorded failure stays a failure (exit 1, never a pass)
//! and every report says the outcome is the recorded one; with `--checks` the checks
//! judge the replayed result; drift never makes a recorded failure look better; and
//! `report merge` keeps what the replay said.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{assert_exit, drover, run_spec, summary, write_spec};
use serde_json::Value;

/// A task in `dir/ws` (a copy) whose one Bash call runs `command`, checked by
/// `grep -q right b.txt`; recorded into `dir/recorded`, exiting `code`. Returns the
/// transcript.
fn record(dir: &Path, command: &str, extra: &str, code: i32) -> PathBuf {
    std::fs::create_dir_all(dir.join("ws")).unwrap();
    std::fs::write(dir.join("ws/a.txt"), "wrong\n").unwrap();
    let spec = write_spec(
        dir,
        "task.yaml",
        &format!(
            "version: 1\nname: t\nprompt: p\nworkspace: ws\nisolation: copy\nmodel:\n  provider: script\n  script:\n    - tool_calls: [{{ name: Bash, input: {{ command: {command:?} }} }}]\n    - text: done\npermissions:\n  allow: [Bash]\nchecks:\n  - name: tests\n    run: grep -q right b.txt\n{extra}"
        ),
    );
    let output = run_spec(&spec, &dir.join("recorded"));
    assert_exit(&output, code);
    dir.join("recorded/t/transcript.jsonl")
}

/// A recorded run whose check failed: the agent copied `a.txt` (`wrong`) to `b.txt`.
fn record_failed(dir: &Path) -> PathBuf {
    record(dir, "cat a.txt > b.txt", "", 1)
}

fn replay(dir: &Path, transcript: &Path, artifacts: &str, args: &[&str]) -> Output {
    drover()
        .current_dir(dir)
        .arg("replay")
        .arg(transcript)
        .args(args)
        .arg("--artifacts")
        .arg(dir.join(artifacts))
        .output()
        .unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The one task of a summary.json.
fn task(artifacts: &Path) -> Value {
    summary(artifacts)["tasks"][0].clone()
}

#[test]
fn a_replay_without_checks_of_a_failed_run_fails_as_recorded_in_every_report() {
    let dir = tempfile::tempdir().unwrap();
    let transcript = record_failed(dir.path());
    let output = replay(dir.path(), &transcript, "replayed", &[]);
    assert_exit(&output, 1);
    let (out, err) = (stdout(&output), stderr(&output));
    // The task's lines never call it passed.
    let line = out.lines().find(|l| l.starts_with("drover: t ")).unwrap();
    assert!(
        line.starts_with(
            "drover: t FAILED (checks_failed: as recorded; checks not re-run: check \"tests\" failed"
        ),
        "{line}"
    );
    assert!(
        out.contains("0 passed, 1 failed, 0 errors — exit 1"),
        "{out}"
    );
    assert!(
        err.contains("finished: FAILED (checks_failed, as recorded; checks not re-run)"),
        "{err}"
    );
    assert!(!err.contains("finished: passed"), "{err}");
    assert!(!out.contains("t passed"), "{out}");

    let artifacts = dir.path().join("replayed");
    let report = summary(&artifacts);
    assert_eq!(report["status"], "failed");
    assert_eq!(report["exit_code"], 1);
    let task = &report["tasks"][0];
    assert_eq!(task["status"], "failed");
    assert_eq!(task["reason"], "checks_failed");
    assert_eq!(task["replay"]["checks"], "not_run");
    assert_eq!(task["replay"]["outcome_from"], "recording");
    assert_eq!(task["replay"]["recorded"]["reason"], "checks_failed");
    assert_eq!(task["replay"]["recorded"]["status"], "failed");
    assert_eq!(task["checks"], serde_json::json!([]), "no check ran");

    let markdown = std::fs::read_to_string(artifacts.join("summary.md")).unwrap();
    assert!(
        markdown.contains("| `t` | ❌ failed (as recorded) | checks_failed |"),
        "{markdown}"
    );
    assert!(
        markdown.contains("Replay of `t`: checks not run: outcome as recorded"),
        "{markdown}"
    );
    assert!(!markdown.contains('✅'), "{markdown}");

    let junit = std::fs::read_to_string(artifacts.join("junit.xml")).unwrap();
    assert!(
        junit.contains("<failure type=\"checks_failed\" message=\"as recorded; checks not re-run: check &quot;tests&quot; failed"),
        "{junit}"
    );
    assert!(
        junit.contains("name=\"t.checks\" value=\"not_run\""),
        "{junit}"
    );
    assert!(
        junit.contains("name=\"t.outcome_from\" value=\"recording\""),
        "{junit}"
    );

    let lines = common::transcript(&artifacts.join("t/transcript.jsonl"));
    let end = lines.last().unwrap();
    assert_eq!(end["type"], "run_end");
    assert_eq!(end["status"], "failed");
    assert_eq!(end["reason"], "checks_failed");
}

#[test]
fn a_replay_with_checks_of_a_fixed_workspace_passes_and_says_the_checks_ran() {
    let dir = tempfile::tempdir().unwrap();
    let transcript = record_failed(dir.path());
    // The fix: the file the agent copies now holds what the check wants.
    let fixed = dir.path().join("fixed");
    common::copy_tree(&dir.path().join("ws"), &fixed);
    std::fs::write(fixed.join("a.txt"), "right\n").unwrap();
    let output = replay(
        dir.path(),
        &transcript,
        "replayed",
        &["--checks", "--workspace", "fixed"],
    );
    assert_exit(&output, 0);
    let line = stdout(&output)
        .lines()
        .find(|l| l.starts_with("drover: t "))
        .unwrap()
        .to_string();
    assert!(line.starts_with("drover: t passed (end_turn: "), "{line}");
    assert!(
        line.contains("checks re-run; the recorded run ended failed, checks_failed"),
        "{line}"
    );
    let task = task(&dir.path().join("replayed"));
    assert_eq!(task["status"], "passed");
    assert_eq!(task["replay"]["checks"], "rerun");
    assert_eq!(task["replay"]["outcome_from"], "replay");
    assert_eq!(task["replay"]["recorded"]["reason"], "checks_failed");
    assert_eq!(task["checks"][0]["passed"], true);
    let markdown = std::fs::read_to_string(dir.path().join("replayed/summary.md")).unwrap();
    assert!(
        markdown.contains("checks re-run on the replayed result: outcome of the replay"),
        "{markdown}"
    );
    // Unfixed, the checks fail again on the replayed result.
    let output = replay(dir.path(), &transcript, "again", &["--checks"]);
    assert_exit(&output, 1);
    assert_eq!(
        task_of(dir.path(), "again")["replay"]["outcome_from"],
        "replay"
    );
}

fn task_of(dir: &Path, artifacts: &str) -> Value {
    task(&dir.join(artifacts))
}

#[test]
fn a_recorded_pass_replayed_without_checks_says_so_and_gets_no_tick() {
    let dir = tempfile::tempdir().unwrap();
    let transcript = record(dir.path(), "echo right > b.txt", "", 0);
    let output = replay(dir.path(), &transcript, "replayed", &[]);
    assert_exit(&output, 0);
    let out = stdout(&output);
    assert!(
        out.contains("drover: t passed (end_turn: as recorded; checks not re-run: "),
        "{out}"
    );
    let task = task_of(dir.path(), "replayed");
    assert_eq!(task["replay"]["checks"], "not_run");
    assert_eq!(task["replay"]["outcome_from"], "recording");
    let markdown = std::fs::read_to_string(dir.path().join("replayed/summary.md")).unwrap();
    assert!(
        markdown.contains("| `t` | ↺ passed (as recorded) |"),
        "{markdown}"
    );
    assert!(
        !markdown.contains('✅'),
        "nothing verified the result: {markdown}"
    );
}

#[test]
fn strict_drift_fails_a_recorded_pass_but_never_betters_a_recorded_failure() {
    let dir = tempfile::tempdir().unwrap();
    // A recorded pass whose output changes every time.
    let passed = record(
        &dir.path().join("p"),
        "echo right > b.txt; echo $RANDOM$RANDOM$RANDOM",
        "",
        0,
    );
    let output = replay(&dir.path().join("p"), &passed, "lenient", &[]);
    assert_exit(&output, 0);
    assert_eq!(
        task_of(&dir.path().join("p"), "lenient")["drift"]["count"],
        1
    );
    let output = replay(&dir.path().join("p"), &passed, "strict", &["--strict"]);
    assert_exit(&output, 1);
    let task = task_of(&dir.path().join("p"), "strict");
    assert_eq!(task["reason"], "replay_drift");
    assert_eq!(task["replay"]["outcome_from"], "replay");
    assert_eq!(task["replay"]["recorded"]["status"], "passed");

    // A recorded failure with the same drift: failed with or without --strict, its
    // recorded reason kept and the drift named.
    let failed = record(
        &dir.path().join("f"),
        "cat a.txt > b.txt; echo $RANDOM$RANDOM$RANDOM",
        "",
        1,
    );
    for (artifacts, args) in [("lenient", &[][..]), ("strict", &["--strict"][..])] {
        let output = replay(&dir.path().join("f"), &failed, artifacts, args);
        assert_exit(&output, 1);
        let task = task_of(&dir.path().join("f"), artifacts);
        assert_eq!(task["reason"], "checks_failed", "{args:?}");
        assert_eq!(task["replay"]["outcome_from"], "recording");
    }
    let task = task_of(&dir.path().join("f"), "strict");
    assert!(
        task["message"]
            .as_str()
            .unwrap()
            .contains("the replay itself ended with replay_drift"),
        "{task}"
    );
}

#[test]
fn a_recorded_error_stays_an_error_in_its_replay() {
    let dir = tempfile::tempdir().unwrap();
    // The setup step fails: the agent never ran (error, exit 3). A replay runs no setup
    // and has no recorded turn to play: it drifts, which must not turn 3 into 1.
    let transcript = record(
        dir.path(),
        "true",
        "setup:\n  - name: prepare\n    run: 'false'\n",
        3,
    );
    for (artifacts, args) in [("plain", &[][..]), ("checked", &["--checks"][..])] {
        let output = replay(dir.path(), &transcript, artifacts, args);
        assert_exit(&output, 3);
        let task = task_of(dir.path(), artifacts);
        assert_eq!(task["status"], "error", "{args:?}");
        assert_eq!(task["reason"], "setup_failed");
        assert_eq!(task["replay"]["outcome_from"], "recording");
    }
}

#[test]
fn diff_only_follows_the_same_rules() {
    let dir = tempfile::tempdir().unwrap();
    let transcript = record_failed(dir.path());
    let output = replay(
        dir.path(),
        &transcript,
        "plain",
        &["--diff-only", "--strict"],
    );
    assert_exit(&output, 1);
    let task = task_of(dir.path(), "plain");
    assert_eq!(task["reason"], "checks_failed");
    assert_eq!(task["replay"]["checks"], "not_run");
    assert_eq!(task["replay"]["outcome_from"], "recording");
    assert!(
        stdout(&output).contains("as recorded; checks not re-run"),
        "{}",
        stdout(&output)
    );
    // With the checks: they judge the patched workspace, and fail again.
    let output = replay(
        dir.path(),
        &transcript,
        "checked",
        &["--diff-only", "--checks"],
    );
    assert_exit(&output, 1);
    let task = task_of(dir.path(), "checked");
    assert_eq!(task["reason"], "checks_failed");
    assert_eq!(task["replay"]["checks"], "rerun");
    assert_eq!(task["replay"]["outcome_from"], "replay");
    assert_eq!(task["checks"][0]["passed"], false);
}

#[test]
fn report_merge_keeps_a_replayed_failure_a_failure() {
    let dir = tempfile::tempdir().unwrap();
    let transcript = record_failed(dir.path());
    assert_exit(&replay(dir.path(), &transcript, "replayed", &[]), 1);
    // Another whole run that passed, of another task.
    std::fs::create_dir_all(dir.path().join("other")).unwrap();
    let spec = write_spec(
        dir.path(),
        "other.yaml",
        "version: 1\nname: other\nprompt: p\nworkspace: other\nisolation: copy\nmodel:\n  provider: script\n  script: [{ text: done }]\n",
    );
    assert_exit(&run_spec(&spec, &dir.path().join("passed")), 0);
    let merged = dir.path().join("merged");
    let output = drover()
        .args(["report", "merge"])
        .arg(dir.path().join("replayed"))
        .arg(dir.path().join("passed"))
        .arg("--out")
        .arg(&merged)
        .output()
        .unwrap();
    assert_exit(&output, 1);
    let report = summary(&merged);
    assert_eq!(report["exit_code"], 1);
    assert_eq!(report["counts"]["failed"], 1);
    let task = report["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "t")
        .unwrap()
        .clone();
    assert_eq!(task["replay"]["outcome_from"], "recording");
    assert_eq!(task["replay"]["checks"], "not_run");
    let markdown = std::fs::read_to_string(merged.join("summary.md")).unwrap();
    assert!(
        markdown.contains("| `t` | ❌ failed (as recorded) |"),
        "{markdown}"
    );
    // The Action's `conclusion` and `exit-code` are drover's exit code: failed.
    assert!(
        stdout(&output).contains("exit 1: a task failed: t (checks_failed)"),
        "{}",
        stdout(&output)
    );
}
