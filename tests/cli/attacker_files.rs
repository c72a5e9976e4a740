//! Attacker suite, drover's own file tools: a path the policy judged is the path the tool
//! acts on. An agent process that flips a directory between a real directory and a
//! symlink out of the workspace, while the model calls Read, Write, Edit, Grep, Glob and
//! LS through it, never gets a byte read or written outside. A future change must keep
//! every test here green.

use crate::common;

use common::{drover, events, transcript, write_spec};
use serde_json::{Value, json};

/// What the outside file holds; no tool result may ever show it.
const SECRET: &str = "OUTSIDE-SECRET-7f3a";

/// How many calls of each kind race the flipper. Measured on the code before the fix
/// (which resolved the path again when it acted): Read escaped about 1 call in 10 and
/// Write a few in 600, so these counts fail it every time.
const READS: usize = 400;
const WRITES: usize = 1200;

/// The flipper: `d` is by turns a real directory and a symlink to `/`, swapped by renames
/// so that it is almost always one or the other. The real directory mirrors `inner` (the
/// outside directory's path below `/`), so `d/<inner>/f` names a file either way.
fn flipper(inner: &str) -> String {
    format!(
        "mkdir -p real/{inner} && echo inside > real/{inner}/f && ln -sfn / link && \
         while :; do mv -T real d; mv -T d real; mv -T link d; mv -T d link; done"
    )
}

/// The `script:` entries of a scripted model: one turn per list of calls, then "done".
fn script_of(turns: &[Vec<Value>]) -> String {
    let mut script = String::new();
    for turn in turns {
        script.push_str(&format!(
            "    - tool_calls: {}\n",
            Value::Array(turn.clone())
        ));
    }
    script.push_str("    - text: done\n");
    script
}

/// `drover run SPEC --artifacts OUT`, waited for.
fn run_into(spec: &std::path::Path, out: &std::path::Path) -> std::process::Output {
    drover()
        .arg("run")
        .arg(spec)
        .arg("--artifacts")
        .arg(out)
        .output()
        .unwrap()
}

fn call(name: &str, input: Value) -> Value {
    json!({ "name": name, "input": input })
}

#[test]
fn a_directory_flipped_to_a_symlink_never_redirects_a_file_tool() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let outside = root.join("outside");
    std::fs::create_dir_all(outside.join("sub")).unwrap();
    std::fs::write(outside.join("sub/f"), SECRET).unwrap();
    // A name only the outside directory has, for the listings (LS, Glob) to leak.
    std::fs::write(outside.join(format!("sub/{SECRET}.name")), "").unwrap();
    std::fs::create_dir_all(root.join("ws")).unwrap();
    let inner = format!("{}/sub", outside.display())
        .trim_start_matches('/')
        .to_string();

    let start = vec![call(
        "Bash",
        json!({ "command": flipper(&inner), "run_in_background": true }),
    )];
    let settle = vec![call("Bash", json!({ "command": "sleep 0.3" }))];
    let mut reads = Vec::new();
    for i in 0..READS {
        reads.push(match i % 5 {
            3 => call("Glob", json!({ "pattern": "**/*", "path": format!("d/{inner}") })),
            0 | 1 => call("Read", json!({ "file_path": format!("d/{inner}/f") })),
            2 => call(
                "Grep",
                json!({ "pattern": "SECRET", "path": format!("d/{inner}"), "output_mode": "content" }),
            ),
            _ => call("LS", json!({ "path": format!("d/{inner}") })),
        });
    }
    let mut writes = Vec::new();
    for i in 0..WRITES {
        writes.push(call(
            "Write",
            json!({ "file_path": format!("d/{inner}/new-{i}.txt"), "content": "planted" }),
        ));
    }
    let script = script_of(&[start, settle, reads, writes]);
    let body = format!(
        "version: 1\nname: race\nprompt: p\nworkspace: ws\nmodel:\n  provider: script\n  script:\n{script}\
         permissions:\n  allow: [Bash, Write]\n  deny: [\"Read(/{}/**)\"]\n",
        outside.display()
    );
    let spec = write_spec(&root, "task.yaml", &body);
    let output = run_into(&spec, &root.join("out"));
    let stderr = String::from_utf8_lossy(&output.stderr);

    let planted: Vec<String> = std::fs::read_dir(outside.join("sub"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name != "f" && !name.starts_with(SECRET))
        .collect();
    assert!(
        planted.is_empty(),
        "Write acted outside the workspace: {planted:?}"
    );
    let lines = transcript(&root.join("out/race/transcript.jsonl"));
    let results = events(&lines, "tool_result");
    assert_eq!(results.len(), 2 + READS + WRITES, "{stderr}");
    let leaked: Vec<&str> = results
        .iter()
        .filter_map(|r| r["content"].as_str())
        .filter(|content| content.contains(SECRET))
        .collect();
    assert!(
        leaked.is_empty(),
        "a tool returned the outside file or its name: {:?}",
        leaked.first()
    );
    // The race was really run: calls met both states of `d`.
    let contents: Vec<&str> = results
        .iter()
        .filter_map(|r| r["content"].as_str())
        .collect();
    let saw_directory = contents
        .iter()
        .any(|c| c.contains("inside") || c.contains("File created successfully"));
    let saw_link = contents.iter().any(|c| {
        c.contains("changed while drover acted")
            || c.contains("outside the workspace")
            || c.contains("is denied by rule")
    });
    assert!(
        saw_directory && saw_link,
        "the flipper did not run: {:?}",
        &contents[..contents.len().min(12)]
    );
}

