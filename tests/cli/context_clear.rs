//! `limits.context` with the default strategy, `clear_tool_results`, end to end: a long
//! run whose tool results would outgrow a small window is compacted before each request
//! that would pass the threshold (old results become a placeholder naming their call,
//! then the oldest turns go), and it passes; the API sees only what was kept; a
//! "prompt is too long" refusal mid-run is met by one compaction and one retry.

use crate::common;
use crate::context_fixture::{
    anthropic_call, anthropic_says, anthropic_task, compactions, large_files, num, read_turns,
    request_results, run_keyed, task, write_turn,
};
use crate::mock_server::{MockServer, Reply};

use common::{assert_exit, run_spec, summary, transcript};
use serde_json::{Value, json};

/// A window of 20,000 tokens: the threshold (70%) is 14,000 tokens, about 56,000 bytes
/// of request. Files of 80 lines of 100 bytes give Read results of about 8.4 KB.
const SMALL_WINDOW: &str = "limits:\n  context: { window: 20000 }\n";

#[test]
fn clear_tool_results_keeps_a_long_run_under_the_threshold_and_it_passes() {
    let dir = tempfile::tempdir().unwrap();
    large_files(dir.path(), 1..=12, 80);
    let script =
        read_turns(1..=12) + &write_turn("notes.md", "read twelve files\n") + "    - text: done\n";
    let spec = task(dir.path(), "clear", &script, SMALL_WINDOW);
    let artifacts = dir.path().join("out");
    let output = run_spec(&spec, &artifacts);
    assert_exit(&output, 0);
    let lines = transcript(&artifacts.join("clear/transcript.jsonl"));
    let made = compactions(&lines);
    assert!(
        made.len() >= 3,
        "twelve results of 8 KB do not fit 14,000 tokens: {made:?}"
    );
    let threshold = 14_000;
    let mut turns_before = 0;
    for compaction in &made {
        assert_eq!(compaction["strategy"], "clear_tool_results");
        assert_eq!(compaction["trigger"], "threshold");
        assert_eq!(compaction["window"], 20_000);
        assert!(
            num(compaction, "tokens_before") > threshold,
            "compacted only past the threshold: {compaction}"
        );
        assert!(
            num(compaction, "tokens_after") < threshold,
            "the request sent after it is under the threshold: {compaction}"
        );
        assert!(num(compaction, "bytes_after") < num(compaction, "bytes_before"));
        assert!(num(compaction, "cleared_results") + num(compaction, "removed_turns") > 0);
        assert_eq!(
            compaction["kept"].as_str().unwrap().len(),
            16,
            "{compaction}"
        );
        assert!(compaction.get("summary").is_none(), "{compaction}");
        assert!(
            num(compaction, "turn") > turns_before,
            "one a turn at most here"
        );
        turns_before = num(compaction, "turn");
    }
    // Every call was made and answered: the model's turns are all there.
    assert_eq!(common::events(&lines, "model_response").len(), 14);
    assert_eq!(common::events(&lines, "tool_result").len(), 13);
    let diff = std::fs::read_to_string(artifacts.join("clear/diff.patch")).unwrap();
    assert!(diff.contains("+read twelve files"), "{diff}");

    // summary.json's tally is the events added up.
    let report = summary(&artifacts);
    let tally = &report["tasks"][0]["context"];
    assert_eq!(tally["strategy"], "clear_tool_results");
    assert_eq!(tally["window"], 20_000);
    assert_eq!(num(tally, "compactions"), made.len() as u64);
    assert_eq!(tally["refused"], 0);
    assert_eq!(tally["summaries"], 0);
    let sum = |key: &str| made.iter().map(|c| num(c, key)).sum::<u64>();
    assert_eq!(num(tally, "cleared_results"), sum("cleared_results"));
    assert_eq!(num(tally, "removed_turns"), sum("removed_turns"));
    assert_eq!(
        num(tally, "tokens_saved"),
        sum("tokens_before") - sum("tokens_after")
    );
    let peak = num(tally, "peak_request_tokens");
    assert!(
        peak > 0 && peak <= threshold,
        "no request sent passed the threshold: {tally}"
    );
    assert_eq!(
        report["tasks"][0]["agent_turns"].as_u64().unwrap_or(0),
        0,
        "a compaction is no sub-agent's turn: {report:#}"
    );

    // summary.md says it in one line, progress as it happens.
    let md = std::fs::read_to_string(artifacts.join("summary.md")).unwrap();
    let line = format!(
        "- `clear`: {} compactions (clear_tool_results, window 20000 tokens)",
        made.len()
    );
    assert!(md.contains("### Context"), "{md}");
    assert!(md.contains(&line), "{md}");
    assert!(md.contains("tool results cleared"), "{md}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let first = made[0];
    let progress = format!(
        "clear: compacted before turn {}: ~{} → ~{} tokens of a 20000 window (clear_tool_results: ",
        num(first, "turn") + 1,
        num(first, "tokens_before"),
        num(first, "tokens_after")
    );
    assert!(stderr.contains(&progress), "{stderr}");
}

#[test]
fn a_run_that_fits_its_window_is_never_compacted_and_reports_no_context() {
    let dir = tempfile::tempdir().unwrap();
    large_files(dir.path(), 1..=3, 80);
    let script = read_turns(1..=3) + "    - text: done\n";
    let spec = task(dir.path(), "small", &script, "");
    let artifacts = dir.path().join("out");
    assert_exit(&run_spec(&spec, &artifacts), 0);
    let lines = transcript(&artifacts.join("small/transcript.jsonl"));
    assert!(compactions(&lines).is_empty());
    let report = summary(&artifacts);
    assert!(report["tasks"][0].get("context").is_none(), "{report:#}");
    let md = std::fs::read_to_string(artifacts.join("summary.md")).unwrap();
    assert!(!md.contains("### Context"), "{md}");
}

/// The Anthropic turns of a task reading `f1.txt`…`f<n>.txt`, one a turn, then `done`.
fn reading_turns(n: usize) -> Vec<Reply> {
    let mut replies: Vec<Reply> = (1..=n)
        .map(|i| {
            Reply::sse(&anthropic_call(
                &format!("toolu_{i:02}"),
                "Read",
                &json!({"file_path": format!("f{i}.txt")}),
            ))
        })
        .collect();
    replies.push(Reply::sse(&anthropic_says("done")));
    replies
}

#[test]
fn the_api_gets_placeholders_naming_the_calls_and_the_newest_results_whole() {
    let dir = tempfile::tempdir().unwrap();
    large_files(dir.path(), 1..=8, 80);
    let server = MockServer::start(reading_turns(8));
    let spec = anthropic_task(
        dir.path(),
        "api",
        &server.base_url,
        "limits:\n  context: { window: 20000, keep_tool_results: 1 }\n",
    );
    let artifacts = dir.path().join("out");
    let output = run_keyed(&spec, &artifacts);
    assert_exit(&output, 0);
    let requests: Vec<Value> = server.requests().iter().map(|r| r.json()).collect();
    assert_eq!(requests.len(), 9, "one request a turn, none repeated");
    let lines = transcript(&artifacts.join("api/transcript.jsonl"));
    let made = compactions(&lines);
    assert!(!made.is_empty());
    let first = num(made[0], "turn") as usize;
    // Before the first compaction every result goes whole; from it on, the oldest results
    // are placeholders naming their call (once cleared, never sent whole again), and the
    // newest is always whole.
    let mut cleared_before = 0;
    for (index, request) in requests.iter().enumerate() {
        let results = request_results(request);
        assert_eq!(results.len(), index.min(8), "request {index}");
        let is_cleared = |text: &str| text.starts_with("[drover cleared this result");
        let cleared = results
            .iter()
            .take_while(|(_, text)| is_cleared(text))
            .count();
        for (id, text) in &results[..cleared] {
            let n = id.trim_start_matches("toolu_").parse::<usize>().unwrap();
            assert!(
                text.starts_with("[drover cleared this result to keep the conversation inside the model's context window: Read {\"file_path\":\"f")
                    && text.contains(&format!("f{n}.txt")),
                "request {index}: result {id} names its call: {text:.300}"
            );
            assert!(text.len() < 300, "{text}");
        }
        for (id, text) in &results[cleared..] {
            let n = id.trim_start_matches("toolu_").parse::<usize>().unwrap();
            assert!(
                text.contains(&format!("f{n:02} line 00079")),
                "request {index}: the results after the cleared ones are whole: {id}: {text:.200}"
            );
        }
        if index < first {
            assert_eq!(
                cleared, 0,
                "request {index}: nothing cleared before the first compaction"
            );
        } else {
            assert!(cleared >= 1, "request {index}");
            assert!(
                cleared < results.len(),
                "request {index}: the newest stays whole"
            );
        }
        assert!(
            cleared >= cleared_before,
            "request {index}: a cleared result stays cleared"
        );
        cleared_before = cleared;
        // Every request went out under the threshold (JSON of the wire format, a
        // little larger than drover's own count).
        let bytes = serde_json::to_string(request).unwrap().len();
        assert!(bytes < 14_000 * 4 + 2_000, "request {index}: {bytes} bytes");
    }
    // The model's calls and the results recorded are the real ones: clearing changes
    // what is sent, never the record.
    let recorded: Vec<&Value> = common::events(&lines, "tool_result");
    assert_eq!(recorded.len(), 8);
    for result in recorded {
        assert!(result["content"].as_str().unwrap().contains("line 00079"));
    }
}

#[test]
fn a_prompt_too_long_mid_run_is_recovered_by_one_compaction_and_a_retry() {
    let dir = tempfile::tempdir().unwrap();
    large_files(dir.path(), 1..=3, 80);
    let mut replies = reading_turns(3);
    // The fourth request is refused (a gateway with a smaller window than drover was
    // told), the retry after the compaction is answered.
    replies.insert(
        3,
        Reply::status(
            400,
            "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"prompt is too long: 12500 tokens > 10000 maximum\"}}",
        ),
    );
    let server = MockServer::start(replies);
    let spec = anthropic_task(
        dir.path(),
        "refused",
        &server.base_url,
        "limits:\n  context: { keep_tool_results: 1 }\n",
    );
    let artifacts = dir.path().join("out");
    let output = run_keyed(&spec, &artifacts);
    assert_exit(&output, 0);
    let requests: Vec<Value> = server.requests().iter().map(|r| r.json()).collect();
    assert_eq!(requests.len(), 5, "one refusal, one retry");
    let refused = serde_json::to_string(&requests[3]).unwrap().len();
    let retried = serde_json::to_string(&requests[4]).unwrap().len();
    assert!(
        retried < refused,
        "the retry is smaller: {retried} vs {refused}"
    );
    let lines = transcript(&artifacts.join("refused/transcript.jsonl"));
    let made = compactions(&lines);
    assert_eq!(made.len(), 1, "{made:?}");
    let compaction = made[0];
    assert_eq!(compaction["trigger"], "refused");
    assert_eq!(compaction["turn"], 3);
    assert_eq!(
        compaction["window"], 10_000,
        "the window the API named, smaller than the table's"
    );
    assert!(num(compaction, "cleared_results") >= 1, "{compaction}");
    let end = lines.last().unwrap();
    assert_eq!(end["reason"], "end_turn");
    let report = summary(&artifacts);
    assert_eq!(report["tasks"][0]["context"]["refused"], 1);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("compacted before turn 4 after the API refused the request as too long"),
        "{stderr}"
    );
}

