//! `drover resume` / `drover run SPEC --resume`: a task stopped by a signal, a kill or a
//! limit goes on from its last whole turn. The recorded turns are replayed without the
//! model (the mock server counts what is asked of it), the transcript continues the
//! same hash chain, and the end result is the one an uninterrupted run gives.

use crate::common;
use crate::mock_server;
use crate::providers::{KEY, anthropic_end, anthropic_start, anthropic_text, sse};

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{drover_without_proxy, events, resume_with, run_spec_with, transcript, write_spec};
use mock_server::{MockServer, Reply};
use serde_json::{Value, json};

const KEY_ENV: &str = "DROVER_TEST_RESUME_KEY";

/// A turn writing `file` with `content`, its call id `id`.
fn write_turn(id: &str, file: &str, content: &str) -> String {
    let input = json!({"file_path": file, "content": content}).to_string();
    anthropic_start(10, 0, 0)
        + &anthropic_text(0, &format!("Writing {file}."))
        + &sse(
            "content_block_start",
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": id, "name": "Write", "input": {}}}),
        )
        + &sse(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": input}}),
        )
        + &sse(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 1}),
        )
        + &anthropic_end("tool_use", 5)
}

fn final_turn() -> String {
    anthropic_start(10, 0, 0)
        + &anthropic_text(0, "Both files written.")
        + &anthropic_end("end_turn", 5)
}

/// A stream that starts at once and then stalls for a minute before its end: drover is
/// stopped while it waits for the rest.
fn stalled(stream: &str) -> Reply {
    Reply::Sse {
        pieces: vec![
            stream.as_bytes()[..40].to_vec(),
            stream.as_bytes()[40..].to_vec(),
        ],
        pause: Duration::from_secs(60),
        complete: true,
    }
}

/// A task in `dir` writing two files, in a copy of `ws/`. The model's server is given
/// by ANTHROPIC_BASE_URL: the spec of a resumed task must not change.
fn task(dir: &Path) -> PathBuf {
    let ws = dir.join("ws");
    if !ws.exists() {
        std::fs::create_dir(&ws).unwrap();
        std::fs::write(ws.join("notes.txt"), "start\n").unwrap();
    }
    let spec = format!(
        "version: 1\nname: t\nprompt: Write a.txt and b.txt.\nworkspace: ws\nisolation: copy\nsandbox: off\nmodel:\n  provider: anthropic\n  name: claude-sonnet-4-5\n  api_key_env: {KEY_ENV}\n  retry: {{ max_retries: 0 }}\npermissions:\n  allow: [Write]\n"
    );
    write_spec(dir, "task.yaml", &spec)
}

/// The three turns of the task, the second `second`.
fn turns(second: Reply) -> Vec<Reply> {
    vec![
        Reply::sse(&write_turn("toolu_a", "a.txt", "alpha\n")),
        second,
        Reply::sse(&final_turn()),
    ]
}

fn spawn_run(spec: &Path, artifacts: &Path, server: &MockServer) -> std::process::Child {
    let mut command = Command::new(assert_cmd::cargo::cargo_bin("drover"));
    command
        .arg("run")
        .arg(spec)
        .arg("--quiet")
        .arg("--artifacts")
        .arg(artifacts)
        .env(KEY_ENV, KEY)
        .env("ANTHROPIC_BASE_URL", &server.base_url)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    for var in [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
    ] {
        command.env_remove(var);
    }
    command.spawn().unwrap()
}

/// Start the task and stop it with `signal` once its first turn's result is recorded
/// and the second turn is streaming; the transcript it left.
fn stop_mid_stream(dir: &Path, signal: &str) -> PathBuf {
    let server = MockServer::start(turns(stalled(&write_turn("toolu_b", "b.txt", "beta\n"))));
    let spec = task(dir);
    let artifacts = dir.join("out");
    let mut child = spawn_run(&spec, &artifacts, &server);
    let recorded = artifacts.join("t/transcript.jsonl");
    let started = Instant::now();
    while server.requests().len() < 2
        || !std::fs::read_to_string(&recorded).is_ok_and(|t| t.contains("\"tool_result\""))
    {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the second turn never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        Command::new("kill")
            .args([signal, &child.id().to_string()])
            .status()
            .unwrap()
            .success()
    );
    let status = child.wait().unwrap();
    assert!(!status.success(), "a stopped run is not a success");
    recorded
}

