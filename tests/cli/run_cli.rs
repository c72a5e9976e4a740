//! `drover run`, `validate`, `tools`, `policy check` and `replay`, end to end.

use crate::common;

use std::path::Path;

use common::{drover, events, transcript, write_spec};
use serde_json::Value;

/// A temp dir with an empty workspace `ws/` and a spec `task.yaml` whose body follows
/// the given header lines.
fn task(body: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    let spec = write_spec(dir.path(), "task.yaml", body);
    (dir, spec)
}

fn run(spec: &Path, artifacts: &Path) -> assert_cmd::assert::Assert {
    drover()
        .arg("run")
        .arg(spec)
        .arg("--artifacts")
        .arg(artifacts)
        .assert()
}

#[test]
fn spec_errors_exit_2_and_name_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "syntax.yaml",
            "version: 1\nname: a\nprompt: [unclosed\n",
            "syntax.yaml:",
        ),
        (
            "unknown.yaml",
            "version: 1\nname: a\nprompt: p\nmodle:\n  provider: script\n",
            "unknown.yaml:4:1",
        ),
        (
            "type.yaml",
            "version: 1\nname: a\nprompt: p\nmodel:\n  provider: script\n  script: [{text: hi}]\nlimits:\n  max_turns: lots\n",
            "type.yaml:8:14",
        ),
        (
            // Rules are parsed by the policy, after the spec: still at their position.
            "rule.yaml",
            "version: 1\nname: a\nprompt: p\nmodel:\n  provider: script\n  script: [{text: hi}]\npermissions:\n  allow: [Read, \"Edt(src/**)\"]\n",
            "rule.yaml:8:17",
        ),
    ];
    for (file, text, position) in cases {
        let spec = write_spec(dir.path(), file, text);
        for command in ["validate", "run"] {
            let output = drover().arg(command).arg(&spec).output().unwrap();
            assert_eq!(output.status.code(), Some(2), "{command} {file}");
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert!(stderr.contains(position), "{command} {file}: {stderr}");
        }
    }
    let unknown = String::from_utf8(
        drover()
            .arg("validate")
            .arg(dir.path().join("unknown.yaml"))
            .output()
            .unwrap()
            .stderr,
    )
    .unwrap();
    assert!(
        unknown.contains("modle"),
        "the unknown key is named: {unknown}"
    );
}

#[test]
fn a_failing_check_exits_1_and_junit_carries_the_failure() {
    let (dir, spec) = task(
        "version: 1\nname: failing-check\nprompt: p\nworkspace: ws\nmodel:\n  provider: script\n  script:\n    - text: Nothing to do.\nchecks:\n  - name: file exists\n    run: echo looking for done.txt; test -f done.txt\n",
    );
    let artifacts = dir.path().join("out");
    run(&spec, &artifacts).code(1);
    let lines = transcript(&artifacts.join("failing-check/transcript.jsonl"));
    let end = lines.last().unwrap();
    assert_eq!(end["reason"], "checks_failed");
    assert_eq!(end["status"], "failed");
    let check = events(&lines, "check")[0];
    assert_eq!(check["exit_code"], 1);
    assert_eq!(check["passed"], false);
    let junit = std::fs::read_to_string(artifacts.join("junit.xml")).unwrap();
    assert!(junit.contains("<failure"), "{junit}");
    assert!(junit.contains("file exists"), "{junit}");
    assert!(
        junit.contains("looking for done.txt"),
        "the output reaches JUnit: {junit}"
    );
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(artifacts.join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["tasks"][0]["reason"], "checks_failed");
}

#[test]
fn a_script_longer_than_max_turns_stops_with_max_turns() {
    let (dir, spec) = task(
        "version: 1\nname: too-long\nprompt: p\nworkspace: ws\nmodel:\n  provider: script\n  script:\n    - tool_calls: [{ name: Glob, input: { pattern: '*' } }]\n    - tool_calls: [{ name: Glob, input: { pattern: '*' } }]\n    - tool_calls: [{ name: Glob, input: { pattern: '*' } }]\n    - text: done\nlimits:\n  max_turns: 2\n",
    );
    let artifacts = dir.path().join("out");
    run(&spec, &artifacts).code(1);
    let lines = transcript(&artifacts.join("too-long/transcript.jsonl"));
    let end = lines.last().unwrap();
    assert_eq!(end["reason"], "max_turns");
    assert_eq!(end["turns"], 2);
    assert_eq!(
        events(&lines, "model_response").len(),
        2,
        "never more turns than the limit"
    );
    let junit = std::fs::read_to_string(artifacts.join("junit.xml")).unwrap();
    assert!(junit.contains("max_turns"), "{junit}");
}

