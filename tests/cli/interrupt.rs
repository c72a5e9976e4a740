//! A cancelled CI job sends SIGTERM: drover stops its tasks at once and still leaves a
//! complete transcript, diff and reports, with a truthful exit code.

use crate::common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{events, running, transcript, write_spec};
use serde_json::Value;

/// `drover run SPECS --quiet --artifacts ARTIFACTS` in the background, stdin and stdout
/// closed, stderr piped when asked, `TMPDIR` set when given.
fn spawn_run(
    specs: &[std::path::PathBuf],
    artifacts: &std::path::Path,
    tmpdir: Option<&std::path::Path>,
    piped_stderr: bool,
) -> std::process::Child {
    let mut command = Command::new(assert_cmd::cargo::cargo_bin("drover"));
    command
        .arg("run")
        .args(specs)
        .arg("--quiet")
        .arg("--artifacts")
        .arg(artifacts)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(if piped_stderr {
            Stdio::piped()
        } else {
            Stdio::null()
        });
    if let Some(tmpdir) = tmpdir {
        command.env("TMPDIR", tmpdir);
    }
    command.spawn().unwrap()
}

/// Wait for `child` to exit, at most `limit` after `since`; its exit code.
fn exit_code(child: &mut std::process::Child, since: Instant, limit: Duration) -> Option<i32> {
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        if since.elapsed() > limit {
            child.kill().unwrap();
            panic!("drover did not stop within {limit:?} of the signal");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn sigterm_ends_every_task_with_a_complete_record_and_exit_3() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    let spec = |name: &str| {
        format!(
            "version: 1\nname: {name}\nprompt: p\nworkspace: ws\nisolation: copy\nsandbox: off\nmodel:\n  provider: script\n  script:\n    - tool_calls:\n        - {{ name: Write, input: {{ file_path: started.txt, content: x }} }}\n        - {{ name: Bash, input: {{ command: sleep 60 }} }}\n    - text: never reached\npermissions:\n  allow: [Bash, Write]\nchecks:\n  - name: never runs\n    run: 'true'\n"
        )
    };
    write_spec(dir.path(), "a.yaml", &spec("first"));
    write_spec(dir.path(), "b.yaml", &spec("second"));
    let artifacts = dir.path().join("out");
    let mut child = spawn_run(
        &[dir.path().join("a.yaml"), dir.path().join("b.yaml")],
        &artifacts,
        None,
        true,
    );
    // Wait until the first task's Bash call is running.
    let recorded = artifacts.join("first/transcript.jsonl");
    let started = Instant::now();
    while !std::fs::read_to_string(&recorded).is_ok_and(|t| t.contains("\"name\":\"Bash\"")) {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the task never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(200));
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let code = exit_code(&mut child, started, Duration::from_secs(50));
    assert_eq!(code, Some(3), "an interrupted run is not a success");

    let lines = transcript(&recorded);
    let end = lines.last().unwrap();
    assert_eq!(end["type"], "run_end");
    assert_eq!(end["reason"], "interrupted");
    let results = events(&lines, "tool_result");
    assert_eq!(results.len(), 2, "every call has its result");
    assert!(
        results[1]["content"]
            .as_str()
            .unwrap()
            .contains("interrupted")
    );
    assert!(
        events(&lines, "check").is_empty(),
        "checks do not run after an interrupt"
    );
    let diff = std::fs::read_to_string(artifacts.join("first/diff.patch")).unwrap();
    assert!(
        diff.contains("started.txt"),
        "the diff of the work done is kept"
    );

    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(artifacts.join("summary.json")).unwrap())
            .unwrap();
    let tasks = summary["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 2);
    assert_eq!(tasks[0]["reason"], "interrupted");
    assert_eq!(tasks[1]["reason"], "interrupted");
    assert!(
        tasks[1]["message"]
            .as_str()
            .unwrap()
            .contains("not started")
    );
    assert!(artifacts.join("junit.xml").is_file());
}

#[test]
fn a_signal_during_a_check_stops_it_and_never_reports_a_pass() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    // A unique duration, to find the check's process.
    let marker = format!("{}", 400 + std::process::id() % 500);
    let spec = format!(
        "version: 1\nname: checked\nprompt: p\nworkspace: ws\nisolation: copy\nsandbox: off\nmodel:\n  provider: script\n  script:\n    - text: done\nchecks:\n  - name: slow\n    run: sleep {marker}.5\n  - name: never runs\n    run: 'true'\n"
    );
    write_spec(dir.path(), "task.yaml", &spec);
    let artifacts = dir.path().join("out");
    let mut child = spawn_run(&[dir.path().join("task.yaml")], &artifacts, None, false);
    let started = Instant::now();
    let sleeping = format!("sleep {marker}.5");
    while running(&sleeping).is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the check never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // GitHub's cancel sequence starts with SIGINT.
    let signalled = Instant::now();
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let code = exit_code(&mut child, signalled, Duration::from_secs(20));
    assert_eq!(code, Some(3), "an interrupted run is not a success");
    assert!(
        signalled.elapsed() < Duration::from_secs(8),
        "stopping took {:?}",
        signalled.elapsed()
    );
    assert!(running(&sleeping).is_empty(), "the check outlived drover");
    let lines = transcript(&artifacts.join("checked/transcript.jsonl"));
    let end = lines.last().unwrap();
    assert_eq!(end["type"], "run_end");
    assert_eq!(end["reason"], "interrupted");
    assert!(
        events(&lines, "check").is_empty(),
        "no check is reported as run"
    );
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(artifacts.join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["tasks"][0]["reason"], "interrupted");
    assert_ne!(summary["status"], "passed");
    assert!(artifacts.join("junit.xml").is_file());
}