/// `drover resume out/t EXTRA…` in `dir`, its model at `server`.
fn resume(dir: &Path, server: &MockServer, extra: &[&str]) -> std::process::Output {
    drover_without_proxy()
        .current_dir(dir)
        .arg("resume")
        .arg(dir.join("out/t"))
        .args(extra)
        .env(KEY_ENV, KEY)
        .env("ANTHROPIC_BASE_URL", &server.base_url)
        .output()
        .unwrap()
}

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The diff of an uninterrupted run of the same task.
fn uninterrupted_diff() -> String {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start(turns(Reply::sse(&write_turn("toolu_b", "b.txt", "beta\n"))));
    let spec = task(dir.path());
    let artifacts = dir.path().join("out");
    let output = drover_without_proxy()
        .arg("run")
        .arg(&spec)
        .arg("--artifacts")
        .arg(&artifacts)
        .env(KEY_ENV, KEY)
        .env("ANTHROPIC_BASE_URL", &server.base_url)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    std::fs::read_to_string(artifacts.join("t/diff.patch")).unwrap()
}

/// The resumed run asks only for the turns the recording lacks, with the recorded
/// conversation; its transcript is the recorded one continued; its diff is an
/// uninterrupted run's.
fn assert_resumes(dir: &Path, recorded: &Path, previous_reason: Value) {
    let before = transcript(recorded);
    let recording = std::fs::read(recorded).unwrap();
    let server = MockServer::start(vec![
        Reply::sse(&write_turn("toolu_b", "b.txt", "beta\n")),
        Reply::sse(&final_turn()),
    ]);
    let output = resume(dir, &server, &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "only the missing turns are asked for");
    let first = requests[0].json();
    let messages = first["messages"].as_array().unwrap();
    assert_eq!(
        messages.len(),
        3,
        "the recorded turn is in the conversation"
    );
    assert_eq!(messages[1]["content"][1]["id"], "toolu_a");
    assert_eq!(messages[2]["content"][0]["tool_use_id"], "toolu_a");

    let after = transcript(recorded);
    let resume_at = after.iter().position(|e| e["type"] == "resume").unwrap();
    assert_eq!(
        &after[..resume_at],
        &before[..resume_at],
        "the recorded lines are kept as they were"
    );
    assert_eq!(
        std::fs::read(recorded.with_file_name("transcript.before-resume-1.jsonl")).unwrap(),
        recording,
        "the recording, dropped lines included, is kept beside"
    );
    let resume_event = &after[resume_at];
    assert_eq!(resume_event["replayed_turns"], 1);
    assert_eq!(resume_event["previous_reason"], previous_reason);
    assert_eq!(events(&after, "run_start").len(), 1);
    assert_eq!(events(&after, "run_end").len(), 1);
    let turns: Vec<u64> = events(&after, "model_response")
        .iter()
        .map(|e| e["turn"].as_u64().unwrap())
        .collect();
    assert_eq!(turns, [1, 2, 3], "one run's turns, in order");
    let end = after.last().unwrap();
    assert_eq!(end["reason"], "end_turn");
    assert_eq!(end["turns"], 3);
    common::drover()
        .args(["transcript", "verify"])
        .arg(recorded)
        .assert()
        .success();
    let diff = std::fs::read_to_string(recorded.with_file_name("diff.patch")).unwrap();
    assert_eq!(diff, uninterrupted_diff());
    let summary = common::summary(&dir.join("out"));
    assert_eq!(summary["tasks"].as_array().unwrap().len(), 1);
    assert_eq!(summary["tasks"][0]["status"], "passed");
    assert_eq!(summary["tasks"][0]["turns"], 3);
}

