//! What no task's commands may read of drover's repository machinery: the
//! `--repo-cache` directory (every repository's mirror and templates, the other
//! repositories of a fleet included) and the directory holding this process's `repo:`
//! checkouts (each task's overlay layers, or its copy, while it works). A task's own
//! checkout is its workspace, which its sandbox grants; its neighbours' are not.
//!
//! Every checkout without `repo.path` is made in one directory per drover process,
//! `drover-repos-<pid>-…` in the temp directory, made when the first task is planned —
//! before any task's sandbox is drawn, so every sandbox can leave it out — and removed
//! when the last task holding it is gone.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

use crate::workspace::leftovers::HeldTempDir;

/// The directories registered so far; a sandbox drawn later leaves them all out.
static PRIVATE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// The checkouts' directory while some task holds it.
static CHECKOUTS: Mutex<Weak<HeldTempDir>> = Mutex::new(Weak::new());

/// Keep `dir` (the repository cache) out of every task's reach from now on.
pub(crate) fn keep_private(dir: &Path) {
    let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    let mut private = PRIVATE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if !private.contains(&dir) {
        private.push(dir);
    }
}

/// The directories no task's commands may read.
pub(crate) fn private_dirs() -> Vec<PathBuf> {
    PRIVATE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .clone()
}

/// The directory this process makes its checkouts in, made (and kept private) on the
/// first call; shared until the last holder lets go.
pub(crate) fn checkouts_dir() -> std::io::Result<Arc<HeldTempDir>> {
    let mut held = CHECKOUTS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(dir) = held.upgrade() {
        return Ok(dir);
    }
    let dir = Arc::new(HeldTempDir::new("repos")?);
    keep_private(dir.path());
    *held = Arc::downgrade(&dir);
    Ok(dir)
}
