//! What a run's snapshots, copies and diffs hold (never drover's own artifacts, never
//! build trees), and that a closed stdout never changes the exit code.

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::{assert_exit, bash_task, drover, events, summary, transcript, write_spec};

const CACHEDIR_TAG: &str = "Signature: 8a477f597d28d172789f06886806bc55\n# made by cargo\n";

#[test]
fn default_artifacts_inside_the_workspace_are_not_in_the_diff() {
    let dir = tempfile::tempdir().unwrap();
    // No `workspace:`: the workspace is the current directory, and so is the default
    // artifacts directory's parent.
    write_spec(
        dir.path(),
        "t.yaml",
        "version: 1\nname: w\nprompt: p\nmodel:\n  provider: script\n  script:\n    - text: done\n",
    );
    drover()
        .current_dir(dir.path())
        .args(["run", "t.yaml"])
        .assert()
        .code(0);
    let artifacts = dir.path().join("drover-artifacts");
    let patch = std::fs::read_to_string(artifacts.join("w/diff.patch")).unwrap();
    assert_eq!(patch, "", "the diff holds drover's own files");
    let summary = summary(&artifacts);
    assert_eq!(
        summary["tasks"][0]["files_changed"],
        serde_json::json!([]),
        "{summary}"
    );

    // The replay restores the recorded workspace without the recorded artifacts (and
    // without its own), so it starts from the same fingerprint and --strict passes.
    let replay = drover()
        .current_dir(dir.path())
        .args([
            "replay",
            "drover-artifacts/w/transcript.jsonl",
            "--artifacts",
            "replayed",
            "--strict",
        ])
        .assert();
    let output = replay.get_output().clone();
    replay.code(0);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("fingerprint"), "{stderr}");
    let replayed = std::fs::read_to_string(dir.path().join("replayed/w/diff.patch")).unwrap();
    assert_eq!(replayed, "");
}

#[test]
fn a_copy_never_holds_build_trees_and_the_diff_never_shows_them() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    for (rel, content) in [
        ("src.txt", "source\n"),
        ("target/CACHEDIR.TAG", CACHEDIR_TAG),
        ("target/x", "built\n"),
        ("node_modules/m/i.js", "module\n"),
    ] {
        let path = ws.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
    // No .gitignore anywhere: only the walker's own rules keep the trees out.
    let command = "find . -print | sort; mkdir -p node_modules/n target && echo x > node_modules/n/j.js && printf 'Signature: 8a477f597d28d172789f06886806bc55' > target/CACHEDIR.TAG && echo y > target/y && echo k > kept.txt";
    let spec = write_spec(
        dir.path(),
        "t.yaml",
        &format!(
            "version: 1\nname: c\nprompt: p\nworkspace: ws\nisolation: copy\nmodel:\n  provider: script\n  script:\n    - tool_calls: [{{ name: Bash, input: {{ command: {command:?} }} }}]\n    - text: done\npermissions:\n  allow: [Bash]\n"
        ),
    );
    let artifacts = dir.path().join("out");
    drover()
        .arg("run")
        .arg(&spec)
        .arg("--artifacts")
        .arg(&artifacts)
        .assert()
        .code(0);
    let recorded = transcript(&artifacts.join("c/transcript.jsonl"));
    let results = events(&recorded, "tool_result");
    let listing = results[0]["content"].as_str().unwrap();
    assert!(listing.contains("./src.txt"), "{listing}");
    assert!(
        !listing.contains("target") && !listing.contains("node_modules"),
        "the copy holds a build tree:\n{listing}"
    );
    let patch = std::fs::read_to_string(artifacts.join("c/diff.patch")).unwrap();
    assert!(patch.contains("kept.txt"), "{patch}");
    assert!(
        !patch.contains("target/") && !patch.contains("node_modules/"),
        "{patch}"
    );
    let summary = summary(&artifacts);
    assert_eq!(
        summary["tasks"][0]["files_changed"],
        serde_json::json!(["kept.txt"]),
        "{summary}"
    );
    // The original's build trees count as the start's, though the copy left them out:
    // what the agent wrote there is counted, not diffed.
    assert_eq!(summary["tasks"][0]["ignored_changes"], 3, "{summary}");
    // The original is untouched.
    assert!(ws.join("target/x").exists() && !ws.join("kept.txt").exists());
}

