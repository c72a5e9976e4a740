//! A run records where it started in git (`run_start`'s `start`: the commit, and
//! whether the tree was dirty), and a replay or resume of an `isolation: worktree` run
//! starts from that commit, not from today's checkout: a commit made since or an
//! untracked file added does not change its diff or its outcome. The recording is
//! untrusted: a commit id that is not a full hex id of a commit of the local repository
//! is refused (warned, and under `--strict` the task's end) and never reaches git as
//! anything but that id.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{assert_exit, drover, rechained, resume_with, run_spec, summary, write_spec};
use serde_json::Value;

fn git(dir: &Path, args: &[&str]) -> String {
    let output = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(output.status.success(), "git {args:?}: {output:?}");
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

/// A git repository at `repo` (on branch `main`) holding `files` and `task.yaml` with
/// `spec`, all in one commit.
fn committed(repo: &Path, files: &[(&str, &str)], spec: &str) {
    std::fs::create_dir_all(repo).unwrap();
    git(repo, &["init", "-q", "-b", "main"]);
    for (path, text) in files {
        let path = repo.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    write_spec(repo, "task.yaml", spec);
    git(repo, &["add", "."]);
    git(repo, &["commit", "-q", "-m", "start"]);
}

/// A repository `dir/repo` with `a.txt` and a worktree task whose Bash call lists the
/// workspace and appends `a.txt` into `listing.txt`; run into `dir/out`. Returns the
/// transcript and the commit the run started from.
fn recorded_worktree_run(dir: &Path) -> (PathBuf, String) {
    let repo = dir.join("repo");
    committed(
        &repo,
        &[("a.txt", "a\n")],
        "version: 1\nname: t\nprompt: p\nworkspace: .\nisolation: worktree\nmodel:\n  provider: script\n  script:\n    - tool_calls: [{ name: Bash, input: { command: 'ls > listing.txt; cat a.txt >> listing.txt' } }]\n    - text: done\npermissions:\n  allow: [Bash]\nchecks:\n  - name: listed\n    run: test -f listing.txt\n",
    );
    let commit = git(&repo, &["rev-parse", "HEAD"]);
    let output = run_spec(&repo.join("task.yaml"), &dir.join("out"));
    assert_exit(&output, 0);
    (dir.join("out/t/transcript.jsonl"), commit)
}

/// The checkout moves on: a new commit changes `a.txt`, and an untracked file appears.
fn move_on(repo: &Path) {
    std::fs::write(repo.join("a.txt"), "changed since\n").unwrap();
    git(repo, &["commit", "-q", "-am", "later"]);
    std::fs::write(repo.join("untracked.txt"), "new\n").unwrap();
}

fn replay_in(cwd: &Path, transcript: &Path, artifacts: &Path, args: &[&str]) -> Output {
    drover()
        .current_dir(cwd)
        .arg("replay")
        .arg(transcript)
        .args(args)
        .arg("--artifacts")
        .arg(artifacts)
        .output()
        .unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn a_run_records_its_start_commit_and_whether_the_tree_was_dirty() {
    let dir = tempfile::tempdir().unwrap();
    let (transcript, commit) = recorded_worktree_run(dir.path());
    let start = &common::transcript(&transcript)[0]["start"];
    assert_eq!(
        start,
        &serde_json::json!({"commit": commit, "dirty": false})
    );
    assert_eq!(
        summary(&dir.path().join("out"))["tasks"][0]["start"],
        *start
    );
    // A copy of a checkout with an untracked file: dirty. drover's own artifacts, in
    // the checkout too, do not count.
    let repo = dir.path().join("repo");
    std::fs::write(repo.join("untracked.txt"), "new\n").unwrap();
    let spec = write_spec(
        &repo,
        "copy.yaml",
        "version: 1\nname: c\nprompt: p\nworkspace: .\nisolation: copy\nmodel:\n  provider: script\n  script: [{ text: done }]\n",
    );
    git(&repo, &["add", "copy.yaml"]);
    git(&repo, &["commit", "-q", "-m", "copy task"]);
    let head = git(&repo, &["rev-parse", "HEAD"]);
    assert_exit(&run_spec(&spec, &repo.join("drover-artifacts")), 0);
    let start = &summary(&repo.join("drover-artifacts"))["tasks"][0]["start"];
    assert_eq!(start, &serde_json::json!({"commit": head, "dirty": true}));
    std::fs::remove_file(repo.join("untracked.txt")).unwrap();
    assert_exit(&run_spec(&spec, &repo.join("drover-artifacts")), 0);
    let start = &summary(&repo.join("drover-artifacts"))["tasks"][0]["start"];
    assert_eq!(
        start["dirty"], false,
        "the artifacts directory is drover's own"
    );
    // Outside git: no start.
    let plain = dir.path().join("plain");
    std::fs::create_dir_all(plain.join("ws")).unwrap();
    let spec = write_spec(
        &plain,
        "task.yaml",
        "version: 1\nname: p\nprompt: p\nworkspace: ws\nisolation: copy\nmodel:\n  provider: script\n  script: [{ text: done }]\n",
    );
    assert_exit(&run_spec(&spec, &plain.join("out")), 0);
    assert!(
        common::transcript(&plain.join("out/p/transcript.jsonl"))[0]
            .get("start")
            .is_none()
    );
    assert!(
        summary(&plain.join("out"))["tasks"][0]
            .get("start")
            .is_none()
    );
}

#[test]
fn a_worktree_run_is_replayed_from_its_recorded_commit() {
    let dir = tempfile::tempdir().unwrap();
    let (transcript, commit) = recorded_worktree_run(dir.path());
    let repo = dir.path().join("repo");
    move_on(&repo);
    let recorded = std::fs::read_to_string(dir.path().join("out/t/diff.patch")).unwrap();
    assert!(recorded.contains("+a\n"), "{recorded}");
    // The recorded workspace (in the current directory), and one named with --workspace.
    let replays = [
        (repo.clone(), dir.path().join("replayed"), vec!["--strict"]),
        (
            dir.path().to_path_buf(),
            dir.path().join("named"),
            vec!["--strict", "--workspace", "repo", "--checks"],
        ),
    ];
    for (cwd, artifacts, args) in replays {
        let output = replay_in(&cwd, &transcript, &artifacts, &args);
        assert_exit(&output, 0);
        let replayed = std::fs::read_to_string(artifacts.join("t/diff.patch")).unwrap();
        assert_eq!(replayed, recorded, "{args:?}");
        let lines = common::transcript(&artifacts.join("t/transcript.jsonl"));
        assert_eq!(lines[0]["start"]["commit"], commit.as_str());
        assert!(
            common::events(&lines, "replay_drift").is_empty(),
            "{args:?}"
        );
    }
    assert_eq!(
        git(&repo, &["worktree", "list", "--porcelain"])
            .matches("worktree ")
            .count(),
        1,
        "the replay's worktree is gone"
    );
    assert_eq!(
        std::fs::read_to_string(repo.join("a.txt")).unwrap(),
        "changed since\n",
        "the checkout is untouched"
    );
}

/// A `git` on PATH that logs every command line it is given, then runs the real one.
fn logging_git(dir: &Path) -> (PathBuf, PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let real = ["/usr/bin/git", "/usr/local/bin/git", "/bin/git"]
        .into_iter()
        .find(|path| Path::new(path).exists())
        .expect("git is installed");
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let log = dir.join("git.log");
    let script = bin.join("git");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$*\" >> {}\nexec {real} \"$@\"\n",
            log.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    (bin, log)
}

/// The recorded transcript with its start commit replaced, hash chain recomputed (as
/// anyone can), at `dir/NAME/t/transcript.jsonl`.
fn forged(transcript: &Path, dir: &Path, name: &str, start: Value) -> PathBuf {
    let mut lines = common::transcript(transcript);
    lines[0]["start"] = start;
    let path = dir.join(name).join("t/transcript.jsonl");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, rechained(&lines)).unwrap();
    drover()
        .args(["transcript", "verify"])
        .arg(&path)
        .assert()
        .code(0);
    path
}

#[test]
fn a_forged_start_commit_is_refused_and_never_given_to_git() {
    let dir = tempfile::tempdir().unwrap();
    let (transcript, commit) = recorded_worktree_run(dir.path());
    let repo = dir.path().join("repo");
    let (bin, log) = logging_git(dir.path());
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let written = dir.path().join("written-by-git");
    let option = format!("--output={}", written.display());
    let missing = "0123456789abcdef0123456789abcdef01234567";
    let cases = [
        (
            "option",
            serde_json::json!({"commit": option, "dirty": false}),
            "is not a full hex object id",
        ),
        (
            "revision",
            serde_json::json!({"commit": "HEAD~1", "dirty": false}),
            "is not a full hex object id",
        ),
        (
            "missing",
            serde_json::json!({"commit": missing, "dirty": false}),
            "is not in the repository of",
        ),
        (
            "dirty",
            serde_json::json!({"commit": commit, "dirty": true}),
            "so the commit alone is not its start",
        ),
    ];
    for (name, start, why) in cases {
        let forged = forged(&transcript, dir.path(), name, start);
        let artifacts = dir.path().join(format!("{name}-strict"));
        let output = drover()
            .current_dir(&repo)
            .env("PATH", &path)
            .arg("replay")
            .arg(&forged)
            .arg("--strict")
            .arg("--artifacts")
            .arg(&artifacts)
            .output()
            .unwrap();
        assert_exit(&output, 1);
        let task = &summary(&artifacts)["tasks"][0];
        assert_eq!(task["reason"], "replay_drift", "{name}");
        let message = task["message"].as_str().unwrap();
        assert!(message.contains(why), "{name}: {message}");
        assert!(message.contains("nothing was replayed"), "{message}");
        let lines = common::transcript(&artifacts.join("t/transcript.jsonl"));
        assert!(
            common::events(&lines, "tool_call").is_empty(),
            "{name}: nothing ran before the task ended"
        );
        // Without --strict: a warning naming the commit and what drover did instead.
        let output = drover()
            .current_dir(&repo)
            .env("PATH", &path)
            .arg("replay")
            .arg(&forged)
            .arg("--artifacts")
            .arg(dir.path().join(format!("{name}-lenient")))
            .output()
            .unwrap();
        let err = stderr(&output);
        assert!(err.contains("drover: warning: t: the recorded"), "{err}");
        assert!(err.contains(why), "{name}: {err}");
        assert!(
            err.contains("the replay starts from a copy of"),
            "{name}: {err}"
        );
    }
    let calls = std::fs::read_to_string(&log).unwrap();
    assert!(calls.contains("cat-file -t --end-of-options"), "{calls}");
    assert!(!calls.contains("--output="), "{calls}");
    assert!(!calls.contains("HEAD~1"), "{calls}");
    assert!(!written.exists());
    // The missing id was looked up, as an id after the options, and nothing else.
    for line in calls.lines().filter(|line| line.contains(missing)) {
        assert!(
            line.ends_with(&format!("cat-file -t --end-of-options {missing}")),
            "{line}"
        );
    }
}

/// Stopped at its turn limit after writing `a.txt`, in a worktree of `dir/repo`.
fn stopped_worktree_run(dir: &Path) -> PathBuf {
    let repo = dir.join("repo");
    committed(
        &repo,
        &[("notes.txt", "start\n")],
        "version: 1\nname: t\nprompt: p\nworkspace: .\nisolation: worktree\nmodel:\n  provider: script\n  script:\n    - tool_calls: [{ name: Bash, input: { command: 'cp notes.txt a.txt' } }]\n    - tool_calls: [{ name: Write, input: { file_path: b.txt, content: b } }]\n    - text: done\npermissions:\n  allow: [Bash, Write]\nlimits:\n  max_turns: 1\n",
    );
    let artifacts = repo.join("drover-artifacts");
    assert_exit(&run_spec(&repo.join("task.yaml"), &artifacts), 1);
    artifacts.join("t")
}

#[test]
fn a_worktree_resume_starts_from_the_recorded_commit() {
    let dir = tempfile::tempdir().unwrap();
    let task = stopped_worktree_run(dir.path());
    let repo = dir.path().join("repo");
    std::fs::write(repo.join("notes.txt"), "changed since\n").unwrap();
    git(&repo, &["commit", "-q", "-am", "later"]);
    std::fs::write(repo.join("untracked.txt"), "new\n").unwrap();
    let output = resume_with(&task, &["--max-turns", "5", "--strict"]);
    assert_exit(&output, 0);
    let diff = std::fs::read_to_string(task.join("diff.patch")).unwrap();
    assert!(
        diff.contains("b/a.txt") && diff.contains("b/b.txt"),
        "{diff}"
    );
    assert!(
        diff.contains("+start"),
        "a.txt is the recorded notes.txt: {diff}"
    );
    assert!(
        !diff.contains("changed since") && !diff.contains("untracked"),
        "{diff}"
    );
}

#[test]
fn a_worktree_resume_with_a_forged_start_commit_warns_or_under_strict_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let task = stopped_worktree_run(dir.path());
    let transcript = task.join("transcript.jsonl");
    let mut lines = common::transcript(&transcript);
    lines[0]["start"] = serde_json::json!({"commit": "HEAD~1", "dirty": false});
    std::fs::write(&transcript, rechained(&lines)).unwrap();
    let output = resume_with(&task, &["--max-turns", "5", "--strict"]);
    assert_exit(&output, 2);
    let err = stderr(&output);
    assert!(err.contains("under --strict"), "{err}");
    assert!(
        err.contains("\"HEAD~1\" is not a full hex object id"),
        "{err}"
    );
    // Without --strict: said, and the worktree is made at HEAD, whose files are the
    // recorded ones here.
    let output = resume_with(&task, &["--max-turns", "5"]);
    assert_exit(&output, 0);
    let err = stderr(&output);
    assert!(
        err.contains("the worktree is made at HEAD instead"),
        "{err}"
    );
}

/// `--diff-only` of a worktree run whose workspace is a subdirectory of its repository:
/// the recorded patch applies in the worktree at the recorded commit exactly as it
/// would to a copy (git apply inside the worktree must not take it for a repository
/// and skip the paths, or read its configuration).
#[test]
fn diff_only_of_a_worktree_run_in_a_subdirectory_applies_the_recorded_patch() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    committed(
        &repo,
        &[("sub/a.txt", "a\n")],
        "version: 1\nname: t\nprompt: p\nworkspace: sub\nisolation: worktree\nmodel:\n  provider: script\n  script:\n    - tool_calls: [{ name: Bash, input: { command: 'echo b >> a.txt; echo c > c.txt' } }]\n    - text: done\npermissions:\n  allow: [Bash]\n",
    );
    assert_exit(
        &run_spec(&repo.join("task.yaml"), &dir.path().join("out")),
        0,
    );
    move_on_in(&repo, "sub/a.txt");
    let artifacts = dir.path().join("replayed");
    let output = replay_in(
        &repo,
        &dir.path().join("out/t/transcript.jsonl"),
        &artifacts,
        &["--diff-only", "--strict"],
    );
    assert_exit(&output, 0);
    let recorded = std::fs::read_to_string(dir.path().join("out/t/diff.patch")).unwrap();
    assert!(
        recorded.contains("+b") && recorded.contains("c.txt"),
        "{recorded}"
    );
    assert_eq!(
        std::fs::read_to_string(artifacts.join("t/diff.patch")).unwrap(),
        recorded
    );
}

