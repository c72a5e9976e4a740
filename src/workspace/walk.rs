//! Which files are the workspace's, walked: ignore rules from the workspace only, `.git`,
//! build trees and drover's own directories left out, links never followed. The baseline
//! and the isolation copy walk alike, so a copy holds exactly what the baseline sees.

use std::fs::FileType;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::RelPath;

/// The signature a `CACHEDIR.TAG` file starts with (the Cache Directory Tagging
/// standard, <https://bford.info/cachedir/>); cargo writes one into `target/`.
const CACHEDIR_SIGNATURE: &[u8] = b"Signature: 8a477f597d28d172789f06886806bc55";

/// The one walker configuration for "the workspace's files", shared by the baseline and
/// copies so a copied workspace is exactly what the snapshot of the original sees.
/// Ignore rules come only from files inside the workspace (not the user's global git
/// config or parent directories), so the result does not depend on the machine.
/// Skipped whatever the ignore files say: `.git/`, build trees (directories named
/// `node_modules`, and directories tagged with a `CACHEDIR.TAG` file, like cargo's
/// `target/`), and the directories in `excluded` that lie below `root`.
pub(crate) fn walker(
    root: &Path,
    excluded: &[PathBuf],
    build_trees: Arc<Mutex<Vec<PathBuf>>>,
) -> ignore::WalkBuilder {
    let excluded = excluded_below(root, excluded);
    let root_path = root.to_path_buf();
    let mut builder = ignore::WalkBuilder::new(root);
    builder
        .hidden(false)
        .parents(false)
        .ignore(true)
        .git_ignore(true)
        .git_global(false)
        .git_exclude(false)
        .require_git(false)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(move |entry| {
            if entry.depth() == 0 {
                return true;
            }
            if entry.file_name() == ".git" {
                return false;
            }
            if !entry.file_type().is_some_and(|t| t.is_dir()) {
                return true;
            }
            let is_excluded = entry
                .path()
                .strip_prefix(&root_path)
                .is_ok_and(|rel| excluded.iter().any(|e| e == rel));
            if is_excluded {
                return false;
            }
            if is_build_tree(entry.path()) {
                if let Ok(mut trees) = build_trees.lock() {
                    trees.push(entry.path().to_path_buf());
                }
                return false;
            }
            true
        });
    builder
}

/// `excluded` directories that lie strictly below `root`, relative to it (both
/// canonicalized, so a symlinked or relative spelling still matches). A directory that
/// does not exist (yet) has nothing to leave out.
pub(crate) fn excluded_below(root: &Path, excluded: &[PathBuf]) -> Vec<PathBuf> {
    let Ok(root) = root.canonicalize() else {
        return Vec::new();
    };
    excluded
        .iter()
        .filter_map(|dir| dir.canonicalize().ok())
        .filter_map(|dir| {
            let rel = dir.strip_prefix(&root).ok()?;
            (!rel.as_os_str().is_empty()).then(|| rel.to_path_buf())
        })
        .collect()
}

/// A directory no workspace snapshot or copy should hold: `node_modules`, or one tagged
/// as a cache (`CACHEDIR.TAG` starting with the standard's signature).
fn is_build_tree(dir: &Path) -> bool {
    if dir.file_name().is_some_and(|name| name == "node_modules") {
        return true;
    }
    let Ok(mut tag) = std::fs::File::open(dir.join("CACHEDIR.TAG")) else {
        return false;
    };
    let mut start = [0u8; CACHEDIR_SIGNATURE.len()];
    io::Read::read_exact(&mut tag, &mut start).is_ok() && start == CACHEDIR_SIGNATURE
}

/// One path the walker yielded below the root.
pub(crate) struct WalkedEntry {
    /// Absolute (or root-joined) path on disk.
    pub path: PathBuf,
    /// Relative to the root, as the file system's bytes.
    pub relative: RelPath,
    /// Not followed: a symlink reports as a symlink.
    pub file_type: FileType,
}

/// Asked between entries whether to stop (drover was interrupted).
pub(crate) type Stop<'a> = &'a dyn Fn() -> bool;

/// The error of a walk or copy stopped by [`Stop`].
pub(crate) fn stopped() -> io::Error {
    io::Error::new(io::ErrorKind::Interrupted, "interrupted")
}

/// Everything [`walker`] yields below `root` (the root itself excluded), collected first
/// so callers may write into the tree while using the list, and the build trees it left
/// out (relative to `root`); stops with [`stopped`] as soon as `stop` says so.
pub(crate) fn walk_noting_build_trees(
    root: &Path,
    excluded: &[PathBuf],
    stop: Stop<'_>,
) -> io::Result<(Vec<WalkedEntry>, Vec<RelPath>)> {
    let build_trees: Arc<Mutex<Vec<PathBuf>>> = Arc::default();
    let mut entries = Vec::new();
    for result in walker(root, excluded, Arc::clone(&build_trees)).build() {
        if stop() {
            return Err(stopped());
        }
        let entry = match result {
            Ok(entry) => entry,
            // A malformed line in an ignore file is not worth failing the run over: the
            // walker still applies the rest of the file.
            Err(error) if error.io_error().is_none() => continue,
            Err(error) => return Err(walk_error(root, error)),
        };
        if entry.depth() == 0 {
            continue;
        }
        let Some(file_type) = entry.file_type() else {
            continue;
        };
        let Ok(rel) = entry.path().strip_prefix(root) else {
            continue;
        };
        let relative = RelPath::from_relative(rel);
        entries.push(WalkedEntry {
            path: entry.path().to_path_buf(),
            relative,
            file_type,
        });
    }
    let trees = build_trees
        .lock()
        .map(|trees| {
            trees
                .iter()
                .filter_map(|tree| tree.strip_prefix(root).ok())
                .map(RelPath::from_relative)
                .collect()
        })
        .unwrap_or_default();
    Ok((entries, trees))
}

fn walk_error(root: &Path, error: ignore::Error) -> io::Error {
    let kind = error
        .io_error()
        .map(io::Error::kind)
        .unwrap_or(io::ErrorKind::Other);
    io::Error::new(
        kind,
        format!("reading workspace {}: {error}", root.display()),
    )
}

/// An io error that says which file it is about.
pub(crate) fn named(path: &Path, error: io::Error) -> io::Error {
    io::Error::new(error.kind(), format!("{}: {error}", path.display()))
}