#[test]
fn a_closed_stdout_keeps_the_runs_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    // A failing check: the run's code is 1, distinct from both success and a panic (101).
    let spec = write_spec(
        dir.path(),
        "t.yaml",
        "version: 1\nname: p\nprompt: p\nworkspace: ws\nmodel:\n  provider: script\n  script:\n    - text: done\nchecks:\n  - name: fails\n    run: \"false\"\n",
    );
    for quiet in [true, false] {
        let mut command = Command::new(assert_cmd::cargo::cargo_bin("drover"));
        command
            .arg("run")
            .arg(&spec)
            .arg("--artifacts")
            .arg(dir.path().join("out"))
            .env_remove("GITHUB_ACTIONS")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if quiet {
            command.arg("-q");
        }
        let mut child = command.spawn().unwrap();
        // Close the only reading end before drover writes anything: every line it
        // prints then meets a broken pipe.
        drop(child.stdout.take());
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "quiet {quiet}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

#[test]
fn what_a_killed_run_left_behind_is_removed_by_the_next_one() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    std::fs::write(ws.join("keep.txt"), "mine").unwrap();
    // A pid no process has: a drover killed with SIGKILL mid-write and mid-task.
    let stale_write = ws.join(".big.bin.drover-4999999-0-1a2b.tmp");
    std::fs::write(&stale_write, vec![0u8; 1024]).unwrap();
    let tmp = dir.path().join("tmp");
    let stale_dir = tmp.join("drover-tmp-4999999-abcdef");
    std::fs::create_dir_all(&stale_dir).unwrap();
    let spec = write_spec(
        dir.path(),
        "task.yaml",
        "version: 1\nname: t\nprompt: p\nworkspace: ws\nsandbox: off\nmodel:\n  provider: script\n  script:\n    - text: done\n",
    );
    let output = drover()
        .arg("run")
        .arg(&spec)
        .arg("--artifacts")
        .arg(dir.path().join("out"))
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(!stale_write.exists(), "{stderr}");
    assert!(!stale_dir.exists(), "{stderr}");
    assert!(ws.join("keep.txt").exists());
    assert!(
        stderr.contains("removed 1 temp file(s) a killed drover left"),
        "{stderr}"
    );
    assert!(stderr.contains("removed 1 leftover directory"), "{stderr}");
    let diff = std::fs::read_to_string(dir.path().join("out/t/diff.patch")).unwrap();
    assert!(
        diff.is_empty(),
        "the leftover is not the agent's work: {diff}"
    );
}

/// A tree's files (name bytes → content), for comparing two trees byte for byte.
#[cfg(unix)]
fn files_of(root: &Path) -> std::collections::BTreeMap<Vec<u8>, Vec<u8>> {
    use std::os::unix::ffi::OsStrExt;
    let mut files = std::collections::BTreeMap::new();
    for entry in std::fs::read_dir(root).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            files.insert(
                entry.file_name().as_bytes().to_vec(),
                std::fs::read(entry.path()).unwrap(),
            );
        }
    }
    files
}

