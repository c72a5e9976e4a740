//! `limits.max_identical_calls` end to end: a model that makes the same call with the
//! same result five times in a row (the default) is told once; doing it again from a
//! later turn ends the run with reason `loop` (exit 1) and the figures. `off` lets it
//! run; a call whose result changes is no loop.

use crate::common;
use crate::context_fixture::called;

use std::path::{Path, PathBuf};

use common::{assert_exit, events, run_spec, summary, transcript, write_spec};
use serde_json::Value;

/// A task whose scripted model makes `calls` (one script entry each, `  - …` lines),
/// then says done; `limits` is the spec's `limits:` body.
fn task(dir: &Path, name: &str, calls: &[&str], limits: &str) -> PathBuf {
    std::fs::create_dir_all(dir.join("ws")).unwrap();
    std::fs::write(dir.join("ws/same.txt"), "the same every time\n").unwrap();
    let mut script = String::new();
    for call in calls {
        script.push_str(&format!("    - tool_calls: [{call}]\n"));
    }
    script.push_str("    - text: done\n");
    let limits = if limits.is_empty() {
        String::new()
    } else {
        format!("limits:\n{limits}")
    };
    write_spec(
        dir,
        &format!("{name}.yaml"),
        &format!(
            "version: 1\nname: {name}\nprompt: p\nworkspace: ws\nisolation: copy\nsandbox: off\nmodel:\n  provider: script\n  script:\n{script}permissions:\n  allow: [Read, Bash]\n{limits}"
        ),
    )
}

const READ_SAME: &str = "{ name: Read, input: { file_path: same.txt } }";

fn loop_messages(lines: &[Value]) -> Vec<&Value> {
    events(lines, "user_message")
        .into_iter()
        .filter(|m| m["source"] == "loop")
        .collect()
}