#[test]
fn a_run_stopped_by_sigterm_resumes_without_asking_again_for_its_turns() {
    let dir = tempfile::tempdir().unwrap();
    let recorded = stop_mid_stream(dir.path(), "-TERM");
    let lines = transcript(&recorded);
    assert_eq!(lines.last().unwrap()["reason"], "interrupted");
    assert_resumes(dir.path(), &recorded, json!("interrupted"));
}

#[test]
fn a_run_killed_mid_stream_resumes_with_the_cut_turn_asked_again() {
    let dir = tempfile::tempdir().unwrap();
    let recorded = stop_mid_stream(dir.path(), "-KILL");
    let lines = transcript(&recorded);
    assert_ne!(
        lines.last().unwrap()["type"],
        "run_end",
        "a killed run has no end"
    );
    assert_resumes(dir.path(), &recorded, Value::Null);
}

#[test]
fn a_changed_workspace_is_refused_and_the_recording_left_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let recorded = stop_mid_stream(dir.path(), "-TERM");
    let before = std::fs::read(&recorded).unwrap();
    std::fs::write(dir.path().join("ws/notes.txt"), "edited since\n").unwrap();
    let server = MockServer::start(Vec::new());
    let output = resume(dir.path(), &server, &[]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(
        message.contains("not in the state the recorded run started from")
            && message.contains("restore the state"),
        "{message}"
    );
    assert!(
        server.requests().is_empty(),
        "nothing was asked of the model"
    );
    assert_eq!(std::fs::read(&recorded).unwrap(), before);
    // Restored, it resumes.
    std::fs::write(dir.path().join("ws/notes.txt"), "start\n").unwrap();
    assert_resumes(dir.path(), &recorded, json!("interrupted"));
}

/// A scripted task of five Bash turns appending to log.txt, stopped by its turn limit.
fn scripted(dir: &Path, extra: &str) -> PathBuf {
    std::fs::create_dir_all(dir.join("ws")).unwrap();
    let turns: String = (1..=5)
        .map(|n| {
            format!(
                "    - tool_calls:\n        - {{ name: Bash, input: {{ command: 'echo {n} >> log.txt; cat log.txt' }} }}\n"
            )
        })
        .collect();
    let spec = format!(
        "version: 1\nname: t\nprompt: p\nworkspace: ws\nisolation: copy\nsandbox: off\nmodel:\n  provider: script\n  script:\n{turns}    - text: done\npermissions:\n  allow: [Bash]\n{extra}"
    );
    write_spec(dir, "task.yaml", &spec)
}