#[test]
fn a_second_refusal_after_the_compaction_ends_context_exhausted_with_figures() {
    let dir = tempfile::tempdir().unwrap();
    large_files(dir.path(), 1..=3, 80);
    let too_long = "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"prompt is too long: 12500 tokens > 10000 maximum\"}}";
    let mut replies = reading_turns(3);
    replies.truncate(3);
    replies.extend([Reply::status(400, too_long), Reply::status(400, too_long)]);
    let server = MockServer::start(replies);
    let spec = anthropic_task(
        dir.path(),
        "again",
        &server.base_url,
        "limits:\n  context: { keep_tool_results: 1 }\n",
    );
    let artifacts = dir.path().join("out");
    let output = run_keyed(&spec, &artifacts);
    assert_exit(&output, 1);
    assert_eq!(
        server.requests().len(),
        5,
        "one compaction, one retry, no more"
    );
    let lines = transcript(&artifacts.join("again/transcript.jsonl"));
    assert_eq!(compactions(&lines).len(), 1);
    let end = lines.last().unwrap();
    assert_eq!(end["reason"], "context_exhausted");
    let message = end["message"].as_str().unwrap();
    assert!(message.contains("prompt is too long"), "{message}");
    assert!(
        message.contains("the request of turn 4 was ~") && message.contains(" bytes"),
        "figures: {message}"
    );
    assert!(
        message.contains("refused again after a compaction (clear_tool_results)"),
        "{message}"
    );
}

