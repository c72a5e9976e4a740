//! Batch runs end to end: many tasks at once without cross-talk, the worst outcome as
//! the exit code, `isolation: worktree`, and progress output.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{drover, events, summary, transcript, write_spec};

/// Every file under `root` with its content (`.git/` left out).
fn tree(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.file_name().is_some_and(|n| n == ".git") {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else {
                let content = std::fs::read(&path).unwrap();
                files.insert(path.strip_prefix(root).unwrap().to_path_buf(), content);
            }
        }
    }
    files
}

/// A small workspace with an ignored tree that copies must leave out.
fn fixture(root: &Path, name: &str) -> PathBuf {
    let ws = root.join(name);
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::create_dir_all(ws.join("target/debug")).unwrap();
    std::fs::write(ws.join(".gitignore"), "/target\n").unwrap();
    std::fs::write(ws.join("target/debug/big.bin"), "ignored").unwrap();
    std::fs::write(ws.join("README.md"), format!("# {name}\n")).unwrap();
    std::fs::write(ws.join("src/lib.rs"), "pub fn f() -> u32 { 1 }\n").unwrap();
    ws
}

#[test]
fn twenty_four_copy_tasks_at_jobs_4_keep_to_themselves() {
    let dir = tempfile::tempdir().unwrap();
    let workspaces: Vec<PathBuf> = (0..3)
        .map(|i| fixture(dir.path(), &format!("ws{i}")))
        .collect();
    let before: Vec<_> = workspaces.iter().map(|ws| tree(ws)).collect();
    let tasks = dir.path().join("tasks");
    std::fs::create_dir(&tasks).unwrap();
    let count = 24;
    for i in 0..count {
        write_spec(
            &tasks,
            &format!("t{i:02}.yaml"),
            &format!(
                r#"version: 1
name: task-{i:02}
prompt: write your file
workspace: ../ws{}
isolation: copy
model:
  provider: script
  script:
    - text: writing
      tool_calls:
        - {{ name: Write, input: {{ file_path: out/task-{i:02}.txt, content: "task {i:02}\n" }} }}
        - {{ name: Bash, input: {{ command: "echo task-{i:02} && ls out" }} }}
    - text: done
permissions:
  allow: ["Write(out/**)", "Bash(echo *)", "Bash(ls *)"]
checks:
  - name: own file only
    run: test "$(ls out)" = task-{i:02}.txt && ! test -e target
"#,
                i % 3
            ),
        );
    }
    let artifacts = dir.path().join("out");
    let output = drover()
        .args(["run", "--jobs", "4", "--quiet", "--artifacts"])
        .arg(&artifacts)
        .arg(&tasks)
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    for i in 0..count {
        let name = format!("task-{i:02}");
        let task_dir = artifacts.join(&name);
        let patch = std::fs::read_to_string(task_dir.join("diff.patch")).unwrap();
        assert!(
            patch.contains(&format!("b/out/{name}.txt"))
                && patch.contains(&format!("+task {i:02}")),
            "{name}: {patch}"
        );
        assert_eq!(
            patch.matches("diff --git").count(),
            1,
            "{name}: only its own change: {patch}"
        );
        let lines = transcript(&task_dir.join("transcript.jsonl"));
        assert_eq!(lines[0]["task"], name.as_str());
        let calls = events(&lines, "tool_call");
        assert_eq!(calls.len(), 2, "{name}");
        for call in calls {
            let input = call["input"].to_string();
            assert!(input.contains(&name), "{name} ran {input}");
            for other in (0..count).filter(|&j| j != i) {
                assert!(
                    !input.contains(&format!("task-{other:02}")),
                    "{name}: {input}"
                );
            }
        }
        let bash = events(&lines, "tool_result")[1]["content"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(
            bash.contains(&format!("{name}.txt")) && bash.matches(".txt").count() == 1,
            "{name} sees only its own file: {bash}"
        );
        assert_eq!(events(&lines, "check")[0]["passed"], true, "{name}");
    }
    let report = summary(&artifacts);
    let names: Vec<&str> = report["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    let expected: Vec<String> = (0..count).map(|i| format!("task-{i:02}")).collect();
    assert_eq!(names, expected, "reports in spec order");
    for (ws, before) in workspaces.iter().zip(before) {
        assert_eq!(tree(ws), before, "{} untouched", ws.display());
    }
}

/// A spec that writes `file` and checks `check`.
fn simple(name: &str, check: &str) -> String {
    format!(
        "version: 1\nname: {name}\nprompt: p\nworkspace: ../ws\nisolation: copy\nmodel:\n  provider: script\n  script:\n    - tool_calls: [{{ name: Write, input: {{ file_path: a.txt, content: x }} }}]\n    - text: done\npermissions:\n  allow: [Write]\nchecks:\n  - name: check\n    run: {check}\n"
    )
}

#[test]
fn the_exit_code_is_the_worst_outcome_and_an_error_stops_no_other_task() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    let tasks = dir.path().join("tasks");
    std::fs::create_dir(&tasks).unwrap();
    write_spec(&tasks, "a.yaml", &simple("passes", "true"));
    write_spec(&tasks, "b.yaml", &simple("fails", "false"));
    let artifacts = dir.path().join("out");
    let run = |artifacts: &Path| {
        drover()
            .args(["run", "--jobs", "3", "--quiet", "--artifacts"])
            .arg(artifacts)
            .arg(&tasks)
            .output()
            .unwrap()
    };
    assert_eq!(
        run(&artifacts).status.code(),
        Some(1),
        "passed + failed → 1"
    );

    // The third task cannot be run (its setup fails): drover cannot do its job.
    let broken = simple("broken", "true").replace(
        "model:",
        "setup:\n  - name: prepare\n    run: exit 7\nmodel:",
    );
    write_spec(&tasks, "c.yaml", &broken);
    let artifacts = dir.path().join("out2");
    let output = run(&artifacts);
    assert_eq!(output.status.code(), Some(3), "passed + failed + error → 3");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("broken ERROR (setup_failed"), "{stdout}");
    let report = summary(&artifacts);
    let status = |name: &str| {
        report["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .map(|t| t["status"].as_str().unwrap().to_string())
    };
    assert_eq!(status("passes").as_deref(), Some("passed"));
    assert_eq!(status("fails").as_deref(), Some("failed"));
    assert_eq!(status("broken").as_deref(), Some("error"));
    assert!(artifacts.join("passes/transcript.jsonl").is_file());
}

#[test]
fn in_place_tasks_sharing_a_workspace_are_refused_with_jobs() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("ws/sub")).unwrap();
    let none = |name: &str, ws: &str| {
        format!(
            "version: 1\nname: {name}\nprompt: p\nworkspace: {ws}\nmodel:\n  provider: script\n  script: [{{text: hi}}]\n"
        )
    };
    write_spec(dir.path(), "a.yaml", &none("a", "ws"));
    // The same directory spelled differently, and one nested inside it, copied.
    write_spec(dir.path(), "b.yaml", &none("b", "ws/sub/.."));
    let copy = none("c", "ws/sub").replace("model:", "isolation: copy\nmodel:");
    write_spec(dir.path(), "c.yaml", &copy);
    let output = drover()
        .args(["run", "--jobs", "2", "--artifacts"])
        .arg(dir.path().join("out"))
        .arg(dir.path().join("a.yaml"))
        .arg(dir.path().join("b.yaml"))
        .arg(dir.path().join("c.yaml"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("tasks a and b share"), "{stderr}");
    // One line per task, naming the first it shares with and how many more: a thousand
    // tasks sharing one workspace give a thousand lines, not one per pair.
    assert!(
        stderr.contains("tasks a and c (and 1 more) share"),
        "{stderr}"
    );
    assert_eq!(
        stderr.matches(" share the workspace ").count(),
        2,
        "{stderr}"
    );
    assert!(!dir.path().join("out").exists(), "nothing ran");
}

fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "drover test")
        .env("GIT_AUTHOR_EMAIL", "test@example.com")
        .env("GIT_COMMITTER_NAME", "drover test")
        .env("GIT_COMMITTER_EMAIL", "test@example.com")
        .output()
        .unwrap();
    assert!(output.status.success(), "git {args:?}: {output:?}");
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn worktree_tasks_work_at_head_and_leave_no_worktree_behind() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(repo.join("proj")).unwrap();
    std::fs::write(repo.join("proj/notes.txt"), "committed\n").unwrap();
    git(&repo, &["init", "--quiet"]);
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "--quiet", "-m", "start"]);
    // Uncommitted: the worktree must not see it.
    std::fs::write(repo.join("proj/notes.txt"), "uncommitted\n").unwrap();
    let spec = |name: &str, check: &str| {
        format!(
            r#"version: 1
name: {name}
prompt: p
workspace: repo/proj
isolation: worktree
model:
  provider: script
  script:
    - tool_calls:
        - {{ name: Read, input: {{ file_path: notes.txt }} }}
        - {{ name: Write, input: {{ file_path: new.txt, content: "from {name}\n" }} }}
        - {{ name: Bash, input: {{ command: pwd }} }}
    - text: done
permissions:
  allow: [Write, "Bash(pwd)"]
checks:
  - name: check
    run: {check}
"#
        )
    };
    write_spec(dir.path(), "a.yaml", &spec("wt-pass", "test -f new.txt"));
    write_spec(dir.path(), "b.yaml", &spec("wt-fail", "false"));
    let artifacts = dir.path().join("out");
    let output = drover()
        .args(["run", "--jobs", "2", "--quiet", "--artifacts"])
        .arg(&artifacts)
        .arg(dir.path().join("a.yaml"))
        .arg(dir.path().join("b.yaml"))
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report = summary(&artifacts);
    assert_eq!(report["tasks"][0]["status"], "passed");
    assert_eq!(report["tasks"][1]["status"], "failed");
    for name in ["wt-pass", "wt-fail"] {
        let lines = transcript(&artifacts.join(name).join("transcript.jsonl"));
        let results = events(&lines, "tool_result");
        let read = results[0]["content"].as_str().unwrap();
        assert!(
            read.contains("committed") && !read.contains("uncommitted"),
            "{read}"
        );
        let pwd = results[2]["content"].as_str().unwrap().trim().to_string();
        assert!(pwd.ends_with("/proj"), "the same subdirectory: {pwd}");
        assert!(!Path::new(&pwd).exists(), "{name}: the worktree is gone");
        let patch = std::fs::read_to_string(artifacts.join(name).join("diff.patch")).unwrap();
        assert!(patch.contains("b/new.txt"), "{patch}");
        assert_eq!(patch.matches("diff --git").count(), 1, "{patch}");
    }
    let list = git(&repo, &["worktree", "list", "--porcelain"]);
    assert_eq!(list.matches("worktree ").count(), 1, "{list}");
    assert!(!repo.join("proj/new.txt").exists());
    assert_eq!(
        std::fs::read_to_string(repo.join("proj/notes.txt")).unwrap(),
        "uncommitted\n"
    );
}

