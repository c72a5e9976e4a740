//! Running git on a workspace's repository, which is as untrusted as the workspace: no
//! hook, fsmonitor or filter driver its configuration names ever runs, and no variable of
//! drover's environment points git at another repository.

use std::path::Path;
use std::process::{Command, Output};

/// `git -C dir args…`, with no variable from the environment redirecting it to another
/// repository. Run git in `dir` with every program the repository's configuration could make it run
/// switched off: hooks, the fsmonitor, and filter drivers. The repository's `.git` is
/// as untrusted as the workspace (an agent of an earlier task working in place can
/// write to it), and drover runs git outside the sandbox.
pub(super) fn git(dir: &Path, args: &[&str]) -> std::io::Result<Output> {
    let mut command = plain_git(dir);
    command.args([
        "-c",
        "core.hooksPath=/dev/null",
        "-c",
        "core.fsmonitor=false",
    ]);
    for name in filter_drivers(dir) {
        for key in ["smudge", "clean", "process"] {
            command.arg("-c").arg(format!("filter.{name}.{key}="));
        }
        command
            .arg("-c")
            .arg(format!("filter.{name}.required=false"));
    }
    command.args(args).output()
}

/// git in `dir`, stdin closed, with no repository location inherited from drover's
/// environment.
pub(super) fn plain_git(dir: &Path) -> Command {
    let mut command = Command::new("git");
    command
        .arg("-C")
        .arg(dir)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .env_remove("GIT_COMMON_DIR")
        .stdin(std::process::Stdio::null());
    command
}

/// The names of the filter drivers the repository's configuration defines (reading the
/// configuration runs nothing).
fn filter_drivers(dir: &Path) -> Vec<String> {
    let Ok(output) = plain_git(dir)
        .args(["config", "--name-only", "--get-regexp", r"^filter\."])
        .output()
    else {
        return Vec::new();
    };
    let mut names: Vec<String> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|key| {
            let rest = key.strip_prefix("filter.")?;
            let (name, _) = rest.rsplit_once('.')?;
            Some(name.to_string())
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

pub(super) fn stderr_line(output: &Output) -> String {
    let text = String::from_utf8_lossy(&output.stderr);
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    line.trim().to_string()
}