#[test]
fn bad_calls_reach_the_model_as_errors_and_the_run_goes_on() {
    let (dir, spec) = task(
        r#"version: 1
name: bad-calls
prompt: p
workspace: ws
model:
  provider: script
  script:
    - text: three bad calls
      tool_calls:
        - { name: Read, input: { file_path: 42 } }
        - { name: Teleport, input: { to: mars } }
        - { name: Bash, input: { command: "touch hacked.txt" } }
        - { name: Write, input: { file_path: ok.txt, content: "fine\n" } }
    - text: done
permissions:
  allow: ["Write(ok.txt)"]
"#,
    );
    let artifacts = dir.path().join("out");
    run(&spec, &artifacts).code(0);
    let lines = transcript(&artifacts.join("bad-calls/transcript.jsonl"));
    let results = events(&lines, "tool_result");
    assert_eq!(results.len(), 4);
    let content = |i: usize| results[i]["content"].as_str().unwrap().to_string();
    assert_eq!(results[0]["is_error"], true);
    assert!(content(0).contains("file_path"), "{}", content(0));
    assert_eq!(results[1]["is_error"], true);
    assert!(
        content(1).contains("No such tool: Teleport"),
        "{}",
        content(1)
    );
    assert_eq!(results[2]["is_error"], true);
    assert!(content(2).contains("Permission denied"), "{}", content(2));
    assert_eq!(results[3]["is_error"], false, "{}", content(3));
    // The denial is recorded as a permission event and in the summary.
    let denied: Vec<_> = events(&lines, "permission")
        .into_iter()
        .filter(|p| p["decision"] == "deny")
        .collect();
    assert_eq!(denied.len(), 1);
    assert_eq!(denied[0]["tool_use_id"], results[2]["tool_use_id"]);
    assert!(!dir.path().join("ws/hacked.txt").exists());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("ws/ok.txt")).unwrap(),
        "fine\n"
    );
    // The model saw the errors: the run went on to its second turn and ended normally.
    assert_eq!(lines.last().unwrap()["reason"], "end_turn");
    assert_eq!(lines.last().unwrap()["turns"], 2);
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(artifacts.join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["tasks"][0]["denials"].as_array().unwrap().len(), 1);
    // The task passed, and summary.md still lists its denied call (issue 34).
    assert_eq!(summary["tasks"][0]["status"], "passed");
    let md = std::fs::read_to_string(artifacts.join("summary.md")).unwrap();
    let section = md
        .split_once("### ✅ `bad-calls`: denied tool calls\n\n")
        .unwrap_or_else(|| panic!("{md}"))
        .1;
    assert!(
        section.starts_with("- `Bash`: `") && section.contains("touch hacked.txt"),
        "{md}"
    );
}

#[test]
fn a_tool_denied_outright_is_not_offered() {
    let (dir, spec) = task(
        "version: 1\nname: no-bash\nprompt: p\nworkspace: ws\nmodel:\n  provider: script\n  script:\n    - tool_calls: [{ name: Bash, input: { command: ls } }]\npermissions:\n  deny: [Bash]\n",
    );
    let artifacts = dir.path().join("out");
    run(&spec, &artifacts).code(0);
    let lines = transcript(&artifacts.join("no-bash/transcript.jsonl"));
    let tools = lines[0]["tools"].as_array().unwrap();
    assert!(!tools.iter().any(|t| t == "Bash"), "{tools:?}");
    let result = events(&lines, "tool_result")[0];
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .contains("No such tool: Bash")
    );
}

#[test]
fn the_run_timeout_ends_a_hanging_command() {
    let (dir, spec) = task(
        "version: 1\nname: slow\nprompt: p\nworkspace: ws\nmodel:\n  provider: script\n  script:\n    - tool_calls: [{ name: Bash, input: { command: sleep 30 } }]\npermissions:\n  allow: [Bash]\nlimits:\n  timeout: 1s\n",
    );
    let artifacts = dir.path().join("out");
    run(&spec, &artifacts).code(1);
    let lines = transcript(&artifacts.join("slow/transcript.jsonl"));
    assert_eq!(lines.last().unwrap()["reason"], "timeout");
    let result = events(&lines, "tool_result")[0];
    assert_eq!(result["is_error"], true);
}

