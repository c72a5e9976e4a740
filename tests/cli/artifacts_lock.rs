//! One artifacts directory, one owner (README, "The artifacts directory"): a second run
//! on a directory a live run holds is refused at once with exit 2 naming the holder, a
//! lock a dead run left is taken over with a note, and runs with directories of their
//! own, sharing one temp directory, never take each other's scratch copies.

use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{drover, write_spec};

/// A pid no process has (beyond the kernel's default pid_max of 4,194,304).
const GONE: u32 = 4_999_999;

/// A task that writes a file into its scratch copy, sleeps `seconds` in Bash, and then
/// checks the file is still there (it is not, should another run sweep the copy).
fn sleeping_spec(name: &str, seconds: &str) -> String {
    format!(
        "version: 1\nname: {name}\nprompt: p\nworkspace: ws\nisolation: copy\nsandbox: off\nmodel:\n  provider: script\n  script:\n    - tool_calls:\n        - {{ name: Write, input: {{ file_path: started.txt, content: x }} }}\n        - {{ name: Bash, input: {{ command: sleep {seconds} }} }}\n    - text: done\npermissions:\n  allow: [Bash, Write]\nchecks:\n  - name: the copy is still there\n    run: test -f started.txt\n"
    )
}

/// `drover run SPECS --artifacts OUT --jobs 4`, in the background, with `tmpdir` as its
/// temp directory.
fn spawn_run(specs: &[PathBuf], artifacts: &Path, tmpdir: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_drover"))
        .arg("run")
        .args(specs)
        .arg("--artifacts")
        .arg(artifacts)
        .args(["--jobs", "4", "--quiet"])
        .env_remove("GITHUB_ACTIONS")
        .env("TMPDIR", tmpdir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Wait for `child` (at most a minute); its exit code and stderr.
fn finish(child: Child) -> (Option<i32>, String) {
    let output = child.wait_with_output().unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// Every task folder's transcript in `artifacts` verifies; how many there are.
fn verify_all(artifacts: &Path) -> usize {
    let mut verified = 0;
    for entry in std::fs::read_dir(artifacts).unwrap().flatten() {
        let transcript = entry.path().join("transcript.jsonl");
        if transcript.is_file() {
            drover()
                .args(["transcript", "verify"])
                .arg(&transcript)
                .assert()
                .success();
            verified += 1;
        }
    }
    verified
}

/// Wait until the lock file in `artifacts` names `pid`.
fn wait_for_lock(artifacts: &Path, pid: u32) {
    let started = Instant::now();
    let wanted = format!("\"pid\":{pid},");
    while !std::fs::read_to_string(artifacts.join(".drover.lock"))
        .is_ok_and(|text| text.contains(&wanted))
    {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the first run never took its lock"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_second_run_on_a_held_artifacts_directory_is_refused_every_time() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    std::fs::create_dir_all(&tmp).unwrap();
    let specs: Vec<PathBuf> = (0..4)
        .map(|n| {
            write_spec(
                dir.path(),
                &format!("t{n}.yaml"),
                &sleeping_spec(&format!("t{n}"), "2"),
            )
        })
        .collect();
    let other = write_spec(dir.path(), "other.yaml", &sleeping_spec("other", "0"));
    let artifacts = dir.path().join("out");
    let first = spawn_run(&specs, &artifacts, &tmp);
    wait_for_lock(&artifacts, first.id());
    for _ in 0..3 {
        let started = Instant::now();
        let second = drover()
            .arg("run")
            .arg(&other)
            .arg("--artifacts")
            .arg(&artifacts)
            .env("TMPDIR", &tmp)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&second.stderr);
        assert_eq!(second.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains(&format!(
                "is in use by drover (pid {}, started ",
                first.id()
            )),
            "{stderr}"
        );
        assert!(stderr.contains("another --artifacts directory"), "{stderr}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "refused at once, not after the first run"
        );
    }
    let (code, stderr) = finish(first);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        !artifacts.join("other").exists(),
        "the refused run wrote nothing there"
    );
    assert_eq!(verify_all(&artifacts), 4);
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(artifacts.join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["tasks"].as_array().unwrap().len(), 4);
    // Once the first run is over, the directory is free again.
    drover()
        .arg("run")
        .arg(&other)
        .arg("--artifacts")
        .arg(&artifacts)
        .env("TMPDIR", &tmp)
        .assert()
        .success();
}

#[test]
fn a_lock_left_by_a_dead_run_is_taken_over_with_a_note_and_is_no_ones_work() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    // The artifacts directory inside the workspace (as the default one is), worked on
    // in place: the lock file is in no diff.
    let artifacts = ws.join("out");
    std::fs::create_dir_all(&artifacts).unwrap();
    std::fs::write(
        artifacts.join(".drover.lock"),
        format!(
            "{{\"pid\":{GONE},\"started\":\"2020-01-02T03:04:05Z\",\"host\":\"gone-host\",\"command\":\"drover run old.yaml\"}}\n"
        ),
    )
    .unwrap();
    let spec = write_spec(
        dir.path(),
        "t.yaml",
        "version: 1\nname: t\nprompt: p\nworkspace: ws\nsandbox: off\nmodel:\n  provider: script\n  script:\n    - tool_calls:\n        - { name: Write, input: { file_path: made.txt, content: x } }\n    - text: done\npermissions:\n  allow: [Write]\n",
    );
    let output = drover()
        .arg("run")
        .arg(&spec)
        .arg("--artifacts")
        .arg(&artifacts)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "drover: note: took over the lock on {} left by drover (pid {GONE}, started 2020-01-02T03:04:05Z on gone-host), running `drover run old.yaml`, which is no longer running",
            artifacts.display()
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("did not write"), "not swept: {stderr}");
    let lock = std::fs::read_to_string(artifacts.join(".drover.lock")).unwrap();
    assert_eq!(lock, "", "a run that ends names no holder");
    let diff = std::fs::read_to_string(artifacts.join("t/diff.patch")).unwrap();
    assert!(diff.contains("made.txt"), "{diff}");
    assert!(!diff.contains(".drover.lock"), "{diff}");
    let summary = std::fs::read_to_string(artifacts.join("summary.json")).unwrap();
    assert!(!summary.contains(".drover.lock"), "{summary}");
    assert_eq!(verify_all(&artifacts), 1);
    let again = drover()
        .arg("run")
        .arg(&spec)
        .arg("--artifacts")
        .arg(&artifacts)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(
        !stderr.contains("took over"),
        "the run before ended: {stderr}"
    );
}

