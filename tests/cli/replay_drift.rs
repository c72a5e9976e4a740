//! Replays report drift: each differing result on stderr as it happens, and in
//! summary.json, summary.md and junit.xml; volatile output (durations, timestamps, …)
//! and the user's `--ignore` / `replay.ignore` patterns are masked before comparing, so
//! `--strict` fails only on real drift.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{assert_exit, drover, run_spec, summary, write_spec};

/// Record a task whose one Bash call prints `command`'s output; returns the transcript.
fn record(dir: &Path, command: &str, extra: &str) -> PathBuf {
    std::fs::create_dir_all(dir.join("ws")).unwrap();
    let spec = write_spec(
        dir,
        "task.yaml",
        &format!(
            "version: 1\nname: t\nprompt: p\nworkspace: ws\nisolation: copy\nmodel:\n  provider: script\n  script:\n    - tool_calls: [{{ name: Bash, input: {{ command: {command:?} }} }}]\n    - text: done\npermissions:\n  allow: [\"Bash(echo *)\"]\n{extra}"
        ),
    );
    let artifacts = dir.join("recorded");
    assert_exit(&run_spec(&spec, &artifacts), 0);
    artifacts.join("t/transcript.jsonl")
}

fn replay(transcript: &Path, artifacts: &Path, args: &[&str]) -> Output {
    drover()
        .current_dir(transcript.ancestors().nth(3).unwrap())
        .arg("replay")
        .arg(transcript)
        .args(args)
        .arg("--artifacts")
        .arg(artifacts)
        .output()
        .unwrap()
}

#[test]
fn a_replay_reports_drift_on_stderr_and_in_every_report_and_passes_without_strict() {
    let dir = tempfile::tempdir().unwrap();
    let transcript = record(dir.path(), "echo token-$RANDOM$RANDOM$RANDOM", "");
    let artifacts = dir.path().join("replayed");
    let output = replay(&transcript, &artifacts, &[]);
    assert_exit(&output, 0);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("drift at call 1 (Bash toolu_script_01_01)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("--- recorded") && stderr.contains("-token-"),
        "{stderr}"
    );
    let report = summary(&artifacts);
    let drift = &report["tasks"][0]["drift"];
    assert_eq!(drift["count"], 1, "{drift}");
    assert_eq!(drift["call"], 1);
    assert_eq!(drift["tool"], "Bash");
    assert!(
        drift["diff"].as_str().unwrap().contains("+token-"),
        "{drift}"
    );
    let markdown = std::fs::read_to_string(artifacts.join("summary.md")).unwrap();
    assert!(markdown.contains("### `t`: replay drift"), "{markdown}");
    let junit = std::fs::read_to_string(artifacts.join("junit.xml")).unwrap();
    assert!(junit.contains("replay drift: 1 result(s)"), "{junit}");
    assert!(junit.contains("name=\"t.drift\" value=\"1\""), "{junit}");
    let lines = common::transcript(&artifacts.join("t/transcript.jsonl"));
    let event = &common::events(&lines, "replay_drift")[0];
    assert_eq!(event["call"], 1);
    assert!(event["diff"].as_str().unwrap().contains("@@"), "{event}");
}

#[test]
fn strict_passes_when_only_volatile_output_differs_and_fails_on_real_drift() {
    let dir = tempfile::tempdir().unwrap();
    let volatile = record(
        dir.path(),
        "echo \"test result: ok. finished in 0.$RANDOM s at $(date +%H:%M:%S.%N), pid $$\"",
        "",
    );
    let artifacts = dir.path().join("volatile");
    let output = replay(&volatile, &artifacts, &["--strict"]);
    assert_exit(&output, 0);
    assert!(summary(&artifacts)["tasks"][0].get("drift").is_none());

    let real = tempfile::tempdir().unwrap();
    let transcript = record(real.path(), "echo result-$RANDOM$RANDOM$RANDOM", "");
    let artifacts = real.path().join("real");
    let output = replay(&transcript, &artifacts, &["--strict"]);
    assert_exit(&output, 1);
    let task = &summary(&artifacts)["tasks"][0];
    assert_eq!(task["reason"], "replay_drift");
    assert!(
        task["message"].as_str().unwrap().contains("call 1 (Bash"),
        "{task}"
    );
}