#[test]
fn a_task_that_cannot_run_stops_the_run_before_any_task_starts() {
    // Two tasks: one fine, one asking for a worktree of a workspace that is not a git
    // repository. Planning refuses the run as bad input, and neither task runs.
    let (dir, spec) = task(
        "version: 1\nname: fine\nprompt: p\nworkspace: ws\nmodel:\n  provider: script\n  script: [{text: hi}]\n",
    );
    let broken = write_spec(
        dir.path(),
        "broken.yaml",
        "version: 1\nname: broken\nprompt: p\nworkspace: ws\nisolation: worktree\nmodel:\n  provider: script\n  script: [{text: hi}]\n",
    );
    let artifacts = dir.path().join("out");
    let output = drover()
        .arg("run")
        .arg(&spec)
        .arg(&broken)
        .arg("--artifacts")
        .arg(&artifacts)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("broken.yaml") && stderr.contains("git"),
        "{stderr}"
    );
    assert!(!artifacts.exists(), "nothing ran");
}

#[test]
fn tools_json_lists_anthropic_format_definitions() {
    let output = drover().args(["tools", "--json"]).output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    let tools: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    for name in ["Read", "Write", "Edit", "Glob", "Grep", "Bash"] {
        assert!(names.contains(&name), "{names:?}");
    }
    for tool in &tools {
        assert!(!tool["description"].as_str().unwrap().is_empty());
        assert_eq!(tool["input_schema"]["type"], "object", "{tool}");
    }
}

#[test]
fn policy_check_prints_the_decision_and_exits_0_or_1() {
    let (dir, spec) = task(
        "version: 1\nname: p\nprompt: p\nworkspace: ws\nmodel:\n  provider: script\n  script: [{text: hi}]\npermissions:\n  allow: [\"Bash(cargo test *)\"]\n",
    );
    let _keep = &dir;
    let check = |command: &str| {
        drover()
            .args(["policy", "check", "--tool", "Bash", "--input"])
            .arg(serde_json::json!({ "command": command }).to_string())
            .arg("--spec")
            .arg(&spec)
            .output()
            .unwrap()
    };
    let allowed = check("cargo test --quiet");
    assert_eq!(allowed.status.code(), Some(0));
    let decision: Value = serde_json::from_slice(&allowed.stdout).unwrap();
    assert_eq!(decision["decision"], "allow");
    assert_eq!(decision["rule"], "Bash(cargo test *)");
    let denied = check("cargo test && rm -rf /");
    assert_eq!(denied.status.code(), Some(1));
    let decision: Value = serde_json::from_slice(&denied.stdout).unwrap();
    assert_eq!(decision["decision"], "deny");
}

#[test]
fn replay_strict_fails_when_a_result_differs() {
    let (dir, spec) = task(
        "version: 1\nname: drift\nprompt: p\nworkspace: ws\nmodel:\n  provider: script\n  script:\n    - tool_calls: [{ name: Bash, input: { command: cat note.txt } }]\n    - text: done\npermissions:\n  allow: [\"Bash(cat *)\"]\n",
    );
    std::fs::write(dir.path().join("ws/note.txt"), "one\n").unwrap();
    let artifacts = dir.path().join("out");
    run(&spec, &artifacts).code(0);
    let recorded = artifacts.join("drift/transcript.jsonl");
    // The workspace changes after the run: the replay's result no longer matches.
    std::fs::write(dir.path().join("ws/note.txt"), "two\n").unwrap();
    // Named with --workspace, a changed workspace is the user's choice: a warning, and
    // the differing result is drift.
    let replayed = dir.path().join("replayed");
    drover()
        .current_dir(dir.path())
        .arg("replay")
        .arg(&recorded)
        .arg("--workspace")
        .arg(dir.path().join("ws"))
        .arg("--artifacts")
        .arg(&replayed)
        .assert()
        .code(0);
    let strict = dir.path().join("strict");
    drover()
        .current_dir(dir.path())
        .arg("replay")
        .arg(&recorded)
        .arg("--workspace")
        .arg(dir.path().join("ws"))
        .arg("--strict")
        .arg("--artifacts")
        .arg(&strict)
        .assert()
        .code(1);
    let lines = transcript(&strict.join("drift/transcript.jsonl"));
    assert_eq!(lines.last().unwrap()["reason"], "replay_drift");
    // The recorded workspace, not named: it must be exactly as recorded, or nothing runs.
    let unnamed = dir.path().join("unnamed");
    drover()
        .current_dir(dir.path())
        .arg("replay")
        .arg(&recorded)
        .arg("--artifacts")
        .arg(&unnamed)
        .assert()
        .code(1);
    let lines = transcript(&unnamed.join("drift/transcript.jsonl"));
    assert_eq!(lines.last().unwrap()["reason"], "replay_drift");
    assert!(
        events(&lines, "tool_result").is_empty(),
        "a tool ran in a workspace the recording chose"
    );
}

