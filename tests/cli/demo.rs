//! The README's main command, end to end: run, apply the diff, replay.

use crate::common;

use std::process::Command;

use common::{copy_tree, drover, events, repo, transcript};

#[test]
fn demo_runs_passes_and_its_diff_applies_and_replays_identically() {
    let out = tempfile::tempdir().unwrap();
    let artifacts = out.path().join("artifacts");
    let fixture_before = std::fs::read(repo().join("fixtures/repos/calc/src/stats.rs")).unwrap();

    drover()
        .current_dir(repo())
        // The outer build's target directory is outside the task's sandbox: the demo's
        // cargo builds in the workspace, as it would in CI.
        .env_remove("CARGO_TARGET_DIR")
        .args(["run", "tasks/demo.yaml", "--artifacts"])
        .arg(&artifacts)
        .assert()
        .code(0);

    // Every artifact is there.
    for file in [
        "junit.xml",
        "summary.json",
        "summary.md",
        "demo/transcript.jsonl",
        "demo/diff.patch",
    ] {
        assert!(artifacts.join(file).is_file(), "{file} missing");
    }
    // The fixture itself is untouched (isolation: copy), so the demo can run again.
    assert_eq!(
        std::fs::read(repo().join("fixtures/repos/calc/src/stats.rs")).unwrap(),
        fixture_before
    );

    // Every transcript line parses and carries type and ts; the run passed.
    let lines = transcript(&artifacts.join("demo/transcript.jsonl"));
    for line in &lines {
        assert!(line["type"].is_string(), "{line}");
        assert!(line["ts"].is_string(), "{line}");
    }
    assert_eq!(lines[0]["type"], "run_start");
    let end = lines.last().unwrap();
    assert_eq!(end["type"], "run_end");
    assert_eq!(end["status"], "passed");
    assert_eq!(end["reason"], "end_turn");
    // The tools really ran: the tests passed after the edit, and the check ran.
    let results = events(&lines, "tool_result");
    assert!(
        results.iter().all(|r| r["is_error"] == false),
        "{results:?}"
    );
    let bash = results.last().unwrap()["content"].as_str().unwrap();
    assert!(bash.contains("test result: ok"), "{bash}");
    let checks = events(&lines, "check");
    assert_eq!(checks.len(), 1);
    assert_eq!(checks[0]["passed"], true);

    // The diff applies to a pristine copy of the fixture and reproduces the fix.
    let pristine = out.path().join("pristine");
    copy_tree(&repo().join("fixtures/repos/calc"), &pristine);
    let patch = artifacts.join("demo/diff.patch");
    let status = Command::new("git")
        .args(["apply", "--check"])
        .arg(&patch)
        .current_dir(&pristine)
        .status()
        .unwrap();
    assert!(status.success(), "git apply --check failed");
    let status = Command::new("git")
        .arg("apply")
        .arg(&patch)
        .current_dir(&pristine)
        .status()
        .unwrap();
    assert!(status.success());
    let fixed = std::fs::read_to_string(pristine.join("src/stats.rs")).unwrap();
    assert!(
        fixed.contains("Some(sum(values) / values.len() as f64)"),
        "{fixed}"
    );
    assert!(!fixed.contains("len() - 1"));

    // A replay of the transcript passes and writes a byte-identical diff.
    let replayed = out.path().join("replayed");
    drover()
        .current_dir(repo())
        .env_remove("CARGO_TARGET_DIR")
        .arg("replay")
        .arg(artifacts.join("demo/transcript.jsonl"))
        .arg("--artifacts")
        .arg(&replayed)
        .assert()
        .code(0);
    assert_eq!(
        std::fs::read(replayed.join("demo/diff.patch")).unwrap(),
        std::fs::read(&patch).unwrap(),
        "the replay's diff differs from the run's"
    );
    let replay_lines = transcript(&replayed.join("demo/transcript.jsonl"));
    assert_eq!(replay_lines.last().unwrap()["status"], "passed");
}
