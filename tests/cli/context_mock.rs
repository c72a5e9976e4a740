//! Each `limits.context` strategy against the window-enforcing mock model (`mock_model`:
//! an Anthropic API on 127.0.0.1 that answers 400 `prompt is too long` to a request past
//! 32,000 tokens): a 120-turn task of 4 KB results finishes inside the window, and its
//! replay, with no model, drifts nowhere and leaves the same diff; without management
//! the same task ends `context_exhausted` with drover's figures.

use crate::common::{assert_exit, drover, events, summary, transcript, write_spec};
use crate::mock_model::{self, MockModel};

use std::path::Path;

use serde_json::Value;

const TURNS: u64 = 120;

/// Run the scenario (120 turns, 4 KB results, a 32k window) with `limits` in `dir`:
/// drover's output, the mock's figures, the transcript.
fn long_run(dir: &Path, limits: &str) -> (std::process::Output, Value, Vec<Value>) {
    let mock = MockModel::start(
        &dir.join("ws"),
        &[
            "--window",
            "32000",
            "--turns",
            &TURNS.to_string(),
            "--result-bytes",
            "4096",
        ],
    );
    let spec = write_spec(dir, "t.yaml", &mock_model::spec("t", &mock, limits));
    let output = mock_model::run(&spec, &dir.join("out"));
    let figures = mock.finish();
    let lines = transcript(&dir.join("out/t/transcript.jsonl"));
    (output, figures, lines)
}

/// The run replayed with no model: no drift, the same compactions, the same diff.
fn assert_replays_the_same(dir: &Path, recorded: &[Value]) {
    let replayed = dir.join("replayed");
    let output = drover()
        .current_dir(dir)
        .arg("replay")
        .arg(dir.join("out/t/transcript.jsonl"))
        .arg("--strict")
        .arg("--artifacts")
        .arg(&replayed)
        .output()
        .unwrap();
    assert_exit(&output, 0);
    let report = summary(&replayed);
    assert!(report["tasks"][0].get("drift").is_none(), "{report:#}");
    let again = transcript(&replayed.join("t/transcript.jsonl"));
    let kept = |lines: &[Value]| -> Vec<Value> {
        events(lines, "compaction")
            .iter()
            .map(|c| c["kept"].clone())
            .collect()
    };
    assert_eq!(kept(recorded), kept(&again));
    let diff = std::fs::read(dir.join("out/t/diff.patch")).unwrap();
    assert!(!diff.is_empty());
    assert_eq!(diff, std::fs::read(replayed.join("t/diff.patch")).unwrap());
}

#[test]
fn clear_tool_results_and_summarize_finish_inside_the_window_without_a_refusal() {
    for strategy in ["clear_tool_results", "summarize"] {
        let dir = tempfile::tempdir().unwrap();
        let (output, figures, lines) = long_run(
            dir.path(),
            &format!("{{ max_turns: 200, context: {{ strategy: {strategy}, window: 32000 }} }}"),
        );
        assert_exit(&output, 0);
        assert_eq!(figures["turns"], TURNS, "{strategy}: {figures}");
        assert_eq!(
            figures["refusals"], 0,
            "{strategy}: drover kept every request under the window: {figures}"
        );
        assert!(
            figures["peak_tokens"].as_u64().unwrap() <= 32_000,
            "{figures}"
        );
        let compactions = events(&lines, "compaction");
        assert!(compactions.len() >= 2, "{strategy}: {compactions:?}");
        for compaction in &compactions {
            assert_eq!(compaction["strategy"], strategy);
            assert_eq!(compaction["trigger"], "threshold");
            assert!(
                compaction["tokens_after"].as_u64().unwrap() < 22_400,
                "{strategy}: under the threshold after it: {compaction}"
            );
        }
        if strategy == "summarize" {
            assert_eq!(
                figures["text_answers"],
                compactions.len(),
                "one summary request a compaction, answered by the mock"
            );
            assert!(compactions.iter().all(|c| c["summary"].is_string()));
        }
        assert_eq!(lines.last().unwrap()["reason"], "end_turn");
        let report = summary(&dir.path().join("out"));
        assert_eq!(report["tasks"][0]["context"]["strategy"], strategy);
        assert_eq!(
            report["tasks"][0]["context"]["compactions"],
            compactions.len()
        );
        assert_replays_the_same(dir.path(), &lines);
    }
}