#[test]
fn replay_refuses_to_overwrite_its_own_transcript() {
    let (dir, spec) = task(
        "version: 1\nname: self\nprompt: p\nworkspace: ws\nmodel:\n  provider: script\n  script: [{text: hi}]\n",
    );
    let artifacts = dir.path().join("out");
    run(&spec, &artifacts).code(0);
    let output = drover()
        .current_dir(dir.path())
        .arg("replay")
        .arg(artifacts.join("self/transcript.jsonl"))
        .arg("--artifacts")
        .arg(&artifacts)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("overwrite"));
}

#[test]
fn an_unreadable_transcript_is_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    std::fs::write(&path, "not json\n").unwrap();
    let output = drover().arg("replay").arg(&path).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("t.jsonl:1"));
}

#[test]
fn standard_input_is_never_read() {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    let (dir, spec) = task(
        "version: 1\nname: no-stdin\nprompt: p\nworkspace: ws\nmodel:\n  provider: script\n  script:\n    - tool_calls: [{ name: Bash, input: { command: cat } }]\n    - text: done\npermissions:\n  allow: [\"Bash(cat)\"]\nchecks:\n  - name: reads nothing\n    run: cat\n",
    );
    // stdin is a pipe that stays open: anything reading it would wait forever.
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("drover"))
        .arg("run")
        .arg(&spec)
        .arg("--artifacts")
        .arg(dir.path().join("out"))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let _open_stdin = child.stdin.take();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(60) {
            child.kill().unwrap();
            panic!("drover waited for input");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(0));
}

