//! `drover exec`: one task from the command line, against a mock Anthropic server on
//! 127.0.0.1 named by ANTHROPIC_BASE_URL (the variable `claude -p` reads too). The task
//! runs as a spec does: its policy, artifacts, exit codes, and a replay of its transcript.

use crate::common;
use crate::mock_server;
use crate::providers::{anthropic_end, anthropic_start, anthropic_text, sse};

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{drover_without_proxy, events, transcript};
use mock_server::{MockServer, Reply};
use serde_json::{Value, json};

pub(crate) const KEY: &str = "sk-ant-exec-SECRET-7c9e6679f1d3";

/// A model turn asking for `calls` (id, tool, input), in one response.
pub(crate) fn calls_turn(calls: &[(&str, &str, Value)]) -> String {
    let mut stream = anthropic_start(20, 0, 0);
    for (index, (id, name, input)) in calls.iter().enumerate() {
        stream += &sse(
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
        );
        stream += &sse(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": input.to_string()}}),
        );
        stream += &sse(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        );
    }
    stream + &anthropic_end("tool_use", 10)
}

/// A model turn that ends the task with `text`.
pub(crate) fn answer_turn(text: &str) -> String {
    anthropic_start(30, 0, 0) + &anthropic_text(0, text) + &anthropic_end("end_turn", 5)
}

/// A scratch directory holding the workspace `ws/` with notes.txt.
pub(crate) fn scratch() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    std::fs::write(dir.path().join("ws/notes.txt"), "hello\n").unwrap();
    dir
}

/// `drover exec ARGS`, run in `dir`, its model the mock at `base_url` with the key in
/// ANTHROPIC_API_KEY.
pub(crate) fn exec_in(dir: &Path, base_url: &str, args: &[&str]) -> Output {
    drover_without_proxy()
        .current_dir(dir)
        .arg("exec")
        .args(args)
        .env("ANTHROPIC_API_KEY", KEY)
        .env("ANTHROPIC_BASE_URL", base_url)
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .output()
        .unwrap()
}

pub(crate) fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub(crate) fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Every file under `dir`.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(files_under(&path));
        } else {
            files.push(path);
        }
    }
    files
}