/// The checkout moves on in `file`: a new commit, and an untracked file beside it.
fn move_on_in(repo: &Path, file: &str) {
    std::fs::write(repo.join(file), "changed since\n").unwrap();
    git(repo, &["commit", "-q", "-am", "later"]);
    std::fs::write(repo.join(file).with_file_name("untracked.txt"), "new\n").unwrap();
}

#[test]
fn an_older_transcript_without_start_verifies_and_replays_as_before() {
    let dir = tempfile::tempdir().unwrap();
    let (transcript, _) = recorded_worktree_run(dir.path());
    let mut lines = common::transcript(&transcript);
    lines[0].as_object_mut().unwrap().remove("start");
    let older = dir.path().join("older/t/transcript.jsonl");
    std::fs::create_dir_all(older.parent().unwrap()).unwrap();
    std::fs::write(&older, rechained(&lines)).unwrap();
    drover()
        .args(["transcript", "verify"])
        .arg(&older)
        .assert()
        .code(0);
    // No commit to start from: the checkout is copied, as drover always did, and it is
    // still in the recorded state.
    let artifacts = dir.path().join("replayed");
    let output = replay_in(&dir.path().join("repo"), &older, &artifacts, &["--strict"]);
    assert_exit(&output, 0);
    assert!(
        !stderr(&output).contains("start commit"),
        "{}",
        stderr(&output)
    );
    assert_eq!(
        std::fs::read_to_string(artifacts.join("t/diff.patch")).unwrap(),
        std::fs::read_to_string(dir.path().join("out/t/diff.patch")).unwrap()
    );
}

