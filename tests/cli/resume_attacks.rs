//! Attacks on `drover resume` / `drover run SPEC --resume`: scenarios where a resumed
//! task could do the wrong thing. A failing test here is a defect; a passing one
//! documents behaviour that is right.

use crate::common;
use crate::mock_server;
use crate::providers::{KEY, anthropic_end, anthropic_start, anthropic_text};

use std::path::{Path, PathBuf};

use common::{
    drover, drover_without_proxy, events, resume_with, run_spec_with, summary, transcript,
    write_spec,
};
use mock_server::{MockServer, Reply};
use serde_json::{Value, json};

const KEY_ENV: &str = "DROVER_TEST_RESUME_ATTACK_KEY";

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn stdout(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// An Anthropic turn with one tool call `name(input)` whose id is `id`.
fn tool_turn(id: &str, name: &str, input: &Value) -> String {
    crate::providers::anthropic_call_turn(id, name, input)
}

fn text_turn(text: &str) -> String {
    anthropic_start(10, 0, 0) + &anthropic_text(0, text) + &anthropic_end("end_turn", 5)
}

// ---------------------------------------------------------------------------------------
// Budgets and figures
// ---------------------------------------------------------------------------------------

/// A scripted task of three priced turns ($1 each: 1M input tokens at $1/M), then done;
/// no budget in the spec.
fn priced_task(dir: &Path, first_command: &str) -> PathBuf {
    std::fs::create_dir_all(dir.join("ws")).unwrap();
    let usage = "      usage: { input_tokens: 1000000 }\n";
    let spec = format!(
        "version: 1\nname: t\nprompt: p\nworkspace: ws\nisolation: copy\nsandbox: off\nmodel:\n  provider: script\n  pricing: {{ input: 1.0, output: 1.0 }}\n  script:\n    - tool_calls: [{{ name: Bash, input: {{ command: {first_command:?} }} }}]\n{usage}    - tool_calls: [{{ name: Bash, input: {{ command: 'echo two' }} }}]\n{usage}    - tool_calls: [{{ name: Bash, input: {{ command: 'echo three' }} }}]\n{usage}    - text: done\npermissions:\n  allow: [Bash]\n"
    );
    write_spec(dir, "task.yaml", &spec)
}

/// `drover run --max-cost-usd 1.5` stops the task at its budget after two turns ($2).
/// The budget was the run's, given on the command line: resumed without raising it, the
/// task must be refused (docs: "A task stopped at its turn limit or budget is resumed
/// only with the limit raised … otherwise exit 2 with the figure to beat"), and a resume
/// must never run without the budget the run had.
#[test]
fn a_budget_given_on_the_command_line_still_holds_when_the_task_is_resumed() {
    let dir = tempfile::tempdir().unwrap();
    let spec = priced_task(dir.path(), "echo one");
    let artifacts = dir.path().join("out");
    let output = run_spec_with(&spec, &artifacts, &["--max-cost-usd", "1.5"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert_eq!(summary(&artifacts)["tasks"][0]["reason"], "budget");
    let resumed = resume_with(&artifacts.join("t"), &[]);
    let lines = transcript(&artifacts.join("t/transcript.jsonl"));
    assert_eq!(
        resumed.status.code(),
        Some(2),
        "a task stopped at its budget resumed without the budget raised: it ran on with no budget at all (ended {}, cost {}); stderr: {}",
        lines.last().unwrap()["reason"],
        lines.last().unwrap()["cost_usd"],
        stderr(&resumed)
    );
}

/// The tokens of a turn a resume drops were paid for and count toward the whole run
/// (docs: "so do the tokens of a turn the resume asks again"). Resumed a second time,
/// the first resume's dropped turn must still count: the figures of a run never go down
/// and its budget never forgets money spent.
#[test]
fn the_tokens_a_first_resume_dropped_still_count_after_a_second_resume() {
    let dir = tempfile::tempdir().unwrap();
    let spec = priced_task(dir.path(), "sleep 3; echo one");
    let artifacts = dir.path().join("out");
    let task = artifacts.join("t");
    // Turn 1's tool is cut by the time limit: the turn ($1) is dropped by the resume.
    let output = run_spec_with(&spec, &artifacts, &["--timeout", "1s"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let lines = transcript(&task.join("transcript.jsonl"));
    assert_eq!(lines.last().unwrap()["reason"], "timeout");
    assert_eq!(lines.last().unwrap()["usage"]["input_tokens"], 1_000_000);
    // Resume 1: turn 1 asked again ($1 more), stopped at one turn. $2 spent.
    let output = resume_with(&task, &["--timeout", "60s", "--max-turns", "1"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let lines = transcript(&task.join("transcript.jsonl"));
    let end = lines.last().unwrap();
    assert_eq!(end["reason"], "max_turns");
    assert_eq!(
        end["usage"]["input_tokens"], 2_000_000,
        "the dropped turn counts"
    );
    // Resume 2: turn 1 replayed, turns 2, 3 and the final one live. $2 + $2 = $4.
    let output = resume_with(&task, &["--timeout", "60s", "--max-turns", "10"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines = transcript(&task.join("transcript.jsonl"));
    let end = lines.last().unwrap();
    assert_eq!(end["reason"], "end_turn");
    assert_eq!(
        end["usage"]["input_tokens"], 4_000_000,
        "the whole run paid for 4 turns of 1M tokens (the one the first resume dropped included); run_end says {}",
        end["usage"]
    );
    assert_eq!(end["cost_usd"], 4.0);
}

// ---------------------------------------------------------------------------------------
// A model that repeats a tool_use id across turns
// ---------------------------------------------------------------------------------------

/// A model (some OpenAI-compatible servers do) that gives the same tool_use id in two
/// turns. The recorded WebFetch of turn 1 must be answered with turn 1's page, not with
/// turn 2's: the live model must get the conversation that was recorded.
#[test]
fn a_tool_use_id_repeated_across_turns_is_answered_with_its_own_turns_result() {
    let pages = MockServer::start(vec![
        Reply::status(200, "first page").with_header("Content-Type", "text/plain"),
        Reply::status(200, "second page").with_header("Content-Type", "text/plain"),
    ]);
    let base = pages.base_url.clone();
    let model = MockServer::start(vec![
        Reply::sse(&tool_turn(
            "toolu_same",
            "WebFetch",
            &json!({"url": format!("{base}/one"), "prompt": "read it"}),
        )),
        Reply::sse(&tool_turn(
            "toolu_same",
            "WebFetch",
            &json!({"url": format!("{base}/two"), "prompt": "read it"}),
        )),
    ]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    let spec = write_spec(
        dir.path(),
        "task.yaml",
        &format!(
            "version: 1\nname: t\nprompt: p\nworkspace: ws\nisolation: copy\nmodel:\n  provider: anthropic\n  name: claude-sonnet-4-5\n  api_key_env: {KEY_ENV}\n  retry: {{ max_retries: 0 }}\npermissions:\n  allow: [\"WebFetch(domain:127.0.0.1)\"]\nlimits:\n  max_turns: 2\n"
        ),
    );
    let artifacts = dir.path().join("out");
    let output = drover_without_proxy()
        .arg("run")
        .arg(&spec)
        .arg("--artifacts")
        .arg(&artifacts)
        .env(KEY_ENV, KEY)
        .env("ANTHROPIC_BASE_URL", &model.base_url)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let lines = transcript(&artifacts.join("t/transcript.jsonl"));
    let results = events(&lines, "tool_result");
    assert!(
        results[0]["content"]
            .as_str()
            .unwrap()
            .contains("first page")
    );
    assert!(
        results[1]["content"]
            .as_str()
            .unwrap()
            .contains("second page")
    );

    let live = MockServer::start(vec![Reply::sse(&text_turn("done"))]);
    let output = drover_without_proxy()
        .current_dir(common::test_dir_of(&artifacts))
        .arg("resume")
        .arg(artifacts.join("t"))
        .args(["--max-turns", "5"])
        .env(KEY_ENV, KEY)
        .env("ANTHROPIC_BASE_URL", &live.base_url)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(pages.requests().len(), 2, "no page fetched again");
    let request = live.requests()[0].json();
    let messages = request["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 5, "{request}");
    let first_result = messages[2].to_string();
    assert!(
        first_result.contains("first page") && !first_result.contains("second page"),
        "turn 1's result sent to the live model is not the recorded one: {first_result}"
    );
}

/// The same with commands, under `--strict`: nothing drifted (both commands print what
/// they printed), so the strict resume must go on to the end.
#[test]
fn a_tool_use_id_repeated_across_turns_is_no_drift_under_strict() {
    let model = MockServer::start(vec![
        Reply::sse(&tool_turn(
            "toolu_same",
            "Bash",
            &json!({"command": "echo one"}),
        )),
        Reply::sse(&tool_turn(
            "toolu_same",
            "Bash",
            &json!({"command": "echo two"}),
        )),
    ]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    let spec = write_spec(
        dir.path(),
        "task.yaml",
        &format!(
            "version: 1\nname: t\nprompt: p\nworkspace: ws\nisolation: copy\nsandbox: off\nmodel:\n  provider: anthropic\n  name: claude-sonnet-4-5\n  api_key_env: {KEY_ENV}\n  retry: {{ max_retries: 0 }}\npermissions:\n  allow: [Bash]\nlimits:\n  max_turns: 2\n"
        ),
    );
    let artifacts = dir.path().join("out");
    let output = drover_without_proxy()
        .arg("run")
        .arg(&spec)
        .arg("--artifacts")
        .arg(&artifacts)
        .env(KEY_ENV, KEY)
        .env("ANTHROPIC_BASE_URL", &model.base_url)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let live = MockServer::start(vec![Reply::sse(&text_turn("done"))]);
    let output = drover_without_proxy()
        .current_dir(common::test_dir_of(&artifacts))
        .arg("resume")
        .arg(artifacts.join("t"))
        .args(["--max-turns", "5", "--strict"])
        .env(KEY_ENV, KEY)
        .env("ANTHROPIC_BASE_URL", &live.base_url)
        .output()
        .unwrap();
    let lines = transcript(&artifacts.join("t/transcript.jsonl"));
    assert!(
        events(&lines, "replay_drift").is_empty(),
        "a spurious drift: {:?}",
        events(&lines, "replay_drift")
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
}

// ---------------------------------------------------------------------------------------
// Artifacts directories
// ---------------------------------------------------------------------------------------

/// A task whose artifacts go inside its workspace (the default `drover-artifacts/` with
/// `workspace: .`), stopped at its turn limit, resumed into another `--artifacts`
/// directory (which the docs offer). The starting workspace did not change: only the
/// stopped run's own reports (summary.json, …) are there now, and they were drover's.
#[test]
fn a_copied_task_resumed_into_another_artifacts_directory_is_not_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    std::fs::write(dir.path().join("ws/notes.txt"), "start\n").unwrap();
    let spec = write_spec(
        dir.path(),
        "task.yaml",
        "version: 1\nname: t\nprompt: p\nworkspace: ws\nisolation: copy\nmodel:\n  provider: script\n  script:\n    - tool_calls: [{ name: Write, input: { file_path: a.txt, content: a } }]\n    - tool_calls: [{ name: Write, input: { file_path: b.txt, content: b } }]\n    - text: done\npermissions:\n  allow: [Write]\nlimits:\n  max_turns: 1\n",
    );
    let artifacts = dir.path().join("ws/out");
    let output = run_spec_with(&spec, &artifacts, &[]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let elsewhere = dir.path().join("elsewhere");
    let output = resume_with(
        &artifacts.join("t"),
        &[
            "--max-turns",
            "5",
            "--artifacts",
            elsewhere.to_str().unwrap(),
        ],
    );
    assert_eq!(
        output.status.code(),
        Some(0),
        "refused though the workspace is as it was: {}",
        stderr(&output)
    );
    assert_eq!(summary(&elsewhere)["tasks"][0]["status"], "passed");
}

/// A task working in place whose artifacts lie in its workspace; the artifacts directory
/// already held another task's folder (an earlier `drover run` of another spec) when the
/// task started. Stopped, reverted as told, resumed: the workspace is in its starting
/// state and must be accepted.
#[test]
fn an_in_place_task_beside_an_earlier_runs_folder_resumes() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    let artifacts = dir.path().join("ws/out");
    // An earlier run of another task, into the same artifacts directory.
    let other = write_spec(
        dir.path(),
        "other.yaml",
        "version: 1\nname: other\nprompt: p\nworkspace: ws/scratch\nisolation: copy\nmodel:\n  provider: script\n  script:\n    - text: done\n",
    );
    std::fs::create_dir_all(dir.path().join("ws/scratch")).unwrap();
    let output = run_spec_with(&other, &artifacts, &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(artifacts.join("other/transcript.jsonl").is_file());
    let spec = write_spec(
        dir.path(),
        "task.yaml",
        "version: 1\nname: t\nprompt: p\nworkspace: ws\nsandbox: off\nmodel:\n  provider: script\n  script:\n    - tool_calls: [{ name: Write, input: { file_path: a.txt, content: a } }]\n    - tool_calls: [{ name: Write, input: { file_path: b.txt, content: b } }]\n    - text: done\npermissions:\n  allow: [Write]\nlimits:\n  max_turns: 1\n",
    );
    let output = run_spec_with(&spec, &artifacts, &[]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    // Reverted, as the refusal of an unreverted in-place task says.
    std::fs::remove_file(dir.path().join("ws/a.txt")).unwrap();
    let output = resume_with(&artifacts.join("t"), &["--max-turns", "5"]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "refused though the workspace is in its starting state: {}",
        stderr(&output)
    );
}

// ---------------------------------------------------------------------------------------
// Progress output and paths
// ---------------------------------------------------------------------------------------

/// Progress lines give the run's figures so far. After two replayed turns ($1 each),
/// live turn 3 brings the run to 3M tokens and $3, as its run_end and summary say; the
/// progress line must not restart the count at the live turns.
#[test]
fn progress_after_a_resume_counts_the_replayed_turns() {
    let dir = tempfile::tempdir().unwrap();
    let spec = priced_task(dir.path(), "echo one");
    let artifacts = dir.path().join("out");
    let output = run_spec_with(&spec, &artifacts, &["--max-turns", "2"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let output = resume_with(&artifacts.join("t"), &["--max-turns", "10"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let progress = stderr(&output);
    let turn3 = progress
        .lines()
        .find(|line| line.contains("turn 3:"))
        .unwrap_or_else(|| panic!("no progress line for turn 3: {progress}"));
    assert!(
        turn3.contains("3.0M tokens") && turn3.contains("$3.0000"),
        "the progress line of turn 3 forgets the replayed turns: {turn3}"
    );
}

/// `drover resume .` from inside the task's folder names the same task as
/// `drover resume out/t` from its parent.
#[test]
fn a_task_folder_named_as_dot_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let spec = priced_task(dir.path(), "echo one");
    let artifacts = dir.path().join("out");
    let output = run_spec_with(&spec, &artifacts, &["--max-turns", "1"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let output = drover()
        .current_dir(artifacts.join("t"))
        .args(["resume", ".", "--max-turns", "10", "--spec"])
        .arg(&spec)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
}

/// `--quiet`: no progress lines, no "resuming" line; only the final task line and the
/// artifacts line.
#[test]
fn a_quiet_resume_says_only_how_the_task_ended() {
    let dir = tempfile::tempdir().unwrap();
    let spec = priced_task(dir.path(), "echo one");
    let artifacts = dir.path().join("out");
    let output = run_spec_with(&spec, &artifacts, &["--max-turns", "1", "--quiet"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let output = resume_with(&artifacts.join("t"), &["--max-turns", "10", "--quiet"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        !stderr(&output).contains("turn") && !stderr(&output).contains("resum"),
        "{}",
        stderr(&output)
    );
    assert!(!stdout(&output).contains("resuming"), "{}", stdout(&output));
    assert!(stdout(&output).contains("t passed"), "{}", stdout(&output));
}

// ---------------------------------------------------------------------------------------
// Retry rounds, several tasks, worktrees
// ---------------------------------------------------------------------------------------

/// `retry.max_attempts`: round 1 ends, its check fails and goes back to the model; the
/// run is stopped in round 2 (turn limit). Resumed, round 1's feedback is the recorded
/// one (the check is not run again mid-replay), round 2 goes on live and passes.
#[test]
fn a_task_stopped_in_its_second_round_resumes_in_that_round() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    let spec = write_spec(
        dir.path(),
        "task.yaml",
        "version: 1\nname: t\nprompt: p\nworkspace: ws\nisolation: copy\nmodel:\n  provider: script\n  script:\n    - text: done\n    - tool_calls: [{ name: Write, input: { file_path: fixed, content: \"ok\\n\" } }]\n    - text: fixed it\npermissions:\n  allow: [Write]\nchecks:\n  - name: has-fixed\n    run: \"test -f fixed || { echo 'error: the file fixed is missing'; exit 1; }\"\nretry:\n  max_attempts: 3\nlimits:\n  max_turns: 2\n",
    );
    let artifacts = dir.path().join("out");
    let output = run_spec_with(&spec, &artifacts, &[]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let task = artifacts.join("t");
    let before = transcript(&task.join("transcript.jsonl"));
    assert_eq!(events(&before, "attempt").len(), 2);
    let output = resume_with(&task, &["--max-turns", "5", "--strict"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines = transcript(&task.join("transcript.jsonl"));
    let attempts = events(&lines, "attempt");
    assert_eq!(attempts.len(), 2, "{attempts:?}");
    let checks = events(&lines, "check");
    assert_eq!(checks.len(), 2, "round 1's recorded check, then the last");
    assert_eq!(checks[1]["passed"], true);
    assert!(events(&lines, "replay_drift").is_empty());
    let end = lines.last().unwrap();
    assert_eq!(end["turns"], 3);
    let report = summary(&artifacts);
    assert_eq!(report["tasks"][0]["attempts"], 2);
    assert_eq!(report["tasks"][0]["status"], "passed");
    // One run, one transcript: it replays as one run.
    let replayed = drover()
        .current_dir(dir.path())
        .args(["replay", "--strict", "--artifacts"])
        .arg(dir.path().join("replayed"))
        .arg(task.join("transcript.jsonl"))
        .output()
        .unwrap();
    assert_eq!(replayed.status.code(), Some(0), "{}", stderr(&replayed));
}

/// A run of two tasks, one stopped: the resume replaces its entry in summary.json and
/// junit.xml and keeps the other's as it was.
#[test]
fn the_other_tasks_of_the_run_stay_in_its_reports() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    let a = write_spec(
        dir.path(),
        "a.yaml",
        "version: 1\nname: a\nprompt: p\nworkspace: ws\nisolation: copy\nmodel:\n  provider: script\n  script:\n    - text: done\n",
    );
    let b = write_spec(
        dir.path(),
        "b.yaml",
        "version: 1\nname: b\nprompt: p\nworkspace: ws\nisolation: copy\nmodel:\n  provider: script\n  script:\n    - tool_calls: [{ name: LS, input: { path: . } }]\n    - tool_calls: [{ name: LS, input: { path: . } }]\n    - text: done\nlimits:\n  max_turns: 1\n",
    );
    let artifacts = dir.path().join("out");
    let output = drover()
        .arg("run")
        .arg(&a)
        .arg(&b)
        .arg("--artifacts")
        .arg(&artifacts)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let first = summary(&artifacts);
    let output = resume_with(&artifacts.join("b"), &["--max-turns", "5"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report = summary(&artifacts);
    let tasks = report["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 2, "{report}");
    assert_eq!(tasks[0], first["tasks"][0], "task a's entry is kept");
    assert_eq!(tasks[1]["name"], "b");
    assert_eq!(tasks[1]["status"], "passed");
    let junit = std::fs::read_to_string(artifacts.join("junit.xml")).unwrap();
    assert!(
        junit.contains("name=\"a\"") && junit.contains("name=\"b\""),
        "{junit}"
    );
}

fn git(dir: &Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

/// `isolation: worktree` in a git repository, the artifacts directory (untracked) in the
/// repository too: the resume makes the worktree again at the same HEAD and goes on.
#[test]
fn a_worktree_task_resumes_at_the_same_head() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    std::fs::write(repo.join("notes.txt"), "start\n").unwrap();
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "start"]);
    let spec = write_spec(
        &repo,
        "task.yaml",
        "version: 1\nname: t\nprompt: p\nworkspace: .\nisolation: worktree\nmodel:\n  provider: script\n  script:\n    - tool_calls: [{ name: Write, input: { file_path: a.txt, content: a } }]\n    - tool_calls: [{ name: Write, input: { file_path: b.txt, content: b } }]\n    - text: done\npermissions:\n  allow: [Write]\nlimits:\n  max_turns: 1\n",
    );
    git(&repo, &["add", "task.yaml"]);
    git(&repo, &["commit", "-q", "-m", "task"]);
    let artifacts = repo.join("drover-artifacts");
    let output = run_spec_with(&spec, &artifacts, &[]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let output = resume_with(&artifacts.join("t"), &["--max-turns", "5", "--strict"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let diff = std::fs::read_to_string(artifacts.join("t/diff.patch")).unwrap();
    assert!(diff.contains("a.txt") && diff.contains("b.txt"), "{diff}");
    assert!(!repo.join("a.txt").exists(), "the repository is untouched");
}

// ---------------------------------------------------------------------------------------
// Hooks
// ---------------------------------------------------------------------------------------

/// A Stop hook that blocked in the recorded run lets the replayed turn stop this time
/// (its answer depends on something outside the workspace). The resume must not end
/// quietly in the middle of the recorded turns: the recorded turn 2 is never replayed,
/// yet it stays in the transcript, the workspace lacks its change, and nothing reports
/// that the replay took another path.
#[test]
fn a_stop_hook_that_answers_otherwise_in_the_replay_is_not_a_silent_pass() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    let marker = dir.path().join("asked-once");
    let hook = dir.path().join("stop.sh");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/bash\ncat >/dev/null\nif [ ! -f {m} ]; then touch {m}; echo 'write the file first' >&2; exit 2; fi\nexit 0\n",
            m = marker.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let spec = write_spec(
        dir.path(),
        "task.yaml",
        &format!(
            "version: 1\nname: t\nprompt: p\nworkspace: ws\nisolation: copy\nsandbox: off\nmodel:\n  provider: script\n  script:\n    - text: done\n    - tool_calls: [{{ name: Write, input: {{ file_path: a.txt, content: a }} }}]\n    - text: done now\npermissions:\n  allow: [Write]\nhooks:\n  Stop:\n    - hooks: [{{ type: command, command: {} }}]\nlimits:\n  max_turns: 2\n",
            hook.display()
        ),
    );
    let artifacts = dir.path().join("out");
    let output = run_spec_with(&spec, &artifacts, &[]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let task = artifacts.join("t");
    let output = resume_with(&task, &["--max-turns", "5"]);
    let lines = transcript(&task.join("transcript.jsonl"));
    let end = lines.last().unwrap();
    let recorded_turns = events(&lines, "model_response").len();
    assert!(
        end["reason"] == "replay_drift" || end["turns"].as_u64().unwrap() >= recorded_turns as u64,
        "the resume ended ({}, {} turns, exit {:?}) with {recorded_turns} model turns in its transcript and no drift reported",
        end["reason"],
        end["turns"],
        output.status.code()
    );
    assert_eq!(output.status.code(), Some(1), "never a silent pass");
    assert!(
        end["message"]
            .as_str()
            .unwrap()
            .contains("the replay took another path"),
        "{}",
        end["message"]
    );
}

// ---------------------------------------------------------------------------------------
// More figures: the page model of WebFetch
// ---------------------------------------------------------------------------------------

/// `tools.web_fetch.model`: each fetch's page model spends 400 tokens, counted toward the
/// task's token budget (1000). Two fetches recorded (800), the run stopped at its turn
/// limit; resumed, the recorded fetches are answered from the recording, but the tokens
/// they cost were spent: the third fetch brings the run to 1200 and the budget must stop
/// it, and the run's figures must say 1200.
#[test]
fn the_page_model_tokens_of_recorded_fetches_count_after_a_resume() {
    let page = || Reply::status(200, "The answer is 42.").with_header("Content-Type", "text/plain");
    let pages = MockServer::start(vec![page(), page(), page()]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    let fetch = format!(
        "    - tool_calls: [{{ name: WebFetch, input: {{ url: \"{}/\", prompt: \"What?\" }} }}]\n",
        pages.base_url
    );
    let answer = "        - text: \"42\"\n          usage: { input_tokens: 400 }\n";
    let spec = write_spec(
        dir.path(),
        "task.yaml",
        &format!(
            "version: 1\nname: t\nprompt: p\nworkspace: ws\nisolation: copy\nmodel:\n  provider: script\n  script:\n{fetch}{fetch}{fetch}    - text: done\npermissions:\n  allow: [\"WebFetch(domain:127.0.0.1)\"]\nlimits:\n  max_turns: 2\n  max_tokens: 1000\ntools:\n  web_fetch:\n    model:\n      provider: script\n      script:\n{answer}{answer}{answer}"
        ),
    );
    let artifacts = dir.path().join("out");
    let output = run_spec_with(&spec, &artifacts, &[]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let task = artifacts.join("t");
    let lines = transcript(&task.join("transcript.jsonl"));
    let end = lines.last().unwrap();
    assert_eq!(end["reason"], "max_turns", "{end}");
    assert_eq!(end["usage"]["input_tokens"], 800, "{end}");
    let output = common::drover_without_proxy()
        .current_dir(common::test_dir_of(&task))
        .arg("resume")
        .arg(&task)
        .args(["--max-turns", "10"])
        .output()
        .unwrap();
    let lines = transcript(&task.join("transcript.jsonl"));
    let end = lines.last().unwrap();
    assert_eq!(
        end["usage"]["input_tokens"], 1200,
        "the recorded fetches' page-model tokens are forgotten: {end}"
    );
    assert_eq!(end["reason"], "budget", "{end}");
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
}

// ---------------------------------------------------------------------------------------
// Clocks and cut transcripts
// ---------------------------------------------------------------------------------------

/// The time limit counts from the resume and the replayed turns' tools run within it
/// (documented). When it strikes during a replayed command, the run ends `timeout`; the
/// cancelled command is not a drift of the recording (nothing differed: it was cut).
#[test]
fn a_time_limit_striking_during_the_replay_is_not_reported_as_drift() {
    let dir = tempfile::tempdir().unwrap();
    let spec = priced_task(dir.path(), "sleep 3; echo one");
    let artifacts = dir.path().join("out");
    let output = run_spec_with(&spec, &artifacts, &["--max-turns", "1"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let task = artifacts.join("t");
    let output = resume_with(&task, &["--max-turns", "10", "--timeout", "1s"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let lines = transcript(&task.join("transcript.jsonl"));
    assert_eq!(lines.last().unwrap()["reason"], "timeout");
    assert!(
        events(&lines, "replay_drift").is_empty(),
        "a timeout reported as drift: {:?}",
        events(&lines, "replay_drift")
    );
    assert!(
        summary(&artifacts)["tasks"][0]["drift"].is_null(),
        "{}",
        summary(&artifacts)["tasks"][0]
    );
}

/// A kill cut the transcript mid-line (no run_end): the whole lines are kept, the cut
/// line and its turn dropped, and the task resumes.
#[test]
fn a_transcript_cut_mid_line_resumes_from_its_last_whole_turn() {
    let dir = tempfile::tempdir().unwrap();
    let spec = priced_task(dir.path(), "echo one");
    let artifacts = dir.path().join("out");
    let output = run_spec_with(&spec, &artifacts, &["--max-turns", "2"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let path = artifacts.join("t/transcript.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    // Drop run_end (and what precedes it after the last result), cut the last result.
    let lines: Vec<&str> = text.lines().collect();
    let last_result = lines
        .iter()
        .rposition(|line| line.contains("\"type\":\"tool_result\""))
        .unwrap();
    let mut cut: String = lines[..last_result]
        .iter()
        .map(|line| format!("{line}\n"))
        .collect();
    cut.push_str(&lines[last_result][..lines[last_result].len() / 2]);
    std::fs::write(&path, &cut).unwrap();
    let output = resume_with(&artifacts.join("t"), &["--max-turns", "10", "--strict"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines = transcript(&path);
    let resume_event = events(&lines, "resume")[0].clone();
    assert_eq!(resume_event["replayed_turns"], 1);
    assert!(resume_event["previous_reason"].is_null());
    let results: Vec<&str> = events(&lines, "tool_result")
        .iter()
        .map(|e| e["content"].as_str().unwrap())
        .collect();
    assert_eq!(results.len(), 3, "{results:?}");
    common::drover()
        .args(["transcript", "verify"])
        .arg(&path)
        .assert()
        .success();
}

/// A finished run's transcript whose last newline is missing (its run_end line whole):
/// the run finished, and a finished task is not resumed.
#[test]
fn a_finished_transcript_without_its_last_newline_is_not_resumed() {
    let dir = tempfile::tempdir().unwrap();
    let spec = priced_task(dir.path(), "echo one");
    let artifacts = dir.path().join("out");
    let output = run_spec_with(&spec, &artifacts, &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let path = artifacts.join("t/transcript.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.trim_end_matches('\n')).unwrap();
    let output = resume_with(&artifacts.join("t"), &[]);
    assert_eq!(
        output.status.code(),
        Some(2),
        "a finished task was run again: {}",
        stderr(&output)
    );
}

/// A spec that names no model (`drover run` needs `--model`) stopped at its turn limit:
/// resumed without `--model`, the recording would choose which model your key pays for.
/// It must be asked for again.
#[test]
fn a_model_the_spec_does_not_name_is_not_taken_from_the_recording() {
    let recorded = MockServer::start(vec![Reply::sse(&tool_turn(
        "toolu_ls",
        "LS",
        &json!({"path": "."}),
    ))]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    let spec = write_spec(
        dir.path(),
        "task.yaml",
        &format!(
            "version: 1\nname: t\nprompt: p\nworkspace: ws\nisolation: copy\nmodel:\n  provider: anthropic\n  api_key_env: {KEY_ENV}\n  retry: {{ max_retries: 0 }}\nlimits:\n  max_turns: 1\n"
        ),
    );
    let artifacts = dir.path().join("out");
    let output = drover_without_proxy()
        .args(["run", "--model", "claude-opus-4-1"])
        .arg(&spec)
        .arg("--artifacts")
        .arg(&artifacts)
        .env(KEY_ENV, KEY)
        .env("ANTHROPIC_BASE_URL", &recorded.base_url)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let live = MockServer::start(vec![Reply::sse(&text_turn("done"))]);
    let resume = |extra: &[&str]| {
        drover_without_proxy()
            .current_dir(common::test_dir_of(&artifacts))
            .arg("resume")
            .arg(artifacts.join("t"))
            .args(["--max-turns", "5"])
            .args(extra)
            .env(KEY_ENV, KEY)
            .env("ANTHROPIC_BASE_URL", &live.base_url)
            .output()
            .unwrap()
    };
    let refused = resume(&[]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("--model claude-opus-4-1"),
        "{}",
        stderr(&refused)
    );
    assert!(
        live.requests().is_empty(),
        "the recording chose the model asked"
    );
    let output = resume(&["--model", "claude-opus-4-1"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(live.requests()[0].json()["model"], "claude-opus-4-1");
}
