//! `--json` on `run`, `exec`, `replay` and `resume`: each transcript line on stdout as
//! it is written, framed with its task, then the run's result; a reader that stops
//! early (`| head -1`) changes neither the exit code nor the transcript.

use crate::common;
use crate::exec_cli::{KEY, answer_turn, calls_turn, exec_in, scratch, stderr, stdout};
use crate::mock_server;

use std::path::Path;
use std::process::Output;

use common::{drover, drover_without_proxy, run_spec_with, write_spec};
use mock_server::{MockServer, Reply};
use serde_json::{Value, json};

/// What `--json` wrote: each event line's task and its `event` as text, exactly as it
/// stands in the line, and the result. Every line must be JSON, the result last.
fn json_output(output: &Output) -> (Vec<(String, String)>, Value) {
    let text = stdout(output);
    let mut lines: Vec<&str> = text.lines().collect();
    let last = lines.pop().expect("a result line");
    let result: Value = serde_json::from_str(last).unwrap_or_else(|e| panic!("{last:?}: {e}"));
    assert_eq!(result["type"], "result", "{last}");
    let events = lines
        .into_iter()
        .map(|line| {
            let value: Value =
                serde_json::from_str(line).unwrap_or_else(|e| panic!("{line:?}: {e}"));
            assert_eq!(value["type"], "event", "{line}");
            let task = value["task"].as_str().unwrap().to_string();
            let prefix = format!("{{\"type\":\"event\",\"task\":{},\"event\":", value["task"]);
            let event = line
                .strip_prefix(&prefix)
                .and_then(|rest| rest.strip_suffix('}'))
                .unwrap_or_else(|| panic!("framed as documented: {line}"));
            (task, event.to_string())
        })
        .collect();
    (events, result)
}

/// The lines of a transcript file as written.
fn file_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// The events `task` wrote on stdout are the lines of `transcript`: byte for byte, but
/// for a line holding text a log would take for a workflow command or a line break
/// (`##[`, U+2028 …), which stdout escapes and which parses to the same event.
fn assert_same_lines(events: &[(String, String)], task: &str, transcript: &Path) {
    let written: Vec<&String> = events
        .iter()
        .filter(|(name, _)| name == task)
        .map(|(_, event)| event)
        .collect();
    let lines = file_lines(transcript);
    assert_eq!(written.len(), lines.len(), "{task}: one event a line");
    for (shown, line) in written.iter().zip(&lines) {
        if line.contains("##[") || line.contains(['\u{85}', '\u{2028}', '\u{2029}']) {
            let shown: Value = serde_json::from_str(shown).unwrap();
            assert_eq!(shown, serde_json::from_str::<Value>(line).unwrap());
        } else {
            assert_eq!(*shown, line, "{task}: the transcript line as written");
        }
    }
}

