//! The one walk of a workspace the baseline makes, at the start and again at the end:
//! every entry except `.git` and drover's own directories, each marked as left out of
//! the diff or not by the starting rules (which the start walk learns as it goes).
//!
//! The walk works beneath a handle on the root: each directory is opened beneath it with
//! no symlink followed anywhere on the way (`openat2` RESOLVE_BENEATH|NO_SYMLINKS), listed
//! once, and its files are `stat`ed relative to it — one path component per lookup,
//! however deep the tree. Only one directory is open at a time, and the depth is bounded
//! by memory, not the stack.

use std::collections::HashSet;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};

use super::Exclusions;
use super::listing::{Child, Kind, Listing, list};
use super::prefetch::{FinishOnDrop, Prefetcher};
use super::rules::StartRules;
use super::stat::StatKey;
use crate::workspace::walk::{Stop, stopped};
use crate::workspace::{RelPath, Roots};

/// One entry below the root.
pub(super) struct Walked {
    pub relative: RelPath,
    pub kind: Kind,
    /// Taken without following symlinks; not taken for directories (nothing needs it,
    /// and a `stat` per directory is a cost the size of the tree).
    pub stat: Option<StatKey>,
    /// Left out of the diff by the starting rules (or inside a directory that is).
    pub excluded: bool,
    /// A directory that could not be listed (why): reported, its contents unknown.
    pub unreadable: Option<String>,
}

/// How the walk treats the ignore rules.
pub(super) enum Rules<'a> {
    /// The start: read each directory's ignore files (beneath `roots`) as it is reached.
    Learn(&'a mut StartRules, &'a Roots),
    /// The end: judge by what the start learned; files the agent wrote do not count.
    Apply(&'a StartRules),
}

/// A directory being walked: its path and the entries not yet visited (reversed, so the
/// next is at the end).
struct Frame {
    excluded: bool,
    pending: Vec<Child>,
}

/// Walk `root` (canonical) in a fixed order (each directory's entries sorted by name,
/// depth first), calling `visit` for every entry but the root, its `.git` and the
/// `excluded` paths below the root; stops with [`stopped`] as soon as `stop` says.
pub(super) fn walk(
    root: &Path,
    excluded: &Exclusions,
    mut rules: Rules<'_>,
    stop: Stop<'_>,
    mut visit: impl FnMut(Walked) -> io::Result<()>,
) -> io::Result<()> {
    let excluded_dirs = excluded_paths(root, &excluded.dirs);
    let excluded_files = excluded_paths(root, &excluded.files);
    let root_fd = rustix::fs::open(
        root,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| named(root, e.into()))?;
    let top_fd = root_fd.try_clone().map_err(|e| named(root, e))?;
    let top = list(top_fd, root, &RelPath::root())?;
    if let Rules::Learn(learned, roots) = &mut rules {
        learned.learn_dir(roots, &RelPath::root(), &|name| holds(&top, name));
    }
    let prefetcher = Prefetcher::default();
    let dirs = Dirs {
        root,
        root_fd: &root_fd,
        prefetcher: &prefetcher,
        excluded: &excluded_dirs,
    };
    std::thread::scope(|scope| {
        let _finish = FinishOnDrop(&prefetcher);
        // One helper: with the walk itself, two threads list (the machines drover runs
        // on have at least two cores; a busy one just lists less ahead).
        scope.spawn(|| prefetcher.run(&root_fd, root));
        dirs.look_ahead(&top);
        let mut stack = vec![Frame {
            excluded: false,
            pending: top,
        }];
        while let Some(frame) = stack.last_mut() {
            if stop() {
                return Err(stopped());
            }
            let Some(child) = frame.pending.pop() else {
                stack.pop();
                continue;
            };
            let parent_excluded = frame.excluded;
            let relative = child.relative;
            // The workspace's own repository is not its files; a `.git` deeper down (a
            // nested repository, a planted `gitdir:` file) is, and is diffed like any file.
            if relative.as_bytes() == b".git" {
                continue;
            }
            let own = if child.kind == Kind::Dir {
                &excluded_dirs
            } else {
                &excluded_files
            };
            if own.contains(&relative) {
                continue;
            }
            if child.kind != Kind::Dir {
                let is_excluded = parent_excluded || judge(&mut rules, &relative, false);
                visit(Walked {
                    relative,
                    kind: child.kind,
                    stat: child.stat,
                    excluded: is_excluded,
                    unreadable: None,
                })?;
                continue;
            }
            if let Some(frame) = dirs.enter(relative, parent_excluded, &mut rules, &mut visit)? {
                stack.push(frame);
            }
        }
        Ok(())
    })
}

