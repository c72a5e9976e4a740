//! Preparing a task's workspace: where it is, whether drover can run it, and the
//! scratch copy `isolation: copy` (and every replay) works in.

use std::path::{Path, PathBuf};

use tempfile::TempDir;

use crate::spec::{Isolation, LoadedSpec, Provider};
use crate::workspace::copy::copy_workspace;

/// The directory a task works in, kept alive as long as the task needs it.
pub struct PreparedWorkspace {
    /// Canonical path the tools work in.
    pub dir: PathBuf,
    /// The scratch copy, removed when dropped.
    _scratch: Option<TempDir>,
}

/// Work in place.
pub fn in_place(origin: &Path) -> std::io::Result<PreparedWorkspace> {
    Ok(PreparedWorkspace {
        dir: origin.canonicalize()?,
        _scratch: None,
    })
}

/// Work in a scratch copy of `origin`'s files (not ignored ones, not `.git/`).
pub fn scratch_copy(origin: &Path) -> std::io::Result<PreparedWorkspace> {
    let scratch = tempfile::Builder::new().prefix("drover-ws-").tempdir()?;
    copy_workspace(origin, scratch.path())?;
    Ok(PreparedWorkspace {
        dir: scratch.path().canonicalize()?,
        _scratch: Some(scratch),
    })
}

/// Capabilities a spec may name that this drover does not have yet. Refused before any
/// task starts, naming what is missing: never run as a silent no-op.
pub fn missing_capability(spec: &LoadedSpec, _provider: Provider) -> Option<String> {
    let place = spec.path.display();
    if spec.spec.isolation == Isolation::Worktree {
        return Some(format!(
            "{place}: isolation: worktree is not available in drover {} yet; use isolation: copy (a scratch copy of the workspace) or none",
            crate::VERSION
        ));
    }
    None
}
