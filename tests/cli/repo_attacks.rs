//! Attacker suite, git: drover runs git outside the sandbox, on a repository the agent
//! could write to (a `repo:` checkout, a workspace worked in place) — to find where the
//! task started, to diff it, to add and remove worktrees, to fetch through the cache.
//! Here a scripted agent plants in the repository every setting that makes git run a
//! program (`core.fsmonitor`, `core.hooksPath` and hooks, `diff.external`, a textconv, a
//! filter with `.gitattributes`, `core.sshCommand`, `credential.helper`,
//! `protocol.allow=always` with an `ext::` remote, and an `include.path` with the same
//! again), each program leaving a marker outside the workspace. The task ends (diff,
//! checks, reports), a second task of the same repository runs, and no marker may exist;
//! the `--repo-cache` mirror takes nothing from the checkout.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{drover_without_proxy, events, require_sandbox, transcript, write_spec};
use crate::repo::{git, result, served_repo};

/// The settings that make git run a program, each leaving `<markers>/<name><suffix>`.
fn hostile_config(markers: &Path, suffix: &str, hooks: &str) -> String {
    let m = |name: &str| format!("{}/{name}{suffix}", markers.display());
    format!(
        r#"[core]
	fsmonitor = "touch {fsmonitor}; true"
	hooksPath = {hooks}
	sshCommand = "touch {ssh}; false"
	gitProxy = "touch {proxy}; false"
	pager = "touch {pager}; cat"
	editor = "touch {editor}; true"
	alternateRefsCommand = "touch {altrefs}; true"
[diff]
	external = "touch {external}; true"
[diff "x"]
	textconv = "touch {textconv}; cat"
[filter "x"]
	clean = "touch {clean}; cat"
	smudge = "touch {smudge}; cat"
	process = "touch {process}; false"
	required = true
[credential]
	helper = "!touch {credential}; false"
[protocol]
	allow = always
[remote "evil"]
	url = "ext::sh -c touch% {ext}"
	fetch = +refs/heads/*:refs/remotes/evil/*
[gpg]
	program = "touch {gpg}; false"
[commit]
	gpgSign = true
"#,
        fsmonitor = m("fsmonitor"),
        ssh = m("sshcommand"),
        proxy = m("gitproxy"),
        pager = m("pager"),
        editor = m("editor"),
        altrefs = m("alternaterefs"),
        external = m("diff-external"),
        textconv = m("textconv"),
        clean = m("clean"),
        smudge = m("smudge"),
        process = m("process"),
        credential = m("credential-helper"),
        ext = m("ext-remote"),
        gpg = m("gpg"),
    )
}

/// The Bash command a hostile agent runs in its workspace: a commit and refs of its own
/// (printed as `EVIL=<id>`), then every setting of [`hostile_config`] in the
/// repository's configuration (and again through `include.path`), `origin` pointed at
/// an `ext::` URL, hooks of every name in `.git/hooks` and in `core.hooksPath`, and
/// `.gitattributes` applying the filter and textconv to every file.
pub(crate) fn plant(markers: &Path) -> String {
    let config = hostile_config(markers, "", "\"$d/evil-hooks\"");
    let included = hostile_config(markers, "-included", "\"$d/evil-hooks\"");
    let hook = format!(
        "printf '#!/bin/sh\\ntouch {}/hook-%s\\n' \"$h\"",
        markers.display()
    );
    format!(
        r#"echo changed > app.txt
echo new > added.txt
t=$(git write-tree) && c=$(git -c user.name=e -c user.email=e@e commit-tree -m evil "$t") && echo "EVIL=$c"
git update-ref refs/heads/evil "$c"; git update-ref refs/tags/evil "$c"
printf '* filter=x diff=x\n' > .gitattributes
for d in $(git rev-parse --path-format=absolute --git-dir --git-common-dir | sort -u); do
  git config --file "$d/config" remote.origin.url 'ext::sh -c touch% {ext}'
  cat >> "$d/config" <<EOF
{config}[include]
	path = $d/evil.config
EOF
  cat > "$d/evil.config" <<EOF
{included}EOF
  mkdir -p "$d/evil-hooks" "$d/hooks" "$d/info"
  printf '* filter=x diff=x\n' > "$d/info/attributes"
  for h in pre-commit post-checkout post-commit post-merge post-index-change reference-transaction pre-auto-gc post-rewrite pre-push fsmonitor-watchman push-to-checkout post-update; do
    {hook} > "$d/hooks/$h"; {hook} > "$d/evil-hooks/$h"; chmod +x "$d/hooks/$h" "$d/evil-hooks/$h"
  done
done
git config --get core.fsmonitor 2>&1; echo planted"#,
        ext = markers.join("ext-origin").display(),
    )
}

/// A task whose scripted agent writes `script` to `plant.sh` and runs it with Bash
/// (none: it only answers), with a check, and `top` as more top-level spec lines. A
/// script file, since the policy refuses a command line naming paths outside the
/// workspace: the sandbox, not the policy, is what this suite puts to the test.
pub(crate) fn spec_text(name: &str, script: Option<&str>, top: &str) -> String {
    let calls = script.map_or(String::new(), |script| {
        format!(
            "    - tool_calls: {}\n    - tool_calls: {}\n",
            serde_json::json!([{ "name": "Write", "input": { "file_path": "plant.sh", "content": script } }]),
            serde_json::json!([{ "name": "Bash", "input": { "command": "sh plant.sh 2>&1; rm plant.sh" } }])
        )
    });
    format!(
        "version: 1\nname: {name}\nprompt: p\n{top}model:\n  provider: script\n  script:\n{calls}    - text: done\npermissions:\n  allow: [Bash, Write]\nchecks:\n  - name: reads\n    run: cat app.txt\n"
    )
}

pub(crate) fn run(
    root: &Path,
    spec: &Path,
    artifacts: &str,
    extra: &[&str],
) -> std::process::Output {
    drover_without_proxy()
        .arg("run")
        .arg(spec)
        .arg("--artifacts")
        .arg(root.join(artifacts))
        .args(extra)
        .env("HOME", root)
        .output()
        .unwrap()
}

/// The markers left: nothing may have run.
pub(crate) fn assert_nothing_ran(markers: &Path, when: &str) {
    let ran: Vec<String> = std::fs::read_dir(markers)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        ran.is_empty(),
        "{when}: git ran the agent's programs: {ran:?}"
    );
}

/// The planting is potent: git run plainly in `repo` (as drover does not) runs the
/// agent's programs — so the empty marker directory above proves drover's hardening,
/// not a planting that failed.
fn assert_potent(repo: &Path, markers: &Path) {
    for args in [&["status"][..], &["diff"], &["fetch", "origin"]] {
        let _ = std::process::Command::new("git")
            .arg("-C")
            .arg(repo)
            .args(args)
            .env("GIT_TERMINAL_PROMPT", "0")
            .output()
            .unwrap();
    }
    let ran: Vec<String> = std::fs::read_dir(markers)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    // The included file's settings come last and win; the filter's failing `process`
    // stops `git diff` before `diff.external`.
    for wanted in [
        "fsmonitor-included",
        "process-included",
        "hook-post-index-change",
        "ext-origin",
    ] {
        assert!(
            ran.iter().any(|r| r == wanted),
            "{wanted} did not run: {ran:?}"
        );
    }
}

/// The task's Bash result (the planting's output).
pub(crate) fn planted(artifacts: &Path, task: &str) -> String {
    let lines = transcript(&artifacts.join(task).join("transcript.jsonl"));
    let results = events(&lines, "tool_result");
    results[1]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// A scratch root (canonical) with an empty `markers` directory outside every workspace.
pub(crate) fn scene() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let markers = root.join("markers");
    std::fs::create_dir(&markers).unwrap();
    (dir, root, markers)
}

#[test]
#[cfg_attr(not(drover_has_sandbox), ignore = "needs the sandbox")]
fn a_planted_git_config_in_a_repo_checkout_runs_nothing_and_the_cache_takes_nothing() {
    require_sandbox();
    let (_dir, root, markers) = scene();
    let (bare, _, head) = served_repo(&root.join("served"), "service-a");
    let url = format!("file://{}", bare.display());
    let cache = root.join("cache");
    let cache_flag = ["--repo-cache", &*cache.to_string_lossy()].map(str::to_string);
    let cache_args: Vec<&str> = cache_flag.iter().map(String::as_str).collect();
    let attack = write_spec(
        &root,
        "attack.yaml",
        &spec_text(
            "attack",
            Some(&plant(&markers)),
            &format!("repo:\n  url: {url}\n  path: checkout\n"),
        ),
    );
    let output = run(&root, &attack, "out", &cache_args);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let artifacts = root.join("out");
    let said = planted(&artifacts, "attack");
    assert!(said.contains("planted"), "{said}");
    // The planting took: the checkout's configuration names the programs.
    let config = std::fs::read_to_string(root.join("checkout/.git/config")).unwrap();
    assert!(
        config.contains("fsmonitor") && config.contains("ext::"),
        "{said}\n{config}"
    );
    let evil = said
        .lines()
        .find_map(|line| line.strip_prefix("EVIL="))
        .expect("the agent made a commit")
        .trim()
        .to_string();
    let ended = result(&artifacts, "attack");
    assert_eq!(ended["status"], "passed", "{ended}");
    assert_eq!(ended["start"]["commit"], head.as_str());
    let patch = std::fs::read_to_string(artifacts.join("attack/diff.patch")).unwrap();
    assert!(
        patch.contains("+changed") && patch.contains("added.txt"),
        "{patch}"
    );
    assert_nothing_ran(&markers, "the attacking task");

    // The next task of the repository fetches through the same mirror.
    let next = write_spec(
        &root,
        "next.yaml",
        &spec_text("next", None, &format!("repo:\n  url: {url}\n")),
    );
    let output = run(&root, &next, "out2", &cache_args);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(
        result(&root.join("out2"), "next")["start"]["commit"],
        head.as_str()
    );
    assert_nothing_ran(&markers, "the next task");
    let mirror = std::fs::read_dir(&cache)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "git"))
        .expect("a mirror");
    let mirror_config = std::fs::read_to_string(mirror.join("config")).unwrap();
    for planted in [
        "fsmonitor",
        "ext::",
        "include",
        "filter",
        "hooksPath",
        "helper",
    ] {
        assert!(!mirror_config.contains(planted), "{mirror_config}");
    }
    let missing = std::process::Command::new("git")
        .arg("-C")
        .arg(&mirror)
        .args(["cat-file", "-e", &evil])
        .output()
        .unwrap();
    assert!(
        !missing.status.success(),
        "the mirror took the agent's commit"
    );
    let refs = git(&mirror, &["for-each-ref", "--format=%(refname)"]);
    assert!(!refs.contains("evil"), "{refs}");
    let hooks: Vec<_> = std::fs::read_dir(mirror.join("hooks"))
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(
        hooks
            .iter()
            .all(|h| h.to_string_lossy().ends_with(".sample")),
        "{hooks:?}"
    );
    assert_potent(&root.join("checkout"), &markers);
}

/// A git repository `ws` under `root` with `app.txt` committed.
fn workspace_repo(root: &Path) -> PathBuf {
    let ws = root.join("ws");
    std::fs::create_dir(&ws).unwrap();
    git(&ws, &["init", "--quiet", "--initial-branch=main"]);
    std::fs::write(ws.join("app.txt"), "version one\n").unwrap();
    git(&ws, &["add", "."]);
    git(&ws, &["commit", "--quiet", "-m", "one"]);
    ws
}

#[test]
#[cfg_attr(not(drover_has_sandbox), ignore = "needs the sandbox")]
fn a_planted_git_config_in_a_workspace_worked_in_place_runs_nothing_then_or_later() {
    require_sandbox();
    let (_dir, root, markers) = scene();
    let ws = workspace_repo(&root);
    let attack = write_spec(
        &root,
        "attack.yaml",
        &spec_text(
            "attack",
            Some(&plant(&markers)),
            "workspace: ws\nisolation: none\n",
        ),
    );
    let output = run(&root, &attack, "out", &[]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let said = planted(&root.join("out"), "attack");
    assert!(said.contains("planted"), "{said}");
    let config = std::fs::read_to_string(ws.join(".git/config")).unwrap();
    assert!(config.contains("fsmonitor"), "{config}");
    let patch = std::fs::read_to_string(root.join("out/attack/diff.patch")).unwrap();
    assert!(patch.contains("+changed"), "{patch}");
    assert_nothing_ran(&markers, "the attacking task");
    // Later tasks on the poisoned repository: in place, and in a worktree of it.
    for isolation in ["none", "worktree", "copy"] {
        let name = format!("next-{isolation}");
        let next = write_spec(
            &root,
            &format!("{name}.yaml"),
            &spec_text(
                &name,
                None,
                &format!("workspace: ws\nisolation: {isolation}\n"),
            ),
        );
        let artifacts = format!("out-{isolation}");
        let output = run(&root, &next, &artifacts, &[]);
        assert_eq!(output.status.code(), Some(0), "{isolation}: {output:?}");
        let ended: Value = result(&root.join(&artifacts), &name);
        assert_eq!(ended["status"], "passed", "{isolation}: {ended}");
        assert_nothing_ran(&markers, &format!("a later task ({isolation})"));
    }
    assert_potent(&ws, &markers);
}

#[test]
#[cfg_attr(not(drover_has_sandbox), ignore = "needs the sandbox")]
fn an_agent_in_a_worktree_cannot_plant_git_config_and_nothing_runs() {
    require_sandbox();
    let (_dir, root, markers) = scene();
    let ws = workspace_repo(&root);
    let attack = write_spec(
        &root,
        "attack.yaml",
        &spec_text(
            "attack",
            Some(&plant(&markers)),
            "workspace: ws\nisolation: worktree\n",
        ),
    );
    let output = run(&root, &attack, "out", &[]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(result(&root.join("out"), "attack")["status"], "passed");
    assert!(planted(&root.join("out"), "attack").contains("planted"));
    // The repository's own configuration (outside the worktree) is as it was.
    let config = std::fs::read_to_string(ws.join(".git/config")).unwrap();
    assert!(!config.contains("fsmonitor"), "{config}");
    assert!(!ws.join(".git/evil.config").exists());
    assert_nothing_ran(&markers, "the attacking task");
    let next = write_spec(
        &root,
        "next.yaml",
        &spec_text("next", None, "workspace: ws\nisolation: worktree\n"),
    );
    let output = run(&root, &next, "out2", &[]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_nothing_ran(&markers, "the next task");
}
