//! `output.schema` against both providers' wire formats on a mock server: Anthropic's
//! forced `StructuredOutput` tool call, OpenAI's `response_format` with the final text
//! parsed, and a server that refuses `response_format`.

use crate::common;
use crate::mock_server;
use crate::providers::{
    KEY, anthropic_final_turn, anthropic_tool_turn, openai_chunk, openai_usage, run, task,
};

use std::path::Path;

use common::{assert_exit, summary};
use mock_server::{MockServer, Reply};
use serde_json::json;

const SCHEMA: &str = "output:\n  schema: { type: object, required: [verdict], properties: { verdict: { enum: [approve, request_changes] } } }\n";

fn with_output(spec: &Path) {
    let text = std::fs::read_to_string(spec).unwrap();
    std::fs::write(spec, format!("{text}{SCHEMA}")).unwrap();
}

/// Run the task against a mock `provider` server answering `replies`, with `output:`;
/// the scratch directory (artifacts in `out/`), the server (for its requests), drover's
/// output and summary.json.
fn run_with_output(
    provider: &str,
    replies: Vec<Reply>,
    exit: i32,
) -> (
    tempfile::TempDir,
    MockServer,
    std::process::Output,
    serde_json::Value,
) {
    let server = MockServer::start(replies);
    let (dir, spec) = task(provider, &server.base_url, "");
    with_output(&spec);
    let artifacts = dir.path().join("out");
    let output = run(&spec, &artifacts, Some(KEY));
    assert_exit(&output, exit);
    let report = summary(&artifacts);
    (dir, server, output, report)
}

/// What `drover tools --spec SPEC --json` lists.
fn tools_of(spec: &Path) -> Vec<serde_json::Value> {
    let output = common::drover()
        .args(["tools", "--json", "--spec"])
        .arg(spec)
        .output()
        .unwrap();
    assert_exit(&output, 0);
    serde_json::from_slice(&output.stdout).unwrap()
}

/// A task with `output:` offers `StructuredOutput` in every request, so `drover tools
/// --spec` lists it, in the table as the final answer; a task without `output:` has none.
#[test]
fn drover_tools_lists_structured_output_only_for_a_task_with_output() {
    let (_dir, spec) = task("anthropic", "http://127.0.0.1:9", "");
    assert!(
        !tools_of(&spec)
            .iter()
            .any(|t| t["name"] == "StructuredOutput")
    );
    with_output(&spec);
    let listed = tools_of(&spec);
    assert_eq!(listed.last().unwrap()["name"], "StructuredOutput");
    let table = common::drover()
        .args(["tools", "--spec"])
        .arg(&spec)
        .output()
        .unwrap();
    assert_exit(&table, 0);
    let table = String::from_utf8(table.stdout).unwrap();
    let line = table
        .lines()
        .find(|line| line.starts_with("StructuredOutput "))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(line.contains("final answer"), "{line}");
    // A scripted model takes the answer as a tool call too: a string schema is wrapped
    // as `{value: …}`, as in the requests.
    std::fs::write(
        &spec,
        "version: 1\nname: t\nprompt: p\nworkspace: ws\nmodel: { provider: script, script: [{ text: hi }] }\noutput: { schema: { type: string } }\n",
    )
    .unwrap();
    let listed = tools_of(&spec);
    let tool = listed.last().unwrap();
    assert_eq!(tool["name"], "StructuredOutput");
    assert_eq!(tool["input_schema"]["required"], json!(["value"]));
    assert_eq!(
        tool["input_schema"]["properties"]["value"],
        json!({"type": "string"})
    );
}

fn openai_text_turn(text: &str) -> String {
    openai_chunk(json!({"role": "assistant", "content": text}), None)
        + &openai_chunk(json!({}), Some("stop"))
        + &openai_usage(100, 5, 0)
}

#[test]
fn anthropic_gets_the_structured_output_tool_forced_after_the_model_ends_its_turn() {
    let (dir, server, _output, report) = run_with_output(
        "anthropic",
        vec![
            Reply::sse(&anthropic_final_turn()),
            Reply::sse(&anthropic_tool_turn(
                "StructuredOutput",
                &["{\"verdict\": \"maybe\"}"],
                "tool_use",
            )),
            Reply::sse(&anthropic_tool_turn(
                "StructuredOutput",
                &["{\"verdict\": \"approve\"}"],
                "tool_use",
            )),
        ],
        0,
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let first = requests[0].json();
    let tool = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "StructuredOutput")
        .expect("the StructuredOutput tool is offered");
    assert_eq!(tool["input_schema"]["required"], json!(["verdict"]));
    // `drover tools --spec` lists it as the requests carry it (issue 34).
    let listed = tools_of(&dir.path().join("task.yaml"));
    let listed = listed
        .iter()
        .find(|t| t["name"] == "StructuredOutput")
        .expect("drover tools --spec lists StructuredOutput");
    for field in ["name", "description", "input_schema"] {
        assert_eq!(listed[field], tool[field], "{field}");
    }
    assert!(first.get("tool_choice").is_none());
    assert!(
        first["system"][0]["text"]
            .as_str()
            .unwrap()
            .contains("StructuredOutput")
    );
    let second = requests[1].json();
    assert_eq!(
        second["tool_choice"],
        json!({"type": "tool", "name": "StructuredOutput"})
    );
    // The invalid answer goes back as the tool's error result, and the call is forced
    // again.
    let third = requests[2].json();
    assert_eq!(third["tool_choice"]["name"], "StructuredOutput");
    let last = third["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    let result = &last["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["is_error"], true);
    assert!(
        result["content"].to_string().contains("at /verdict"),
        "{result}"
    );
    assert_eq!(report["tasks"][0]["output"], json!({"verdict": "approve"}));
}