#[test]
fn context_off_sends_everything_and_a_refusal_ends_the_run_at_once() {
    let dir = tempfile::tempdir().unwrap();
    large_files(dir.path(), 1..=12, 80);
    let mut replies = reading_turns(12);
    replies.truncate(12);
    replies.push(Reply::status(
        400,
        "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"prompt is too long: 26000 tokens > 20000 maximum\"}}",
    ));
    let server = MockServer::start(replies);
    let spec = anthropic_task(
        dir.path(),
        "off",
        &server.base_url,
        "limits:\n  context: off\n",
    );
    let artifacts = dir.path().join("out");
    let output = run_keyed(&spec, &artifacts);
    assert_exit(&output, 1);
    let requests = server.requests();
    assert_eq!(requests.len(), 13, "no retry without management");
    // Every result went whole in every request: nothing was cleared.
    let last = requests.last().unwrap().json();
    let results = request_results(&last);
    assert_eq!(results.len(), 12);
    assert!(results.iter().all(|(_, text)| text.contains("line 00079")));
    let lines = transcript(&artifacts.join("off/transcript.jsonl"));
    assert!(compactions(&lines).is_empty());
    let end = lines.last().unwrap();
    assert_eq!(end["reason"], "context_exhausted");
    let message = end["message"].as_str().unwrap();
    assert!(
        message.contains("the request of turn 13 was ~")
            && message.contains("limits.context is off"),
        "{message}"
    );
    assert!(summary(&artifacts)["tasks"][0].get("context").is_none());
}