#[test]
fn a_signal_during_the_workspace_copy_stops_it_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    for d in 0..100 {
        let sub = ws.join(format!("d{d}"));
        std::fs::create_dir_all(&sub).unwrap();
        for f in 0..400 {
            std::fs::write(sub.join(format!("f{f}.txt")), "x").unwrap();
        }
    }
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    write_spec(
        dir.path(),
        "task.yaml",
        "version: 1\nname: big\nprompt: p\nworkspace: ws\nisolation: copy\nsandbox: off\nmodel:\n  provider: script\n  script:\n    - text: done\n",
    );
    let artifacts = dir.path().join("out");
    let mut child = spawn_run(
        &[dir.path().join("task.yaml")],
        &artifacts,
        Some(&tmp),
        false,
    );
    // Signal as soon as the scratch copy exists.
    let started = Instant::now();
    while !std::fs::read_dir(&tmp)
        .unwrap()
        .flatten()
        .any(|e| e.file_name().to_string_lossy().starts_with("drover-ws-"))
    {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no copy started"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let signalled = Instant::now();
    assert!(
        Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .unwrap()
            .success()
    );
    let code = exit_code(&mut child, signalled, Duration::from_secs(20));
    assert_eq!(code, Some(3));
    assert!(
        signalled.elapsed() < Duration::from_secs(3),
        "stopping took {:?}",
        signalled.elapsed()
    );
    let lines = transcript(&artifacts.join("big/transcript.jsonl"));
    let end = lines.last().unwrap();
    assert_eq!(end["type"], "run_end");
    assert_eq!(end["reason"], "interrupted");
    assert!(artifacts.join("big/diff.patch").is_file());
    assert!(artifacts.join("summary.json").is_file());
    // The scratch copy is removed.
    assert!(
        !std::fs::read_dir(&tmp)
            .unwrap()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("drover-ws-")),
        "the scratch copy was left behind"
    );
}

#[test]
fn a_second_signal_exits_at_once_and_the_reports_still_exist() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    write_spec(
        dir.path(),
        "task.yaml",
        "version: 1\nname: twice\nprompt: p\nworkspace: ws\nisolation: copy\nsandbox: off\nmodel:\n  provider: script\n  script:\n    - tool_calls:\n        - { name: Bash, input: { command: sleep 61 } }\n    - text: never reached\npermissions:\n  allow: [Bash]\n",
    );
    let artifacts = dir.path().join("out");
    let mut child = spawn_run(&[dir.path().join("task.yaml")], &artifacts, None, false);
    let started = Instant::now();
    while running("sleep 61").is_empty() {
        assert!(started.elapsed() < Duration::from_secs(30), "never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SIGINT and SIGTERM back to back: the second one lands before the first is done.
    let pid = child.id().to_string();
    for signal in ["-INT", "-TERM"] {
        assert!(
            Command::new("kill")
                .args([signal, &pid])
                .status()
                .unwrap()
                .success()
        );
    }
    let code = exit_code(&mut child, Instant::now(), Duration::from_secs(10));
    assert_ne!(code, Some(0), "a cancelled run is never a success");
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(artifacts.join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["tasks"][0]["reason"], "interrupted", "{summary}");
    assert!(artifacts.join("junit.xml").is_file());
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        running("sleep 61").is_empty(),
        "the command outlived drover"
    );
}
