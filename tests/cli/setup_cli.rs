//! `setup:` end to end: commands that run after isolation and before the loop, whose
//! effects are the starting state (not in the diff), and whose failure ends the task
//! with `setup_failed` (exit 3) before any model request.

use crate::common;
use crate::mock_server;

use common::{
    assert_exit, drover_without_proxy, events, run_spec, summary, transcript, write_spec,
};
use mock_server::{MockServer, Reply};

#[test]
fn what_setup_writes_is_the_starting_state_not_the_agents_diff() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    std::fs::write(dir.path().join("ws/src.txt"), "source\n").unwrap();
    let spec = write_spec(
        dir.path(),
        "t.yaml",
        "version: 1\nname: s\nprompt: p\nworkspace: ws\nisolation: copy\nsetup:\n  - name: generate\n    run: echo generated > gen.txt && echo setup-ran\nmodel:\n  provider: script\n  script:\n    - tool_calls: [{ name: Bash, input: { command: cat gen.txt && echo agent >> src.txt } }]\n    - text: done\npermissions:\n  allow: [Bash]\n",
    );
    let artifacts = dir.path().join("out");
    assert_exit(&run_spec(&spec, &artifacts), 0);
    let lines = transcript(&artifacts.join("s/transcript.jsonl"));
    assert_eq!(lines[0]["type"], "run_start");
    let setup = events(&lines, "setup");
    assert_eq!(setup.len(), 1);
    assert_eq!(setup[0]["name"], "generate");
    assert_eq!(setup[0]["passed"], true);
    assert_eq!(setup[0]["exit_code"], 0);
    assert!(
        setup[0]["output_tail"]
            .as_str()
            .unwrap()
            .contains("setup-ran")
    );
    // The agent sees what setup made…
    let result = events(&lines, "tool_result")[0];
    assert!(result["content"].as_str().unwrap().contains("generated"));
    // …but the diff holds only the agent's own change.
    let patch = std::fs::read_to_string(artifacts.join("s/diff.patch")).unwrap();
    assert!(patch.contains("+agent"), "{patch}");
    assert!(!patch.contains("gen.txt"), "{patch}");
    let summary = summary(&artifacts);
    assert_eq!(
        summary["tasks"][0]["files_changed"],
        serde_json::json!(["src.txt"])
    );
    assert_eq!(summary["tasks"][0]["setup"][0]["passed"], true);
}

#[test]
fn a_failed_setup_ends_the_task_before_any_model_request() {
    let server = MockServer::start(vec![Reply::status(500, "never asked")]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    let spec = write_spec(
        dir.path(),
        "t.yaml",
        &format!(
            "version: 1\nname: f\nprompt: p\nworkspace: ws\nsetup:\n  - name: first\n    run: echo fetching\n  - name: fetch\n    run: echo could not resolve host >&2; exit 7\n  - name: never\n    run: touch never.txt\nmodel:\n  provider: openai\n  name: test-model\n  base_url: {}\n  api_key_env: DROVER_TEST_SETUP_KEY\n",
            server.base_url
        ),
    );
    let artifacts = dir.path().join("out");
    let output = drover_without_proxy()
        .arg("run")
        .arg(&spec)
        .arg("--artifacts")
        .arg(&artifacts)
        .env("DROVER_TEST_SETUP_KEY", "sk-test-key-for-setup-0123456789")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert!(server.requests().is_empty(), "a model request was made");
    let lines = transcript(&artifacts.join("f/transcript.jsonl"));
    let setup = events(&lines, "setup");
    assert_eq!(setup.len(), 2, "the step after the failure does not run");
    assert_eq!(setup[1]["exit_code"], 7);
    assert_eq!(setup[1]["passed"], false);
    let end = events(&lines, "run_end")[0];
    assert_eq!(end["status"], "error");
    assert_eq!(end["reason"], "setup_failed");
    let message = end["message"].as_str().unwrap();
    assert!(
        message.contains("setup step \"fetch\" failed with exit code 7")
            && message.contains("could not resolve host"),
        "{message}"
    );
    assert!(!dir.path().join("ws/never.txt").exists());
    assert_eq!(
        std::fs::read_to_string(artifacts.join("f/diff.patch")).unwrap(),
        ""
    );
    let summary = summary(&artifacts);
    assert_eq!(summary["tasks"][0]["reason"], "setup_failed");
    let junit = std::fs::read_to_string(artifacts.join("junit.xml")).unwrap();
    assert!(junit.contains("setup_failed"), "{junit}");
}

#[test]
fn the_example_specs_using_setup_are_valid() {
    let output = common::drover()
        .arg("validate")
        .arg(common::repo().join("examples/tasks"))
        .env("ANTHROPIC_API_KEY", "sk-ant-test-only-for-validate")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("fix-tests") && stdout.contains("fix-lint"),
        "{stdout}"
    );
}