#[test]
fn openai_gets_response_format_and_the_final_text_is_parsed_and_sent_back_when_invalid() {
    let (dir, server, _output, report) = run_with_output(
        "openai",
        vec![
            Reply::sse(&openai_text_turn("I think it is fine.")),
            Reply::sse(&openai_text_turn("```json\n{\"verdict\": \"maybe\"}\n```")),
            Reply::sse(&openai_text_turn("{\"verdict\": \"request_changes\"}")),
        ],
        0,
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let first = requests[0].json();
    assert_eq!(first["response_format"]["type"], "json_schema");
    assert_eq!(
        first["response_format"]["json_schema"]["schema"]["required"],
        json!(["verdict"])
    );
    assert!(
        !first["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["function"]["name"] == "StructuredOutput")
    );
    // Nor does `drover tools --spec` list it for an OpenAI-compatible model.
    let listed = tools_of(&dir.path().join("task.yaml"));
    assert!(listed.iter().any(|t| t["name"] == "Read"), "{listed:?}");
    assert!(!listed.iter().any(|t| t["name"] == "StructuredOutput"));
    let second = requests[1].json();
    let sent_back = second["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(sent_back["role"], "user");
    assert!(
        sent_back["content"]
            .as_str()
            .unwrap()
            .contains("not a JSON value"),
        "{sent_back}"
    );
    assert_eq!(
        report["tasks"][0]["output"],
        json!({"verdict": "request_changes"})
    );
}

#[test]
fn openai_three_invalid_answers_fail_with_invalid_output() {
    let (_dir, server, _output, report) = run_with_output(
        "openai",
        vec![
            Reply::sse(&openai_text_turn("{\"verdict\": 1}")),
            Reply::sse(&openai_text_turn("{\"verdict\": 2}")),
            Reply::sse(&openai_text_turn("{\"verdict\": 3}")),
        ],
        1,
    );
    assert_eq!(report["tasks"][0]["reason"], "invalid_output");
    assert_eq!(server.requests().len(), 3);
}

#[test]
fn a_server_refusing_response_format_is_asked_again_without_it() {
    let (_dir, server, output, report) = run_with_output(
        "openai",
        vec![
            Reply::status(
                400,
                r#"{"error": {"type": "invalid_request_error", "message": "response_format json_schema is not supported"}}"#,
            ),
            Reply::sse(&openai_text_turn("{\"verdict\": \"approve\"}")),
        ],
        0,
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("refused response_format"), "{stderr}");
    let requests = server.requests();
    assert!(requests[0].json().get("response_format").is_some());
    assert!(requests[1].json().get("response_format").is_none());
    assert_eq!(report["tasks"][0]["output"], json!({"verdict": "approve"}));
}

#[test]
fn anthropic_three_invalid_answers_fail_with_invalid_output() {
    let bad = || {
        Reply::sse(&anthropic_tool_turn(
            "StructuredOutput",
            &["{\"verdict\": 7}"],
            "tool_use",
        ))
    };
    let (_dir, server, _output, report) =
        run_with_output("anthropic", vec![bad(), bad(), bad()], 1);
    assert_eq!(report["tasks"][0]["reason"], "invalid_output");
    assert_eq!(server.requests().len(), 3);
    assert!(!_dir.path().join("out/t/output.json").exists());
}

#[test]
fn failed_checks_reach_the_model_as_its_next_message() {
    let server = MockServer::start(vec![
        Reply::sse(&anthropic_final_turn()),
        Reply::sse(&anthropic_final_turn()),
    ]);
    let (dir, spec) = task("anthropic", &server.base_url, "");
    let text = std::fs::read_to_string(&spec).unwrap();
    std::fs::write(
        &spec,
        format!(
            "{text}checks:\n  - name: notes-updated\n    run: \"grep -q updated notes.txt || {{ echo 'notes.txt does not say updated'; exit 1; }}\"\nretry:\n  max_attempts: 2\n"
        ),
    )
    .unwrap();
    let artifacts = dir.path().join("out");
    let output = run(&spec, &artifacts, Some(KEY));
    assert_exit(&output, 1);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let second = requests[1].json();
    let last = second["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["role"], "user");
    let sent = last["content"].to_string();
    assert!(sent.contains("notes-updated"), "{sent}");
    assert!(sent.contains("notes.txt does not say updated"), "{sent}");
    assert!(sent.contains("attempt 2 of 2"), "{sent}");
    let report = summary(&artifacts);
    assert_eq!(report["tasks"][0]["attempts"], 2);
    assert_eq!(report["tasks"][0]["reason"], "checks_failed");
}