#[test]
fn exec_runs_a_task_from_its_flags_as_a_spec_would_and_its_transcript_replays() {
    let dir = scratch();
    let server = MockServer::start(vec![
        Reply::sse(&calls_turn(&[
            ("toolu_1", "Read", json!({"file_path": "notes.txt"})),
            ("toolu_2", "Bash", json!({"command": "git push"})),
        ])),
        Reply::sse(&calls_turn(&[(
            "toolu_3",
            "Edit",
            json!({"file_path": "notes.txt", "old_string": "hello", "new_string": "hello, world"}),
        )])),
        Reply::sse(&answer_turn(&format!(
            "Done: the notes say hello, world.\nThe key is {KEY}."
        ))),
    ]);
    let args = [
        "greet the world in notes.txt",
        "--allow",
        "Read,Edit",
        "--workspace",
        "ws",
        "--isolation",
        "copy",
        "--sandbox",
        "off",
        "--artifacts",
        "out",
    ];
    let output = exec_in(dir.path(), &server.base_url, &args);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        stdout(&output),
        "Done: the notes say hello, world.\nThe key is [redacted].\n",
        "stdout is the answer, redacted as the transcript is"
    );
    let err = stderr(&output);
    assert!(err.contains("drover: exec passed"), "{err}");
    assert!(err.contains("drover: artifacts in out"), "{err}");
    let out = dir.path().join("out");
    for file in ["junit.xml", "summary.json", "summary.md", "exec/diff.patch"] {
        assert!(out.join(file).is_file(), "{file}");
    }
    let diff = std::fs::read_to_string(out.join("exec/diff.patch")).unwrap();
    assert!(diff.contains("+hello, world"), "{diff}");

    let lines = transcript(&out.join("exec/transcript.jsonl"));
    let decisions: Vec<(&str, &str)> = events(&lines, "permission")
        .iter()
        .map(|e| {
            (
                e["tool_use_id"].as_str().unwrap(),
                e["decision"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        decisions,
        [
            ("toolu_1", "allow"),
            ("toolu_2", "deny"),
            ("toolu_3", "allow")
        ]
    );
    let start = &lines[0];
    assert_eq!(start["spec_path"], "drover-exec.yaml");
    assert_eq!(
        (start["provider"].as_str(), start["model"].as_str()),
        (Some("anthropic"), Some("claude-sonnet-4-5"))
    );
    let spec_yaml = start["spec_yaml"].as_str().unwrap();
    assert!(
        spec_yaml.contains("allow: [\"Read\", \"Edit\"]"),
        "{spec_yaml}"
    );
    let summary = common::summary(&out);
    assert_eq!(summary["tasks"][0]["spec_path"], "drover-exec.yaml");
    assert_eq!(summary["tasks"][0]["denials"].as_array().unwrap().len(), 1);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("ws/notes.txt")).unwrap(),
        "hello\n",
        "isolation: copy"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[0].header("x-api-key").as_deref(), Some(KEY));
    assert_eq!(requests[0].json()["model"], "claude-sonnet-4-5");
    for file in files_under(&out) {
        let text = String::from_utf8_lossy(&std::fs::read(&file).unwrap()).into_owned();
        assert!(!text.contains(KEY), "the key is in {}", file.display());
    }
    let verified = common::drover()
        .args(["transcript", "verify", "out/exec/transcript.jsonl"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(verified.status.code(), Some(0), "{}", stderr(&verified));

    // A replay of the exec run is a replay like any other: no model, the same diff.
    let replayed = drover_without_proxy()
        .current_dir(dir.path())
        .args([
            "replay",
            "out/exec/transcript.jsonl",
            "--strict",
            "--artifacts",
            "replayed",
        ])
        .output()
        .unwrap();
    assert_eq!(replayed.status.code(), Some(0), "{}", stderr(&replayed));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("replayed/exec/diff.patch")).unwrap(),
        diff
    );
    assert_eq!(server.requests().len(), 3, "a replay asks no model");
}

#[test]
fn exec_exits_as_a_spec_run_does() {
    let dir = scratch();
    let base = [
        "--workspace",
        "ws",
        "--sandbox",
        "off",
        "--artifacts",
        "out",
    ];
    let with =
        |extra: &[&'static str]| -> Vec<&str> { base.iter().chain(extra).copied().collect() };

    // 1: a check fails; the answer is on stdout all the same.
    let server = MockServer::start(vec![Reply::sse(&answer_turn("Nothing to do."))]);
    let failed = exec_in(
        dir.path(),
        &server.base_url,
        &with(&["look", "--check", "false"]),
    );
    assert_eq!(failed.status.code(), Some(1), "{}", stderr(&failed));
    assert_eq!(stdout(&failed), "Nothing to do.\n");
    assert!(
        stderr(&failed).contains("checks_failed"),
        "{}",
        stderr(&failed)
    );

    // 1: the turn limit.
    let server = MockServer::start(vec![Reply::sse(&calls_turn(&[(
        "toolu_1",
        "Read",
        json!({"file_path": "notes.txt"}),
    )]))]);
    let limited = exec_in(
        dir.path(),
        &server.base_url,
        &with(&["look", "--max-turns", "1"]),
    );
    assert_eq!(limited.status.code(), Some(1), "{}", stderr(&limited));
    assert!(
        stderr(&limited).contains("max_turns"),
        "{}",
        stderr(&limited)
    );

    // 3: the provider refuses the key.
    let server = MockServer::start(vec![Reply::status(
        401,
        r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
    )]);
    let refused = exec_in(dir.path(), &server.base_url, &with(&["look"]));
    assert_eq!(refused.status.code(), Some(3), "{}", stderr(&refused));
    assert_eq!(stdout(&refused), "");
    assert!(
        stderr(&refused).contains("provider_error"),
        "{}",
        stderr(&refused)
    );
}

#[test]
fn bad_input_is_exit_2_before_any_request_naming_the_flag() {
    let dir = scratch();
    let server = MockServer::start(Vec::new());
    let cases: &[(&[&str], &str)] = &[
        (
            &["p", "--allow", "Read,Bahs(ls)"],
            "--allow \"Bahs(ls)\" is not a rule",
        ),
        (
            &["p", "--deny", "Read(a/../b)"],
            "--deny \"Read(a/../b)\" is not a rule",
        ),
        (
            &["p", "--allowedTools", "Read Edit(//x/../y)"],
            "--allowedTools \"Edit(//x/../y)\"",
        ),
        (&["p", "--workspace", "missing"], "--workspace missing"),
        (
            &["p", "--output-schema", "ws/notes.txt"],
            "--output-schema ws/notes.txt: not JSON",
        ),
        (
            &["p", "--check", "make", "--check", "make"],
            "--check \"make\" is given twice",
        ),
        (&["p", "--name", "a/b"], "invalid task name"),
        (&[" "], "the prompt is empty"),
        (&[], "required arguments were not provided"),
    ];
    for (args, says) in cases {
        let output = exec_in(dir.path(), &server.base_url, args);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains(says),
            "{args:?}: {}",
            stderr(&output)
        );
        assert_eq!(stdout(&output), "", "{args:?}");
    }
    // No key in the environment: both variables and the flag are named.
    let output = drover_without_proxy()
        .current_dir(dir.path())
        .args(["exec", "p"])
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let err = stderr(&output);
    assert!(
        err.contains("ANTHROPIC_API_KEY")
            && err.contains("OPENAI_API_KEY")
            && err.contains("--provider"),
        "{err}"
    );
    // A provider named without its key: the variable is named, as for a spec.
    let output = drover_without_proxy()
        .current_dir(dir.path())
        .args(["exec", "p", "--provider", "openai"])
        .env_remove("OPENAI_API_KEY")
        .env("ANTHROPIC_API_KEY", KEY)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("OPENAI_API_KEY"),
        "{}",
        stderr(&output)
    );
    assert!(server.requests().is_empty());
    assert!(!dir.path().join("drover-artifacts").exists());
}

