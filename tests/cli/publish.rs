//! `drover publish`: a run's passed tasks pushed as commits to real git repositories
//! (`file://`), each through its gates. A commit's tree is the recorded start plus
//! `diff.patch`, exactly; a failed task, a change to CI configuration, a binary file
//! over the limit, a branch moved under the publish and a base that moved since the
//! run are each refused by name, and nothing is pushed for them.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::{drover, write_spec};
use crate::repo::{git, served_repo};

/// A task on `url`'s repository whose agent writes `files` (path, content), with
/// `check` as its one check.
fn task_spec(name: &str, url: &str, files: &[(&str, &str)], check: &str) -> String {
    let calls: String = files
        .iter()
        .map(|(path, content)| {
            format!(
                "    - tool_calls: {}\n",
                serde_json::json!([{ "name": "Write", "input": { "file_path": path, "content": content } }])
            )
        })
        .collect();
    // Read first: Write replaces a file only once it was read.
    let read = serde_json::json!([{ "name": "Read", "input": { "file_path": "app.txt" } }]);
    format!(
        "version: 1\nname: {name}\nprompt: p\nrepo:\n  url: {url}\nmodel:\n  provider: script\n  script:\n    - tool_calls: {read}\n{calls}    - text: \"Changed {name}.\"\npermissions:\n  allow: [Read, Write]\nchecks:\n  - name: check\n    run: {check}\n"
    )
}

/// A task of a test: its name, the files its agent writes (path, content), its check.
type Task<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a str);

/// A served repository, and a run of `specs` (name → text) on it: the artifacts.
struct Scene {
    _dir: tempfile::TempDir,
    root: PathBuf,
    bare: PathBuf,
    url: String,
    start: String,
}

impl Scene {
    fn new() -> Scene {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let (bare, _, start) = served_repo(&root.join("served"), "service-a");
        let url = format!("file://{}", bare.display());
        Scene {
            _dir: dir,
            root,
            bare,
            url,
            start,
        }
    }