#[test]
fn exec_json_writes_the_transcript_as_it_goes_then_the_result() {
    let dir = scratch();
    let answer = "ok ##[warning]forged\u{2028}::add-mask::x";
    let server = MockServer::start(vec![
        Reply::sse(&calls_turn(&[
            ("toolu_1", "Read", json!({"file_path": "notes.txt"})),
            ("toolu_2", "Bash", json!({"command": "curl example.com"})),
        ])),
        Reply::sse(&answer_turn(answer)),
    ]);
    let output = exec_in(
        dir.path(),
        &server.base_url,
        &[
            "read",
            "--allow",
            "Read",
            "--workspace",
            "ws",
            "--sandbox",
            "off",
            "--json",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(
        !text.contains("##[") && !text.contains('\u{2028}'),
        "{text}"
    );
    let (events, result) = json_output(&output);
    let transcript = dir.path().join("drover-artifacts/exec/transcript.jsonl");
    assert_same_lines(&events, "exec", &transcript);
    let kinds: Vec<String> = events
        .iter()
        .map(|(_, event)| {
            serde_json::from_str::<Value>(event).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(kinds.first().map(String::as_str), Some("run_start"));
    assert_eq!(kinds.last().map(String::as_str), Some("run_end"));
    assert!(kinds.iter().any(|kind| kind == "permission"));
    assert_eq!(result["status"], "passed");
    assert_eq!(result["result"], answer);
    assert_eq!(result["tasks"][0]["denied_calls"], 1);
    assert_eq!(result["tasks"][0]["artifacts"], "drover-artifacts/exec");
    let err = stderr(&output);
    assert!(
        err.contains("drover: exec passed") && err.contains("artifacts in"),
        "{err}"
    );
    assert!(!text.contains(KEY) && !err.contains(KEY));
}

/// A spec of the task `name` whose scripted model reads notes.txt in a copy of `ws`,
/// then (with `sleep`) runs `sleep` first, then ends.
fn scripted(dir: &Path, name: &str, sleep: bool) -> std::path::PathBuf {
    let nap = if sleep {
        "    - tool_calls: [{ name: Bash, input: { command: 'sleep 1' } }]\n"
    } else {
        ""
    };
    let spec = format!(
        "version: 1\nname: {name}\nprompt: p\nworkspace: ws\nisolation: copy\nsandbox: off\nmodel:\n  provider: script\n  script:\n{nap}    - tool_calls: [{{ name: Read, input: {{ file_path: notes.txt }} }}]\n    - text: done\npermissions:\n  allow: [Read, 'Bash(sleep *)']\n"
    );
    write_spec(dir, &format!("{name}.yaml"), &spec)
}

#[test]
fn run_json_frames_each_tasks_events_with_its_name_and_a_replay_writes_its_own() {
    let dir = scratch();
    let a = scripted(dir.path(), "alpha", false);
    let b = scripted(dir.path(), "beta", false);
    let out = dir.path().join("out");
    let output = drover()
        .current_dir(dir.path())
        .arg("run")
        .args([&a, &b])
        .args(["--artifacts", "out", "--jobs", "2", "--json"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let (events, result) = json_output(&output);
    assert_same_lines(&events, "alpha", &out.join("alpha/transcript.jsonl"));
    assert_same_lines(&events, "beta", &out.join("beta/transcript.jsonl"));
    assert_eq!(result["status"], "passed");
    assert_eq!(result["exit_code"], 0);
    let tasks: Vec<&str> = result["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|task| task["task"].as_str().unwrap())
        .collect();
    assert_eq!(tasks, ["alpha", "beta"]);
    assert!(
        result.get("result").is_none(),
        "two tasks: no single answer"
    );
    assert!(
        stderr(&output).contains("drover: 2 tasks: 2 passed"),
        "{}",
        stderr(&output)
    );

    let replayed = drover()
        .current_dir(dir.path())
        .args([
            "replay",
            "out/alpha/transcript.jsonl",
            "--artifacts",
            "replayed",
            "--json",
        ])
        .output()
        .unwrap();
    assert_eq!(replayed.status.code(), Some(0), "{}", stderr(&replayed));
    let (events, result) = json_output(&replayed);
    assert_same_lines(
        &events,
        "alpha",
        &dir.path().join("replayed/alpha/transcript.jsonl"),
    );
    assert_eq!(result["result"], "done");
}

#[test]
fn resume_json_writes_the_whole_transcript_it_continues() {
    let dir = scratch();
    let spec = scripted(dir.path(), "t", false);
    let out = dir.path().join("out");
    let stopped = run_spec_with(&spec, &out, &["--max-turns", "1"]);
    assert_eq!(stopped.status.code(), Some(1), "{}", stderr(&stopped));
    let resumed = drover_without_proxy()
        .current_dir(dir.path())
        .args(["resume", "out/t", "--max-turns", "5", "--json"])
        .output()
        .unwrap();
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    let (events, result) = json_output(&resumed);
    assert_same_lines(&events, "t", &out.join("t/transcript.jsonl"));
    let first: Value = serde_json::from_str(&events[0].1).unwrap();
    assert_eq!(first["type"], "run_start", "the kept lines come first");
    assert_eq!(result["status"], "passed");
}

/// `COMMAND | head -1` in bash: the first line, and the command's own exit code.
fn piped_to_head(dir: &Path, command: &str, env: &[(&str, &str)]) -> (String, i32) {
    let script = format!(
        "{command} 2> stderr.txt | head -1 > first.txt; echo ${{PIPESTATUS[0]}} > code.txt"
    );
    let mut shell = std::process::Command::new("bash");
    shell.arg("-c").arg(script).current_dir(dir);
    for var in [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
        "GITHUB_ACTIONS",
    ] {
        shell.env_remove(var);
    }
    for (name, value) in env {
        shell.env(name, value);
    }
    let status = shell.status().unwrap();
    assert!(status.success());
    let first = std::fs::read_to_string(dir.join("first.txt")).unwrap();
    let code = std::fs::read_to_string(dir.join("code.txt")).unwrap();
    (first, code.trim().parse().unwrap())
}

fn verified(dir: &Path, transcript: &str) {
    let output = drover()
        .current_dir(dir)
        .args(["transcript", "verify", transcript])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
}

#[test]
fn a_reader_that_stops_after_one_line_changes_neither_the_exit_code_nor_the_transcript() {
    let dir = scratch();
    let drover_bin = assert_cmd::cargo::cargo_bin("drover");
    let drover_bin = drover_bin.display();
    scripted(dir.path(), "slow", true);
    let (first, code) = piped_to_head(
        dir.path(),
        &format!("{drover_bin} run slow.yaml --artifacts out --json"),
        &[],
    );
    assert_eq!(code, 0, "the run's own exit code");
    let first: Value = serde_json::from_str(&first).unwrap();
    assert_eq!(first["event"]["type"], "run_start");
    verified(dir.path(), "out/slow/transcript.jsonl");
    assert_eq!(common::summary(&dir.path().join("out"))["status"], "passed");
    let lines = common::transcript(&dir.path().join("out/slow/transcript.jsonl"));
    assert_eq!(
        lines.last().unwrap()["reason"],
        "end_turn",
        "the run went on to its end"
    );

    // exec's stream, a failing check: exit 1 with the reader gone as without it.
    let server = MockServer::start(vec![
        Reply::sse(&calls_turn(&[(
            "toolu_1",
            "Bash",
            json!({"command": "sleep 1"}),
        )])),
        Reply::sse(&answer_turn("Slept.")),
    ]);
    let (first, code) = piped_to_head(
        dir.path(),
        &format!(
            "{drover_bin} exec nap --allow 'Bash(sleep *)' --check false --workspace ws --sandbox off --artifacts out2 --output-format stream-json"
        ),
        &[
            ("ANTHROPIC_API_KEY", KEY),
            ("ANTHROPIC_BASE_URL", &server.base_url),
        ],
    );
    assert_eq!(code, 1, "checks_failed, as without the pipe");
    assert!(
        first.starts_with("{\"type\":\"event\",\"task\":\"exec\""),
        "{first}"
    );
    verified(dir.path(), "out2/exec/transcript.jsonl");
    let lines = common::transcript(&dir.path().join("out2/exec/transcript.jsonl"));
    assert_eq!(lines.last().unwrap()["reason"], "checks_failed");
}

#[test]
fn on_github_actions_the_annotations_go_to_stderr_and_stdout_stays_json() {
    let dir = scratch();
    let spec = write_spec(
        dir.path(),
        "failing.yaml",
        "version: 1\nname: failing\nprompt: p\nworkspace: ws\nisolation: copy\nsandbox: off\nmodel:\n  provider: script\n  script:\n    - text: done\nchecks:\n  - { name: tests, run: 'false' }\n",
    );
    let step_summary = dir.path().join("step-summary.md");
    let output = drover()
        .current_dir(dir.path())
        .arg("run")
        .arg(&spec)
        .args(["--artifacts", "out", "--json"])
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_STEP_SUMMARY", &step_summary)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let (events, result) = json_output(&output);
    assert!(!events.is_empty());
    assert_eq!(result["status"], "failed");
    let err = stderr(&output);
    assert!(
        err.lines().any(|line| line.starts_with("::error")),
        "the annotations are on stderr, which the runner reads too: {err}"
    );
    assert!(
        std::fs::read_to_string(&step_summary)
            .unwrap()
            .contains("failing")
    );
}
