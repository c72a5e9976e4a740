//! The one walk of a workspace the baseline makes, at the start and again at the end:
//! every entry except `.git` and drover's own directories, each marked as left out of
//! the diff or not by the starting rules (which the start walk learns as it goes).

use std::collections::HashSet;
use std::fs::{FileType, Metadata};
use std::io;
use std::path::{Path, PathBuf};

use super::rules::StartRules;
use crate::workspace::snapshot::{Stop, excluded_below, stopped};
use crate::workspace::{RelPath, Roots};

/// One entry below the root.
pub struct Walked {
    pub relative: RelPath,
    pub file_type: FileType,
    /// Taken without following symlinks; not taken for directories (nothing needs it,
    /// and a `stat` per directory is a cost the size of the tree).
    pub metadata: Option<Metadata>,
    /// Left out of the diff by the starting rules (or inside a directory that is).
    pub excluded: bool,
}

/// How the walk treats the ignore rules.
pub enum Rules<'a> {
    /// The start: read each directory's ignore files (beneath `roots`) as it is reached.
    Learn(&'a mut StartRules, &'a Roots),
    /// The end: judge by what the start learned; files the agent wrote do not count.
    Apply(&'a StartRules),
}

/// Walk `root` (canonical) in a fixed order, calling `visit` for every entry but the
/// root, `.git` and the `excluded` directories below the root; stops with [`stopped`]
/// as soon as `stop` says so.
pub fn walk(
    root: &Path,
    excluded: &[PathBuf],
    mut rules: Rules<'_>,
    stop: Stop<'_>,
    mut visit: impl FnMut(Walked) -> io::Result<()>,
) -> io::Result<()> {
    if let Rules::Learn(learned, roots) = &mut rules {
        learned.learn_dir(roots, &RelPath::root());
    }
    let excluded = excluded_below(root, excluded);
    let root_path = root.to_path_buf();
    let mut builder = ignore::WalkBuilder::new(root);
    builder
        .standard_filters(false)
        .hidden(false)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(move |entry| {
            if entry.depth() == 0 {
                return true;
            }
            if entry.file_name() == ".git" {
                return false;
            }
            !entry.file_type().is_some_and(|t| t.is_dir())
                || !entry
                    .path()
                    .strip_prefix(&root_path)
                    .is_ok_and(|rel| excluded.iter().any(|e| e == rel))
        });
    let mut excluded_dirs: HashSet<RelPath> = HashSet::new();
    for result in builder.build() {
        if stop() {
            return Err(stopped());
        }
        let entry = match result {
            Ok(entry) => entry,
            Err(error) => {
                let kind = error
                    .io_error()
                    .map(io::Error::kind)
                    .unwrap_or(io::ErrorKind::Other);
                return Err(io::Error::new(
                    kind,
                    format!("reading workspace {}: {error}", root.display()),
                ));
            }
        };
        if entry.depth() == 0 {
            continue;
        }
        let (Some(file_type), Ok(rel)) = (entry.file_type(), entry.path().strip_prefix(root))
        else {
            continue;
        };
        let is_dir = file_type.is_dir();
        let metadata = if is_dir {
            None
        } else {
            // An entry that vanished between the listing and now is simply not there.
            let Ok(metadata) = entry.metadata() else {
                continue;
            };
            Some(metadata)
        };
        let relative = RelPath::from_relative(rel);
        let parent_excluded = relative
            .parent()
            .is_some_and(|parent| excluded_dirs.contains(&parent));
        let mut is_excluded = parent_excluded;
        if !is_excluded {
            is_excluded = match &mut rules {
                Rules::Learn(learned, roots) => {
                    let by_rules = learned.excludes(&relative, is_dir);
                    if !by_rules && is_dir {
                        learned.learn_dir(roots, &relative);
                        learned.excludes(&relative, is_dir)
                    } else {
                        by_rules
                    }
                }
                Rules::Apply(learned) => learned.excludes(&relative, is_dir),
            };
        }
        if is_dir && is_excluded {
            excluded_dirs.insert(relative.clone());
        }
        visit(Walked {
            relative,
            file_type,
            metadata,
            excluded: is_excluded,
        })?;
    }
    Ok(())
}