#[cfg(unix)]
#[test]
fn file_names_that_are_not_utf8_keep_their_bytes_in_the_diff_summary_and_expectations() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    for isolation in ["copy", "none"] {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        std::fs::write(ws.join(OsStr::from_bytes(b"caf\xe9.txt")), "one\n").unwrap();
        std::fs::write(ws.join(OsStr::from_bytes(b"x\xff")), "same\n").unwrap();
        // `x\xfe` converts to the same text as `x\xff` (`x\u{fffd}`) when names are
        // converted lossily: its creation must not hide behind the unchanged file.
        std::fs::write(
            ws.join("mk.sh"),
            "printf 'two\\n' > \"$(printf 'caf\\351.txt')\"\nprintf 'new\\n' > \"$(printf 'x\\376')\"\n",
        )
        .unwrap();
        let pristine = dir.path().join("pristine");
        common::copy_tree(&ws, &pristine);
        let spec = write_spec(
            dir.path(),
            "t.yaml",
            &format!(
                "version: 1\nname: n\nprompt: p\nworkspace: ws\nisolation: {isolation}\nmodel:\n  provider: script\n  script:\n    - tool_calls: [{{ name: Bash, input: {{ command: sh mk.sh }} }}]\n    - text: done\npermissions:\n  allow: [Bash]\nexpect:\n  files_changed:\n    only: ['*.txt', 'x*']\n    must_include: ['caf*.txt']\n    max: 2\n"
            ),
        );
        let artifacts = dir.path().join("out");
        let run = drover()
            .arg("run")
            .arg(&spec)
            .arg("--artifacts")
            .arg(&artifacts)
            .assert();
        let output = run.get_output().clone();
        run.code(0);
        let summary = summary(&artifacts);
        assert_eq!(
            summary["tasks"][0]["files_changed"],
            serde_json::json!([r#""caf\351.txt""#, r#""x\376""#]),
            "{isolation}: {summary}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let patch = std::fs::read(artifacts.join("n/diff.patch")).unwrap();
        let text = String::from_utf8(patch.clone()).expect("the patch is ASCII here");
        assert!(
            text.contains("diff --git \"a/caf\\351.txt\" \"b/caf\\351.txt\"\n"),
            "{text}"
        );
        assert!(!text.contains('\u{fffd}'), "{text}");
        // `git apply` on a pristine copy gives the agent's tree byte for byte.
        let patch_file = dir.path().join("diff.patch");
        std::fs::write(&patch_file, &patch).unwrap();
        let applied = Command::new("git")
            .arg("apply")
            .arg(&patch_file)
            .current_dir(&pristine)
            .output()
            .unwrap();
        assert!(
            applied.status.success(),
            "{}",
            String::from_utf8_lossy(&applied.stderr)
        );
        let script = std::fs::read(ws.join("mk.sh")).unwrap();
        let expected = std::collections::BTreeMap::from([
            (b"caf\xe9.txt".to_vec(), b"two\n".to_vec()),
            (b"mk.sh".to_vec(), script),
            (b"x\xfe".to_vec(), b"new\n".to_vec()),
            (b"x\xff".to_vec(), b"same\n".to_vec()),
        ]);
        assert_eq!(files_of(&pristine), expected, "{isolation}");
        if isolation == "none" {
            assert_eq!(files_of(&ws), expected);
        } else {
            assert_eq!(files_of(&ws)[&b"caf\xe9.txt".to_vec()], b"one\n");
        }
    }
}

#[test]
fn files_an_agent_plants_in_the_artifacts_directory_are_in_the_diff() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("plant.sh"),
        "mkdir -p drover-artifacts/elsewhere && echo hidden > drover-artifacts/elsewhere/fix.rs && echo x > drover-artifacts/note.txt\n",
    )
    .unwrap();
    // Two tasks: the second's diff must not show the first's published folder either.
    for name in ["a", "b"] {
        write_spec(
            dir.path(),
            &format!("{name}.yaml"),
            &bash_task(name, "sh plant.sh", ""),
        );
    }
    let output = drover()
        .current_dir(dir.path())
        .args(["run", "a.yaml", "b.yaml"])
        .output()
        .unwrap();
    assert_exit(&output, 0);
    let artifacts = dir.path().join("drover-artifacts");
    let summary = summary(&artifacts);
    assert_eq!(
        summary["tasks"][0]["files_changed"],
        serde_json::json!([
            "drover-artifacts/elsewhere/fix.rs",
            "drover-artifacts/note.txt"
        ]),
        "{summary}"
    );
    // The second task started after the first planted them: nothing new for it, and
    // neither task's own folder nor the run's reports show up.
    assert_eq!(
        summary["tasks"][1]["files_changed"],
        serde_json::json!([]),
        "{summary}"
    );
    let patch = std::fs::read_to_string(artifacts.join("a/diff.patch")).unwrap();
    assert!(patch.contains("+hidden"), "{patch}");
    assert!(!patch.contains("transcript.jsonl"), "{patch}");
}

#[test]
fn a_symlink_planted_at_a_task_folder_name_cannot_hide_the_next_tasks_changes() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/lib.rs"), "fn a() {}\n").unwrap();
    std::fs::write(
        dir.path().join("plant.sh"),
        "ln -s ../src drover-artifacts/b && ln -s ../src/lib.rs drover-artifacts/summary.json\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("edit.sh"),
        "echo 'fn b() {}' >> src/lib.rs\n",
    )
    .unwrap();
    for (name, script) in [("a", "plant.sh"), ("b", "edit.sh")] {
        write_spec(
            dir.path(),
            &format!("{name}.yaml"),
            &bash_task(name, &format!("sh {script}"), ""),
        );
    }
    let output = drover()
        .current_dir(dir.path())
        .args(["run", "a.yaml", "b.yaml"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let artifacts = dir.path().join("drover-artifacts");
    let patch = std::fs::read_to_string(artifacts.join("b/diff.patch"))
        .unwrap_or_else(|e| panic!("no diff for b ({e}): {stderr}"));
    assert!(
        patch.contains("+fn b() {}"),
        "b's change is hidden:\n{patch}\n{stderr}"
    );
}

#[test]
fn a_directory_planted_at_a_report_name_is_diffed_and_replaced_by_the_report() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("plant.sh"),
        "mkdir -p drover-artifacts/summary.json && echo hidden > drover-artifacts/summary.json/fix.rs\n",
    )
    .unwrap();
    write_spec(dir.path(), "t.yaml", &bash_task("t", "sh plant.sh", ""));
    let output = drover()
        .current_dir(dir.path())
        .args(["run", "t.yaml"])
        .output()
        .unwrap();
    assert_exit(&output, 0);
    let summary = summary(&dir.path().join("drover-artifacts"));
    assert_eq!(
        summary["tasks"][0]["files_changed"],
        serde_json::json!(["drover-artifacts/summary.json/fix.rs"]),
        "{summary}"
    );
}