#[test]
fn a_symlink_planted_in_the_workspace_is_not_a_way_out_for_writes() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let outside = root.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("target.sh"), "echo original").unwrap();
    std::fs::create_dir_all(root.join("ws")).unwrap();
    let calls = [
        vec![call(
            "Bash",
            json!({ "command": format!("ln -s {} out && ln -s {}/target.sh script.sh", outside.display(), outside.display()) }),
        )],
        vec![call(
            "Write",
            json!({ "file_path": "out/new.sh", "content": "echo planted" }),
        )],
        vec![call("Read", json!({ "file_path": "script.sh" }))],
        vec![call(
            "Edit",
            json!({ "file_path": "script.sh", "old_string": "original", "new_string": "planted" }),
        )],
    ];
    let script = script_of(&calls);
    let body = format!(
        "version: 1\nname: links\nprompt: p\nworkspace: ws\nmodel:\n  provider: script\n  script:\n{script}\
         permissions:\n  allow: [Bash, Write, Edit]\n"
    );
    let spec = write_spec(&root, "task.yaml", &body);
    run_into(&spec, &root.join("out"));
    assert!(!outside.join("new.sh").exists());
    assert_eq!(
        std::fs::read_to_string(outside.join("target.sh")).unwrap(),
        "echo original"
    );
    let lines = transcript(&root.join("out/links/transcript.jsonl"));
    let results = events(&lines, "tool_result");
    for result in &results[1..] {
        assert_eq!(result["is_error"], true, "{result}");
        assert!(
            result["content"]
                .as_str()
                .unwrap()
                .contains("outside the workspace"),
            "{result}"
        );
    }
}

/// A script the agent writes and runs: the policy cannot see what it does, the OS must.
fn scripted_attack(script_body: &str, extra_calls: &[Value]) -> String {
    let mut turns = vec![
        vec![call(
            "Write",
            json!({ "file_path": "evil.sh", "content": script_body }),
        )],
        vec![call("Bash", json!({ "command": "bash evil.sh" }))],
    ];
    for extra in extra_calls {
        turns.push(vec![extra.clone()]);
    }
    script_of(&turns)
}