#[test]
fn a_copy_run_whose_checkout_moved_on_is_not_replayed_and_the_message_names_its_commit() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    committed(
        &repo,
        &[("a.txt", "a\n")],
        "version: 1\nname: t\nprompt: p\nworkspace: .\nisolation: copy\nmodel:\n  provider: script\n  script: [{ text: done }]\n",
    );
    let commit = git(&repo, &["rev-parse", "HEAD"]);
    assert_exit(
        &run_spec(&repo.join("task.yaml"), &dir.path().join("out")),
        0,
    );
    move_on(&repo);
    let artifacts = dir.path().join("replayed");
    let output = replay_in(
        &repo,
        &dir.path().join("out/t/transcript.jsonl"),
        &artifacts,
        &[],
    );
    assert_exit(&output, 1);
    let task = &summary(&artifacts)["tasks"][0];
    assert_eq!(task["reason"], "replay_drift");
    let message = task["message"].as_str().unwrap();
    assert!(
        message.contains(&format!(
            "the recorded run started at commit {commit}, clean: `git worktree add --detach DIR {commit}` makes it"
        )),
        "{message}"
    );
}

/// A forged start names a commit of the local repository (a branch never checked out)
/// in which the workspace's directory is a symbolic link to a directory outside it, and
/// the fingerprint of an empty directory: the replay, its `--diff-only` form and a resume
/// must not work, write or run anything there.
#[test]
fn a_start_commit_whose_workspace_directory_is_a_link_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    std::fs::create_dir_all(&victim).unwrap();
    let repo = dir.path().join("repo");
    committed(
        &repo,
        &[("sub/a.txt", "a\n")],
        "version: 1\nname: t\nprompt: p\nworkspace: sub\nisolation: worktree\nmodel:\n  provider: script\n  script:\n    - tool_calls: [{ name: Write, input: { file_path: pwned.txt, content: \"written by replay\\n\" } }]\n    - text: done\npermissions:\n  allow: [Write]\n",
    );
    assert_exit(
        &run_spec(&repo.join("task.yaml"), &dir.path().join("out")),
        0,
    );
    git(&repo, &["checkout", "-q", "-b", "evil"]);
    std::fs::remove_dir_all(repo.join("sub")).unwrap();
    std::os::unix::fs::symlink(&victim, repo.join("sub")).unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "evil"]);
    let evil = git(&repo, &["rev-parse", "HEAD"]);
    git(&repo, &["checkout", "-q", "main"]);

    let mut lines = common::transcript(&dir.path().join("out/t/transcript.jsonl"));
    lines[0]["start"] = serde_json::json!({"commit": evil, "dirty": false});
    // The fingerprint of an empty directory, which the victim is.
    lines[0]["workspace_sha256"] =
        Value::String("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855".into());
    let forged_dir = dir.path().join("forged/t");
    std::fs::create_dir_all(&forged_dir).unwrap();
    let forged = forged_dir.join("transcript.jsonl");
    std::fs::write(&forged, rechained(&lines)).unwrap();
    std::fs::copy(
        dir.path().join("out/t/diff.patch"),
        forged_dir.join("diff.patch"),
    )
    .unwrap();

    for (name, args) in [
        ("plain", vec![]),
        ("strict", vec!["--strict"]),
        ("workspace", vec!["--workspace", "sub"]),
        ("diff-only", vec!["--diff-only"]),
    ] {
        let output = replay_in(&repo, &forged, &dir.path().join(name), &args);
        assert_ne!(output.status.code(), Some(0), "{name}: {}", stderr(&output));
        assert_eq!(
            std::fs::read_dir(&victim).unwrap().count(),
            0,
            "{name}: the replay wrote in the linked directory: {}",
            stderr(&output)
        );
    }
}
