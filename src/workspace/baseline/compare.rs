//! The end of a task: which files differ from the baseline. Files whose metadata is
//! unchanged are not read; the others are hashed (not kept) and compared by blob id.

use std::collections::HashSet;
use std::io;
use std::path::Path;

use super::listing::Kind;
use super::rules::StartRules;
use super::stat::StatKey;
use super::store::hash_reader;
use super::walk::{Rules, walk};
use super::{
    Baseline, Content, Entry, MAX_DIFFED_FILE, Source, excluded_key, git_mode, os_bytes, path_key,
};
use crate::workspace::file_entry::MODE_SYMLINK;
use crate::workspace::walk::Stop;
use crate::workspace::{RelPath, Roots};

/// One path that differs from the start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Change {
    pub path: RelPath,
    /// What is there now; `None` when the file was deleted.
    pub now: Option<Now>,
}

/// A file as it is at the end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Now {
    pub mode: u32,
    pub content: Content,
}

/// What changed between the start and the end.
#[derive(Debug, Default)]
pub(crate) struct Comparison {
    /// Sorted by path (bytes): added, modified (content or mode) and deleted files.
    pub changes: Vec<Change>,
    /// Files added, changed or deleted where the starting rules leave them out of the
    /// diff (ignored paths, build trees): counted so a reviewer knows they exist.
    pub excluded_changes: usize,
    /// Files that could not be read at the end (path, why): shown as unchanged.
    pub unreadable: Vec<(RelPath, String)>,
}

impl Comparison {
    /// The changed paths, sorted.
    pub(crate) fn paths(&self) -> Vec<RelPath> {
        self.changes.iter().map(|c| c.path.clone()).collect()
    }
}

impl Baseline {
    /// Compare the workspace as it is now with its starting state.
    pub(crate) fn compare_until(&self, stop: Stop<'_>) -> io::Result<Comparison> {
        let roots = Roots::new(std::slice::from_ref(&self.root));
        let start_unreadable: HashSet<&RelPath> = self.unreadable.iter().map(|(p, _)| p).collect();
        let mut comparison = Comparison::default();
        // Which starting entries are still there, by position.
        let mut seen = vec![false; self.entries.len()];
        let mut excluded_seen: HashSet<u128> = HashSet::new();
        // Directories that cannot be listed now: what they held at the start counts as
        // unchanged (reported), not deleted.
        let mut unlisted: Vec<RelPath> = Vec::new();
        let mut cursor = 0;
        let rules: &StartRules = &self.rules;
        walk(
            &self.root,
            &self.excluded,
            Rules::Apply(rules),
            stop,
            |walked| {
                if let Some(why) = walked.unreadable {
                    if !walked.excluded {
                        comparison.unreadable.push((walked.relative.clone(), why));
                    }
                    unlisted.push(walked.relative);
                    return Ok(());
                }
                let Some(stat) = walked.stat else {
                    return Ok(()); // a directory
                };
                if walked.excluded {
                    excluded_seen.insert(path_key(&walked.relative));
                    if !self
                        .excluded_keys
                        .contains(&excluded_key(&walked.relative, &stat))
                    {
                        comparison.excluded_changes += 1;
                    }
                    return Ok(());
                }
                if !matches!(walked.kind, Kind::File | Kind::Symlink)
                    || (!start_unreadable.is_empty()
                        && within(&walked.relative, |path| start_unreadable.contains(path)))
                {
                    return Ok(());
                }
                let position = self.entries.position_from(&walked.relative, &mut cursor);
                if let Some(at) = position {
                    seen[at] = true;
                }
                let before = position
                    .and_then(|at| self.entries.at(at))
                    .map(|(_, entry)| entry);
                if before.is_some_and(|entry| entry.stat == stat) {
                    return Ok(());
                }
                let at = self.root.join(walked.relative.to_path());
                match now_of(&roots, &at, walked.kind, &stat) {
                    Ok(now) if !same(before, &now) => comparison.changes.push(Change {
                        path: walked.relative,
                        now: Some(now),
                    }),
                    Ok(_) => {}
                    Err(error) => comparison
                        .unreadable
                        .push((walked.relative, error.to_string())),
                }
                Ok(())
            },
        )?;
        self.gone(&mut comparison, &seen, &unlisted, &excluded_seen);
        comparison.changes.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(comparison)
    }

    /// What the walk did not see again: starting files deleted (unless inside a directory
    /// that could not be listed), and left-out files gone.
    fn gone(
        &self,
        comparison: &mut Comparison,
        seen: &[bool],
        unlisted: &[RelPath],
        excluded_seen: &HashSet<u128>,
    ) {
        for ((path, _), seen) in self.entries.iter().zip(seen) {
            if !seen && !unlisted.iter().any(|dir| path.starts_with(dir)) {
                comparison.changes.push(Change {
                    path: path.clone(),
                    now: None,
                });
            }
        }
        comparison.excluded_changes += self
            .excluded_paths
            .iter()
            .filter(|key| !excluded_seen.contains(key))
            .count();
    }
}

/// What the file at `at` holds now: a link's target, a large file's size, else the blob
/// id of its bytes (hashed, not kept).
fn now_of(roots: &Roots, at: &Path, kind: Kind, stat: &StatKey) -> io::Result<Now> {
    if kind == Kind::Symlink {
        roots.read_link(at).map(|target| Now {
            mode: MODE_SYMLINK,
            content: Content::Link(os_bytes(&target)),
        })
    } else if stat.size > MAX_DIFFED_FILE {
        Ok(Now {
            mode: git_mode(stat),
            content: Content::Large { size: stat.size },
        })
    } else {
        roots
            .open_file(at)
            .and_then(|mut file| hash_reader(&mut file, stat.size))
            .map(|id| Now {
                mode: git_mode(stat),
                content: Content::Blob {
                    id,
                    source: Source::None,
                },
            })
    }
}

/// Whether `path` or one of the directories above it satisfies `test`.
fn within(path: &RelPath, test: impl Fn(&RelPath) -> bool) -> bool {
    let mut current = Some(path.clone());
    while let Some(at) = current {
        if test(&at) {
            return true;
        }
        current = at.parent();
    }
    false
}

/// Is the file as it is now the same as it was (same mode, same content)?
fn same(before: Option<&Entry>, now: &Now) -> bool {
    let Some(before) = before else {
        return false;
    };
    before.mode == now.mode
        && match (&before.content, &now.content) {
            (Content::Blob { id: a, .. }, Content::Blob { id: b, .. }) => a == b,
            (Content::Link(a), Content::Link(b)) => a == b,
            // Known by size only: a large file whose metadata changed is reported.
            _ => false,
        }
}