#[test]
fn a_directory_of_specs_runs_every_task_and_the_worst_outcome_wins() {
    let dir = tempfile::tempdir().unwrap();
    let tasks = dir.path().join("tasks");
    std::fs::create_dir(&tasks).unwrap();
    let spec = |name: &str, check: &str| {
        format!(
            "version: 1\nname: {name}\nprompt: p\nisolation: copy\nmodel:\n  provider: script\n  script: [{{text: hi}}]\nchecks:\n  - name: c\n    run: {check}\n"
        )
    };
    write_spec(&tasks, "a.yaml", &spec("good", "true"));
    write_spec(&tasks, "b.yaml", &spec("bad", "false"));
    let artifacts = dir.path().join("out");
    drover()
        .current_dir(dir.path())
        .args(["run", "tasks", "--jobs", "2", "--artifacts"])
        .arg(&artifacts)
        .assert()
        .code(1);
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(artifacts.join("summary.json")).unwrap())
            .unwrap();
    let statuses: Vec<(&str, &str)> = summary["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["name"].as_str().unwrap(), t["status"].as_str().unwrap()))
        .collect();
    assert_eq!(statuses, vec![("good", "passed"), ("bad", "failed")]);

    // The same name twice in one run is bad input, naming both places.
    write_spec(&tasks, "c.yaml", &spec("good", "true"));
    let output = drover()
        .current_dir(dir.path())
        .args(["validate", "tasks"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("c.yaml:2:") && stderr.contains("a.yaml:2:"),
        "{stderr}"
    );
}

#[test]
fn plan_mode_offers_only_read_only_tools() {
    let (dir, spec) = task(
        "version: 1\nname: plan\nprompt: p\nworkspace: ws\nmodel:\n  provider: script\n  script:\n    - tool_calls: [{ name: Write, input: { file_path: a.txt, content: x } }]\npermissions:\n  mode: plan\n  allow: [Write]\n",
    );
    let artifacts = dir.path().join("out");
    run(&spec, &artifacts).code(0);
    let lines = transcript(&artifacts.join("plan/transcript.jsonl"));
    let tools: Vec<&str> = lines[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert!(
        tools.contains(&"Read") && !tools.contains(&"Write") && !tools.contains(&"Bash"),
        "{tools:?}"
    );
    assert!(!dir.path().join("ws/a.txt").exists());
}

#[test]
fn searches_and_listings_skip_files_the_policy_denies_reading() {
    let (dir, spec) = task(
        "version: 1\nname: hidden\nprompt: p\nworkspace: ws\nmodel:\n  provider: script\n  script:\n    - tool_calls:\n        - { name: Grep, input: { pattern: SECRET, output_mode: content } }\n        - { name: Glob, input: { pattern: '**/*' } }\n        - { name: LS, input: { path: . } }\n        - { name: Grep, input: { pattern: SECRET, path: keys } }\npermissions:\n  deny: [\"Read(.env)\", \"Read(keys/**)\"]\n",
    );
    let ws = dir.path().join("ws");
    std::fs::write(ws.join(".env"), "SECRET=hunter2\n").unwrap();
    std::fs::create_dir(ws.join("keys")).unwrap();
    std::fs::write(ws.join("keys/id"), "SECRET key\n").unwrap();
    std::fs::write(ws.join("notes.txt"), "no SECRET here\n").unwrap();
    let artifacts = dir.path().join("out");
    run(&spec, &artifacts).code(0);
    let raw = std::fs::read_to_string(artifacts.join("hidden/transcript.jsonl")).unwrap();
    assert!(
        !raw.contains("hunter2"),
        "a denied file's content leaked through Grep"
    );
    let lines = transcript(&artifacts.join("hidden/transcript.jsonl"));
    let results = events(&lines, "tool_result");
    let text = |i: usize| results[i]["content"].as_str().unwrap().to_string();
    assert!(
        text(0).contains("notes.txt") && !text(0).contains(".env"),
        "{}",
        text(0)
    );
    assert!(
        text(1).contains("notes.txt") && !text(1).contains(".env") && !text(1).contains("keys/id"),
        "{}",
        text(1)
    );
    assert!(
        text(2).contains("notes.txt") && !text(2).contains(".env"),
        "{}",
        text(2)
    );
    assert_eq!(
        results[3]["is_error"], true,
        "a search of a denied directory is denied"
    );
}

#[test]
fn the_policy_judges_paths_where_the_shell_really_is() {
    let (dir, spec) = task(
        "version: 1\nname: cwd\nprompt: p\nworkspace: ws\nmodel:\n  provider: script\n  script:\n    - tool_calls: [{ name: Bash, input: { command: cd sub } }]\n    - tool_calls: [{ name: Bash, input: { command: cat ../.env } }]\n    - tool_calls: [{ name: Bash, input: { command: cat ../notes.txt } }]\n    - text: done\npermissions:\n  allow: [\"Bash(cat *)\"]\n  deny: [\"Read(.env)\"]\n",
    );
    let ws = dir.path().join("ws");
    std::fs::create_dir(ws.join("sub")).unwrap();
    std::fs::write(ws.join(".env"), "SECRET=hunter2\n").unwrap();
    std::fs::write(ws.join("notes.txt"), "hello\n").unwrap();
    let artifacts = dir.path().join("out");
    run(&spec, &artifacts).code(0);
    let raw = std::fs::read_to_string(artifacts.join("cwd/transcript.jsonl")).unwrap();
    assert!(
        !raw.contains("hunter2"),
        "cd then a relative path read around the deny rule"
    );
    let lines = transcript(&artifacts.join("cwd/transcript.jsonl"));
    let results = events(&lines, "tool_result");
    assert_eq!(results[0]["is_error"], false, "{}", results[0]);
    assert_eq!(results[1]["is_error"], true, "{}", results[1]);
    assert!(
        results[1]["content"]
            .as_str()
            .unwrap()
            .contains("Read(.env)")
    );
    assert_eq!(results[2]["content"], "hello");
}

#[test]
fn a_fifo_or_device_given_as_a_spec_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let specs = dir.path().join("specs");
    std::fs::create_dir(&specs).unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        specs.join("trap.yaml"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    for command in ["validate", "run"] {
        for target in [specs.as_path(), std::path::Path::new("/dev/zero")] {
            let mut drover = common::drover();
            drover.arg(command).arg(target);
            if command == "run" {
                drover.arg("--artifacts").arg(dir.path().join("out"));
            }
            let output = drover
                .timeout(std::time::Duration::from_secs(20))
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(
                output.status.code(),
                Some(2),
                "{command} {target:?}: {stderr}"
            );
            assert!(stderr.contains("not a regular file"), "{stderr}");
        }
    }
}

#[test]
fn validate_checks_what_run_checks_and_reports_every_error() {
    let dir = tempfile::tempdir().unwrap();
    // One file, two problems: no workspace, and the model's key is missing.
    write_spec(
        dir.path(),
        "a.yaml",
        "version: 1\nname: a\nprompt: p\nworkspace: missing\nmodel:\n  provider: anthropic\n  name: claude-sonnet-4-5\n  api_key_env: DROVER_TEST_NO_SUCH_KEY\n",
    );
    // Another: a worktree outside any git repository.
    std::fs::create_dir(dir.path().join("plain")).unwrap();
    write_spec(
        dir.path(),
        "b.yaml",
        "version: 1\nname: b\nprompt: p\nworkspace: plain\nisolation: worktree\nmodel:\n  provider: script\n  script: [{ text: x }]\n",
    );
    let output = drover()
        .arg("validate")
        .arg(dir.path().join("a.yaml"))
        .arg(dir.path().join("b.yaml"))
        .env_remove("DROVER_TEST_NO_SUCH_KEY")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    // Each problem on its own line, at the line and column of what it is about.
    assert!(stderr.contains("a.yaml:4:12: the workspace"), "{stderr}");
    assert!(
        stderr
            .lines()
            .any(|l| l.contains("a.yaml:6:3: ") && l.contains("DROVER_TEST_NO_SUCH_KEY")),
        "{stderr}"
    );
    assert!(
        stderr
            .lines()
            .any(|l| l.contains("b.yaml:5:12: isolation: worktree") && l.contains("git")),
        "{stderr}"
    );
    assert!(!String::from_utf8_lossy(&output.stdout).contains("ok:"));
}

/// `drover validate`'s error lines (`drover: FILE:LINE:COL: …`), in the order printed.
fn validate_errors(specs: &[&Path]) -> Vec<String> {
    let output = drover().arg("validate").args(specs).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(output.stdout.is_empty(), "{stderr}");
    stderr
        .lines()
        .filter(|line| !line.starts_with("drover: note:"))
        .map(str::to_string)
        .collect()
}

/// One spec, five problems found by different checks — an unknown key (the parser), a
/// zero turn limit (the spec's own checks), a rule the policy cannot parse, a pattern
/// that is no regular expression, a schema that does not compile: each is reported at
/// its line and column, in the file's order, not only the first (issue 34).
#[test]
fn validate_reports_every_error_of_a_spec_at_its_line_and_column() {
    let (dir, _) = task("version: 1\n");
    let spec = write_spec(
        dir.path(),
        "many.yaml",
        r#"version: 1
name: many
prompt: p
workspace: ws
isolaton: copy
model: { provider: script, script: [{ text: hi }] }
permissions:
  allow: [Read, "Edt(src/**)"]
limits:
  max_turns: 0
replay:
  ignore: ["(unclosed"]
output:
  schema: { type: 12 }
"#,
    );
    let errors = validate_errors(&[&spec]);
    let expected = [
        ("many.yaml:5:1: ", "isolaton"),
        ("many.yaml:8:17: ", "unknown tool"),
        ("many.yaml:10:14: ", "limits.max_turns must be at least 1"),
        ("many.yaml:12:3: ", "replay.ignore"),
        ("many.yaml:14:3: ", "the schema does not compile"),
    ];
    assert_eq!(errors.len(), expected.len(), "{errors:#?}");
    for (line, (place, what)) in errors.iter().zip(expected) {
        assert!(
            line.contains(place) && line.contains(what),
            "{place} {what}: {errors:#?}"
        );
    }
    // `drover run` checks the same way before any task starts.
    let output = drover()
        .arg("run")
        .arg(&spec)
        .arg("--artifacts")
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.lines().count(), expected.len(), "{stderr}");
    assert!(!dir.path().join("out").exists());
}

/// Every file's errors are shown, file by file in the order given; a file the parser
/// gives up on (a syntax error) hides neither another file's later checks (a rule, the
/// workspace) nor a task name used twice.
#[test]
fn validate_reports_the_errors_of_every_file() {
    let (dir, _) = task("version: 1\n");
    let broken = write_spec(
        dir.path(),
        "broken.yaml",
        "version: 1\nname: broken\nprompt: [unclosed\n",
    );
    let rules = write_spec(
        dir.path(),
        "rules.yaml",
        "version: 1\nname: rules\nprompt: p\nworkspace: ws\nmodel: { provider: script, script: [{ text: hi }] }\npermissions:\n  deny: [\"Bash(rm -rf\"]\n",
    );
    let nowhere = write_spec(
        dir.path(),
        "nowhere.yaml",
        "version: 1\nname: rules\nprompt: p\nworkspace: missing\nmodel: { provider: script, script: [{ text: hi }] }\n",
    );
    let errors = validate_errors(&[&broken, &rules, &nowhere]);
    assert_eq!(errors.len(), 4, "{errors:#?}");
    assert!(errors[0].contains("broken.yaml:3:"), "{errors:#?}");
    assert!(
        errors[1].contains("rules.yaml:7:10: ") && errors[1].contains("malformed permission rule"),
        "{errors:#?}"
    );
    // The second task of a name: the name, and its workspace, each at its place.
    assert!(
        errors[2].contains("nowhere.yaml:2:7: ") && errors[2].contains("already used by"),
        "{errors:#?}"
    );
    assert!(
        errors[3].contains("nowhere.yaml:4:12: the workspace"),
        "{errors:#?}"
    );
}

#[test]
fn the_final_line_counts_in_words_that_agree() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    let spec = common::write_spec(
        dir.path(),
        "one.yaml",
        "version: 1\nname: one\nprompt: p\nworkspace: ws\nisolation: copy\nmodel:\n  provider: script\n  script:\n    - tool_calls: [{ name: Write, input: { file_path: a.txt, content: a } }]\n    - text: done\npermissions:\n  allow: [Write]\nlimits:\n  max_turns: 1\n",
    );
    let output = common::drover()
        .arg("run")
        .arg(&spec)
        .arg("--artifacts")
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("(max_turns: used 1 turn of max_turns 1 while the model still had tool calls to follow up) — 1 turn, 0 denied calls, 1 file changed —"),
        "{stdout}"
    );
}

