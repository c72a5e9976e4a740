//! Replays and resumes of compacted runs: a replay compacts where and as far as the
//! recording did (a summary is taken from the recording, no model is asked), so it
//! drifts nowhere and leaves the same diff; a recording whose compaction was changed
//! rebuilds another conversation, a drift with tool `compaction`; a compacted run
//! stopped by `max_turns` resumes with a raised limit and finishes.

use crate::common;
use crate::context_fixture::{
    anthropic_call, anthropic_says, anthropic_task, compactions, large_files, num, read_turns,
    run_keyed, task, write_turn,
};
use crate::mock_server::{MockServer, Reply};

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{assert_exit, events, resume_with, run_spec, summary, transcript};
use serde_json::{Value, json};

/// `drover replay TRANSCRIPT --artifacts DIR ARGS…`, from the directory the recording's
/// spec lies in.
fn replay(recording: &Path, artifacts: &Path, args: &[&str]) -> Output {
    common::drover_without_proxy()
        .current_dir(common::test_dir_of(recording))
        .arg("replay")
        .arg(recording)
        .args(args)
        .arg("--artifacts")
        .arg(artifacts)
        .output()
        .unwrap()
}

/// What a replay must have done as the recording did, compaction by compaction.
fn assert_same_compactions(recorded: &[Value], replayed: &[Value]) {
    let recorded = compactions(recorded);
    let replayed = compactions(replayed);
    assert_eq!(recorded.len(), replayed.len(), "{replayed:?}");
    assert!(!recorded.is_empty());
    for (was, is) in recorded.iter().zip(&replayed) {
        for key in [
            "turn",
            "strategy",
            "trigger",
            "window",
            "kept",
            "cleared_results",
            "removed_turns",
            "summary",
            "bytes_before",
            "bytes_after",
            "tokens_before",
            "tokens_after",
            "fallback",
        ] {
            assert_eq!(was.get(key), is.get(key), "{key}: {was} vs {is}");
        }
    }
}

/// Twelve reads of 8 KB against a 20,000-token window, two writes; priced output
/// tokens, so the run has a cost a replay must give again.
fn compacted_task(dir: &Path, extra: &str) -> PathBuf {
    large_files(dir, 1..=12, 80);
    let priced = "      usage: { output_tokens: 100 }\n";
    let mut script = String::new();
    for turn in read_turns(1..=12).lines() {
        script.push_str(turn);
        script.push('\n');
        script.push_str(priced);
    }
    script += &write_turn("notes.md", "twelve files\n");
    script += &write_turn("f1.txt", "rewritten\n");
    script += "    - text: done\n";
    let text = std::fs::read_to_string(task(dir, "long", &script, "")).unwrap();
    let text = text.replace(
        "  provider: script\n",
        "  provider: script\n  pricing: { input: 3.0, output: 15.0 }\n",
    );
    common::write_spec(
        dir,
        "long.yaml",
        &format!("{text}limits:\n  context: {{ window: 20000 }}\n{extra}"),
    )
}

#[test]
fn a_compacted_run_replays_with_no_drift_the_same_figures_and_the_same_diff() {
    let dir = tempfile::tempdir().unwrap();
    let spec = compacted_task(dir.path(), "");
    let artifacts = dir.path().join("out");
    assert_exit(&run_spec(&spec, &artifacts), 0);
    let recording = artifacts.join("long/transcript.jsonl");
    let replayed = dir.path().join("replayed");
    let output = replay(&recording, &replayed, &["--strict"]);
    assert_exit(&output, 0);
    assert_same_compactions(
        &transcript(&recording),
        &transcript(&replayed.join("long/transcript.jsonl")),
    );
    assert_eq!(
        std::fs::read(artifacts.join("long/diff.patch")).unwrap(),
        std::fs::read(replayed.join("long/diff.patch")).unwrap(),
        "byte-identical diff"
    );
    let was = summary(&artifacts);
    let is = summary(&replayed);
    let (was, is) = (&was["tasks"][0], &is["tasks"][0]);
    assert!(is.get("drift").is_none(), "{is:#}");
    assert_eq!(is["context"], was["context"]);
    assert_eq!(is["turns"], was["turns"]);
    assert_eq!(is["usage"], was["usage"]);
    assert!(was["cost_usd"].as_f64().unwrap() > 0.0);
    assert_eq!(
        is["cost_usd"], was["cost_usd"],
        "a replayed compaction makes no price unknown"
    );
    assert_eq!(is["agent_turns"].as_u64().unwrap_or(0), 0);
}

