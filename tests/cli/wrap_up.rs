//! `limits.wrap_up: true` end to end: when `max_turns`, the budget, the token limit or
//! the time limit is about to end the run, the model gets one last turn without tools
//! (`tool_choice: none`) to say where the work stands. The run still ends with the
//! limit's reason and exit code; the text is in summary.json, summary.md and the
//! Action's `wrap-up` output (`drover report outputs`). A replay wraps up where the
//! recording did.

use crate::common;
use crate::context_fixture::{
    anthropic_call, anthropic_says, anthropic_task, called, response_text, run_keyed,
};
use crate::mock_server::{MockServer, Reply};

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{assert_exit, drover, events, run_spec, summary, transcript, write_spec};
use serde_json::{Value, json};

const WRAP: &str = "WRAP-UP: read a.txt and b.txt; c.txt is left; next: summarise them in notes.md";

/// A task whose scripted model plays `script` (lines of entries), allowed Read, Write,
/// Glob and Bash, with the spec's `limits:` body and more model lines.
fn task(dir: &Path, name: &str, script: &str, model: &str, limits: &str) -> PathBuf {
    std::fs::create_dir_all(dir.join("ws")).unwrap();
    for file in ["a.txt", "b.txt", "c.txt"] {
        std::fs::write(dir.join("ws").join(file), format!("{file}\n")).unwrap();
    }
    write_spec(
        dir,
        &format!("{name}.yaml"),
        &format!(
            "version: 1\nname: {name}\nprompt: p\nworkspace: ws\nisolation: copy\nsandbox: off\nmodel:\n  provider: script\n{model}  script:\n{script}permissions:\n  allow: [Read, Write, Glob, Bash]\nlimits:\n{limits}"
        ),
    )
}

fn read(file: &str) -> String {
    format!("    - tool_calls: [{{ name: Read, input: {{ file_path: {file} }} }}]\n")
}

/// Three reads, then an entry with the wrap-up text that also tries a Write (a model
/// may ignore `tool_choice: none`): the wrap-up turn if there is one.
fn reading_script() -> String {
    read("a.txt")
        + &read("b.txt")
        + &read("c.txt")
        + &format!(
            "    - text: {WRAP:?}\n      tool_calls: [{{ name: Write, input: {{ file_path: late.txt, content: late }} }}]\n"
        )
        + "    - text: done\n"
}