#[test]
fn a_turn_limit_must_be_raised_and_the_resumed_run_replays_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let spec = scripted(dir.path(), "limits:\n  max_turns: 2\n");
    let artifacts = dir.path().join("out");
    let output = run_spec_with(&spec, &artifacts, &[]);
    assert_eq!(output.status.code(), Some(1));
    let task = artifacts.join("t");
    let refused = resume_with(&task, &[]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        stderr(&refused).contains("pass --max-turns with more than 2"),
        "{}",
        stderr(&refused)
    );
    // `run SPEC --resume` is the same resume.
    let output = run_spec_with(
        &spec,
        &artifacts,
        &["--resume", task.to_str().unwrap(), "--max-turns", "4"],
    );
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let lines = transcript(&task.join("transcript.jsonl"));
    let end = lines.last().unwrap();
    assert_eq!(end["reason"], "max_turns");
    assert_eq!(end["turns"], 4);
    let results = events(&lines, "tool_result");
    assert_eq!(results.len(), 4);
    assert_eq!(
        results[3]["content"].as_str().unwrap().trim(),
        "1\n2\n3\n4",
        "turns 3 and 4 ran on the replayed ones' workspace"
    );
    assert!(events(&lines, "replay_drift").is_empty());
    // Resumed again, to the end.
    let output = resume_with(&task, &["--max-turns", "10"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines = transcript(&task.join("transcript.jsonl"));
    assert_eq!(events(&lines, "resume").len(), 2, "each resume is recorded");
    assert_eq!(events(&lines, "model_response").len(), 6);
    let diff = std::fs::read_to_string(task.join("diff.patch")).unwrap();
    assert!(diff.contains("+5"), "{diff}");
    // The resumed transcript replays as one run, with the limits it ended under.
    let replayed = replay_strict(&task.join("transcript.jsonl"), &dir.path().join("replayed"));
    assert_eq!(replayed.status.code(), Some(0), "{}", stderr(&replayed));
}

#[test]
fn a_replayed_result_that_differs_is_drift_and_strict_stops_there() {
    let (_dir, spec, artifacts) = task_with(
        "version: 1\nname: t\nprompt: p\nworkspace: ws\nisolation: copy\nsandbox: off\nmodel:\n  provider: script\n  script:\n    - tool_calls:\n        - { name: Bash, input: { command: 'head -c 12 /dev/urandom | od -An -tx1' } }\n    - tool_calls:\n        - { name: Bash, input: { command: 'echo second' } }\n    - text: done\npermissions:\n  allow: [Bash]\nlimits:\n  max_turns: 1\n",
    );
    assert_eq!(run_spec_with(&spec, &artifacts, &[]).status.code(), Some(1));
    let task = artifacts.join("t");
    let before = std::fs::read(task.join("transcript.jsonl")).unwrap();
    let strict = resume_with(&task, &["--max-turns", "5", "--strict"]);
    assert_eq!(strict.status.code(), Some(1), "{}", stderr(&strict));
    let lines = transcript(&task.join("transcript.jsonl"));
    assert_eq!(lines.last().unwrap()["reason"], "replay_drift");
    assert_eq!(events(&lines, "replay_drift").len(), 1);
    assert!(
        !String::from_utf8_lossy(&before).is_empty() && events(&lines, "model_response").len() == 1,
        "a strict resume stops before the model is asked"
    );
    // Without --strict the drift is reported and the run goes on. The turn limit the
    // last resume raised is given again: a recording does not loosen its spec's limit.
    let output = resume_with(&task, &["--max-turns", "5"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stderr(&output).contains("drift"), "{}", stderr(&output));
    let lines = transcript(&task.join("transcript.jsonl"));
    assert_eq!(events(&lines, "replay_drift").len(), 1);
    assert_eq!(lines.last().unwrap()["reason"], "end_turn");
    assert_eq!(common::summary(&artifacts)["tasks"][0]["drift"]["count"], 1);
}

#[test]
fn a_finished_task_or_a_changed_spec_is_not_resumed() {
    let dir = tempfile::tempdir().unwrap();
    let spec = scripted(dir.path(), "");
    let artifacts = dir.path().join("out");
    assert_eq!(run_spec_with(&spec, &artifacts, &[]).status.code(), Some(0));
    let finished = resume_with(&artifacts.join("t"), &[]);
    assert_eq!(finished.status.code(), Some(2));
    assert!(
        stderr(&finished).contains("ended with `end_turn`"),
        "{}",
        stderr(&finished)
    );

    let spec = scripted(dir.path(), "limits:\n  max_turns: 1\n");
    assert_eq!(run_spec_with(&spec, &artifacts, &[]).status.code(), Some(1));
    std::fs::write(
        &spec,
        std::fs::read_to_string(&spec)
            .unwrap()
            .replace("prompt: p", "prompt: q"),
    )
    .unwrap();
    let changed = resume_with(&artifacts.join("t"), &["--max-turns", "3"]);
    assert_eq!(changed.status.code(), Some(2));
    assert!(
        stderr(&changed).contains("changed since the recorded run"),
        "{}",
        stderr(&changed)
    );
}

#[test]
fn an_edited_recording_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let spec = scripted(dir.path(), "limits:\n  max_turns: 2\n");
    let artifacts = dir.path().join("out");
    assert_eq!(run_spec_with(&spec, &artifacts, &[]).status.code(), Some(1));
    let path = artifacts.join("t/transcript.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("log.txt", "x.txt")).unwrap();
    let output = resume_with(&artifacts.join("t"), &["--max-turns", "4"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("is not resumed"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_recorded_fetch_is_answered_from_the_recording_and_a_new_one_made() {
    let server = MockServer::start(vec![
        Reply::status(200, "first page").with_header("Content-Type", "text/plain"),
        Reply::status(200, "second page").with_header("Content-Type", "text/plain"),
    ]);
    let base = &server.base_url;
    let (_dir, spec, artifacts) = task_with(&format!(
        "version: 1\nname: t\nprompt: p\nworkspace: ws\nisolation: copy\nmodel:\n  provider: script\n  script:\n    - tool_calls: [{{ name: WebFetch, input: {{ url: \"{base}/one\" }} }}]\n    - tool_calls: [{{ name: WebFetch, input: {{ url: \"{base}/two\" }} }}]\n    - text: done\npermissions:\n  allow: [\"WebFetch(domain:127.0.0.1)\"]\nlimits:\n  max_turns: 1\n"
    ));
    let output = run_spec_with(&spec, &artifacts, &[]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert_eq!(server.requests().len(), 1);
    let output = common::drover_without_proxy()
        .current_dir(common::test_dir_of(&artifacts))
        .arg("resume")
        .arg(artifacts.join("t"))
        .args(["--max-turns", "5", "--strict"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "the recorded fetch is not made again");
    assert!(requests[1].line.contains("/two"), "{}", requests[1].line);
    let lines = transcript(&artifacts.join("t/transcript.jsonl"));
    let results = events(&lines, "tool_result");
    assert!(
        results[1]["content"]
            .as_str()
            .unwrap()
            .contains("second page")
    );
}

#[test]
fn a_budget_must_be_raised_and_counts_the_recorded_turns() {
    let turn = "    - tool_calls: [{ name: LS, input: { path: . } }]\n      usage: { input_tokens: 1000000 }\n";
    let (_dir, spec, artifacts) = task_with(&format!(
        "version: 1\nname: t\nprompt: p\nworkspace: ws\nisolation: copy\nmodel:\n  provider: script\n  pricing: {{ input: 1.0, output: 1.0 }}\n  script:\n{turn}{turn}{turn}    - text: done\nlimits:\n  max_cost_usd: 1.5\n"
    ));
    let output = run_spec_with(&spec, &artifacts, &[]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert_eq!(common::summary(&artifacts)["tasks"][0]["reason"], "budget");
    let task = artifacts.join("t");
    let refused = resume_with(&task, &[]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        stderr(&refused).contains("pass --max-cost-usd with more than 2.0000"),
        "{}",
        stderr(&refused)
    );
    // Raised to 2.5: the two recorded turns count ($2), the third ($3) goes over.
    let output = resume_with(&task, &["--max-cost-usd", "2.5"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let summary = common::summary(&artifacts);
    assert_eq!(summary["tasks"][0]["reason"], "budget");
    assert_eq!(summary["tasks"][0]["turns"], 3);
    assert_eq!(summary["tasks"][0]["cost_usd"], 3.0);
    let output = resume_with(&task, &["--max-cost-usd", "10"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(common::summary(&artifacts)["tasks"][0]["turns"], 4);
}

#[test]
fn a_task_in_place_is_told_how_to_revert_its_changes() {
    let (dir, spec, artifacts) = task_with(
        "version: 1\nname: t\nprompt: p\nworkspace: ws\nmodel:\n  provider: script\n  script:\n    - tool_calls: [{ name: Write, input: { file_path: a.txt, content: a } }]\n    - tool_calls: [{ name: Write, input: { file_path: b.txt, content: b } }]\n    - text: done\npermissions:\n  allow: [Write]\nlimits:\n  max_turns: 1\n",
    );
    assert_eq!(run_spec_with(&spec, &artifacts, &[]).status.code(), Some(1));
    let task = artifacts.join("t");
    let refused = resume_with(&task, &["--max-turns", "5"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        stderr(&refused).contains("git apply -R"),
        "{}",
        stderr(&refused)
    );
    // Reverted, it resumes in place.
    std::fs::remove_file(dir.path().join("ws/a.txt")).unwrap();
    let output = resume_with(&task, &["--max-turns", "5"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(dir.path().join("ws/b.txt").is_file());
    assert!(dir.path().join("ws/a.txt").is_file());
}

#[test]
fn a_task_killed_while_its_folder_was_staged_is_published_then_resumed() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    // The artifacts lie in the workspace the task edits in place: its folder is staged
    // in TMPDIR while it runs.
    let server = MockServer::start(turns(stalled(&write_turn("toolu_b", "b.txt", "beta\n"))));
    let spec = write_spec(
        dir.path(),
        "task.yaml",
        &format!(
            "version: 1\nname: t\nprompt: Write a.txt and b.txt.\nworkspace: ws\nmodel:\n  provider: anthropic\n  name: claude-sonnet-4-5\n  api_key_env: {KEY_ENV}\n  retry: {{ max_retries: 0 }}\npermissions:\n  allow: [Write]\n"
        ),
    );
    let artifacts = dir.path().join("ws/out");
    let mut command = Command::new(assert_cmd::cargo::cargo_bin("drover"));
    let mut child = command
        .arg("run")
        .arg(&spec)
        .arg("--quiet")
        .arg("--artifacts")
        .arg(&artifacts)
        .env(KEY_ENV, KEY)
        .env("ANTHROPIC_BASE_URL", &server.base_url)
        .env("TMPDIR", &tmp)
        .env_remove("HTTP_PROXY")
        .env_remove("http_proxy")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while server.requests().len() < 2 || !dir.path().join("ws/a.txt").exists() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "turn 2 never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(200));
    child.kill().unwrap();
    child.wait().unwrap();
    let recorded = artifacts.join("t/transcript.jsonl");
    assert!(!recorded.exists(), "the folder was staged, never published");

    let live = MockServer::start(vec![
        Reply::sse(&write_turn("toolu_b", "b.txt", "beta\n")),
        Reply::sse(&final_turn()),
    ]);
    let resume = |server: &MockServer| {
        drover_without_proxy()
            .current_dir(common::test_dir_of(&artifacts))
            .arg("resume")
            .arg(artifacts.join("t"))
            .env(KEY_ENV, KEY)
            .env("ANTHROPIC_BASE_URL", &server.base_url)
            .env("TMPDIR", &tmp)
            .output()
            .unwrap()
    };
    // The killed run's folder is published first; its changes are still in the
    // workspace, so the resume says how to restore it.
    let refused = resume(&live);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("published"),
        "{}",
        stderr(&refused)
    );
    assert!(
        stderr(&refused).contains("git stash -u"),
        "{}",
        stderr(&refused)
    );
    assert!(recorded.is_file());
    assert!(live.requests().is_empty());
    std::fs::remove_file(dir.path().join("ws/a.txt")).unwrap();
    let output = resume(&live);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(live.requests().len(), 2);
    assert!(dir.path().join("ws/a.txt").is_file() && dir.path().join("ws/b.txt").is_file());
    let lines = transcript(&recorded);
    assert_eq!(lines.last().unwrap()["reason"], "end_turn");
}

#[test]
fn a_run_in_another_workspace_resumes_only_where_it_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let spec = scripted(dir.path(), "limits:\n  max_turns: 1\n");
    let other = dir.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    let artifacts = dir.path().join("out");
    let output = run_spec_with(&spec, &artifacts, &["--workspace", other.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let task = artifacts.join("t");
    let refused = resume_with(&task, &["--max-turns", "3"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        stderr(&refused).contains("pass --workspace"),
        "{}",
        stderr(&refused)
    );
    let output = resume_with(
        &task,
        &["--max-turns", "3", "--workspace", other.to_str().unwrap()],
    );
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert_eq!(common::summary(&artifacts)["tasks"][0]["turns"], 3);
}

#[test]
fn a_recorded_sub_agent_run_is_played_back_not_run_again() {
    use crate::providers::anthropic_call_turn;
    let text = |text: &str| {
        anthropic_start(10, 0, 0) + &anthropic_text(0, text) + &anthropic_end("end_turn", 5)
    };
    // The task's turn 1 starts a sub-agent (its two turns), turn 2 lists; the turn limit
    // stops it there.
    let recorded = MockServer::start(vec![
        Reply::sse(&anthropic_call_turn(
            "toolu_agent",
            "Agent",
            &json!({"description": "look", "prompt": "Look around.", "subagent_type": "looker"}),
        )),
        Reply::sse(&anthropic_call_turn(
            "toolu_sub",
            "LS",
            &json!({"path": "."}),
        )),
        Reply::sse(&text("seen")),
        Reply::sse(&anthropic_call_turn(
            "toolu_ls",
            "LS",
            &json!({"path": "."}),
        )),
    ]);
    let (dir, spec, artifacts) = task_with(&format!(
        "version: 1\nname: t\nprompt: p\nworkspace: ws\nisolation: copy\nmodel:\n  provider: anthropic\n  name: claude-sonnet-4-5\n  api_key_env: {KEY_ENV}\n  retry: {{ max_retries: 0 }}\nagents:\n  looker:\n    description: Looks.\n    prompt: You look.\n    tools: [LS]\nlimits:\n  max_turns: 2\n"
    ));
    let output = drover_without_proxy()
        .arg("run")
        .arg(&spec)
        .arg("--artifacts")
        .arg(&artifacts)
        .env(KEY_ENV, KEY)
        .env("ANTHROPIC_BASE_URL", &recorded.base_url)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert_eq!(recorded.requests().len(), 4);
    // Resumed, only the task's third turn is asked for: the sub-agent's turns are the
    // recording's.
    let live = MockServer::start(vec![Reply::sse(&text("done"))]);
    let output = resume(dir.path(), &live, &["--max-turns", "5", "--strict"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(live.requests().len(), 1, "no sub-agent turn is asked again");
    let lines = transcript(&artifacts.join("t/transcript.jsonl"));
    assert_eq!(events(&lines, "agent_start").len(), 1, "recorded once");
    assert!(events(&lines, "replay_drift").is_empty());
    let end = lines.last().unwrap();
    assert_eq!(end["reason"], "end_turn");
    assert_eq!(end["turns"], 3);
    assert_eq!(end["agent_turns"], 2);
}

#[test]
fn a_token_budget_is_raised_with_max_tokens() {
    let turn = "    - tool_calls: [{ name: LS, input: { path: . } }]\n      usage: { input_tokens: 1000 }\n";
    let (dir, spec, artifacts) = task_with(&format!(
        "version: 1\nname: t\nprompt: p\nworkspace: ws\nisolation: copy\nmodel:\n  provider: script\n  script:\n{turn}{turn}{turn}    - text: done\nlimits:\n  max_tokens: 1500\n"
    ));
    assert_eq!(run_spec_with(&spec, &artifacts, &[]).status.code(), Some(1));
    let task = artifacts.join("t");
    let refused = resume_with(&task, &[]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        stderr(&refused).contains("pass --max-tokens with more than 2000"),
        "{}",
        stderr(&refused)
    );
    let output = resume_with(&task, &["--max-tokens", "10000"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let summary = common::summary(&artifacts);
    assert_eq!(summary["tasks"][0]["turns"], 4);
    assert_eq!(summary["tasks"][0]["usage"]["input_tokens"], 3000);
    // The raised budget holds for a replay of the resumed run too.
    let replayed = replay_strict(&task.join("transcript.jsonl"), &dir.path().join("replayed"));
    assert_eq!(replayed.status.code(), Some(0), "{}", stderr(&replayed));
}

/// A task `spec` (its workspace `ws/`, empty) in a new directory: the directory, the
/// spec's path and the artifacts directory `out/`.
fn task_with(spec: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    let path = write_spec(dir.path(), "task.yaml", spec);
    let artifacts = dir.path().join("out");
    (dir, path, artifacts)
}

/// `drover replay --strict TRANSCRIPT --artifacts OUT`, finished.
fn replay_strict(transcript: &Path, out: &Path) -> std::process::Output {
    common::drover()
        .current_dir(transcript.ancestors().nth(3).unwrap())
        .args(["replay", "--strict", "--artifacts"])
        .arg(out)
        .arg(transcript)
        .output()
        .unwrap()
}

#[test]
#[cfg_attr(
    not(drover_has_python_mcp),
    ignore = "needs the Python MCP SDK in .ci/venv: .ci/run installs it"
)]
fn a_recorded_mcp_call_is_answered_from_the_recording_not_made_again() {
    let (python, _) = crate::mcp_modern::modern_server();
    let dir = tempfile::tempdir().unwrap();
    let counter = dir.path().join("counter.txt");
    let server = common::repo().join("tests/cli/fixtures/counting_server.py");
    let call = "    - tool_calls: [{ name: mcp__counter__tick, input: {} }]\n";
    let (_dir, spec, artifacts) = task_with(&format!(
        "version: 1\nname: t\nprompt: p\nworkspace: ws\nisolation: copy\nsandbox: off\nmodel:\n  provider: script\n  script:\n{call}{call}    - text: done\npermissions:\n  allow: [mcp__counter]\nmcp:\n  servers:\n    counter:\n      command: {}\n      args: [{}, {}]\nlimits:\n  max_turns: 1\n",
        serde_json::to_string(&python).unwrap(),
        serde_json::to_string(&server).unwrap(),
        serde_json::to_string(&counter).unwrap(),
    ));
    let output = run_spec_with(&spec, &artifacts, &[]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert_eq!(std::fs::read_to_string(&counter).unwrap(), "tick\n");
    let output = resume_with(&artifacts.join("t"), &["--max-turns", "5", "--strict"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        std::fs::read_to_string(&counter).unwrap(),
        "tick\ntick\n",
        "the recorded call is not made again; the new one is"
    );
    let lines = transcript(&artifacts.join("t/transcript.jsonl"));
    let results = events(&lines, "tool_result");
    assert_eq!(results[0]["content"], "1");
    assert_eq!(results[1]["content"], "2");
}

#[test]
fn a_run_stopped_by_its_time_limit_resumes_with_a_longer_one() {
    let (_dir, spec, artifacts) = task_with(
        "version: 1\nname: t\nprompt: p\nworkspace: ws\nisolation: copy\nsandbox: off\nmodel:\n  provider: script\n  script:\n    - tool_calls: [{ name: LS, input: { path: . } }]\n    - tool_calls: [{ name: Bash, input: { command: 'sleep 2; echo slept' } }]\n    - text: done\npermissions:\n  allow: [Bash]\nlimits:\n  timeout: 1s\n",
    );
    let output = run_spec_with(&spec, &artifacts, &[]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let task = artifacts.join("t");
    let lines = transcript(&task.join("transcript.jsonl"));
    assert_eq!(lines.last().unwrap()["reason"], "timeout");
    // The cancelled Bash turn is asked again; the time limit counts from the resume.
    let output = resume_with(&task, &["--timeout", "1m"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines = transcript(&task.join("transcript.jsonl"));
    assert_eq!(events(&lines, "resume")[0]["replayed_turns"], 1);
    let results = events(&lines, "tool_result");
    assert_eq!(
        results.last().unwrap()["content"].as_str().unwrap().trim(),
        "slept"
    );
    assert_eq!(lines.last().unwrap()["reason"], "end_turn");
}
