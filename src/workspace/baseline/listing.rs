//! Listing one directory of a walk: opened beneath the root with no symlink followed,
//! read once, its files `stat`ed relative to it.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsFd as _, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::path::Path;

use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags};

use super::stat::StatKey;
use crate::workspace::RelPath;

/// What an entry is, as the listing (or, failing that, `stat`) says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    File,
    Dir,
    Symlink,
    /// FIFOs, sockets, devices: never part of a diff.
    Other,
}

/// One listed entry of a directory.
pub(super) struct Child {
    /// Its path from the root (the directory's path and its name).
    pub relative: RelPath,
    pub kind: Kind,
    pub stat: Option<StatKey>,
}

/// What listing a directory found.
pub(super) enum Listing {
    /// Its entries, in reverse name order (a walk pops the next from the end).
    Entries(Vec<Child>),
    /// It is gone, or no longer a directory (a symlink now): not there to walk.
    Gone,
    /// It could not be read (no permission, a path too long for the kernel).
    Unreadable(io::Error),
}

/// List directory `relative` (not the root) beneath `root_fd`.
pub(super) fn list_dir(root_fd: &OwnedFd, root: &Path, relative: &RelPath) -> Listing {
    let at = root.join(relative.to_path());
    match open_dir_beneath(root_fd, relative) {
        Ok(fd) => match list(fd, &at, relative) {
            Ok(entries) => Listing::Entries(entries),
            Err(error) => Listing::Unreadable(error),
        },
        Err(rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR | rustix::io::Errno::LOOP) => {
            Listing::Gone
        }
        Err(error) => Listing::Unreadable(error.into()),
    }
}

/// Open directory `relative` beneath `root_fd`, following no symlink anywhere on the way
/// (the same resolution drover's file tools use).
fn open_dir_beneath(root_fd: &OwnedFd, relative: &RelPath) -> rustix::io::Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    crate::workspace::beneath::open_beneath(
        root_fd.as_fd(),
        &relative.to_path(),
        flags,
        Mode::empty(),
    )
}

/// The entries of the open directory `fd`, files `stat`ed, sorted in reverse name order
/// (the walk pops from the end). Takes the descriptor: reading from a borrowed one would
/// cost a second open of the directory.
pub(super) fn list(fd: OwnedFd, shown: &Path, relative: &RelPath) -> io::Result<Vec<Child>> {
    let mut children = Vec::new();
    let mut dir = Dir::new(fd).map_err(|e| named(shown, e.into()))?;
    while let Some(entry) = dir.read() {
        let entry = entry.map_err(|e| named(shown, e.into()))?;
        let name = entry.file_name();
        if name == c"." || name == c".." {
            continue;
        }
        let mut kind = kind_of(entry.file_type());
        let mut stat = None;
        if kind != Kind::Dir {
            let fd = dir.fd().map_err(|e| named(shown, e.into()))?;
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

fn stat_at(fd: BorrowedFd<'_>, name: &CStr) -> rustix::io::Result<rustix::fs::Stat> {
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
    std::ffi::OsStr::from_bytes(name.to_bytes())
}

fn named(path: &Path, error: io::Error) -> io::Error {
    io::Error::new(
        error.kind(),
        format!("reading workspace {}: {error}", path.display()),
    )
}
