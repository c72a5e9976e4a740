//! Long runs against the window-enforcing mock model (`mock_model`): what a run does
//! when its conversation outgrows the model's window.

use crate::common::{assert_exit, events, transcript, write_spec};
use crate::mock_model::{self, MockModel};

#[test]
fn without_context_management_a_run_ends_context_exhausted_at_the_window_after_the_scripted_turns()
{
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let mock = MockModel::start(
        &ws,
        &[
            "--window",
            "18000",
            "--turns",
            "60",
            "--result-bytes",
            "4096",
        ],
    );
    let spec = write_spec(
        dir.path(),
        "t.yaml",
        &mock_model::spec("t", &mock, "{ max_turns: 80, context: off }"),
    );
    let artifacts = dir.path().join("out");
    let output = mock_model::run(&spec, &artifacts);
    let figures = mock.finish();
    assert_exit(&output, 1);

    // The mock refused one request, the first over the window, and accepted every other
    // one: each inside the window, and drover read each one's usage as the mock sent it.
    let accepted = figures["requests"].as_array().unwrap();
    let turns = figures["turns"].as_u64().unwrap();
    assert!((10..60).contains(&turns), "{figures}");
    assert_eq!(figures["refusals"], 1, "{figures}");
    assert!(figures["largest_refused_tokens"].as_u64().unwrap() > 18000);
    assert!(figures["peak_tokens"].as_u64().unwrap() <= 18000);
    assert_eq!(accepted.len() as u64, turns);
    let lines = transcript(&artifacts.join("t/transcript.jsonl"));
    let responses = events(&lines, "model_response");
    assert_eq!(responses.len(), accepted.len());
    for (response, request) in responses.iter().zip(accepted) {
        assert_eq!(response["usage"]["input_tokens"], request["tokens"]);
        let bytes = request["bytes"].as_u64().unwrap();
        assert_eq!(request["tokens"].as_u64().unwrap(), bytes.div_ceil(4));
    }

    // The scripted turns: reads of the workspace's files, never the same one twice in a
    // row, and a note written at turn 10.
    let calls: Vec<(String, String)> = events(&lines, "tool_call")
        .iter()
        .map(|call| {
            (
                call["name"].as_str().unwrap().to_string(),
                call["input"]["file_path"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(calls[0], ("Read".to_string(), "src/f07.txt".to_string()));
    assert_eq!(calls[9], ("Write".to_string(), "notes/010.txt".to_string()));
    assert!(calls.windows(2).all(|pair| pair[0] != pair[1]));
    let results = events(&lines, "tool_result");
    assert!(results.iter().all(|result| result["is_error"] == false));
    assert!(results[0]["content"].as_str().unwrap().len() > 4096);

    // The run ends cleanly, naming the API's words; the note it wrote is in its diff.
    let end = lines.last().unwrap();
    assert_eq!(end["type"], "run_end");
    assert_eq!(end["reason"], "context_exhausted");
    assert_eq!(end["status"], "failed");
    assert_eq!(end["turns"], turns);
    let message = end["message"].as_str().unwrap();
    let refused = figures["largest_refused_tokens"].as_u64().unwrap();
    assert!(
        message.contains(&format!(
            "prompt is too long: {refused} tokens > 18000 maximum"
        )),
        "{message}"
    );
    let diff = std::fs::read_to_string(artifacts.join("t/diff.patch")).unwrap();
    assert!(diff.contains("notes/010.txt"), "{diff}");
}

#[test]
fn a_prompt_too_long_mid_run_is_recovered_by_one_compaction_and_the_run_replays_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let mock = MockModel::start(
        &ws,
        &["--window", "32000", "--turns", "14", "--refuse-at", "8"],
    );
    let spec = write_spec(
        dir.path(),
        "t.yaml",
        &mock_model::spec(
            "t",
            &mock,
            "{ max_turns: 30, context: { strategy: clear_tool_results, window: 32000 } }",
        ),
    );
    let artifacts = dir.path().join("out");
    let output = mock_model::run(&spec, &artifacts);
    let figures = mock.finish();
    assert_exit(&output, 0);
    // The request for turn 8 fit the window, but the mock refused it once: drover
    // compacted, asked again, and the scenario went on to its end.
    assert_eq!(figures["refusals"], 1, "{figures}");
    assert_eq!(figures["turns"], 14, "{figures}");
    let lines = transcript(&artifacts.join("t/transcript.jsonl"));
    let compactions = events(&lines, "compaction");
    assert_eq!(compactions.len(), 1, "{compactions:?}");
    let compaction = compactions[0];
    assert_eq!(compaction["trigger"], "refused");
    assert_eq!(compaction["turn"], 7);
    let before = compaction["bytes_before"].as_u64().unwrap();
    assert!(compaction["bytes_after"].as_u64().unwrap() < before);
    let retried = figures["requests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|request| request["turn"] == 8)
        .unwrap();
    assert!(retried["bytes"].as_u64().unwrap() < before, "{retried}");
    assert_eq!(lines.last().unwrap()["reason"], "end_turn");

    // Replayed with no model: the compaction made where it was, the same diff, no drift.
    let replayed = dir.path().join("replayed");
    let replay = crate::common::drover()
        .current_dir(dir.path())
        .arg("replay")
        .arg(artifacts.join("t/transcript.jsonl"))
        .arg("--artifacts")
        .arg(&replayed)
        .output()
        .unwrap();
    assert_exit(&replay, 0);
    let summary = crate::common::summary(&replayed);
    assert!(summary["tasks"][0].get("drift").is_none(), "{summary}");
    let recorded = std::fs::read(artifacts.join("t/diff.patch")).unwrap();
    assert!(!recorded.is_empty());
    assert_eq!(
        recorded,
        std::fs::read(replayed.join("t/diff.patch")).unwrap()
    );
}

#[test]
fn summarize_against_the_window_is_answered_by_the_mock_and_the_run_finishes_inside_it() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let mock = MockModel::start(&ws, &["--window", "12000", "--turns", "24"]);
    let spec = write_spec(
        dir.path(),
        "t.yaml",
        &mock_model::spec(
            "t",
            &mock,
            "{ max_turns: 40, context: { strategy: summarize, window: 12000 } }",
        ),
    );
    let artifacts = dir.path().join("out");
    let output = mock_model::run(&spec, &artifacts);
    let figures = mock.finish();
    assert_exit(&output, 0);
    assert_eq!(figures["turns"], 24, "{figures}");
    assert_eq!(figures["refusals"], 0, "{figures}");
    assert!(figures["peak_tokens"].as_u64().unwrap() <= 12000);
    // Each summary request (no tools) was answered with where the work stood, used no
    // scenario turn, and replaced the conversation.
    let lines = transcript(&artifacts.join("t/transcript.jsonl"));
    let summaries: Vec<&str> = events(&lines, "compaction")
        .iter()
        .map(|compaction| compaction["summary"].as_str().unwrap())
        .collect();
    assert!(!summaries.is_empty());
    assert_eq!(figures["text_answers"], summaries.len(), "{figures}");
    for summary in &summaries {
        assert!(summary.starts_with("Summary after turn "), "{summary}");
        assert!(summary.contains("of 24: read "), "{summary}");
    }
    assert_eq!(lines.last().unwrap()["reason"], "end_turn");
}

#[test]
fn results_too_large_to_keep_three_are_cleared_when_the_api_refuses_and_the_run_finishes() {
    // Each result is about 9,000 tokens: the newest three do not fit a 32k window with
    // the rest of the request. The API's refusal lets drover clear even the newest.
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let mock = MockModel::start(
        &ws,
        &[
            "--window",
            "32000",
            "--turns",
            "12",
            "--result-bytes",
            "36000",
        ],
    );
    let spec = write_spec(
        dir.path(),
        "t.yaml",
        &mock_model::spec(
            "t",
            &mock,
            "{ max_turns: 30, context: { strategy: clear_tool_results, window: 32000 } }",
        ),
    );
    let artifacts = dir.path().join("out");
    let output = mock_model::run(&spec, &artifacts);
    let figures = mock.finish();
    assert_exit(&output, 0);
    assert_eq!(figures["turns"], 12, "{figures}");
    let lines = transcript(&artifacts.join("t/transcript.jsonl"));
    let refused: Vec<_> = events(&lines, "compaction")
        .into_iter()
        .filter(|c| c["trigger"] == "refused")
        .collect();
    assert!(!refused.is_empty(), "{lines:?}");
    assert_eq!(lines.last().unwrap()["reason"], "end_turn");
}
