//! Preparing a task's workspace: where it is, whether drover can run it, and the
//! scratch copy `isolation: copy` (and every replay) or the git worktree
//! `isolation: worktree` works in.

use std::path::{Path, PathBuf};

use tempfile::TempDir;

use crate::spec::{LoadedSpec, Provider};
use crate::workspace::copy::copy_workspace;

use super::worktree::Worktree;

/// The directory a task works in, kept alive as long as the task needs it.
pub struct PreparedWorkspace {
    /// Canonical path the tools work in.
    pub dir: PathBuf,
    /// The scratch copy, removed when dropped.
    _scratch: Option<TempDir>,
    /// The git worktree, removed when dropped.
    _worktree: Option<Worktree>,
}

/// Work in place.
pub fn in_place(origin: &Path) -> std::io::Result<PreparedWorkspace> {
    Ok(PreparedWorkspace {
        dir: origin.canonicalize()?,
        _scratch: None,
        _worktree: None,
    })
}

/// Work in a scratch copy of `origin`'s files (not ignored ones, not `.git/`).
pub fn scratch_copy(origin: &Path) -> std::io::Result<PreparedWorkspace> {
    let scratch = tempfile::Builder::new().prefix("drover-ws-").tempdir()?;
    copy_workspace(origin, scratch.path())?;
    Ok(PreparedWorkspace {
        dir: scratch.path().canonicalize()?,
        _scratch: Some(scratch),
        _worktree: None,
    })
}

/// Work in a detached git worktree of `origin`'s repository at HEAD (in the same
/// subdirectory `origin` is in), removed when the returned workspace is dropped.
pub fn git_worktree(origin: &Path, label: &str) -> std::io::Result<PreparedWorkspace> {
    let worktree = Worktree::add(origin, label)?;
    Ok(PreparedWorkspace {
        dir: worktree.dir.clone(),
        _scratch: None,
        _worktree: Some(worktree),
    })
}

/// Capabilities a spec may name that this drover does not have yet. Refused before any
/// task starts, naming what is missing: never run as a silent no-op.
pub fn missing_capability(spec: &LoadedSpec, provider: Provider) -> Option<String> {
    let place = spec.path.display();
    match provider {
        Provider::Anthropic | Provider::Openai => {
            return Some(format!(
                "{place}: provider {} is not available in drover {} yet (the real model providers are still being built); use provider: script or provider: replay",
                provider.as_str(),
                crate::VERSION
            ));
        }
        Provider::Script | Provider::Replay => {}
    }
    None
}
