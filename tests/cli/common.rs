//! Helpers shared by the end-to-end tests: they run the real binary.

use std::path::{Path, PathBuf};

use serde_json::Value;
use sha2::Digest as _;

/// The drover binary, with no stdin (it must never read it) and a clean environment
/// for the variables that would change its behaviour.
pub(crate) fn drover() -> assert_cmd::Command {
    let mut command = assert_cmd::Command::cargo_bin("drover").expect("binary built");
    command.env_remove("GITHUB_ACTIONS");
    command
}

/// [`drover`] with no proxy variables, for tests whose model is a mock server on
/// 127.0.0.1 (a proxy from the machine's environment would intercept its traffic).
pub(crate) fn drover_without_proxy() -> assert_cmd::Command {
    let mut command = drover();
    for var in [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ] {
        command.env_remove(var);
    }
    command
}

/// The repository root (where tasks/ and fixtures/ are).
pub(crate) fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every line of a transcript, parsed; panics (fails the test) on a bad line.
pub(crate) fn transcript(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).expect("transcript exists");
    text.lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("bad line {line:?}: {e}")))
        .collect()
}

/// The events of one type.
pub(crate) fn events<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

/// Write a spec file into `dir` and return its path.
pub(crate) fn write_spec(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write spec");
    path
}

/// The peak resident memory of process `pid` so far (VmHWM), in KiB.
pub(crate) fn peak_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Copy a directory tree (files and directories only).
pub(crate) fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            if entry.file_name() != "target" {
                copy_tree(&entry.path(), &target);
            }
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Processes whose command line holds `marker` (drover's own left out), as `pid: line`.
pub(crate) fn running(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if text.contains(marker) && !text.contains("drover") {
                found.push(format!("{}: {text}", entry.file_name().to_string_lossy()));
            }
        }
    }
    found
}

/// The run's summary.json.
pub(crate) fn summary(artifacts: &Path) -> Value {
    let text = std::fs::read_to_string(artifacts.join("summary.json")).expect("summary.json");
    serde_json::from_str(&text).expect("summary.json is JSON")
}

/// The spec of a task whose scripted model makes one Bash call, `command`, then ends;
/// `extra` is appended as more top-level spec lines (`workspace: ws\n`, …).
pub(crate) fn bash_task(name: &str, command: &str, extra: &str) -> String {
    format!(
        "version: 1\nname: {name}\nprompt: p\n{extra}model:\n  provider: script\n  script:\n    - tool_calls: [{{ name: Bash, input: {{ command: {command:?} }} }}]\n    - text: done\npermissions:\n  allow: [Bash]\n"
    )
}

/// `drover run SPEC --artifacts DIR`, finished.
pub(crate) fn run_spec(spec: &Path, artifacts: &Path) -> std::process::Output {
    run_spec_with(spec, artifacts, &[])
}

/// `drover run SPEC --artifacts DIR EXTRA…`, finished (no proxy: models and pages of
/// these tests are on 127.0.0.1).
pub(crate) fn run_spec_with(spec: &Path, artifacts: &Path, extra: &[&str]) -> std::process::Output {
    drover_without_proxy()
        .arg("run")
        .arg(spec)
        .arg("--artifacts")
        .arg(artifacts)
        .args(extra)
        .output()
        .expect("drover runs")
}

/// `drover resume TASK EXTRA…`, finished. Run from the directory holding the artifacts (`DIR` of `DIR/out/TASK`), where the
/// tests keep the spec: a resume takes the recorded spec only from the current directory.
pub(crate) fn resume_with(task: &Path, extra: &[&str]) -> std::process::Output {
    drover_without_proxy()
        .current_dir(test_dir_of(task))
        .arg("resume")
        .arg(task)
        .args(extra)
        .output()
        .expect("drover runs")
}