#[test]
fn a_replay_of_a_summarized_run_takes_the_summary_from_the_recording_with_no_model() {
    let dir = tempfile::tempdir().unwrap();
    large_files(dir.path(), 1..=2, 10);
    large_files(dir.path(), 3..=3, 500);
    let read = |n: usize| {
        Reply::sse(&anthropic_call(
            &format!("toolu_{n}"),
            "Read",
            &json!({"file_path": format!("f{n}.txt")}),
        ))
    };
    let write = Reply::sse(&anthropic_call(
        "toolu_w",
        "Write",
        &json!({"file_path": "notes.md", "content": "from the summary\n"}),
    ));
    let server = MockServer::start(vec![
        read(1),
        read(2),
        read(3),
        Reply::sse(&anthropic_says(
            "SUMMARY: three files read; write notes.md next",
        )),
        write,
        Reply::sse(&anthropic_says("done")),
    ]);
    let spec = anthropic_task(
        dir.path(),
        "api",
        &server.base_url,
        "limits:\n  context: { strategy: summarize, window: 20000 }\n",
    );
    let artifacts = dir.path().join("out");
    assert_exit(&run_keyed(&spec, &artifacts), 0);
    let asked = server.requests().len();
    assert_eq!(asked, 6);
    let recording = artifacts.join("api/transcript.jsonl");
    let replayed = dir.path().join("replayed");
    // No key, and the server answers nothing more: the replay asks no model.
    let output = replay(&recording, &replayed, &["--strict"]);
    assert_exit(&output, 0);
    assert_eq!(server.requests().len(), asked, "the replay asked no model");
    let lines = transcript(&replayed.join("api/transcript.jsonl"));
    assert_same_compactions(&transcript(&recording), &lines);
    assert_eq!(
        compactions(&lines)[0]["summary"],
        "SUMMARY: three files read; write notes.md next"
    );
    assert_eq!(
        std::fs::read(artifacts.join("api/diff.patch")).unwrap(),
        std::fs::read(replayed.join("api/diff.patch")).unwrap()
    );
    let report = summary(&replayed);
    assert!(report["tasks"][0].get("drift").is_none(), "{report:#}");
    assert_eq!(report["tasks"][0]["context"]["summaries"], 1);
}