#[test]
fn server_against_an_api_without_context_editing_finishes_by_drovers_own_clearing_near_the_window()
{
    // The mock does not edit the context itself: drover, trusting the server, leaves
    // the threshold to it and clears only once a request reaches 95% of the window (or
    // the server refuses one: once, and asks again).
    let dir = tempfile::tempdir().unwrap();
    let (output, figures, lines) = long_run(
        dir.path(),
        "{ max_turns: 200, context: { strategy: server, window: 32000 } }",
    );
    assert_exit(&output, 0);
    assert_eq!(figures["turns"], TURNS, "{figures}");
    assert!(figures["peak_tokens"].as_u64().unwrap() <= 32_000);
    let refusals = figures["refusals"].as_u64().unwrap();
    let refused: Vec<&Value> = events(&lines, "compaction")
        .into_iter()
        .filter(|c| c["trigger"] == "refused")
        .collect();
    assert_eq!(
        refused.len() as u64,
        refusals,
        "each refusal met by one compaction: {figures}"
    );
    let near_the_window: Vec<&Value> = events(&lines, "compaction")
        .into_iter()
        .filter(|c| c["trigger"] == "threshold")
        .collect();
    assert!(!near_the_window.is_empty(), "{figures}");
    for compaction in near_the_window {
        assert!(
            compaction["tokens_before"].as_u64().unwrap() > 30_400,
            "not before 95% of the window: {compaction}"
        );
    }
    assert_eq!(lines.last().unwrap()["reason"], "end_turn");
    assert_replays_the_same(dir.path(), &lines);
}

#[test]
fn context_off_ends_context_exhausted_with_the_apis_words_and_drovers_figures() {
    let dir = tempfile::tempdir().unwrap();
    let (output, figures, lines) = long_run(dir.path(), "{ max_turns: 200, context: off }");
    assert_exit(&output, 1);
    assert_eq!(figures["refusals"], 1, "not asked again: {figures}");
    let turns = figures["turns"].as_u64().unwrap();
    assert!(turns < TURNS);
    assert!(events(&lines, "compaction").is_empty());
    let end = lines.last().unwrap();
    assert_eq!(end["reason"], "context_exhausted");
    assert_eq!(end["turns"], turns);
    let message = end["message"].as_str().unwrap();
    assert!(message.contains("prompt is too long: "), "{message}");
    let figures_said = format!("(the request of turn {} was ~", turns + 1);
    assert!(message.contains(&figures_said), "{message}");
    assert!(
        message.ends_with("bytes; limits.context is off)"),
        "{message}"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("context_exhausted"), "{stderr}");
}

#[test]
fn a_refusal_mid_run_under_summarize_is_met_by_one_summary_and_a_retry() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockModel::start(
        &dir.path().join("ws"),
        &["--window", "32000", "--turns", "20", "--refuse-at", "6"],
    );
    let spec = write_spec(
        dir.path(),
        "t.yaml",
        &mock_model::spec(
            "t",
            &mock,
            "{ max_turns: 40, context: { strategy: summarize, window: 32000 } }",
        ),
    );
    let output = mock_model::run(&spec, &dir.path().join("out"));
    let figures = mock.finish();
    assert_exit(&output, 0);
    assert_eq!(figures["refusals"], 1, "{figures}");
    assert_eq!(figures["turns"], 20, "{figures}");
    let lines = transcript(&dir.path().join("out/t/transcript.jsonl"));
    let compactions = events(&lines, "compaction");
    let refused: Vec<&&Value> = compactions
        .iter()
        .filter(|c| c["trigger"] == "refused")
        .collect();
    assert_eq!(refused.len(), 1, "{compactions:?}");
    assert_eq!(refused[0]["turn"], 5);
    assert!(refused[0]["summary"].is_string(), "{}", refused[0]);
    assert_eq!(lines.last().unwrap()["reason"], "end_turn");
    assert_replays_the_same(dir.path(), &lines);
}