    /// Run the specs (each `(name, files, check)`) into `artifacts`; drover's output.
    fn run(&self, artifacts: &str, tasks: &[Task<'_>]) -> PathBuf {
        let specs: Vec<(String, String)> = tasks
            .iter()
            .map(|(name, files, check)| {
                (name.to_string(), task_spec(name, &self.url, files, check))
            })
            .collect();
        let (out, output) = self.run_specs(artifacts, &specs);
        assert!(output.status.code().is_some_and(|c| c <= 1), "{output:?}");
        out
    }

    /// Run `specs` (name, text) into `artifacts`: the artifacts directory, and how
    /// drover ended.
    fn run_specs(&self, artifacts: &str, specs: &[(String, String)]) -> (PathBuf, Output) {
        let dir = self.root.join(format!("specs-{artifacts}"));
        std::fs::create_dir_all(&dir).unwrap();
        for (name, text) in specs {
            write_spec(&dir, &format!("{name}.yaml"), text);
        }
        let out = self.root.join(artifacts);
        let output = drover()
            .arg("run")
            .arg(&dir)
            .arg("--artifacts")
            .arg(&out)
            .output()
            .unwrap();
        (out, output)
    }

    fn publish(&self, artifacts: &Path, extra: &[&str]) -> Output {
        drover()
            .arg("publish")
            .arg(artifacts)
            .args(["--remote", &self.url])
            .args(extra)
            .env_remove("GITHUB_TOKEN")
            .output()
            .unwrap()
    }

    /// The commit `branch` of the served repository is at, if any.
    fn head(&self, branch: &str) -> Option<String> {
        let listed = git(
            &self.bare,
            &[
                "for-each-ref",
                "--format=%(objectname)",
                &format!("refs/heads/{branch}"),
            ],
        );
        (!listed.is_empty()).then_some(listed)
    }
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn a_passed_task_becomes_a_commit_of_its_start_plus_its_patch_exactly() {
    let scene = Scene::new();
    let out = scene.run(
        "out",
        &[(
            "fix",
            &[("app.txt", "version three\n"), ("src/new.txt", "new\n")],
            "true",
        )],
    );
    let output = scene.publish(
        &out,
        &[
            "--branch",
            "drover/{task}",
            "--author",
            "Bot <bot@example.com>",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let commit = scene.head("drover/fix").expect("the branch was made");
    assert_eq!(
        git(&scene.bare, &["rev-parse", &format!("{commit}^")]),
        scene.start
    );
    // The recorded patch, applied to a fresh clone of the start, makes the same tree.
    let fresh = scene.root.join("fresh");
    git(
        &scene.root,
        &["clone", "--quiet", &scene.url, &fresh.to_string_lossy()],
    );
    git(&fresh, &["checkout", "--quiet", &scene.start]);
    git(
        &fresh,
        &[
            "apply",
            "--index",
            &out.join("fix/diff.patch").to_string_lossy(),
        ],
    );
    assert_eq!(
        git(&fresh, &["write-tree"]),
        git(&scene.bare, &["rev-parse", &format!("{commit}^{{tree}}")])
    );
    let message = git(
        &scene.bare,
        &["log", "-1", "--format=%an <%ae>%n%B", &commit],
    );
    assert!(
        message.starts_with("Bot <bot@example.com>\ndrover: fix"),
        "{message}"
    );
    assert!(
        message.contains("Changed fix.") && message.contains("Drover-Task: fix"),
        "{message}"
    );
    assert_eq!(
        scene.head("main").as_deref(),
        Some(scene.start.as_str()),
        "main untouched"
    );

    // Published again: the branch holds the change already; nothing is pushed.
    let again = scene.publish(&out, &["--branch", "drover/{task}"]);
    assert_eq!(again.status.code(), Some(0), "{again:?}");
    assert!(
        String::from_utf8_lossy(&again.stdout).contains("holds this change already"),
        "{again:?}"
    );
    assert_eq!(scene.head("drover/fix"), Some(commit));
}

#[test]
fn a_failed_task_ci_configuration_and_a_big_binary_are_refused_by_name() {
    let scene = Scene::new();
    let out = scene.run(
        "out",
        &[
            ("broken", &[("app.txt", "broken\n")], "false"),
            (
                "workflow",
                &[(".github/workflows/ci.yml", "on: push\n")],
                "true",
            ),
            (
                "blob",
                &[("data.bin", "\u{0}\u{1}\u{2}binary payload")],
                "true",
            ),
            ("fine", &[("app.txt", "fine\n")], "true"),
        ],
    );
    let output = scene.publish(
        &out,
        &["--branch", "drover/{task}", "--max-blob-bytes", "8"],
    );
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let said = stderr(&output);
    assert!(
        said.contains("publish broken: refused by the passed gate"),
        "{said}"
    );
    assert!(
        said.contains("publish workflow: refused by the workflow gate")
            && said.contains(".github/workflows/ci.yml"),
        "{said}"
    );
    assert!(
        said.contains("publish blob: refused by the binary gate") && said.contains("data.bin"),
        "{said}"
    );
    for refused in ["broken", "workflow", "blob"] {
        assert_eq!(
            scene.head(&format!("drover/{refused}")),
            None,
            "{refused} was pushed"
        );
    }
    assert!(
        scene.head("drover/fine").is_some(),
        "the passing task was published"
    );

    // CI configuration goes through when asked.
    let output = scene.publish(
        &out,
        &[
            "--branch",
            "drover/{task}",
            "--task",
            "workflow",
            "--allow-workflow-changes",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert!(scene.head("drover/workflow").is_some());
}

#[test]
fn a_branch_moved_under_the_publish_is_kept_unless_forced_and_a_moved_base_stops_it() {
    let scene = Scene::new();
    let out = scene.run("out", &[("fix", &[("app.txt", "fixed\n")], "true")]);
    // Someone else's commit on the branch, not based on the task's start.
    let work = scene.root.join("served/service-a-work");
    git(&work, &["checkout", "--quiet", "-b", "other", &scene.start]);
    std::fs::write(work.join("other.txt"), "theirs\n").unwrap();
    git(&work, &["add", "other.txt"]);
    git(&work, &["commit", "--quiet", "-m", "theirs"]);
    let bare = scene.bare.to_string_lossy().into_owned();
    git(
        &work,
        &["push", "--quiet", &bare, "other:refs/heads/drover/fix"],
    );
    let theirs = scene.head("drover/fix").unwrap();

    let output = scene.publish(&out, &["--branch", "drover/{task}"]);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    assert!(
        stderr(&output).contains("refused by the fast-forward gate"),
        "{output:?}"
    );
    assert_eq!(scene.head("drover/fix").as_deref(), Some(theirs.as_str()));
    let output = scene.publish(&out, &["--branch", "drover/{task}", "--force"]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let ours = scene.head("drover/fix").unwrap();
    assert_ne!(ours, theirs);
    assert_eq!(
        git(&scene.bare, &["rev-parse", &format!("{ours}^")]),
        scene.start
    );

    // main moves on after the run: with --base main the publish stops and says so.
    git(&work, &["checkout", "--quiet", "main"]);
    std::fs::write(work.join("later.txt"), "later\n").unwrap();
    git(&work, &["add", "later.txt"]);
    git(&work, &["commit", "--quiet", "-m", "later"]);
    git(&work, &["push", "--quiet", &bare, "main"]);
    let output = scene.publish(&out, &["--branch", "drover/base-{task}", "--base", "main"]);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    assert!(
        stderr(&output).contains("refused by the base gate"),
        "{output:?}"
    );
    assert_eq!(scene.head("drover/base-fix"), None);
}

#[test]
fn bad_publish_input_is_exit_2_before_anything_is_pushed() {
    let scene = Scene::new();
    let out = scene.run("out", &[("fix", &[("app.txt", "fixed\n")], "true")]);
    for (args, said) in [
        (&["--branch", "a..b"][..], "--branch"),
        (&["--branch", "x", "--author", "nobody"], "--author"),
        (&["--branch", "x", "--task", "nope"], "no task named nope"),
        (&["--branch", "HEAD"], "HEAD is not a branch name"),
    ] {
        let output = scene.publish(&out, args);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {output:?}");
        assert!(stderr(&output).contains(said), "{args:?}: {output:?}");
    }
    let output = scene.publish(&scene.root.join("nothing"), &["--branch", "x"]);
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert!(scene.head("x").is_none());
}

#[test]
fn a_start_that_is_not_the_base_branch_head_and_an_incomplete_diff_are_refused() {
    let scene = Scene::new();
    // A task on `dev` (the first commit; `main`, the default branch, is past it).
    let on_dev = task_spec("ondev", &scene.url, &[("dev.txt", "dev\n")], "true")
        .replace("repo:\n", "repo:\n  ref: dev\n");
    // A task whose diff leaves a file out (diff.exclude).
    let partial = task_spec(
        "partial",
        &scene.url,
        &[("skip.txt", "x\n"), ("kept.txt", "y\n")],
        "true",
    ) + "diff:\n  exclude: [skip.txt]\n";
    let specs = [
        ("ondev".to_string(), on_dev),
        ("partial".to_string(), partial),
    ];
    let (out, output) = scene.run_specs("out", &specs);
    assert_eq!(output.status.code(), Some(0), "{output:?}");

    let output = scene.publish(&out, &["--branch", "drover/{task}"]);
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let said = stderr(&output);
    assert!(
        said.contains("publish ondev: refused by the base gate: main is at"),
        "{said}"
    );
    assert!(
        said.contains("publish partial: refused by the incomplete gate"),
        "{said}"
    );
    assert_eq!(scene.head("drover/ondev"), None);
    assert_eq!(scene.head("drover/partial"), None);
    // Named as the branch it ran on, the task is published.
    let output = scene.publish(
        &out,
        &[
            "--branch",
            "drover/{task}",
            "--task",
            "ondev",
            "--base",
            "dev",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert!(scene.head("drover/ondev").is_some());
}

#[test]
fn attributes_of_the_change_do_not_steer_the_gates_and_empty_patches_join_one_commit() {
    let scene = Scene::new();
    let many: String = (0..300).map(|i| format!("line {i}\n")).collect();
    let out = scene.run(
        "out",
        &[
            // `-diff` would make git count the file as binary: zero lines.
            (
                "hidden",
                &[(".gitattributes", "*.txt -diff\n"), ("many.txt", &many)],
                "true",
            ),
            ("quiet", &[], "true"),
            ("small", &[("small.txt", "small\n")], "true"),
        ],
    );
    let output = scene.publish(
        &out,
        &[
            "--branch",
            "drover/{task}",
            "--task",
            "hidden",
            "--max-lines",
            "100",
        ],
    );
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    assert!(
        stderr(&output).contains("refused by the max-lines gate: it changes 301 lines"),
        "{output:?}"
    );
    // One commit for two tasks, one of which changed nothing.
    let output = scene.publish(
        &out,
        &[
            "--branch",
            "drover/together",
            "--task",
            "quiet",
            "--task",
            "small",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let commit = scene.head("drover/together").unwrap();
    let message = git(&scene.bare, &["log", "-1", "--format=%B", &commit]);
    assert!(
        message.contains("Drover-Task: quiet\nDrover-Task: small"),
        "{message}"
    );
}

#[test]
fn a_file_name_that_is_not_utf8_is_sized_like_any_other() {
    let scene = Scene::new();
    // Bash makes a 3,000-byte file whose name holds the byte 0xff.
    let call = serde_json::json!([{ "name": "Bash", "input": { "command": "printf '%3000s' x > $'big\\xff.txt'" } }]);
    let spec = format!(
        "version: 1\nname: odd\nprompt: p\nrepo:\n  url: {}\nmodel:\n  provider: script\n  script:\n    - tool_calls: {call}\n    - text: done\npermissions:\n  allow: [Bash]\n",
        scene.url
    );
    let (out, output) = scene.run_specs("out", &[("odd".to_string(), spec)]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let output = scene.publish(
        &out,
        &["--branch", "drover/{task}", "--max-blob-bytes", "1000"],
    );
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    assert!(
        stderr(&output).contains("refused by the binary gate")
            && stderr(&output).contains("(3000 bytes)"),
        "{output:?}"
    );
    assert_eq!(scene.head("drover/odd"), None);
}