#[test]
fn a_summary_that_failed_after_the_request_was_cleared_to_fit_replays_exactly() {
    let dir = tempfile::tempdir().unwrap();
    // f3 takes the request past 90% of the window: it is cleared before the summary is
    // asked for, and the answers to both summary requests are no summary (a call).
    large_files(dir.path(), 1..=2, 10);
    large_files(dir.path(), 3..=3, 500);
    let script = read_turns(1..=3)
        + &write_turn("pwned.txt", "summary one\n")
        + &read_turns(1..=1)
        + &write_turn("pwned.txt", "summary two\n")
        + &write_turn("notes.md", "done\n")
        + "    - text: done\n";
    let spec = task(
        dir.path(),
        "fit",
        &script,
        "limits:\n  context: { strategy: summarize, window: 20000, keep_tool_results: 1 }\n",
    );
    let artifacts = dir.path().join("out");
    assert_exit(&run_spec(&spec, &artifacts), 0);
    let recording = artifacts.join("fit/transcript.jsonl");
    let recorded = transcript(&recording);
    let made = compactions(&recorded);
    assert_eq!(made.len(), 2, "{made:?}");
    assert_eq!(made[0]["turn"], 3);
    assert!(
        num(made[0], "cleared_results") + num(made[0], "removed_turns") > 0,
        "what the clearing before the summary request took out is recorded: {}",
        made[0]
    );
    for compaction in &made {
        assert!(compaction["fallback"].is_string(), "{compaction}");
        assert!(num(compaction, "tokens_after") < 20_000, "{compaction}");
    }
    let replayed = dir.path().join("replayed");
    let output = replay(&recording, &replayed, &["--strict"]);
    assert_exit(&output, 0);
    assert_same_compactions(
        &recorded,
        &transcript(&replayed.join("fit/transcript.jsonl")),
    );
    assert!(summary(&replayed)["tasks"][0].get("drift").is_none());
    let diff = std::fs::read_to_string(artifacts.join("fit/diff.patch")).unwrap();
    assert!(!diff.contains("pwned"), "{diff}");
}

/// The recording with the first compaction's `cleared_results` lowered by one, its hash
/// chain made again (anyone can: it proves integrity, not authorship).
fn tampered(recording: &Path, dir: &Path) -> PathBuf {
    let mut lines = transcript(recording);
    let first = lines
        .iter_mut()
        .find(|line| line["type"] == "compaction")
        .unwrap();
    let cleared = num(first, "cleared_results");
    assert!(cleared >= 1, "{first}");
    assert_eq!(first["removed_turns"], 0, "{first}");
    first["cleared_results"] = json!(cleared - 1);
    let folder = dir.join("forged/long");
    std::fs::create_dir_all(&folder).unwrap();
    let path = folder.join("transcript.jsonl");
    std::fs::write(&path, common::rechained(&lines)).unwrap();
    path
}

#[test]
fn a_recording_whose_compaction_was_changed_drifts_with_tool_compaction() {
    let dir = tempfile::tempdir().unwrap();
    // With one result kept, the first compaction only clears results (a result one
    // fewer cleared is a result sent whole, another conversation).
    let spec = compacted_task(dir.path(), "");
    let text = std::fs::read_to_string(&spec).unwrap().replace(
        "{ window: 20000 }",
        "{ window: 20000, keep_tool_results: 1 }",
    );
    std::fs::write(&spec, text).unwrap();
    let artifacts = dir.path().join("out");
    assert_exit(&run_spec(&spec, &artifacts), 0);
    let forged = tampered(&artifacts.join("long/transcript.jsonl"), dir.path());

    let replayed = dir.path().join("replayed");
    let output = replay(&forged, &replayed, &[]);
    assert_exit(&output, 0);
    let report = summary(&replayed);
    let drift = &report["tasks"][0]["drift"];
    assert_eq!(drift["tool"], "compaction", "{report:#}");
    assert!(num(drift, "count") >= 1);
    assert!(
        drift["diff"]
            .as_str()
            .unwrap()
            .contains("the conversation kept after the compaction before turn"),
        "{drift}"
    );
    let lines = transcript(&replayed.join("long/transcript.jsonl"));
    let event = events(&lines, "replay_drift")[0];
    assert_eq!(event["tool"], "compaction");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("(compaction): what was rebuilt differs from the recording"),
        "{stderr}"
    );

    let strict = dir.path().join("strict");
    let output = replay(&forged, &strict, &["--strict"]);
    assert_exit(&output, 1);
    let lines = transcript(&strict.join("long/transcript.jsonl"));
    let end = lines.last().unwrap();
    assert_eq!(end["reason"], "replay_drift", "{end}");
    assert!(
        end["message"].as_str().unwrap().contains("(--strict)"),
        "{end}"
    );
}