#[test]
fn the_same_call_with_the_same_result_is_told_once_then_ends_the_run_with_reason_loop() {
    let dir = tempfile::tempdir().unwrap();
    let spec = task(dir.path(), "stuck", &[READ_SAME; 8], "");
    let artifacts = dir.path().join("out");
    let output = run_spec(&spec, &artifacts);
    assert_exit(&output, 1);
    let lines = transcript(&artifacts.join("stuck/transcript.jsonl"));

    // Told once, after the fifth identical call, before the sixth turn.
    let told = loop_messages(&lines);
    assert_eq!(told.len(), 1, "{told:?}");
    let text = told[0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("drover: you have called Read with the same input 5 times in a row and got the same result each time."),
        "{text}"
    );
    assert!(
        text.contains("If you make this call again with the same result (or repeat any other call 5 times in a row), the run ends."),
        "{text}"
    );
    let at = lines
        .iter()
        .position(|e| e["type"] == "user_message")
        .unwrap();
    let turns_before = lines[..at]
        .iter()
        .filter(|e| e["type"] == "model_response")
        .count();
    assert_eq!(turns_before, 5);

    // The sixth identical call, from a later turn, ends the run.
    let responses = events(&lines, "model_response");
    assert_eq!(responses.len(), 6, "no request after the loop was caught");
    let end = lines.last().unwrap();
    assert_eq!(end["reason"], "loop");
    assert_eq!(end["status"], "failed");
    let message = end["message"].as_str().unwrap();
    assert_eq!(
        message,
        "the model called Read with the same input and got the same result 6 times in a row (limits.max_identical_calls 5), after it was told it was repeating itself; the run was stopped after 6 turns"
    );
    let report = summary(&artifacts);
    assert_eq!(report["tasks"][0]["reason"], "loop");
    let junit = std::fs::read_to_string(artifacts.join("junit.xml")).unwrap();
    assert!(junit.contains("<failure type=\"loop\""), "{junit}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("FAILED (loop"), "{stderr}");
}

#[test]
fn a_lower_limit_catches_sooner_and_off_lets_the_same_call_run() {
    let dir = tempfile::tempdir().unwrap();
    let spec = task(
        dir.path(),
        "three",
        &[READ_SAME; 8],
        "  max_identical_calls: 3\n",
    );
    let artifacts = dir.path().join("out");
    assert_exit(&run_spec(&spec, &artifacts), 1);
    let lines = transcript(&artifacts.join("three/transcript.jsonl"));
    assert_eq!(loop_messages(&lines).len(), 1);
    assert_eq!(events(&lines, "model_response").len(), 4);
    assert_eq!(lines.last().unwrap()["reason"], "loop");

    let off = task(
        dir.path(),
        "off",
        &[READ_SAME; 8],
        "  max_identical_calls: off\n",
    );
    let artifacts = dir.path().join("out-off");
    assert_exit(&run_spec(&off, &artifacts), 0);
    let lines = transcript(&artifacts.join("off/transcript.jsonl"));
    assert!(loop_messages(&lines).is_empty());
    assert_eq!(events(&lines, "tool_result").len(), 8);
    assert_eq!(lines.last().unwrap()["reason"], "end_turn");
}

#[test]
fn a_call_whose_result_changes_is_no_loop() {
    let dir = tempfile::tempdir().unwrap();
    let count = "{ name: Bash, input: { command: 'echo x >> counter && wc -l < counter' } }";
    let spec = task(dir.path(), "counting", &[count; 9], "");
    let artifacts = dir.path().join("out");
    assert_exit(&run_spec(&spec, &artifacts), 0);
    let lines = transcript(&artifacts.join("counting/transcript.jsonl"));
    assert!(loop_messages(&lines).is_empty());
    let results: Vec<String> = events(&lines, "tool_result")
        .iter()
        .map(|r| r["content"].as_str().unwrap().trim().to_string())
        .collect();
    assert_eq!(results, ["1", "2", "3", "4", "5", "6", "7", "8", "9"]);
}

#[test]
fn other_calls_between_break_the_streak() {
    let dir = tempfile::tempdir().unwrap();
    let other = "{ name: Read, input: { file_path: same.txt, offset: 1 } }";
    let mut calls = Vec::new();
    for _ in 0..3 {
        calls.extend([READ_SAME; 4]);
        calls.push(other);
    }
    let spec = task(dir.path(), "varied", &calls, "");
    let artifacts = dir.path().join("out");
    assert_exit(&run_spec(&spec, &artifacts), 0);
    let lines = transcript(&artifacts.join("varied/transcript.jsonl"));
    assert!(loop_messages(&lines).is_empty());
}

#[test]
fn identical_calls_in_one_turn_are_told_but_only_a_later_turn_ends_the_run() {
    let dir = tempfile::tempdir().unwrap();
    // Eight identical calls in the first turn: the model could not read the warning
    // before making them. One more in the second turn ends the run.
    let eight = [READ_SAME; 8].join(", ");
    let spec = task(dir.path(), "parallel", &[&eight, READ_SAME, READ_SAME], "");
    let artifacts = dir.path().join("out");
    assert_exit(&run_spec(&spec, &artifacts), 1);
    let lines = transcript(&artifacts.join("parallel/transcript.jsonl"));
    assert_eq!(loop_messages(&lines).len(), 1);
    let responses = events(&lines, "model_response");
    assert_eq!(called(responses[0]).len(), 8);
    assert_eq!(responses.len(), 2);
    let end = lines.last().unwrap();
    assert_eq!(end["reason"], "loop");
    assert!(
        end["message"]
            .as_str()
            .unwrap()
            .contains("got the same result 9 times in a row"),
        "{end}"
    );
}

#[test]
fn a_replay_of_a_loop_ends_where_the_run_did() {
    let dir = tempfile::tempdir().unwrap();
    let spec = task(dir.path(), "stuck", &[READ_SAME; 8], "");
    let artifacts = dir.path().join("out");
    assert_exit(&run_spec(&spec, &artifacts), 1);
    let replayed = dir.path().join("replayed");
    let output = common::drover()
        .current_dir(dir.path())
        .arg("replay")
        .arg(artifacts.join("stuck/transcript.jsonl"))
        .arg("--strict")
        .arg("--artifacts")
        .arg(&replayed)
        .output()
        .unwrap();
    let lines = transcript(&replayed.join("stuck/transcript.jsonl"));
    let end = lines.last().unwrap();
    assert_eq!(
        end["reason"],
        "loop",
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(events(&lines, "model_response").len(), 6);
    assert_eq!(loop_messages(&lines).len(), 1);
    assert!(summary(&replayed)["tasks"][0].get("drift").is_none());
}

#[test]
fn waiting_on_a_background_shell_is_no_loop() {
    let dir = tempfile::tempdir().unwrap();
    let start = "{ name: Bash, input: { command: 'sleep 30', run_in_background: true } }";
    let poll = "{ name: BashOutput, input: { bash_id: bash_1 } }";
    let mut calls = vec![start];
    calls.extend([poll; 8]);
    let spec = task(dir.path(), "waiting", &calls, "");
    let artifacts = dir.path().join("out");
    assert_exit(&run_spec(&spec, &artifacts), 0);
    let lines = transcript(&artifacts.join("waiting/transcript.jsonl"));
    assert!(loop_messages(&lines).is_empty());
    let results = events(&lines, "tool_result");
    assert_eq!(results.len(), 9);
    // Every poll said the same: the shell was still running, with nothing new.
    let polls: Vec<&str> = results[1..]
        .iter()
        .map(|r| r["content"].as_str().unwrap())
        .collect();
    assert!(polls.iter().all(|p| *p == polls[0]), "{polls:?}");
    assert!(polls[0].contains("is running"), "{}", polls[0]);
    assert_eq!(lines.last().unwrap()["reason"], "end_turn");
}