#[test]
fn the_printed_spec_is_the_one_a_run_records_and_resumes_a_stopped_exec_task() {
    let dir = scratch();
    let flags = [
        "read the notes",
        "--allow",
        "Read",
        "--workspace",
        "ws",
        "--isolation",
        "copy",
        "--sandbox",
        "off",
        "--max-turns",
        "1",
    ];
    let server = MockServer::start(vec![
        Reply::sse(&calls_turn(&[(
            "toolu_1",
            "Read",
            json!({"file_path": "notes.txt"}),
        )])),
        Reply::sse(&answer_turn("They say hello.")),
    ]);
    let stopped = exec_in(dir.path(), &server.base_url, &flags);
    assert_eq!(stopped.status.code(), Some(1), "{}", stderr(&stopped));
    let mut printing = flags.to_vec();
    printing.push("--print-spec");
    let printed = exec_in(dir.path(), &server.base_url, &printing);
    assert_eq!(printed.status.code(), Some(0), "{}", stderr(&printed));
    let lines = transcript(&dir.path().join("drover-artifacts/exec/transcript.jsonl"));
    assert_eq!(stdout(&printed), lines[0]["spec_yaml"].as_str().unwrap());
    assert_eq!(server.requests().len(), 1, "--print-spec runs nothing");

    // Saved where the run says its spec is, it is the spec `drover resume` asks for.
    std::fs::write(dir.path().join("drover-exec.yaml"), stdout(&printed)).unwrap();
    let resumed = drover_without_proxy()
        .current_dir(dir.path())
        .args(["resume", "drover-artifacts/exec", "--max-turns", "3"])
        .env("ANTHROPIC_API_KEY", KEY)
        .env("ANTHROPIC_BASE_URL", &server.base_url)
        .output()
        .unwrap();
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    assert_eq!(
        server.requests().len(),
        2,
        "the recorded turn is not asked again"
    );
    let lines = transcript(&dir.path().join("drover-artifacts/exec/transcript.jsonl"));
    assert_eq!(lines.last().unwrap()["reason"], "end_turn");
}
