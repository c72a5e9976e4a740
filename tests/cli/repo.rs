//! `repo:`: a task clones its workspace from a repository served on 127.0.0.1 by a real
//! `git daemon` (or from `file://`), records the repository and commit it started from
//! (its diff applies to a fresh clone of that commit), fetches through `--repo-cache`
//! the second time, and ends `repo_refused` / `repo_unavailable` naming the repository
//! when the clone cannot be made, while the other tasks of the run go on.

use std::net::TcpStream;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{drover, events, transcript, write_spec};

/// `git -C dir args…` with a fixed author; its stdout, trimmed.
pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .unwrap();
    assert!(output.status.success(), "git {args:?}: {output:?}");
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

/// A bare repository `<base>/<name>.git` with `main` (two commits), a branch `dev` and
/// an annotated tag `v1` at the first commit; the two commits' ids.
pub(crate) fn served_repo(base: &Path, name: &str) -> (PathBuf, String, String) {
    let work = base.join(format!("{name}-work"));
    std::fs::create_dir_all(&work).unwrap();
    git(&work, &["init", "--quiet", "--initial-branch=main"]);
    std::fs::write(work.join("app.txt"), "version one\n").unwrap();
    git(&work, &["add", "."]);
    git(&work, &["commit", "--quiet", "-m", "one"]);
    git(&work, &["tag", "-a", "-m", "v1", "v1"]);
    git(&work, &["branch", "dev"]);
    let first = git(&work, &["rev-parse", "HEAD"]);
    std::fs::write(work.join("app.txt"), "version two\n").unwrap();
    git(&work, &["commit", "--quiet", "-am", "two"]);
    let second = git(&work, &["rev-parse", "HEAD"]);
    let bare = base.join(format!("{name}.git"));
    let output = Command::new("git")
        .args(["clone", "--quiet", "--bare"])
        .arg(&work)
        .arg(&bare)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    (bare, first, second)
}

/// A free port on 127.0.0.1 (closed again: nothing listens there).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `git daemon` serving every repository under `base`, killed when dropped.
pub(crate) struct Daemon {
    child: Child,
    port: u16,
}

