//! Where a workspace in a git repository starts: the commit checked out and whether
//! anything else was there (`run_start`'s `start`), and the checks a recorded commit
//! passes before git is given it. A recording may come from anyone (a fork's CI), so
//! its commit id reaches git only as a full hex object id, after the option list, once
//! git has said it names a commit of the local repository.

use std::path::{Path, PathBuf};

use crate::record::StartCommit;

use super::git::{git, stderr_line};

/// A full git object id: 40 (SHA-1) or 64 (SHA-256) lowercase hex digits, nothing else.
/// Nothing shorter (an abbreviation could name another object), no revision syntax
/// (`HEAD~1`), no option (`--output=…`).
pub(crate) fn is_object_id(text: &str) -> bool {
    matches!(text.len(), 40 | 64) && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The commit HEAD of `dir`'s repository is, as a full object id; None outside a
/// repository, before its first commit, or without git.
pub(crate) fn head_commit(dir: &Path) -> Option<String> {
    let output = git(dir, &["rev-parse", "--verify", "--quiet", "HEAD^{commit}"]).ok()?;
    if !output.status.success() {
        return None;
    }
    let id = String::from_utf8_lossy(&output.stdout).trim().to_string();
    is_object_id(&id).then_some(id)
}

/// Where `workspace` starts in its repository: HEAD's commit, and whether git sees
/// anything else in the workspace (a changed, added, deleted or untracked file it does
/// not ignore) besides what lies in `excluded` (drover's own outputs). None outside a
/// repository. Submodules are not looked into: git would run in them, under their own
/// configuration. When git cannot say, the workspace counts as dirty.
pub(crate) fn start_of(workspace: &Path, excluded: &[PathBuf]) -> Option<StartCommit> {
    let commit = head_commit(workspace)?;
    let dirty = changed_paths(workspace).is_none_or(|paths| {
        let excluded: Vec<PathBuf> = excluded
            .iter()
            .map(|path| path.canonicalize().unwrap_or_else(|_| path.clone()))
            .collect();
        paths
            .iter()
            .any(|path| !excluded.iter().any(|out| path.starts_with(out)))
    });
    Some(StartCommit {
        commit,
        dirty,
        repository: None,
    })
}

/// The paths `git status` reports in `workspace` (absolute), or None when git cannot
/// say. `--no-optional-locks`: the index is only read, never refreshed on disk.
fn changed_paths(workspace: &Path) -> Option<Vec<PathBuf>> {
    let top = git(workspace, &["rev-parse", "--show-toplevel"]).ok()?;
    if !top.status.success() {
        return None;
    }
    let toplevel = PathBuf::from(String::from_utf8_lossy(&top.stdout).trim_end_matches('\n'));
    let toplevel = toplevel.canonicalize().unwrap_or(toplevel);
    let output = git(
        workspace,
        &[
            "--no-optional-locks",
            "status",
            "--porcelain=v1",
            "-z",
            "--untracked-files=all",
            "--ignore-submodules=all",
            "--",
            ".",
        ],
    )
    .ok()?;
    if !output.status.success() {
        return None;
    }
    Some(
        porcelain_paths(&output.stdout)
            .into_iter()
            .map(|path| toplevel.join(path))
            .collect(),
    )
}

/// The paths of `git status --porcelain=v1 -z` output (relative to the repository's
/// top): `XY path`, a rename or copy followed by its source path.
fn porcelain_paths(output: &[u8]) -> Vec<String> {
    let mut paths = Vec::new();
    let mut fields = output.split(|byte| *byte == 0).filter(|f| !f.is_empty());
    while let Some(entry) = fields.next() {
        let Some(path) = entry.get(3..) else {
            continue;
        };
        paths.push(String::from_utf8_lossy(path).into_owned());
        let renamed =
            matches!(entry.first(), Some(b'R' | b'C')) || matches!(entry.get(1), Some(b'R' | b'C'));
        if renamed && let Some(source) = fields.next() {
            paths.push(String::from_utf8_lossy(source).into_owned());
        }
    }
    paths
}

/// Why a recorded start commit cannot be where a replay or resume starts.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CommitUnusable {
    #[error(
        "the recorded start commit {0} is not a full hex object id, so it was never given to git"
    )]
    NotAnObjectId(String),
    #[error(
        "the recorded start commit {commit} is not in the repository of {} (a shallow clone? `git fetch origin {commit}` brings it)",
        workspace.display()
    )]
    Missing { workspace: PathBuf, commit: String },
    #[error(
        "the recorded start commit {commit} names a {kind} in the repository of {}, not a commit",
        workspace.display()
    )]
    NotACommit {
        workspace: PathBuf,
        commit: String,
        kind: String,
    },
    #[error(
        "the recorded start commit {commit} cannot be looked up: {} is in no git repository git can read ({why})",
        workspace.display()
    )]
    NoRepository {
        workspace: PathBuf,
        commit: String,
        why: String,
    },
    #[error(
        "the recorded run started at commit {commit} with uncommitted or untracked files, so the commit alone is not its start"
    )]
    Dirty { commit: String },
}

/// The recorded `start` checked for a start from its commit in `workspace`'s
/// repository: a full hex object id (else git never sees it), of a commit object git
/// finds there (`git cat-file -t`, the id after `--end-of-options`), of a start that
/// was the commit alone.
pub(crate) fn check_commit(
    workspace: &Path,
    start: &StartCommit,
) -> Result<String, CommitUnusable> {
    let commit = &start.commit;
    if !is_object_id(commit) {
        return Err(CommitUnusable::NotAnObjectId(shown(commit)));
    }
    if start.dirty {
        return Err(CommitUnusable::Dirty {
            commit: commit.clone(),
        });
    }
    let no_repository = |why: String| CommitUnusable::NoRepository {
        workspace: workspace.to_path_buf(),
        commit: commit.clone(),
        why,
    };
    let top = git(workspace, &["rev-parse", "--show-toplevel"])
        .map_err(|error| no_repository(error.to_string()))?;
    if !top.status.success() {
        return Err(no_repository(stderr_line(&top)));
    }
    let output = git(workspace, &["cat-file", "-t", "--end-of-options", commit])
        .map_err(|error| no_repository(error.to_string()))?;
    if !output.status.success() {
        return Err(CommitUnusable::Missing {
            workspace: workspace.to_path_buf(),
            commit: commit.clone(),
        });
    }
    let kind = String::from_utf8_lossy(&output.stdout).trim().to_string();
    if kind != "commit" {
        return Err(CommitUnusable::NotACommit {
            workspace: workspace.to_path_buf(),
            commit: commit.clone(),
            kind: shown(&kind),
        });
    }
    Ok(commit.clone())
}

/// Text a recording chose, quoted and cut short for a message.
fn shown(text: &str) -> String {
    let cut: String = text.chars().take(80).collect();
    if cut.len() < text.len() {
        format!("{cut:?}…")
    } else {
        format!("{cut:?}")
    }
}

#[cfg(test)]
#[path = "start_commit_tests.rs"]
mod tests;
