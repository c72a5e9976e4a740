//! Preparing a task's workspace: where it is, whether drover can run it, and the
//! scratch copy `isolation: copy` (and every replay) or the git worktree
//! `isolation: worktree` works in.

use std::path::{Path, PathBuf};

use crate::workspace::RelPath;
use crate::workspace::baseline::CopyOrigin;
use crate::workspace::copy::copy_workspace_until;
use crate::workspace::leftovers::HeldTempDir;
use crate::workspace::walk::Stop;

use super::worktree::Worktree;

/// The directory a task works in, kept alive as long as the task needs it.
pub(crate) struct PreparedWorkspace {
    /// Canonical path the tools work in.
    pub dir: PathBuf,
    /// The scratch copy, removed when dropped.
    _scratch: Option<HeldTempDir>,
    /// The git worktree, removed when dropped.
    _worktree: Option<Worktree>,
    /// Build trees of the original a copy left out: the diff leaves them out too.
    pub build_trees: Vec<RelPath>,
    /// The directory a copy was made from (canonical).
    pub copied_from: Option<PathBuf>,
}

impl PreparedWorkspace {
    /// In a git worktree, restore its `.git` file if the agent changed it (see
    /// [`Worktree::restore_git_link`]); Ok(false) when nothing was changed or there is no
    /// worktree.
    pub(crate) fn restore_git_link(&self) -> std::io::Result<bool> {
        match &self._worktree {
            Some(worktree) => worktree.restore_git_link(),
            None => Ok(false),
        }
    }

    /// What the baseline of a copy can lean on; `pristine`: the copy is still exactly
    /// what was copied (no `setup:` has run in it).
    pub(crate) fn copy_origin(&self, pristine: bool) -> Option<CopyOrigin<'_>> {
        let dir = self.copied_from.as_deref()?;
        Some(CopyOrigin {
            dir: pristine.then_some(dir),
            build_trees: &self.build_trees,
        })
    }

    /// The commit a git worktree checked out (None: not a worktree).
    pub(crate) fn worktree_commit(&self) -> Option<&str> {
        self._worktree
            .as_ref()
            .map(|worktree| worktree.commit.as_str())
    }

    /// Paths inside the workspace no tool may write: a worktree's `.git` file.
    pub(crate) fn protected(&self) -> Vec<PathBuf> {
        self._worktree
            .iter()
            .map(|worktree| worktree.git_link_path())
            .collect()
    }
}

/// Work in place.
pub(crate) fn in_place(origin: &Path) -> std::io::Result<PreparedWorkspace> {
    Ok(PreparedWorkspace {
        dir: origin.canonicalize()?,
        _scratch: None,
        _worktree: None,
        build_trees: Vec::new(),
        copied_from: None,
    })
}

/// Work in a scratch copy of `origin`'s files (not ignored ones, not `.git/`, not build
/// trees, not the `excluded` directories).
/// The copy stops (an `Interrupted` error) as soon as `stop` says so.
pub(crate) fn scratch_copy(
    origin: &Path,
    excluded: &[PathBuf],
    stop: Stop<'_>,
) -> std::io::Result<PreparedWorkspace> {
    let scratch = HeldTempDir::new("ws")?;
    let build_trees = copy_workspace_until(origin, scratch.path(), excluded, stop)?;
    Ok(PreparedWorkspace {
        dir: scratch.path().canonicalize()?,
        _scratch: Some(scratch),
        _worktree: None,
        build_trees,
        copied_from: Some(origin.canonicalize()?),
    })
}

/// Work in a detached git worktree of `origin`'s repository (in the same subdirectory
/// `origin` is in) at `commit`, a checked full object id, or else at HEAD; removed when
/// the returned workspace is dropped.
pub(crate) fn git_worktree(
    origin: &Path,
    label: &str,
    commit: Option<&str>,
) -> std::io::Result<PreparedWorkspace> {
    let worktree = Worktree::add(origin, label, commit)?;
    Ok(PreparedWorkspace {
        dir: worktree.dir.clone(),
        _scratch: None,
        _worktree: Some(worktree),
        build_trees: Vec::new(),
        copied_from: None,
    })
}