#[test]
fn worktree_isolation_outside_a_repository_is_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    let spec = write_spec(
        dir.path(),
        "t.yaml",
        "version: 1\nname: t\nprompt: p\nworkspace: ws\nisolation: worktree\nmodel:\n  provider: script\n  script: [{text: hi}]\n",
    );
    let output = drover()
        .arg("run")
        .arg(&spec)
        .arg("--artifacts")
        .arg(dir.path().join("out"))
        .env("GIT_CEILING_DIRECTORIES", dir.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("t.yaml") && stderr.contains("git repository"),
        "{stderr}"
    );
}

#[test]
fn progress_off_a_terminal_is_timestamped_lines_and_quiet_leaves_only_final_lines() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    let spec = write_spec(
        dir.path(),
        "p.yaml",
        "version: 1\nname: progress-task\nprompt: p\nworkspace: ws\nisolation: copy\nmodel:\n  provider: script\n  script:\n    - tool_calls:\n        - { name: Write, input: { file_path: a.txt, content: x } }\n        - { name: Bash, input: { command: rm a.txt } }\n    - text: done\npermissions:\n  allow: [Write]\nchecks:\n  - name: file there\n    run: test -f a.txt\n",
    );
    let run = |quiet: bool| {
        let mut command = drover();
        command.arg("run").arg(&spec).arg("--artifacts");
        command.arg(dir.path().join("out")).env("NO_COLOR", "1");
        if quiet {
            command.arg("--quiet");
        }
        command.output().unwrap()
    };
    let quiet = run(true);
    assert_eq!(quiet.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&quiet.stderr), "", "quiet stderr");
    let stdout = String::from_utf8_lossy(&quiet.stdout);
    assert!(
        stdout.starts_with("drover: progress-task passed"),
        "{stdout}"
    );
    assert_eq!(stdout.lines().count(), 3, "{stdout}");
    assert!(
        stdout.ends_with(
            "drover: 1 task: 1 passed, 0 failed, 0 errors — exit 0: every task passed\n"
        ),
        "{stdout}"
    );

    let loud = run(false);
    assert_eq!(loud.status.code(), Some(0));
    assert_eq!(loud.stdout, quiet.stdout, "the final lines are the same");
    let stderr = String::from_utf8_lossy(&loud.stderr);
    assert!(
        !stderr.contains('\x1b'),
        "no colours or cursor codes: {stderr}"
    );
    let lines: Vec<&str> = stderr.lines().collect();
    let stamped = regex::Regex::new(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ progress-task: ").unwrap();
    assert!(lines.iter().all(|l| stamped.is_match(l)), "{stderr}");
    for needle in [
        "started (script/",
        "turn 1: Write, Bash",
        "denied Bash:",
        "turn 2: no tool calls",
        "check \"file there\" passed",
        "finished: passed (end_turn) — 2 turns",
    ] {
        assert!(stderr.contains(needle), "{needle} in {stderr}");
    }

    let replay = drover()
        .current_dir(dir.path())
        .arg("replay")
        .arg(dir.path().join("out/progress-task/transcript.jsonl"))
        .arg("--artifacts")
        .arg(dir.path().join("replayed"))
        .arg("--quiet")
        .output()
        .unwrap();
    assert_eq!(replay.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&replay.stderr), "", "quiet replay");
    assert!(String::from_utf8_lossy(&replay.stdout).starts_with("drover: progress-task passed"));
}