#[test]
fn runs_with_directories_of_their_own_never_take_each_others_scratch_copies() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    std::fs::create_dir_all(&tmp).unwrap();
    // A scratch copy of a live drover this one cannot see by pid (another pid
    // namespace sharing /tmp): it holds the directory's lock.
    let elsewhere = tmp.join(format!("drover-ws-{GONE}-live"));
    std::fs::create_dir(&elsewhere).unwrap();
    let held = std::fs::File::open(&elsewhere).unwrap();
    rustix::fs::flock(
        held.as_fd(),
        rustix::fs::FlockOperation::NonBlockingLockExclusive,
    )
    .unwrap();
    // A killed drover's, which nothing holds: it goes.
    let dead = tmp.join(format!("drover-ws-{GONE}-dead"));
    std::fs::create_dir(&dead).unwrap();
    let runs: Vec<(PathBuf, Child)> = (0..3)
        .map(|run| {
            let specs: Vec<PathBuf> = (0..2)
                .map(|n| {
                    write_spec(
                        dir.path(),
                        &format!("r{run}t{n}.yaml"),
                        &sleeping_spec(&format!("r{run}t{n}"), "1"),
                    )
                })
                .collect();
            let artifacts = dir.path().join(format!("out{run}"));
            let child = spawn_run(&specs, &artifacts, &tmp);
            (artifacts, child)
        })
        .collect();
    for (artifacts, child) in runs {
        let (code, stderr) = finish(child);
        assert_eq!(code, Some(0), "{stderr}");
        assert_eq!(verify_all(&artifacts), 2);
    }
    assert!(elsewhere.exists(), "a held scratch copy is a live run's");
    assert!(!dead.exists(), "a dead run's scratch copy goes");
    drop(held);
}