impl Daemon {
    pub(crate) fn start(base: &Path) -> Daemon {
        let port = free_port();
        // git-daemon itself, not `git daemon`: git would run it as a child of its own,
        // which killing `git` leaves running, holding the test's output open.
        let exec_path = git(base, &["--exec-path"]);
        let child = Command::new(Path::new(&exec_path).join("git-daemon"))
            .arg("--reuseaddr")
            .arg(format!("--base-path={}", base.display()))
            .arg("--export-all")
            .arg("--listen=127.0.0.1")
            .arg(format!("--port={port}"))
            .arg(base)
            .spawn()
            .expect("git daemon starts");
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "git daemon never listened");
            std::thread::sleep(Duration::from_millis(50));
        }
        Daemon { child, port }
    }

    pub(crate) fn url(&self, name: &str) -> String {
        format!("git://127.0.0.1:{}/{name}.git", self.port)
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A task spec cloning `repo` (the YAML of `repo:`'s body, indented by four), whose
/// scripted model writes `app.txt`.
fn spec_text(name: &str, repo: &str) -> String {
    format!(
        "version: 1\nname: {name}\nprompt: edit app.txt\nrepo:\n{repo}model:\n  provider: script\n  script:\n    - tool_calls:\n        - {{ name: Read, input: {{ file_path: app.txt }} }}\n    - tool_calls:\n        - {{ name: Write, input: {{ file_path: app.txt, content: \"edited by {name}\\n\" }} }}\n    - text: done\npermissions:\n  allow: [Read, \"Write(app.txt)\"]\n"
    )
}

fn run(specs: &[&Path], artifacts: &Path, extra: &[&str]) -> Output {
    drover()
        .arg("run")
        .args(specs)
        .arg("--artifacts")
        .arg(artifacts)
        .args(extra)
        .output()
        .unwrap()
}

pub(crate) fn result(artifacts: &Path, task: &str) -> Value {
    let text = std::fs::read_to_string(artifacts.join(task).join("result.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The task's diff applies to a fresh clone at the recorded commit and makes `app.txt`
/// what the model wrote.
fn diff_applies(artifacts: &Path, task: &str, bare: &Path, scratch: &Path) {
    let start = &result(artifacts, task)["start"];
    let commit = start["commit"].as_str().unwrap();
    let fresh = scratch.join(format!("fresh-{task}"));
    let output = Command::new("git")
        .args(["clone", "--quiet"])
        .arg(bare)
        .arg(&fresh)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    git(&fresh, &["checkout", "--quiet", "--detach", commit]);
    let patch = artifacts.join(task).join("diff.patch");
    git(&fresh, &["apply", "--check", &patch.to_string_lossy()]);
    git(&fresh, &["apply", &patch.to_string_lossy()]);
    assert_eq!(
        std::fs::read_to_string(fresh.join("app.txt")).unwrap(),
        format!("edited by {task}\n")
    );
}

#[test]
#[cfg_attr(not(drover_has_git_daemon), ignore = "needs git daemon")]
fn tasks_clone_branches_tags_commits_and_shallow_heads_from_git_daemon() {
    let dir = tempfile::tempdir().unwrap();
    let served = dir.path().join("served");
    let (bare, first, second) = served_repo(&served, "service-a");
    let daemon = Daemon::start(&served);
    let url = daemon.url("service-a");
    let cases = [
        ("head", String::new(), second.clone()),
        ("branch", "    ref: dev\n".to_string(), first.clone()),
        ("tag", "    ref: v1\n".to_string(), first.clone()),
        ("commit", format!("    ref: {first}\n"), first.clone()),
        (
            "abbreviated",
            format!("    ref: {}\n", &first[..10]),
            first.clone(),
        ),
        ("shallow", "    depth: 1\n".to_string(), second.clone()),
    ];
    let mut specs = Vec::new();
    for (name, extra, _) in &cases {
        let repo = format!("    url: {url}\n{extra}");
        specs.push(write_spec(
            dir.path(),
            &format!("{name}.yaml"),
            &spec_text(name, &repo),
        ));
    }
    // A file:// clone beside them.
    let file_url = format!("file://{}", bare.display());
    specs.push(write_spec(
        dir.path(),
        "local.yaml",
        &spec_text("local", &format!("    url: {file_url}\n")),
    ));
    let artifacts = dir.path().join("out");
    let paths: Vec<&Path> = specs.iter().map(PathBuf::as_path).collect();
    let output = run(&paths, &artifacts, &["--jobs", "3"]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    for (name, extra, commit) in &cases {
        let start = &result(&artifacts, name)["start"];
        assert_eq!(start["commit"], commit.as_str(), "{name}");
        assert_eq!(start["repository"]["url"], url.as_str(), "{name}");
        let asked = extra.trim().strip_prefix("ref: ");
        assert_eq!(start["repository"]["ref"].as_str(), asked, "{name}");
        diff_applies(&artifacts, name, &bare, dir.path());
        // run_start names the repository too.
        let lines = transcript(&artifacts.join(name).join("transcript.jsonl"));
        let run_start = events(&lines, "run_start")[0];
        assert_eq!(run_start["start"]["repository"]["url"], url.as_str());
    }
    diff_applies(&artifacts, "local", &bare, dir.path());
    let summary = std::fs::read_to_string(artifacts.join("summary.md")).unwrap();
    assert!(
        summary.contains(&format!(
            "`branch` started from `{url}` at commit `{first}` (ref `dev`)"
        )),
        "{summary}"
    );
    // The shallow clone's temp checkout is gone with its task; nothing was written to
    // the served repository.
    assert_eq!(git(&bare, &["rev-parse", "main"]), second);
}

#[test]
#[cfg_attr(not(drover_has_git_daemon), ignore = "needs git daemon")]
fn a_missing_ref_is_refused_an_unreachable_host_unavailable_and_the_rest_passes() {
    let dir = tempfile::tempdir().unwrap();
    let served = dir.path().join("served");
    served_repo(&served, "service-a");
    let daemon = Daemon::start(&served);
    let closed = format!("git://127.0.0.1:{}/service-a.git", free_port());
    let specs = [
        write_spec(
            dir.path(),
            "missing.yaml",
            &spec_text(
                "missing",
                &format!(
                    "    url: {}\n    ref: no-such-branch\n",
                    daemon.url("service-a")
                ),
            ),
        ),
        write_spec(
            dir.path(),
            "norepo.yaml",
            &spec_text(
                "norepo",
                &format!("    url: {}\n", daemon.url("nothing-here")),
            ),
        ),
        write_spec(
            dir.path(),
            "down.yaml",
            &spec_text("down", &format!("    url: {closed}\n    timeout: 20s\n")),
        ),
        write_spec(
            dir.path(),
            "fine.yaml",
            &spec_text("fine", &format!("    url: {}\n", daemon.url("service-a"))),
        ),
    ];
    let artifacts = dir.path().join("out");
    let paths: Vec<&Path> = specs.iter().map(PathBuf::as_path).collect();
    let output = run(&paths, &artifacts, &[]);
    assert_eq!(output.status.code(), Some(3), "{output:?}");
    let missing = result(&artifacts, "missing");
    assert_eq!(missing["reason"], "repo_refused");
    assert_eq!(missing["status"], "error");
    assert_eq!(missing["retryable"], false);
    let message = missing["message"].as_str().unwrap();
    assert!(message.contains(&daemon.url("service-a")), "{message}");
    assert!(
        message.contains("no-such-branch") && message.contains("main"),
        "{message}"
    );
    let norepo = result(&artifacts, "norepo");
    assert_eq!(norepo["reason"], "repo_refused", "{norepo}");
    let down = result(&artifacts, "down");
    assert_eq!(down["reason"], "repo_unavailable", "{down}");
    assert_eq!(down["retryable"], true);
    assert!(
        down["message"].as_str().unwrap().contains(&closed),
        "{down}"
    );
    assert_eq!(result(&artifacts, "fine")["status"], "passed");
    // A task that never cloned has an empty diff and a transcript that ends.
    let lines = transcript(&artifacts.join("missing/transcript.jsonl"));
    assert_eq!(events(&lines, "run_end")[0]["reason"], "repo_refused");
    assert!(events(&lines, "tool_call").is_empty());
}

/// The inodes of the regular files below `dir`.
fn inodes(dir: &Path) -> std::collections::HashSet<(u64, u64)> {
    let mut found = std::collections::HashSet::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        for entry in std::fs::read_dir(&next).unwrap().flatten() {
            let meta = std::fs::symlink_metadata(entry.path()).unwrap();
            if meta.is_dir() {
                pending.push(entry.path());
            } else if meta.is_file() {
                found.insert((meta.dev(), meta.ino()));
            }
        }
    }
    found
}

#[test]
#[cfg_attr(not(drover_has_git_daemon), ignore = "needs git daemon")]
fn the_second_run_fetches_into_the_cache_and_the_checkout_shares_no_file_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let served = dir.path().join("served");
    let (bare, _, second) = served_repo(&served, "service-a");
    let daemon = Daemon::start(&served);
    let url = daemon.url("service-a");
    let checkout = dir.path().join("checkout");
    let spec = write_spec(
        dir.path(),
        "task.yaml",
        &spec_text("cached", &format!("    url: {url}\n    path: checkout\n")),
    );
    let cache = dir.path().join("cache");
    let artifacts = dir.path().join("out");
    let output = run(
        &[&spec],
        &artifacts,
        &["--repo-cache", &cache.to_string_lossy()],
    );
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(
        result(&artifacts, "cached")["start"]["commit"],
        second.as_str()
    );
    let mirrors: Vec<PathBuf> = std::fs::read_dir(&cache)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "git"))
        .collect();
    assert_eq!(mirrors.len(), 1, "{mirrors:?}");
    let mirror = &mirrors[0];
    let made = std::fs::metadata(mirror).unwrap().ino();
    // The checkout (kept at path:) shares no file with the mirror, and neither names a
    // credential or an alternate.
    let shared: Vec<_> = inodes(mirror)
        .intersection(&inodes(&checkout))
        .copied()
        .collect();
    assert!(shared.is_empty(), "{shared:?}");
    assert!(!checkout.join(".git/objects/info/alternates").exists());
    assert_eq!(git(&checkout, &["remote", "get-url", "origin"]), url);
    assert_eq!(git(mirror, &["config", "remote.origin.url"]), url);

    // A new commit upstream; the next night (a fresh path) picks it up through the
    // same mirror, fetched rather than made again.
    let work = served.join("service-a-work");
    std::fs::write(work.join("app.txt"), "version three\n").unwrap();
    git(&work, &["commit", "--quiet", "-am", "three"]);
    git(&work, &["push", "--quiet", &bare.to_string_lossy(), "main"]);
    let third = git(&bare, &["rev-parse", "main"]);
    std::fs::remove_dir_all(&checkout).unwrap();
    let artifacts = dir.path().join("out2");
    let output = run(
        &[&spec],
        &artifacts,
        &["--repo-cache", &cache.to_string_lossy()],
    );
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(
        result(&artifacts, "cached")["start"]["commit"],
        third.as_str()
    );
    assert_eq!(
        std::fs::metadata(mirror).unwrap().ino(),
        made,
        "the mirror was reused"
    );
    assert_eq!(git(mirror, &["rev-parse", "main"]), third);
}

#[test]
fn bad_repo_specs_are_refused_at_their_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("full")).unwrap();
    std::fs::write(dir.path().join("full/keep.txt"), "mine").unwrap();
    let cases = [
        (
            "ext",
            "repo:\n  url: \"ext::sh -c touch% /tmp/pwned\"\n",
            9,
            8,
            "ext::",
        ),
        (
            "badref",
            "repo:\n  url: git://127.0.0.1/a.git\n  ref: \"main..x\"\n",
            10,
            8,
            "repo.ref",
        ),
        (
            "both",
            "workspace: .\nrepo:\n  url: git://127.0.0.1/a.git\n",
            10,
            3,
            "keep repo:",
        ),
        (
            "full",
            "repo:\n  url: git://127.0.0.1/a.git\n  path: full\n",
            10,
            9,
            "not an empty directory",
        ),
        (
            "nocreds",
            "repo:\n  url: https://127.0.0.1/a.git\n  credentials: { env: DROVER_TEST_NO_SUCH_TOKEN }\n",
            10,
            16,
            "DROVER_TEST_NO_SUCH_TOKEN",
        ),
    ];
    for (name, repo, line, column, says) in cases {
        let text = format!(
            "version: 1\nname: {name}\nprompt: p\nmodel:\n  provider: script\n  script: [{{ text: done }}]\npermissions: {{}}\n{repo}"
        );
        let spec = write_spec(dir.path(), &format!("{name}.yaml"), &text);
        let output = drover()
            .arg("validate")
            .arg(&spec)
            .env_remove("DROVER_TEST_NO_SUCH_TOKEN")
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{name}: {output:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        let at = format!("{}:{line}:{column}: ", spec.display());
        assert!(
            stderr.contains(&at) && stderr.contains(says),
            "{name}: want {at} … {says}:\n{stderr}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(dir.path().join("full/keep.txt")).unwrap(),
        "mine"
    );
}