#[test]
fn validate_of_a_repository_skips_its_workflows_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    std::fs::create_dir_all(dir.path().join(".github/workflows")).unwrap();
    std::fs::write(
        dir.path().join(".github/workflows/ci.yml"),
        "name: CI\non: [push]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps: [{ run: cargo test }]\n",
    )
    .unwrap();
    write_spec(
        dir.path(),
        "task.yaml",
        "version: 1\nname: t\nprompt: p\nworkspace: ws\nmodel:\n  provider: script\n  script:\n    - text: done\n",
    );
    let output = drover().arg("validate").arg(dir.path()).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("note: skipped") && stderr.contains("ci.yml: not a task spec"),
        "{stderr}"
    );
    assert!(String::from_utf8_lossy(&output.stdout).contains("(task t)"));
    // Named, the workflow is checked as a spec, and fails.
    let named = drover()
        .arg("validate")
        .arg(dir.path().join(".github/workflows/ci.yml"))
        .output()
        .unwrap();
    assert_eq!(named.status.code(), Some(2));
}

#[test]
fn an_artifacts_directory_used_again_holds_only_the_new_run() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    let spec = |name: &str| {
        write_spec(
            dir.path(),
            &format!("{name}.yaml"),
            &format!(
                "version: 1\nname: {name}\nprompt: p\nworkspace: ws\nmodel:\n  provider: script\n  script:\n    - text: done\n"
            ),
        )
    };
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("README.txt"), "my notes").unwrap();
    drover()
        .arg("run")
        .arg(spec("first"))
        .arg("--artifacts")
        .arg(&out)
        .assert()
        .success();
    assert!(out.join("first/transcript.jsonl").is_file());
    let output = drover()
        .arg("run")
        .arg(spec("second"))
        .arg("--artifacts")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("removed 1 task folder an earlier run left in")
            && stderr.contains(": first"),
        "{stderr}"
    );
    assert!(!out.join("first").exists());
    assert!(out.join("second/transcript.jsonl").is_file());
    assert!(
        out.join("README.txt").is_file(),
        "files drover did not write stay"
    );
    let summary = common::summary(&out);
    assert_eq!(summary["tasks"].as_array().unwrap().len(), 1);
}