#[test]
fn a_compacted_run_stopped_by_max_turns_resumes_with_more_turns_and_finishes() {
    let dir = tempfile::tempdir().unwrap();
    let spec = compacted_task(dir.path(), "  max_turns: 8\n");
    let artifacts = dir.path().join("out");
    let output = run_spec(&spec, &artifacts);
    assert_exit(&output, 1);
    let task_dir = artifacts.join("long");
    let stopped = transcript(&task_dir.join("transcript.jsonl"));
    assert_eq!(stopped.last().unwrap()["reason"], "max_turns");
    let before = compactions(&stopped).len();
    assert!(before >= 1, "compacted before the limit");

    let output = resume_with(&task_dir, &["--max-turns", "30", "--strict"]);
    assert_exit(&output, 0);
    let lines = transcript(&task_dir.join("transcript.jsonl"));
    let end = lines.last().unwrap();
    assert_eq!(end["reason"], "end_turn", "{end}");
    assert_eq!(end["turns"], 15);
    let after = compactions(&lines);
    assert!(
        after.len() > before,
        "the live turns compacted too: {after:?}"
    );
    assert!(after.iter().all(|c| num(c, "tokens_after") < 14_000));
    let report = summary(&artifacts);
    assert!(report["tasks"][0].get("drift").is_none(), "{report:#}");
    assert_eq!(report["tasks"][0]["context"]["compactions"], after.len());
    // The same diff as a run that was never stopped.
    let whole = dir.path().join("whole");
    std::fs::create_dir_all(&whole).unwrap();
    let uninterrupted = compacted_task(&whole, "");
    let whole_out = whole.join("out");
    assert_exit(&run_spec(&uninterrupted, &whole_out), 0);
    assert_eq!(
        std::fs::read(task_dir.join("diff.patch")).unwrap(),
        std::fs::read(whole_out.join("long/diff.patch")).unwrap()
    );
    assert_same_compactions(
        &transcript(&whole_out.join("long/transcript.jsonl")),
        &lines,
    );
}

#[test]
fn a_summarized_run_stopped_by_max_turns_resumes_with_the_script_where_it_was() {
    let dir = tempfile::tempdir().unwrap();
    large_files(dir.path(), 1..=2, 10);
    large_files(dir.path(), 3..=3, 500);
    // The fourth entry is the summary; the run stops after five turns, before the
    // write; resumed, the script goes on with the write, as a run never stopped does.
    let script = read_turns(1..=3)
        + "    - text: \"SUMMARY: three read\"\n"
        + &read_turns(1..=2)
        + &write_turn("notes.md", "after the summary\n")
        + "    - text: done\n";
    let spec = task(
        dir.path(),
        "sum",
        &script,
        "limits:\n  context: { strategy: summarize, window: 20000 }\n  max_turns: 5\n",
    );
    let artifacts = dir.path().join("out");
    assert_exit(&run_spec(&spec, &artifacts), 1);
    let task_dir = artifacts.join("sum");
    let output = resume_with(&task_dir, &["--max-turns", "10", "--strict"]);
    assert_exit(&output, 0);
    let lines = transcript(&task_dir.join("transcript.jsonl"));
    assert_eq!(lines.last().unwrap()["reason"], "end_turn");
    assert_eq!(lines.last().unwrap()["turns"], 7, "as a run never stopped");
    let responses = events(&lines, "model_response");
    let sixth = responses.iter().find(|r| r["turn"] == 6).unwrap();
    assert_eq!(
        sixth["content"][0]["name"], "Write",
        "the resumed script goes on with the write: {sixth}"
    );
    let diff = std::fs::read_to_string(task_dir.join("diff.patch")).unwrap();
    assert!(diff.contains("+after the summary"), "{diff}");
    assert_eq!(compactions(&lines)[0]["summary"], "SUMMARY: three read");
}