#[test]
fn ignore_patterns_mask_what_the_user_knows_is_volatile() {
    let dir = tempfile::tempdir().unwrap();
    let transcript = record(dir.path(), "echo seed=$RANDOM$RANDOM$RANDOM ok", "");
    let masked = replay(
        &transcript,
        &dir.path().join("masked"),
        &["--strict", "--ignore", "seed=\\d+"],
    );
    assert_exit(&masked, 0);
    let bad = replay(
        &transcript,
        &dir.path().join("bad"),
        &["--ignore", "(unclosed"],
    );
    assert_exit(&bad, 2);
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--ignore"));

    // The same pattern in the spec's replay.ignore.
    let spec_dir = tempfile::tempdir().unwrap();
    let transcript = record(
        spec_dir.path(),
        "echo seed=$RANDOM$RANDOM$RANDOM ok",
        "replay:\n  ignore: [\"seed=\\\\d+\"]\n",
    );
    let output = replay(&transcript, &spec_dir.path().join("again"), &["--strict"]);
    assert_exit(&output, 0);
}

#[test]
fn a_bad_replay_ignore_is_a_spec_error_at_its_place() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write_spec(
        dir.path(),
        "bad.yaml",
        "version: 1\nname: t\nprompt: p\nmodel: { provider: script, script: [{ text: hi }] }\nreplay:\n  ignore: [\"(unclosed\"]\n",
    );
    let output = drover().arg("validate").arg(&spec).output().unwrap();
    assert_exit(&output, 2);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("bad.yaml:6:") && stderr.contains("replay.ignore"),
        "{stderr}"
    );
}

/// Record a task that writes `fixed.txt`; returns the transcript.
fn record_fix(dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir.join("ws")).unwrap();
    std::fs::write(dir.join("ws/keep.txt"), "kept\n").unwrap();
    let spec = write_spec(
        dir,
        "fix.yaml",
        "version: 1\nname: fix\nprompt: p\nworkspace: ws\nisolation: copy\nmodel:\n  provider: script\n  script:\n    - tool_calls: [{ name: Write, input: { file_path: fixed.txt, content: \"fixed\\n\" } }]\n    - text: done\npermissions:\n  allow: [Write]\nchecks:\n  - name: fixed\n    run: grep -q fixed fixed.txt\n",
    );
    let artifacts = dir.join("recorded");
    assert_exit(&run_spec(&spec, &artifacts), 0);
    artifacts.join("fix/transcript.jsonl")
}

#[test]
fn diff_only_applies_the_recorded_diff_and_compares_without_replaying_a_turn() {
    let dir = tempfile::tempdir().unwrap();
    let transcript = record_fix(dir.path());
    let artifacts = dir.path().join("diff-only");
    let output = replay(
        &transcript,
        &artifacts,
        &["--diff-only", "--strict", "--checks"],
    );
    assert_exit(&output, 0);
    assert_eq!(
        std::fs::read(artifacts.join("fix/diff.patch")).unwrap(),
        std::fs::read(dir.path().join("recorded/fix/diff.patch")).unwrap()
    );
    let lines = common::transcript(&artifacts.join("fix/transcript.jsonl"));
    assert!(common::events(&lines, "model_response").is_empty());
    assert!(common::events(&lines, "tool_call").is_empty());
    let checks = common::events(&lines, "check");
    assert_eq!(checks.len(), 1);
    assert_eq!(checks[0]["passed"], true);
    assert!(summary(&artifacts)["tasks"][0].get("drift").is_none());
}

#[test]
fn diff_only_fails_when_the_recorded_diff_no_longer_applies_or_reaches_outside() {
    let dir = tempfile::tempdir().unwrap();
    let transcript = record_fix(dir.path());
    let patch = dir.path().join("recorded/fix/diff.patch");
    // A hostile or stale patch: it edits a file that is not as recorded, and names a
    // path outside the workspace.
    std::fs::write(
        &patch,
        "diff --git a/keep.txt b/keep.txt\n--- a/keep.txt\n+++ b/keep.txt\n@@ -1 +1 @@\n-not what is there\n+x\ndiff --git a/../outside.txt b/../outside.txt\nnew file mode 100644\n--- /dev/null\n+++ b/../outside.txt\n@@ -0,0 +1 @@\n+escaped\n",
    )
    .unwrap();
    let artifacts = dir.path().join("stale");
    let output = replay(&transcript, &artifacts, &["--diff-only"]);
    assert_exit(&output, 1);
    let task = &summary(&artifacts)["tasks"][0];
    assert_eq!(task["reason"], "replay_drift", "{task}");
    assert!(
        task["message"]
            .as_str()
            .unwrap()
            .contains("no longer applies"),
        "{task}"
    );
    assert!(!dir.path().join("outside.txt").exists());
    assert!(!dir.path().join("recorded/outside.txt").exists());

    std::fs::remove_file(&patch).unwrap();
    let output = replay(&transcript, &dir.path().join("none"), &["--diff-only"]);
    assert_exit(&output, 2);
    assert!(String::from_utf8_lossy(&output.stderr).contains("--diff-only needs the diff.patch"));
}