/// Assert the process exited with `code`, showing its stderr if not.
pub(crate) fn assert_exit(output: &std::process::Output, code: i32) {
    assert_eq!(
        output.status.code(),
        Some(code),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The scratch directory (made by `tempfile::tempdir()`) that `path` lies in: the
/// ancestor directly under the system's temporary directory, else `path` itself.
pub(crate) fn test_dir_of(path: &Path) -> &Path {
    let temp = std::env::temp_dir();
    let temp = temp.canonicalize().unwrap_or(temp);
    path.ancestors()
        .find(|dir| {
            dir.parent()
                .is_some_and(|parent| parent.canonicalize().is_ok_and(|p| p == temp))
        })
        .unwrap_or(path)
}

// What a test needs beyond drover. The build finds each (build.rs sets `drover_has_X`,
// and a test that needs X carries `#[cfg_attr(not(drover_has_X), ignore = "needs …")]`,
// so where X is missing cargo reports the test ignored, with the reason). Where the build
// found it, the test calls one of these first: if X is gone after all, the test fails.

/// drover's sandbox (`drover_has_sandbox`): the launcher's probe must succeed.
pub(crate) fn require_sandbox() {
    let probe = drover()
        .args([
            "__sandbox-exec",
            "--policy",
            r#"{"writable":["/tmp"],"read_denied":[],"network":false}"#,
            "--probe",
        ])
        .output()
        .unwrap();
    assert!(
        probe.status.success(),
        "drover_has_sandbox is set (the build found Landlock ABI 3+, or CI=true runs every test), but the sandbox cannot be enforced: {}",
        String::from_utf8_lossy(&probe.stderr)
    );
}

/// Root (`drover_has_root`): the test must run as root.
pub(crate) fn require_root() {
    assert!(
        rustix::process::geteuid().is_root(),
        "drover_has_root is set (the build ran as root, or CI=true runs every test), but this test does not run as root"
    );
}

/// The program `name` (`drover_has_<name>`): `name --version` must run.
pub(crate) fn require_program(name: &str) {
    let runs = std::process::Command::new(name)
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success());
    assert!(
        runs,
        "drover_has_{name} is set (the build found {name}, or CI=true runs every test), but `{name} --version` does not run; install it (.ci/run does)"
    );
}

/// A file `.ci/run` installs (`drover_has_node_servers`, `drover_has_python_mcp`, …),
/// which the build found: it must still be there.
pub(crate) fn require_installed(relative: &str) -> PathBuf {
    let path = repo().join(relative);
    assert!(
        path.is_file(),
        "the build found {relative} (or CI=true runs every test), but it is not there; run .ci/run, which installs it"
    );
    path
}

/// `drover run SPEC` through `command` (drover itself, or setpriv in front of it), with a
/// plain PATH and HOME in `dir` and artifacts in `dir/out`, for a task named `attack`;
/// it must pass. Its tool results, in order.
pub(crate) fn run_attack(
    mut command: std::process::Command,
    dir: &Path,
    spec: &Path,
) -> Vec<String> {
    let output = command
        .arg("run")
        .arg(spec)
        .arg("--artifacts")
        .arg(dir.join("out"))
        .env_remove("GITHUB_ACTIONS")
        .env("HOME", dir)
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let lines = transcript(&dir.join("out/attack/transcript.jsonl"));
    events(&lines, "tool_result")
        .iter()
        .map(|r| r["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// `lines` written again as a transcript with a valid hash chain (anyone can compute
/// one: it proves integrity, not authorship).
pub(crate) fn rechained(lines: &[Value]) -> String {
    let hex = |bytes: &[u8]| -> String {
        sha2::Sha256::digest(bytes)
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect()
    };
    let mut prev = hex(b"");
    let mut out = String::new();
    for line in lines {
        let mut object = line.as_object().unwrap().clone();
        object.remove("prev");
        let body = serde_json::to_string(&object).unwrap();
        let chained = format!("{{\"prev\":\"{prev}\",{}", &body[1..]);
        prev = hex(chained.as_bytes());
        out.push_str(&chained);
        out.push('\n');
    }
    out
}
