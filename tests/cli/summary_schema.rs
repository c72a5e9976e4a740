//! summary.json is documented by docs/summary.schema.json: every summary drover writes —
//! of a run with checks, expectations, setup, denials, todos and sub-agents, of a shard,
//! of a replay that drifted — is valid against it, and the schema admits no field it
//! does not document.

use crate::common;

use std::path::Path;

use common::{drover, write_spec};
use serde_json::Value;

pub(crate) fn schema() -> jsonschema::Validator {
    let text = std::fs::read_to_string(common::repo().join("docs/summary.schema.json")).unwrap();
    let schema: Value = serde_json::from_str(&text).unwrap();
    jsonschema::validator_for(&schema).expect("the schema compiles")
}

pub(crate) fn assert_valid(validator: &jsonschema::Validator, artifacts: &Path) {
    let summary = common::summary(artifacts);
    let errors: Vec<String> = validator
        .iter_errors(&summary)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}\n{summary:#}");
}

#[test]
fn every_summary_drover_writes_is_valid_against_the_documented_schema() {
    let validator = schema();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    let specs = dir.path().join("specs");
    std::fs::create_dir_all(&specs).unwrap();
    write_spec(
        &specs,
        "a.yaml",
        "version: 1\nname: a\nprompt: p\nworkspace: ../ws\nisolation: copy\nsandbox: off\nmodel:\n  provider: script\n  pricing: { input: 1.0, output: 1.0 }\n  script:\n    - tool_calls:\n        - { name: Write, input: { file_path: a.txt, content: a } }\n        - { name: TodoWrite, input: { todos: [{ content: Write a, status: completed, activeForm: Writing a }] } }\n        - { name: Bash, input: { command: 'rm -rf /' } }\n      usage: { input_tokens: 10, output_tokens: 5 }\n    - text: done\npermissions:\n  allow: [Write]\nsetup:\n  - name: prepare\n    run: 'true'\nchecks:\n  - name: ok\n    run: 'true'\n",
    );
    write_spec(
        &specs,
        "b.yaml",
        "version: 1\nname: b\nprompt: p\nworkspace: ../ws\nisolation: copy\nmodel:\n  provider: script\n  script:\n    - tool_calls: [{ name: Write, input: { file_path: b.txt, content: b } }]\n    - text: done\npermissions:\n  allow: [Write]\nexpect:\n  files_changed:\n    max: 0\n    must_include: [c.txt]\n",
    );
    write_spec(
        &specs,
        "c.yaml",
        "version: 1\nname: c\nprompt: p\nworkspace: ../ws\nisolation: copy\nsandbox: off\nmodel:\n  provider: script\n  script:\n    - tool_calls:\n        - { name: Agent, input: { description: look, prompt: Look around., subagent_type: looker } }\n    - tool_calls: [{ name: Bash, input: { command: 'head -c 8 /dev/urandom | od -An -tx1' } }]\n    - text: done\npermissions:\n  allow: [Bash]\nagents:\n  looker:\n    description: Looks.\n    prompt: You look.\n    tools: [LS]\n    model:\n      script:\n        - tool_calls: [{ name: LS, input: { path: . } }]\n        - text: seen\n",
    );
    let artifacts = dir.path().join("out");
    let output = drover()
        .arg("run")
        .arg(&specs)
        .arg("--artifacts")
        .arg(&artifacts)
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_valid(&validator, &artifacts);
    let summary = common::summary(&artifacts);
    let tasks = summary["tasks"].as_array().unwrap();
    assert!(
        tasks[0]["duration_ms"].is_u64(),
        "units are in the key names"
    );
    assert!(tasks[0].get("duration").is_none());
    assert_eq!(tasks[1]["checks"][0]["expectation"], true);
    assert_eq!(tasks[2]["agent_turns"], 2);

    // A shard.
    let shard = dir.path().join("shard");
    drover()
        .arg("run")
        .arg(specs.join("a.yaml"))
        .args(["--shard", "1/1", "--artifacts"])
        .arg(&shard)
        .assert()
        .success();
    assert_valid(&validator, &shard);
    assert_eq!(common::summary(&shard)["shard"]["count"], 1);

    // A replay that drifted.
    let replayed = dir.path().join("replayed");
    let output = drover()
        .current_dir(dir.path())
        .arg("replay")
        .arg(artifacts.join("c/transcript.jsonl"))
        .arg("--artifacts")
        .arg(&replayed)
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_valid(&validator, &replayed);
    assert_eq!(common::summary(&replayed)["tasks"][0]["drift"]["count"], 1);
    assert_eq!(
        common::summary(&replayed)["tasks"][0]["replay"]["outcome_from"],
        "recording"
    );
}

#[test]
fn a_task_in_git_and_its_replay_with_checks_are_valid_against_the_schema() {
    let validator = schema();
    let dir = tempfile::tempdir().unwrap();
    let git = |args: &[&str]| {
        let status = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(dir.path())
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    };
    git(&["init", "-q"]);
    let spec = write_spec(
        dir.path(),
        "task.yaml",
        "version: 1\nname: g\nprompt: p\nworkspace: .\nisolation: worktree\nmodel:\n  provider: script\n  script: [{ text: done }]\nchecks:\n  - name: fails\n    run: 'false'\n",
    );
    git(&["add", "."]);
    git(&["commit", "-q", "-m", "start"]);
    let artifacts = dir.path().join("out");
    let output = drover()
        .arg("run")
        .arg(&spec)
        .arg("--artifacts")
        .arg(&artifacts)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_valid(&validator, &artifacts);
    assert_eq!(
        common::summary(&artifacts)["tasks"][0]["start"]["dirty"],
        false
    );
    let replayed = dir.path().join("replayed");
    let output = drover()
        .current_dir(dir.path())
        .arg("replay")
        .arg(artifacts.join("g/transcript.jsonl"))
        .arg("--checks")
        .arg("--artifacts")
        .arg(&replayed)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_valid(&validator, &replayed);
    let task = &common::summary(&replayed)["tasks"][0];
    assert_eq!(task["replay"]["checks"], "rerun");
    assert!(task["start"]["commit"].is_string(), "{task}");
}

#[test]
fn the_schema_refuses_what_it_does_not_document() {
    let validator = schema();
    let mut summary: Value = serde_json::json!({
        "drover_version": "0.1.0", "status": "passed", "exit_code": 0,
        "counts": {"passed": 0, "failed": 0, "error": 0}, "shard": null, "tasks": []
    });
    assert!(validator.is_valid(&summary));
    summary["surprise"] = Value::Bool(true);
    assert!(!validator.is_valid(&summary));
}