fn outputs(artifacts: &Path) -> String {
    let output = drover()
        .args(["report", "outputs"])
        .arg(artifacts)
        .output()
        .unwrap();
    assert_exit(&output, 0);
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn max_turns_gives_one_more_turn_without_tools_and_the_run_still_ends_max_turns() {
    let dir = tempfile::tempdir().unwrap();
    let spec = task(
        dir.path(),
        "wrap",
        &(read("a.txt") + &read("b.txt") + &format!("    - text: {WRAP:?}\n")),
        "",
        "  max_turns: 2\n  wrap_up: true\n",
    );
    let artifacts = dir.path().join("out");
    let output = run_spec(&spec, &artifacts);
    assert_exit(&output, 1);
    let lines = transcript(&artifacts.join("wrap/transcript.jsonl"));
    let wrap = events(&lines, "wrap_up");
    assert_eq!(wrap.len(), 1);
    let wrap = wrap[0];
    assert_eq!(wrap["turn"], 2);
    assert_eq!(wrap["reason"], "max_turns");
    assert_eq!(
        wrap["message"],
        "used 2 turns of max_turns 2 while the model still had tool calls to follow up"
    );
    assert!(
        wrap["prompt"]
            .as_str()
            .unwrap()
            .starts_with("drover: this is your last turn: the run has used all its turns (limits.max_turns). You cannot call tools any more."),
        "{wrap}"
    );
    // The wrap-up event, then the last model response; no call of it runs.
    let at = lines.iter().position(|e| e["type"] == "wrap_up").unwrap();
    assert_eq!(lines[at + 1]["type"], "model_response");
    assert_eq!(lines[at + 1]["turn"], 3);
    assert_eq!(lines[at + 2]["type"], "run_end");
    let end = &lines[at + 2];
    assert_eq!(end["reason"], "max_turns");
    assert_eq!(end["status"], "failed");
    assert_eq!(end["turns"], 3);
    assert_eq!(
        end["message"],
        "used 2 turns of max_turns 2 while the model still had tool calls to follow up; the model wrote its wrap-up in turn 3, without tools"
    );

    let report = summary(&artifacts);
    assert_eq!(response_text(&lines[at + 1]), WRAP);
    assert_eq!(report["tasks"][0]["wrap_up"], WRAP);
    let md = std::fs::read_to_string(artifacts.join("summary.md")).unwrap();
    assert!(
        md.contains("### `wrap`: where the work stands (wrap-up)"),
        "{md}"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("wrap: wrap-up: used 2 turns of max_turns 2 while the model still had tool calls to follow up; the model gets one last turn, without tools"),
        "{stderr}"
    );
}

#[test]
fn the_wrap_up_text_reaches_summary_json_summary_md_and_the_action_output() {
    let dir = tempfile::tempdir().unwrap();
    let spec = task(
        dir.path(),
        "wrap",
        &reading_script(),
        "",
        "  max_turns: 3\n  wrap_up: true\n",
    );
    let artifacts = dir.path().join("out");
    assert_exit(&run_spec(&spec, &artifacts), 1);
    let lines = transcript(&artifacts.join("wrap/transcript.jsonl"));
    let last = events(&lines, "model_response").pop().unwrap();
    assert_eq!(last["turn"], 4);
    assert_eq!(response_text(last), WRAP);
    assert_eq!(
        called(last),
        ["Write"],
        "the model ignored tool_choice none"
    );
    // Its call was never judged nor run.
    let id = &last["content"][1]["id"];
    assert!(
        lines
            .iter()
            .all(|e| e["type"] == "model_response" || &e["tool_use_id"] != id),
        "nothing of the wrap-up's call was made"
    );
    let diff = std::fs::read_to_string(artifacts.join("wrap/diff.patch")).unwrap();
    assert!(diff.is_empty(), "{diff}");

    let report = summary(&artifacts);
    assert_eq!(report["tasks"][0]["wrap_up"], WRAP);
    assert_eq!(report["tasks"][0]["reason"], "max_turns");
    let md = std::fs::read_to_string(artifacts.join("summary.md")).unwrap();
    assert!(
        md.contains(&format!(
            "### `wrap`: where the work stands (wrap-up)\n\n```text\n{WRAP}\n```"
        )),
        "{md}"
    );
    let printed = outputs(&artifacts);
    let lines: Vec<&str> = printed.lines().collect();
    assert_eq!(lines.len(), 2, "{printed}");
    assert_eq!(lines[0], "output=");
    let wrap_up: Value = serde_json::from_str(lines[1].strip_prefix("wrap-up=").unwrap()).unwrap();
    assert_eq!(wrap_up, json!({ "wrap": WRAP }));
}

#[test]
fn the_api_gets_the_wrap_up_request_with_tool_choice_none() {
    let dir = tempfile::tempdir().unwrap();
    let read = |n: usize, file: &str| {
        Reply::sse(&anthropic_call(
            &format!("toolu_{n}"),
            "Read",
            &json!({"file_path": file}),
        ))
    };
    let server = MockServer::start(vec![
        read(1, "a.txt"),
        read(2, "b.txt"),
        Reply::sse(&anthropic_says(WRAP)),
    ]);
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    for file in ["a.txt", "b.txt"] {
        std::fs::write(dir.path().join("ws").join(file), "x\n").unwrap();
    }
    let spec = anthropic_task(
        dir.path(),
        "api",
        &server.base_url,
        "limits:\n  max_turns: 2\n  wrap_up: true\n",
    );
    let artifacts = dir.path().join("out");
    assert_exit(&run_keyed(&spec, &artifacts), 1);
    let requests: Vec<Value> = server.requests().iter().map(|r| r.json()).collect();
    assert_eq!(requests.len(), 3);
    assert!(
        requests[1]
            .get("tool_choice")
            .is_none_or(|c| c != &json!({"type": "none"}))
    );
    let last = &requests[2];
    assert_eq!(last["tool_choice"], json!({"type": "none"}));
    let asked =
        serde_json::to_string(last["messages"].as_array().unwrap().last().unwrap()).unwrap();
    assert!(asked.contains("drover: this is your last turn"), "{asked}");
    assert_eq!(summary(&artifacts)["tasks"][0]["wrap_up"], WRAP);
}

#[test]
fn a_wrap_up_request_the_api_refuses_still_ends_the_run_with_the_limits_reason() {
    let dir = tempfile::tempdir().unwrap();
    let refusal = r#"{"type":"error","error":{"type":"invalid_request_error","message":"tool_choice: none is not supported here"}}"#;
    let server = MockServer::start(vec![
        Reply::sse(&anthropic_call(
            "toolu_1",
            "Read",
            &json!({"file_path": "a.txt"}),
        )),
        Reply::status(400, refusal),
    ]);
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    std::fs::write(dir.path().join("ws/a.txt"), "x\n").unwrap();
    let spec = anthropic_task(
        dir.path(),
        "refused",
        &server.base_url,
        "limits:\n  max_turns: 1\n  wrap_up: true\n",
    );
    let artifacts = dir.path().join("out");
    assert_exit(&run_keyed(&spec, &artifacts), 1);
    assert_eq!(server.requests().len(), 2);
    let task = &summary(&artifacts)["tasks"][0];
    assert_eq!(task["reason"], "max_turns", "{task:#}");
    let message = task["message"].as_str().unwrap();
    assert!(
        message.starts_with("used 1 turn of max_turns 1")
            && message.contains("the wrap-up request failed")
            && message.contains("tool_choice: none is not supported here"),
        "{message}"
    );
    assert!(task.get("wrap_up").is_none_or(Value::is_null), "{task:#}");
}

#[test]
fn without_wrap_up_a_limit_ends_the_run_as_before() {
    let dir = tempfile::tempdir().unwrap();
    let spec = task(
        dir.path(),
        "plain",
        &reading_script(),
        "",
        "  max_turns: 3\n",
    );
    let artifacts = dir.path().join("out");
    assert_exit(&run_spec(&spec, &artifacts), 1);
    let lines = transcript(&artifacts.join("plain/transcript.jsonl"));
    assert!(events(&lines, "wrap_up").is_empty());
    assert_eq!(events(&lines, "model_response").len(), 3);
    let end = lines.last().unwrap();
    assert_eq!(end["reason"], "max_turns");
    assert_eq!(
        end["message"],
        "used 3 turns of max_turns 3 while the model still had tool calls to follow up"
    );
    let report = summary(&artifacts);
    assert!(report["tasks"][0].get("wrap_up").is_none());
    let md = std::fs::read_to_string(artifacts.join("summary.md")).unwrap();
    assert!(!md.contains("wrap-up"), "{md}");
    assert_eq!(outputs(&artifacts), "output=\nwrap-up=\n");
}

#[test]
fn a_run_that_ends_on_its_own_never_wraps_up() {
    let dir = tempfile::tempdir().unwrap();
    let spec = task(
        dir.path(),
        "done",
        &(read("a.txt") + "    - text: all done\n"),
        "",
        "  max_turns: 5\n  wrap_up: true\n",
    );
    let artifacts = dir.path().join("out");
    assert_exit(&run_spec(&spec, &artifacts), 0);
    let lines = transcript(&artifacts.join("done/transcript.jsonl"));
    assert!(events(&lines, "wrap_up").is_empty());
    assert!(summary(&artifacts)["tasks"][0].get("wrap_up").is_none());
}

/// Scripted turns (`turns` of them) that call Glob (each another pattern: the same call
/// again and again would be a loop) and report 1,000 input, 200 output,
/// 2,000 cache write and 10,000 cache read tokens: 13,200 tokens, $0.0165 at the
/// prices below; each turn's text is `turn N`.
fn priced_turns(turns: usize) -> String {
    (1..=turns)
        .map(|n| {
            format!(
                "    - text: turn {n}\n      tool_calls: [{{ name: Glob, input: {{ pattern: '*{n}*' }} }}]\n      usage: {{ input_tokens: 1000, output_tokens: 200, cache_creation_input_tokens: 2000, cache_read_input_tokens: 10000 }}\n"
            )
        })
        .collect()
}

const PRICING: &str =
    "  pricing: { input: 3.0, output: 15.0, cache_write: 3.75, cache_read: 0.30 }\n";

fn budget_run(dir: &Path, name: &str, limits: &str) -> (Output, Vec<Value>, Value) {
    let spec = task(dir, name, &priced_turns(12), PRICING, limits);
    let artifacts = dir.join(format!("out-{name}"));
    let output = run_spec(&spec, &artifacts);
    let lines = transcript(&artifacts.join(format!("{name}/transcript.jsonl")));
    let report = summary(&artifacts);
    (output, lines, report)
}

#[test]
fn with_max_cost_usd_the_wrap_up_is_the_last_turn_within_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    let (output, lines, report) =
        budget_run(dir.path(), "cost", "  max_cost_usd: 0.1\n  wrap_up: true\n");
    assert_exit(&output, 1);
    let wrap = events(&lines, "wrap_up");
    assert_eq!(wrap.len(), 1, "{lines:#?}");
    assert_eq!(wrap[0]["reason"], "budget");
    let message = wrap[0]["message"].as_str().unwrap();
    assert!(
        message.starts_with("spent $") && message.contains("of limits.max_cost_usd $0.1 after"),
        "{message}"
    );
    assert!(
        message.contains("a turn, the next is the last the budget allows"),
        "{message}"
    );
    let end = lines.last().unwrap();
    assert_eq!(end["reason"], "budget");
    let spent = end["cost_usd"].as_f64().unwrap();
    assert!(
        spent <= 0.1,
        "the wrap-up stayed within the budget: ${spent}"
    );
    let turns = end["turns"].as_u64().unwrap();
    let wrapped = report["tasks"][0]["wrap_up"].as_str().unwrap();
    assert_eq!(wrapped, format!("turn {turns}"));
    assert_eq!(wrap[0]["turn"], turns - 1);

    // Without it, the same run spends past the budget by the turn that reaches it.
    let (output, lines, report) = budget_run(dir.path(), "plain", "  max_cost_usd: 0.1\n");
    assert_exit(&output, 1);
    assert!(events(&lines, "wrap_up").is_empty());
    assert!(lines.last().unwrap()["cost_usd"].as_f64().unwrap() > 0.1);
    assert!(report["tasks"][0].get("wrap_up").is_none());
}

