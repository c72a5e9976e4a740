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
use std::ffi::CStr;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags, ResolveFlags};

use super::Exclusions;
use super::rules::StartRules;
use super::stat::StatKey;
use crate::workspace::snapshot::{Stop, stopped};
use crate::workspace::{RelPath, Roots};

/// What an entry is, as the listing (or, failing that, `stat`) says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    Symlink,
    /// FIFOs, sockets, devices: never part of a diff.
    Other,
}

/// One entry below the root.
pub struct Walked {
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
pub enum Rules<'a> {
    /// The start: read each directory's ignore files (beneath `roots`) as it is reached.
    Learn(&'a mut StartRules, &'a Roots),
    /// The end: judge by what the start learned; files the agent wrote do not count.
    Apply(&'a StartRules),
}

/// One listed entry of a directory.
struct Child {
    /// Its path from the root (the directory's path and its name).
    relative: RelPath,
    kind: Kind,
    stat: Option<StatKey>,
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
pub fn walk(
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
    let top = list(&root_fd, root, &RelPath::root())?;
    if let Rules::Learn(learned, roots) = &mut rules {
        learned.learn_dir(roots, &RelPath::root(), &|name| holds(&top, name));
    }
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
        let at = root.join(relative.to_path());
        // Opened beneath the root without following a symlink: a directory swapped for
        // a link since it was listed is not walked into.
        let listed = match open_dir_beneath(&root_fd, &relative) {
            Ok(fd) => list(&fd, &at, &relative),
            // Gone since the listing: it is simply not there any more.
            Err(rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR | rustix::io::Errno::LOOP) => {
                continue;
            }
            Err(error) => Err(io::Error::from(error)),
        };
        let mut is_excluded = parent_excluded || judge(&mut rules, &relative, true);
        // A directory that cannot be listed (no permission, a path too long for the
        // kernel) is reported, never the end of the walk: one such directory must not
        // cost the diff of everything else.
        let entries = match listed {
            Ok(entries) => entries,
            Err(error) => {
                visit(Walked {
                    relative,
                    kind: Kind::Dir,
                    stat: None,
                    excluded: is_excluded,
                    unreadable: Some(error.to_string()),
                })?;
                continue;
            }
        };
        if !is_excluded && let Rules::Learn(learned, roots) = &mut rules {
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
        stack.push(Frame {
            excluded: is_excluded,
            pending: entries,
        });
    }
    Ok(())
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

/// Open directory `relative` beneath `root_fd`, following no symlink on the way. Kernels
/// without `openat2` (before 5.6) get `openat` with `O_NOFOLLOW` on the last component:
/// the walks run while no agent process is alive, so nothing swaps a directory meanwhile.
fn open_dir_beneath(root_fd: &OwnedFd, relative: &RelPath) -> rustix::io::Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
    match rustix::fs::openat2(root_fd, relative.to_path(), flags, Mode::empty(), resolve) {
        Err(rustix::io::Errno::NOSYS) => {
            rustix::fs::openat(root_fd, relative.to_path(), flags, Mode::empty())
        }
        other => other,
    }
}

/// Whether the starting rules leave `relative` out (its parent not being left out).
fn judge(rules: &mut Rules<'_>, relative: &RelPath, is_dir: bool) -> bool {
    match rules {
        Rules::Learn(learned, _) => learned.excludes(relative, is_dir),
        Rules::Apply(learned) => learned.excludes(relative, is_dir),
    }
}

/// The entries of the open directory `fd`, files `stat`ed, sorted in reverse name order
/// (the walk pops from the end).
fn list(fd: &OwnedFd, shown: &Path, relative: &RelPath) -> io::Result<Vec<Child>> {
    let mut children = Vec::new();
    let dir = Dir::read_from(fd).map_err(|e| named(shown, e.into()))?;
    for entry in dir {
        let entry = entry.map_err(|e| named(shown, e.into()))?;
        let name = entry.file_name();
        if name == c"." || name == c".." {
            continue;
        }
        let mut kind = kind_of(entry.file_type());
        let mut stat = None;
        if kind != Kind::Dir {
            match stat_at(fd, name) {
                Ok(found) => {
                    kind = kind_of(FileType::from_raw_mode(found.st_mode));
                    stat = Some(StatKey::from_stat(&found));
                }
                // Removed between the listing and now: not there.
                Err(rustix::io::Errno::NOENT) => continue,
                Err(error) => return Err(named(&shown.join(os(name)), error.into())),
            }
        }
        children.push(Child {
            relative: relative.join(name.to_bytes()),
            kind,
            stat,
        });
    }
    // Siblings share their directory's prefix: ordering by path is ordering by name.
    children.sort_unstable_by(|a, b| b.relative.cmp(&a.relative));
    Ok(children)
}

fn stat_at(fd: &OwnedFd, name: &CStr) -> rustix::io::Result<rustix::fs::Stat> {
    rustix::fs::statat(fd, name, AtFlags::SYMLINK_NOFOLLOW)
}

fn kind_of(file_type: FileType) -> Kind {
    match file_type {
        FileType::RegularFile => Kind::File,
        FileType::Directory => Kind::Dir,
        FileType::Symlink => Kind::Symlink,
        // Unknown (some file systems do not fill d_type) is settled by stat.
        FileType::Unknown => Kind::Other,
        _ => Kind::Other,
    }
}

fn os(name: &CStr) -> &std::ffi::OsStr {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::OsStr::from_bytes(name.to_bytes())
}

fn named(path: &Path, error: io::Error) -> io::Error {
    io::Error::new(
        error.kind(),
        format!("reading workspace {}: {error}", path.display()),
    )
}