#[test]
fn artifacts_inside_the_workspace_cannot_be_forged_or_used_as_a_way_out() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let ws = root.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(root.join("outside")).unwrap();
    std::fs::write(root.join("outside/victim"), "untouched").unwrap();
    // The agent forges its transcript and plants links for drover's own writes to follow.
    let attack = "mkdir -p drover-artifacts/t\n\
                  echo '{\"type\":\"forged\"}' > drover-artifacts/t/transcript.jsonl\n\
                  ln -sfn ../../outside/victim drover-artifacts/summary.md\n\
                  ln -sfn ../../../outside/victim drover-artifacts/t/diff.patch\n";
    let extra = [
        call(
            "Write",
            json!({ "file_path": "drover-artifacts/t/transcript.jsonl", "content": "x" }),
        ),
        call(
            "Bash",
            json!({ "command": "echo x >> drover-artifacts/t/transcript.jsonl" }),
        ),
    ];
    let body = format!(
        "version: 1\nname: t\nprompt: p\nworkspace: .\nmodel:\n  provider: script\n  script:\n{}\
         permissions:\n  allow: [Bash, Write]\n",
        scripted_attack(attack, &extra)
    );
    let spec = write_spec(&ws, "task.yaml", &body);
    // Run from the workspace with the default artifacts directory: the common case.
    let output = drover()
        .current_dir(&ws)
        .arg("run")
        .arg(&spec)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        std::fs::read_to_string(root.join("outside/victim")).unwrap(),
        "untouched",
        "drover followed a planted link: {stderr}"
    );
    let artifacts = ws.join("drover-artifacts");
    for file in ["summary.md", "t/diff.patch", "t/transcript.jsonl"] {
        let meta = std::fs::symlink_metadata(artifacts.join(file)).unwrap();
        assert!(
            meta.file_type().is_file(),
            "{file} is not drover's own file"
        );
    }
    let lines = transcript(&artifacts.join("t/transcript.jsonl"));
    assert_eq!(lines[0]["type"], "run_start", "{stderr}");
    assert_eq!(lines.last().unwrap()["type"], "run_end");
    assert!(lines.iter().all(|line| line["type"] != "forged"));
    let verified = drover()
        .args(["transcript", "verify"])
        .arg(artifacts.join("t/transcript.jsonl"))
        .output()
        .unwrap();
    assert!(verified.status.success(), "{verified:?}");
    let results = events(&lines, "tool_result");
    assert_eq!(
        results[1]["is_error"], false,
        "the attack ran: {}",
        results[1]
    );
    for denied in &results[2..] {
        assert_eq!(denied["is_error"], true, "{denied}");
        assert!(
            denied["content"].as_str().unwrap().contains("off limits"),
            "{denied}"
        );
    }
}

#[test]
fn a_worktree_git_file_rewritten_by_the_agent_is_restored_before_the_checks() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let repo = root.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::write(repo.join("README"), "hi\n").unwrap();
    let git = |args: &[&str]| {
        let status = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .current_dir(&repo)
            .status()
            .unwrap();
        assert!(status.success());
    };
    git(&["init", "-q"]);
    git(&["add", "README"]);
    git(&["commit", "-q", "-m", "init"]);
    // A planted repository whose fsmonitor would run the agent's code in the check.
    let attack = "mkdir -p fake/.git && git init -q fake && \
                  git -C fake config core.fsmonitor \"touch $PWD/../fsmonitor-ran\" && \
                  rm -f .git && printf 'gitdir: %s\\n' \"$PWD/fake/.git\" > .git\n";
    let body = format!(
        "version: 1\nname: wt\nprompt: p\nworkspace: repo\nisolation: worktree\nmodel:\n  provider: script\n  script:\n{}\
         permissions:\n  allow: [Bash, Write]\n\
         checks:\n  - name: git sees the real repository\n    run: git status --porcelain && grep -q worktrees .git\n",
        scripted_attack(attack, &[])
    );
    let spec = write_spec(&root, "task.yaml", &body);
    let output = run_into(&spec, &root.join("out"));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!root.join("fsmonitor-ran").exists(), "{stderr}");
    let lines = transcript(&root.join("out/wt/transcript.jsonl"));
    let checks = events(&lines, "check");
    assert_eq!(checks.len(), 1, "{stderr}");
    assert_eq!(checks[0]["passed"], true, "{}\n{stderr}", checks[0]);
    assert!(stderr.contains("worktree's .git file"), "{stderr}");
}