#[test]
fn with_max_tokens_the_wrap_up_is_the_last_turn_within_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let (output, lines, report) = budget_run(
        dir.path(),
        "tokens",
        "  max_tokens: 60000\n  wrap_up: true\n",
    );
    assert_exit(&output, 1);
    let wrap = events(&lines, "wrap_up");
    assert_eq!(wrap.len(), 1);
    assert_eq!(wrap[0]["reason"], "budget");
    let message = wrap[0]["message"].as_str().unwrap();
    assert!(
        message.contains("of limits.max_tokens 60000 after"),
        "{message}"
    );
    assert!(
        message.contains("a turn, the next is the last the limit allows"),
        "{message}"
    );
    let end = lines.last().unwrap();
    assert_eq!(end["reason"], "budget");
    let usage = &end["usage"];
    let total: u64 = [
        "input_tokens",
        "output_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
    ]
    .iter()
    .map(|key| usage[key].as_u64().unwrap())
    .sum();
    assert!(
        total <= 60_000,
        "the wrap-up stayed within max_tokens: {total}"
    );
    let turns = end["turns"].as_u64().unwrap();
    assert_eq!(
        report["tasks"][0]["wrap_up"].as_str().unwrap(),
        format!("turn {turns}")
    );
}

#[test]
fn with_a_timeout_slow_turns_leave_time_for_the_wrap_up() {
    let dir = tempfile::tempdir().unwrap();
    // Each working turn sleeps 5 s; a wrap-up is near instant. After the first turn 4 s
    // of the 9 are left, too little for another working turn: the wrap-up comes then,
    // never the deadline in the middle of a turn.
    let slow: String = (1..=6)
        .map(|n| {
            format!(
                "    - text: turn {n}\n      tool_calls: [{{ name: Bash, input: {{ command: 'sleep 5; echo {n}' }} }}]\n"
            )
        })
        .collect();
    let spec = task(
        dir.path(),
        "slow",
        &slow,
        "",
        "  timeout: 9s\n  wrap_up: true\n",
    );
    let artifacts = dir.path().join("out");
    let started = std::time::Instant::now();
    let output = run_spec(&spec, &artifacts);
    assert_exit(&output, 1);
    let lines = transcript(&artifacts.join("slow/transcript.jsonl"));
    let end = lines.last().unwrap();
    assert_eq!(end["reason"], "timeout", "{end}");
    let wrap = events(&lines, "wrap_up");
    assert_eq!(wrap.len(), 1, "{:#?}", events(&lines, "model_response"));
    assert_eq!(wrap[0]["reason"], "timeout");
    let message = wrap[0]["message"].as_str().unwrap();
    assert!(
        message.contains("of limits.timeout 9s after 1 turn;")
            && message.contains("too little time was left for another working turn"),
        "{message}"
    );
    assert_eq!(end["turns"], 2);
    assert_eq!(
        summary(&artifacts)["tasks"][0]["wrap_up"].as_str().unwrap(),
        "turn 2"
    );
    assert!(
        end["message"]
            .as_str()
            .unwrap()
            .contains("wrote its wrap-up"),
        "{end}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
}

#[test]
fn a_replay_of_a_wrapped_up_run_wraps_up_where_the_recording_did() {
    let dir = tempfile::tempdir().unwrap();
    let spec = task(
        dir.path(),
        "wrap",
        &reading_script(),
        "",
        "  max_turns: 3\n  wrap_up: true\n",
    );
    let artifacts = dir.path().join("out");
    assert_exit(&run_spec(&spec, &artifacts), 1);
    let replayed = dir.path().join("replayed");
    let output = drover()
        .current_dir(dir.path())
        .arg("replay")
        .arg(artifacts.join("wrap/transcript.jsonl"))
        .arg("--strict")
        .arg("--artifacts")
        .arg(&replayed)
        .output()
        .unwrap();
    let lines = transcript(&replayed.join("wrap/transcript.jsonl"));
    let recorded = transcript(&artifacts.join("wrap/transcript.jsonl"));
    let end = lines.last().unwrap();
    assert_eq!(
        end["reason"],
        "max_turns",
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let (was, is) = (events(&recorded, "wrap_up"), events(&lines, "wrap_up"));
    assert_eq!(is.len(), 1);
    for key in ["turn", "reason", "message", "prompt"] {
        assert_eq!(was[0][key], is[0][key], "{key}");
    }
    let message = end["message"].as_str().unwrap();
    assert!(
        message.ends_with(recorded.last().unwrap()["message"].as_str().unwrap()),
        "{message}"
    );
    let report = summary(&replayed);
    assert_eq!(report["tasks"][0]["wrap_up"], WRAP);
    assert!(report["tasks"][0].get("drift").is_none(), "{report:#}");
}

#[test]
fn a_secret_in_the_wrap_up_is_redacted_everywhere_it_goes() {
    let dir = tempfile::tempdir().unwrap();
    const SECRET: &str = "wrap-secret-value-8e7d6c5b4a39";
    let script = read("a.txt") + &format!("    - text: \"left: deploy with {SECRET}\"\n");
    let spec = task(
        dir.path(),
        "leaky",
        &script,
        "",
        "  max_turns: 1\n  wrap_up: true\n",
    );
    let artifacts = dir.path().join("out");
    let output = drover()
        .env("DEPLOY_API_KEY", SECRET)
        .arg("run")
        .arg(&spec)
        .arg("--artifacts")
        .arg(&artifacts)
        .output()
        .unwrap();
    assert_exit(&output, 1);
    let report = summary(&artifacts);
    assert_eq!(
        report["tasks"][0]["wrap_up"],
        "left: deploy with [redacted]"
    );
    for file in [
        "summary.json",
        "summary.md",
        "junit.xml",
        "leaky/transcript.jsonl",
    ] {
        let text = std::fs::read_to_string(artifacts.join(file)).unwrap();
        assert!(!text.contains(SECRET), "{file}: {text}");
    }
    assert!(!outputs(&artifacts).contains(SECRET));
}

#[test]
fn an_empty_wrap_up_is_said_to_be_empty_and_gives_no_text() {
    let dir = tempfile::tempdir().unwrap();
    // The wrap-up turn only calls a tool: there is nothing to show.
    let script = read("a.txt") + &read("b.txt") + "    - text: done\n";
    let spec = task(
        dir.path(),
        "mute",
        &script,
        "",
        "  max_turns: 1\n  wrap_up: true\n",
    );
    let artifacts = dir.path().join("out");
    assert_exit(&run_spec(&spec, &artifacts), 1);
    let lines = transcript(&artifacts.join("mute/transcript.jsonl"));
    assert_eq!(events(&lines, "wrap_up").len(), 1);
    let end = lines.last().unwrap();
    assert_eq!(end["reason"], "max_turns");
    assert!(
        end["message"]
            .as_str()
            .unwrap()
            .ends_with("; the model was given turn 2 for a wrap-up but wrote none"),
        "{end}"
    );
    let report = summary(&artifacts);
    assert!(report["tasks"][0].get("wrap_up").is_none(), "{report:#}");
    let md = std::fs::read_to_string(artifacts.join("summary.md")).unwrap();
    assert!(!md.contains("where the work stands"), "{md}");
    assert_eq!(outputs(&artifacts), "output=\nwrap-up=\n");
}

#[test]
fn a_wrapped_up_run_resumes_from_before_its_wrap_up_and_works_on() {
    let dir = tempfile::tempdir().unwrap();
    // The third entry is the wrap-up turn of a run limited to two turns; resumed with
    // more, it is the third working turn, whose write runs.
    let script = read("a.txt")
        + &read("b.txt")
        + &format!(
            "    - text: {WRAP:?}\n      tool_calls: [{{ name: Write, input: {{ file_path: notes.md, content: two files }} }}]\n"
        )
        + "    - text: done\n";
    let spec = task(
        dir.path(),
        "wrap",
        &script,
        "",
        "  max_turns: 2\n  wrap_up: true\n",
    );
    let artifacts = dir.path().join("out");
    assert_exit(&run_spec(&spec, &artifacts), 1);
    assert_eq!(summary(&artifacts)["tasks"][0]["wrap_up"], WRAP);
    let task_dir = artifacts.join("wrap");
    let output = common::resume_with(&task_dir, &["--max-turns", "10", "--strict"]);
    assert_exit(&output, 0);
    let lines = transcript(&task_dir.join("transcript.jsonl"));
    let end = lines.last().unwrap();
    assert_eq!(end["reason"], "end_turn", "{end}");
    assert_eq!(end["turns"], 4);
    assert!(
        events(&lines, "wrap_up").is_empty(),
        "the wrap-up turn was left behind with the stop"
    );
    let diff = std::fs::read_to_string(task_dir.join("diff.patch")).unwrap();
    assert!(diff.contains("+two files"), "{diff}");
    assert!(summary(&artifacts)["tasks"][0].get("wrap_up").is_none());
}
