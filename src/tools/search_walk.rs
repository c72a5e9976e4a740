//! How the searching tools (Glob, Grep, LS) walk a tree: ripgrep's `ignore` walker with
//! `.gitignore` honoured even outside a git repository, hidden files included, `.git/`
//! skipped, and the files the policy denies reading left out — one definition, so no
//! search can see what another may not. Parallel walks hand each thread's finds over in
//! one batch.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::text::display_path;
use super::{ToolContext, ToolError, judged_path};
use crate::policy::HiddenFilter;

/// Where a search starts: the path the policy judged (the workspace root by default),
/// which exists.
pub(super) struct SearchRoot {
    pub path: PathBuf,
    /// The path as the model is shown it.
    pub shown: String,
    pub is_dir: bool,
}

/// The search root `raw` names (see [`SearchRoot`]); a path that is invalid or does not
/// exist is a failure for the model.
pub(super) fn search_root(ctx: &ToolContext, raw: Option<&str>) -> Result<SearchRoot, ToolError> {
    let path = judged_path(ctx, raw.unwrap_or("."))
        .map_err(|e| ToolError::Failed(format!("Invalid path: {e}")))?;
    let shown = display_path(&ctx.workspace, &path);
    match ctx.roots.metadata(&path) {
        Ok(meta) => Ok(SearchRoot {
            path,
            shown,
            is_dir: meta.is_dir(),
        }),
        Err(e) if crate::workspace::confined::is_thread_gone(&e) => {
            Err(ToolError::io(format!("Cannot open {shown}"), e))
        }
        Err(_) => Err(ToolError::Failed(format!(
            "Path does not exist: {shown} (the workspace root is {}).",
            ctx.workspace.display()
        ))),
    }
}

/// The walker every search starts from.
pub(super) fn walker(root: &Path, hidden: Arc<HiddenFilter>) -> ignore::WalkBuilder {
    let mut walk = ignore::WalkBuilder::new(root);
    walk.hidden(false)
        .require_git(false)
        .filter_entry(move |entry| entry.file_name() != ".git" && !hidden(entry.path()));
    walk
}

/// The entry if the walk reached a regular file; None for a directory, a symlink, or an
/// entry the walk could not read (skipped, as ripgrep does).
pub(crate) fn regular_file(
    entry: Result<ignore::DirEntry, ignore::Error>,
) -> Option<ignore::DirEntry> {
    entry
        .ok()
        .filter(|entry| entry.file_type().is_some_and(|t| t.is_file()))
}

/// What one walker thread found, appended to the shared list once, when the thread is
/// done (on drop), rather than taking the lock for every file.
pub(super) struct Batch<T> {
    pub found: Vec<T>,
    shared: Arc<Mutex<Vec<T>>>,
}

impl<T> Batch<T> {
    pub(super) fn new(shared: &Arc<Mutex<Vec<T>>>) -> Self {
        Batch {
            found: Vec::new(),
            shared: Arc::clone(shared),
        }
    }
}

impl<T> Drop for Batch<T> {
    fn drop(&mut self) {
        // Each append leaves the list consistent, so a poisoned lock is still usable.
        let mut shared = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        shared.append(&mut self.found);
    }
}

/// Everything the batches handed over, once the walk is done.
pub(super) fn collected<T>(shared: Arc<Mutex<Vec<T>>>) -> Vec<T> {
    std::mem::take(&mut *shared.lock().unwrap_or_else(|e| e.into_inner()))
}
