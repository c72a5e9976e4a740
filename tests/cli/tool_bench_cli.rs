//! `drover tool` (one read-only call as a process) and `drover bench`, end to end. These
//! check behaviour only: the figures `bench` prints are never asserted.

use crate::common;

use common::drover;

/// A small tree: two Rust files, one ignored by .gitignore.
fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::create_dir_all(root.join("target")).unwrap();
    std::fs::write(root.join("src/lib.rs"), "fn add() {}\nunsafe fn raw() {}\n").unwrap();
    std::fs::write(root.join("src/main.rs"), "fn main() { self.go(); }\n").unwrap();
    std::fs::write(root.join("target/gen.rs"), "unsafe fn gen() {}\n").unwrap();
    std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
    dir
}

#[test]
fn tool_grep_prints_the_result_and_exits_0() {
    let dir = tree();
    let output = drover()
        .args([
            "tool",
            "Grep",
            "--input",
            r#"{"pattern":"fn","output_mode":"content"}"#,
        ])
        .arg("--workspace")
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert_eq!(
        stdout,
        "src/lib.rs:1:fn add() {}\nsrc/lib.rs:2:unsafe fn raw() {}\nsrc/main.rs:1:fn main() { self.go(); }\n"
    );
    // Relative to the current directory when --workspace is not given.
    let output = drover()
        .args(["tool", "Glob", "--input", r#"{"pattern":"**/*.rs"}"#])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let mut lines: Vec<_> = std::str::from_utf8(&output.stdout)
        .unwrap()
        .lines()
        .collect();
    lines.sort();
    assert_eq!(lines, ["src/lib.rs", "src/main.rs"]);
}

#[test]
fn tool_error_results_exit_1_and_bad_calls_exit_2() {
    let dir = tree();
    let run = |args: &[&str]| {
        drover()
            .args(args)
            .arg("--workspace")
            .arg(dir.path())
            .output()
            .unwrap()
    };
    let output = run(&["tool", "Grep", "--input", r#"{"pattern":"fn ("}"#]);
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stdout).contains("Invalid regex"));

    let refused = run(&["tool", "Bash", "--input", r#"{"command":"touch x"}"#]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("not read-only"));
    assert!(!dir.path().join("x").exists());

    for (args, says) in [
        (["tool", "Nope", "--input", "{}"], "unknown tool"),
        (["tool", "Grep", "--input", "{"], "not valid JSON"),
        (
            ["tool", "Grep", "--input", r#"{"pattern":1}"#],
            "InputValidationError",
        ),
    ] {
        let output = run(&args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}

#[test]
fn bench_prints_a_table_and_exits_0_without_rg_or_fd() {
    let dir = tree();
    let output = drover()
        .args(["bench", "--runs", "1", "--tree"])
        .arg(dir.path())
        .env("PATH", "")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("apt-get install ripgrep fd-find"),
        "{stdout}"
    );
    for row in [
        "Grep literal files_with_matches",
        "Grep literal content",
        "Grep regex count",
        "Glob **/*.rs",
    ] {
        let line = stdout
            .lines()
            .find(|line| line.starts_with(row))
            .unwrap_or_else(|| panic!("no row {row}: {stdout}"));
        assert!(line.contains("skip"), "{line}");
    }
}

#[test]
fn bench_refuses_a_missing_tree() {
    let dir = tree();
    let output = drover()
        .args(["bench", "--runs", "1", "--tree"])
        .arg(dir.path().join("missing"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn bench_replay_times_a_replay_against_its_run() {
    let scratch = tempfile::tempdir().unwrap();
    let output = common::drover()
        .args([
            "bench",
            "--replay",
            "--calls",
            "25",
            "--runs",
            "1",
            "--scratch",
        ])
        .arg(scratch.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("replay 25 calls --strict"), "{stdout}");
    assert!(stdout.contains("25 tool calls in 3 turns"), "{stdout}");
}

/// The batch bench in its small form (50 tasks over a 100-file repository, `--jobs 1,4`):
/// it keeps working, leaves nothing behind and finds every task in the JUnit report. Its
/// figures (times, memory) are not asserted.
#[test]
fn bench_batch_runs_both_isolations_and_leaves_nothing_behind() {
    let scratch = tempfile::tempdir().unwrap();
    let output = common::drover()
        .args([
            "bench",
            "--batch",
            "--tasks",
            "50",
            "--files",
            "100",
            "--jobs-list",
            "1,4",
            "--check",
            "--scratch",
        ])
        .arg(scratch.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(!stdout.contains("!!!"), "{stdout}");
    for isolation in ["copy", "worktree"] {
        for jobs in ["1", "4"] {
            let row = stdout
                .lines()
                .find(|line| {
                    let mut cells = line.split_whitespace();
                    cells.next() == Some(isolation) && cells.next() == Some(jobs)
                })
                .unwrap_or_else(|| panic!("no row {isolation} --jobs {jobs}: {stdout}"));
            let cells: Vec<&str> = row.split_whitespace().collect();
            assert_eq!(cells[2], "50", "{row}");
            // left/bytes, junit tests/failures/errors, result.
            assert_eq!(cells[cells.len() - 3..], ["0/0", "50/0/0", "ok"], "{row}");
        }
    }
    // Nothing of the batches in the scratch directory's runs but what was asked for.
    for run in std::fs::read_dir(scratch.path().join("batch-runs")).unwrap() {
        let run = run.unwrap().path();
        assert_eq!(std::fs::read_dir(run.join("tmp")).unwrap().count(), 0);
        assert!(run.join("artifacts/junit.xml").is_file());
    }
}

/// `bench --proxy --origin-mbps`: the server sends at that pace, so 2 MB at 20 MB/s take
/// at least 100 ms on every route, and the table says the pace.
#[test]
fn bench_proxy_paces_its_server_at_origin_mbps() {
    let output = common::drover()
        .args([
            "bench",
            "--proxy",
            "--megabytes",
            "2",
            "--runs",
            "1",
            "--origin-mbps",
            "20",
        ])
        .env("PATH", "")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("sending at 20 MB/s"), "{stdout}");
    for row in [
        "direct ",
        "proxy CONNECT ",
        "proxy plain HTTP ",
        "proxy SOCKS5 ",
    ] {
        let line = stdout
            .lines()
            .find(|line| line.starts_with(row))
            .unwrap_or_else(|| panic!("no row {row}: {stdout}"));
        let ms: f64 = line[row.len()..]
            .split_whitespace()
            .next()
            .and_then(|ms| ms.parse().ok())
            .unwrap_or_else(|| panic!("no time in {line}"));
        assert!(
            ms >= 100.0,
            "{row} took {ms} ms, faster than the pace: {stdout}"
        );
    }
}

/// `bench --proxy` in its small form (1 MB, one round after the warm-up), with drover's
/// own client (no curl on PATH): every download through the proxy arrives whole and the
/// proxy reports each one, allowed. The figures are not asserted.
#[test]
fn bench_proxy_downloads_through_every_route_and_the_proxy_reports_each() {
    let output = common::drover()
        .args(["bench", "--proxy", "--megabytes", "1", "--runs", "1"])
        .env("PATH", "")
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
        stdout.contains("client: drover's own (curl is not on PATH)"),
        "{stdout}"
    );
    for row in [
        "direct ",
        "proxy CONNECT ",
        "proxy plain HTTP ",
        "proxy SOCKS5 ",
        "proxy peak RSS ",
    ] {
        assert!(
            stdout.lines().any(|line| line.starts_with(row)),
            "no row {row}: {stdout}"
        );
    }
    assert!(stdout.contains("as fast as loopback goes"), "{stdout}");
    // Two rounds (the warm-up and one) of three routes through the proxy.
    assert!(
        stdout.contains("the proxy reported 6 connections (6 expected), 6 allowed"),
        "{stdout}"
    );
    assert!(!stdout.contains("!!!"), "{stdout}");
}

/// The hidden command `bench --proxy` runs refuses an entry that is no `host:port`.
#[test]
fn the_bench_proxy_process_refuses_an_entry_without_a_port() {
    let output = common::drover()
        .args(["__egress-proxy-bench", "--allow", "localhost"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("write host:port"));
}