#[test]
fn a_recordings_summary_cost_is_worked_out_again_not_taken() {
    let dir = tempfile::tempdir().unwrap();
    // The third result takes the request past the threshold.
    let spec = priced_summary_task(dir.path(), "priced", "", "");
    let artifacts = dir.path().join("out");
    assert_exit(&run_spec(&spec, &artifacts), 0);
    let was = summary(&artifacts)["tasks"][0]["cost_usd"]
        .as_f64()
        .unwrap();
    assert!((was - 0.045).abs() < 1e-9, "{was}");
    // A fork's recording says the summary cost a negative fortune.
    let mut lines = transcript(&artifacts.join("priced/transcript.jsonl"));
    let compaction = lines
        .iter_mut()
        .find(|line| line["type"] == "compaction")
        .unwrap();
    assert_eq!(compaction["summary"], "SUMMARY read three");
    compaction["cost_usd"] = json!(-1000.0);
    let folder = dir.path().join("forged/priced");
    std::fs::create_dir_all(&folder).unwrap();
    let forged = folder.join("transcript.jsonl");
    std::fs::write(&forged, common::rechained(&lines)).unwrap();
    let replayed = dir.path().join("replayed");
    assert_exit(&replay(&forged, &replayed, &[]), 0);
    let is = summary(&replayed)["tasks"][0]["cost_usd"].as_f64().unwrap();
    assert!(
        (is - was).abs() < 1e-9,
        "the replay's cost {is}, the run's {was}"
    );
    let lines = transcript(&replayed.join("priced/transcript.jsonl"));
    let cost = compactions(&lines)[0]["cost_usd"].as_f64().unwrap();
    assert!((cost - 0.045).abs() < 1e-9, "{cost}");
}

#[test]
fn a_resumed_run_counts_the_summary_it_replays_once() {
    let dir = tempfile::tempdir().unwrap();
    let spec = priced_summary_task(dir.path(), "again", &read_turns(1..=1), "  max_turns: 4\n");
    let artifacts = dir.path().join("out");
    assert_exit(&run_spec(&spec, &artifacts), 1);
    let first = summary(&artifacts);
    assert_eq!(first["tasks"][0]["reason"], "max_turns");
    let spent = first["tasks"][0]["cost_usd"].as_f64().unwrap();
    assert!((spent - 0.045).abs() < 1e-9, "{spent}");
    // Resumed with more turns: the summary is replayed from the recording, and its
    // tokens are the recorded run's, counted once.
    let output = resume_with(&artifacts.join("again"), &["--max-turns", "10"]);
    assert_exit(&output, 0);
    let resumed = summary(&artifacts);
    let task = &resumed["tasks"][0];
    assert_eq!(task["reason"], "end_turn", "{task:#}");
    let cost = task["cost_usd"].as_f64().unwrap();
    assert!((cost - 0.045).abs() < 1e-9, "counted once: {cost}");
    assert_eq!(task["usage"]["input_tokens"], 10_000, "{task:#}");
}

/// A priced task whose third read takes the request past the threshold, so the fourth
/// script entry answers the summary request (10,000 input and 1,000 output tokens:
/// $0.045); then a write, the `more` script entries and done. `limits`: more `limits:`
/// lines.
fn priced_summary_task(dir: &Path, name: &str, more: &str, limits: &str) -> PathBuf {
    large_files(dir, 1..=2, 10);
    large_files(dir, 3..=3, 500);
    let script = read_turns(1..=3)
        + "    - text: SUMMARY read three\n      usage: { input_tokens: 10000, output_tokens: 1000 }\n"
        + &write_turn("notes.md", "three\n")
        + more
        + "    - text: done\n";
    let spec = task(
        dir,
        name,
        &script,
        &format!("limits:\n{limits}  context: {{ strategy: summarize, window: 20000 }}\n"),
    );
    let text = std::fs::read_to_string(&spec).unwrap().replace(
        "  provider: script\n",
        "  provider: script\n  pricing: { input: 3.0, output: 15.0 }\n",
    );
    std::fs::write(&spec, text).unwrap();
    spec
}
