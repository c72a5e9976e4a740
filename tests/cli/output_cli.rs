//! `output.schema` end to end with scripted models: a valid answer lands in
//! output.json and summary.json; an answer not given is asked for; invalid answers are
//! sent back twice, then the task fails with `invalid_output`.

use crate::common;

use std::path::{Path, PathBuf};

use common::{assert_exit, events, run_spec, summary, transcript, write_spec};
use serde_json::json;

const SCHEMA: &str = "output:\n  schema: { type: object, required: [verdict], properties: { verdict: { enum: [approve, request_changes] }, comments: { type: array } } }\n";

fn task(dir: &Path, name: &str, turns: &str) -> PathBuf {
    std::fs::create_dir_all(dir.join("ws")).unwrap();
    write_spec(
        dir,
        &format!("{name}.yaml"),
        &format!(
            "version: 1\nname: {name}\nprompt: Review the change.\nworkspace: ws\nmodel:\n  provider: script\n  script:\n{turns}{SCHEMA}"
        ),
    )
}

fn answer(input: &str) -> String {
    format!("    - tool_calls: [{{ name: StructuredOutput, input: {input} }}]\n")
}

#[test]
fn a_valid_answer_is_written_to_output_json_and_the_summary() {
    let dir = tempfile::tempdir().unwrap();
    let spec = task(
        dir.path(),
        "review",
        &answer("{ verdict: approve, comments: [\"nice\"] }"),
    );
    let artifacts = dir.path().join("out");
    assert_exit(&run_spec(&spec, &artifacts), 0);
    let written: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(artifacts.join("review/output.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(written, json!({"verdict": "approve", "comments": ["nice"]}));
    let report = summary(&artifacts);
    assert_eq!(report["tasks"][0]["output"], written);
    let events_ = transcript(&artifacts.join("review/transcript.jsonl"));
    assert_eq!(events(&events_, "output")[0]["valid"], true);
    assert_eq!(
        events(&events_, "run_start")[0]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| *t == "StructuredOutput")
            .count(),
        0,
        "StructuredOutput is drover's, not a registry tool"
    );
}

#[test]
fn an_answer_not_given_is_asked_for_then_an_invalid_one_sent_back_then_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let turns = format!(
        "    - text: All good.\n{}{}",
        answer("{ verdict: maybe }"),
        answer("{ verdict: request_changes }")
    );
    let spec = task(dir.path(), "second", &turns);
    let artifacts = dir.path().join("out");
    assert_exit(&run_spec(&spec, &artifacts), 0);
    let events_ = transcript(&artifacts.join("second/transcript.jsonl"));
    let asked = events(&events_, "user_message");
    assert_eq!(asked[0]["source"], "output");
    assert!(
        asked[0]["text"]
            .as_str()
            .unwrap()
            .contains("StructuredOutput")
    );
    let results = events(&events_, "tool_result");
    assert_eq!(results[0]["is_error"], true);
    let sent_back = results[0]["content"].as_str().unwrap();
    assert!(sent_back.contains("at /verdict"), "{sent_back}");
    assert!(sent_back.contains("2 more invalid answer"), "{sent_back}");
    let report = summary(&artifacts);
    assert_eq!(
        report["tasks"][0]["output"],
        json!({"verdict": "request_changes"})
    );
}

#[test]
fn three_invalid_answers_fail_the_task_with_invalid_output() {
    let dir = tempfile::tempdir().unwrap();
    let bad = answer("{ verdict: maybe }");
    let spec = task(dir.path(), "hopeless", &format!("{bad}{bad}{bad}{bad}"));
    let artifacts = dir.path().join("out");
    assert_exit(&run_spec(&spec, &artifacts), 1);
    let report = summary(&artifacts);
    let task = &report["tasks"][0];
    assert_eq!(task["reason"], "invalid_output");
    assert_eq!(task["turns"], 3);
    assert!(task.get("output").is_none());
    assert!(!artifacts.join("hopeless/output.json").exists());
}

#[test]
fn a_schema_that_does_not_compile_is_a_spec_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    std::fs::write(dir.path().join("s.json"), "{\"type\": 12}").unwrap();
    let spec = write_spec(
        dir.path(),
        "bad.yaml",
        "version: 1\nname: bad\nprompt: p\nworkspace: ws\nmodel:\n  provider: script\n  script:\n    - text: x\noutput:\n  schema_file: s.json\n",
    );
    let output = common::drover()
        .arg("validate")
        .arg(&spec)
        .output()
        .unwrap();
    assert_exit(&output, 2);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("bad.yaml:10:") && stderr.contains("does not compile"),
        "{stderr}"
    );
}