/// What the walk needs to go into directories: the root (and a handle on it), the
/// helper listing ahead, and the excluded directories.
struct Dirs<'w> {
    root: &'w Path,
    root_fd: &'w OwnedFd,
    prefetcher: &'w Prefetcher,
    excluded: &'w HashSet<RelPath>,
}

impl Dirs<'_> {
    /// Ask the helper to list the directories among `children` the walk will enter.
    fn look_ahead(&self, children: &[Child]) {
        let dirs: Vec<RelPath> = children
            .iter()
            .rev()
            .filter(|child| child.kind == Kind::Dir)
            .filter(|child| child.relative.as_bytes() != b".git")
            .filter(|child| !self.excluded.contains(&child.relative))
            .map(|child| child.relative.clone())
            .collect();
        self.prefetcher.look_ahead(dirs.into_iter());
    }

    /// Directory `relative`: listed, judged (its ignore files learned at the start) and
    /// visited; the frame of its entries, unless it is gone or cannot be listed.
    fn enter(
        &self,
        relative: RelPath,
        parent_excluded: bool,
        rules: &mut Rules<'_>,
        visit: &mut impl FnMut(Walked) -> io::Result<()>,
    ) -> io::Result<Option<Frame>> {
        // Opened beneath the root without following a symlink: a directory swapped for a
        // link since it was listed is not walked into.
        let listed = self.prefetcher.listing(self.root_fd, self.root, &relative);
        let mut is_excluded = parent_excluded || judge(rules, &relative, true);
        // A directory that cannot be listed (no permission, a path too long for the
        // kernel) is reported, never the end of the walk: one such directory must not
        // cost the diff of everything else.
        let entries = match listed {
            Listing::Entries(entries) => entries,
            // Gone since its parent was listed: it is simply not there any more.
            Listing::Gone => return Ok(None),
            Listing::Unreadable(error) => {
                visit(Walked {
                    relative,
                    kind: Kind::Dir,
                    stat: None,
                    excluded: is_excluded,
                    unreadable: Some(error.to_string()),
                })?;
                return Ok(None);
            }
        };
        self.look_ahead(&entries);
        if !is_excluded && let Rules::Learn(learned, roots) = rules {
            learned.learn_dir(roots, &relative, &|name| holds(&entries, name));
            is_excluded = learned.excludes(&relative, true);
        }
        visit(Walked {
            relative: relative.clone(),
            kind: Kind::Dir,
            stat: None,
            excluded: is_excluded,
            unreadable: None,
        })?;
        Ok(Some(Frame {
            excluded: is_excluded,
            pending: entries,
        }))
    }
}

/// The `excluded` paths (files or directories, existing or not yet) that lie strictly
/// below `root`, relative to it. Compared as written, never resolved here: the caller
/// resolved them before any agent ran, so a symlink planted at one of them since cannot
/// turn the exclusion onto the agent's own files.
fn excluded_paths(root: &Path, excluded: &[PathBuf]) -> HashSet<RelPath> {
    excluded
        .iter()
        .filter_map(|path| {
            let absolute = std::path::absolute(path).ok()?;
            let relative = absolute.strip_prefix(root).ok()?;
            (!relative.as_os_str().is_empty()).then(|| RelPath::from_relative(relative))
        })
        .collect()
}

/// Whether a listing has an entry called `name`.
fn holds(children: &[Child], name: &[u8]) -> bool {
    children
        .iter()
        .any(|child| child.relative.file_name() == name)
}

/// Whether the starting rules leave `relative` out (its parent not being left out).
fn judge(rules: &mut Rules<'_>, relative: &RelPath, is_dir: bool) -> bool {
    match rules {
        Rules::Learn(learned, _) => learned.excludes(relative, is_dir),
        Rules::Apply(learned) => learned.excludes(relative, is_dir),
    }
}

fn named(path: &Path, error: io::Error) -> io::Error {
    io::Error::new(
        error.kind(),
        format!("reading workspace {}: {error}", path.display()),
    )
}
