//! A task's folder copied out of a shard's artifacts directory, which may come from
//! anywhere (a fork's CI, a downloaded artifact): nothing in it is followed. A symbolic
//! link — the folder itself or anything in it — is skipped, never copied as what it
//! points to, and so are FIFOs, sockets and devices: `--out`, which the Action uploads,
//! gets only the regular files and directories that are really in the input.
//!
//! Every entry is looked at without following it (`lstat`), opened with `O_NOFOLLOW`,
//! and checked again on the open handle, so an entry swapped for a link in between is
//! refused rather than followed.

use std::ffi::{CStr, CString, OsStr};
use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, Stat};
use rustix::io::Errno;

/// A directory opened for reading, never through a symlink.
const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);
/// A file opened for reading, never through a symlink, never blocking on a FIFO.
const FILE_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::NOFOLLOW)
    .union(OFlags::NONBLOCK)
    .union(OFlags::CLOEXEC);

/// What became of a task's folder.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Folder {
    /// Copied, but for the entries named (each with what it is).
    Copied(Vec<Skipped>),
    /// There is none (the task did not get to write one).
    Missing,
    /// The folder's name holds something else: `what` it is.
    Other(&'static str),
}

/// An entry of a folder that was not copied.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Skipped {
    /// Its path inside the task's folder.
    pub path: PathBuf,
    /// What it is: `a symbolic link`, `a FIFO`…
    pub what: &'static str,
}

/// Copy the folder `from` to `to` (which must not exist), its files hard-linked where
/// the file system allows (artifacts are written once and never changed, so sharing
/// them is safe) and copied otherwise.
pub(super) fn copy_folder(from: &Path, to: &Path) -> io::Result<Folder> {
    let stat = match rustix::fs::lstat(from) {
        Err(Errno::NOENT) => return Ok(Folder::Missing),
        other => other?,
    };
    let kind = FileType::from_raw_mode(stat.st_mode);
    if kind != FileType::Directory {
        return Ok(Folder::Other(what(kind)));
    }
    let dir = match rustix::fs::open(from, DIR_FLAGS, Mode::empty()) {
        // Swapped for a link (or a file) since it was looked at.
        Err(Errno::LOOP | Errno::NOTDIR) => return Ok(Folder::Other("a symbolic link")),
        other => other?,
    };
    let mut skipped = Vec::new();
    copy_dir(&dir, Path::new(""), to, &mut skipped)?;
    Ok(Folder::Copied(skipped))
}

/// Copy the directory open as `dir` (at `path` in the task's folder) to `to`.
fn copy_dir(dir: &OwnedFd, path: &Path, to: &Path, skipped: &mut Vec<Skipped>) -> io::Result<()> {
    std::fs::create_dir(to)?;
    for name in entry_names(dir)? {
        let os_name = OsStr::from_bytes(name.to_bytes());
        let (path, target) = (path.join(os_name), to.join(os_name));
        let stat = rustix::fs::statat(dir, name.as_c_str(), AtFlags::SYMLINK_NOFOLLOW)?;
        match FileType::from_raw_mode(stat.st_mode) {
            FileType::Directory => match rustix::fs::openat(dir, &name, DIR_FLAGS, Mode::empty()) {
                Ok(sub) => copy_dir(&sub, &path, &target, skipped)?,
                Err(Errno::LOOP | Errno::NOTDIR) => skipped.push(Skipped {
                    path,
                    what: "a symbolic link",
                }),
                Err(error) => return Err(error.into()),
            },
            FileType::RegularFile => {
                if let Err(what) = copy_file(dir, &name, &target)? {
                    skipped.push(Skipped { path, what });
                }
            }
            kind => skipped.push(Skipped {
                path,
                what: what(kind),
            }),
        }
    }
    Ok(())
}

/// Copy the regular file `name` of `dir` to `target`; `Err(what)` when it is no longer
/// a regular file once opened.
fn copy_file(dir: &OwnedFd, name: &CStr, target: &Path) -> io::Result<Result<(), &'static str>> {
    let fd = match rustix::fs::openat(dir, name, FILE_FLAGS, Mode::empty()) {
        Err(Errno::LOOP) => return Ok(Err("a symbolic link")),
        other => other?,
    };
    let opened = rustix::fs::fstat(&fd)?;
    let kind = FileType::from_raw_mode(opened.st_mode);
    if kind != FileType::RegularFile {
        return Ok(Err(what(kind)));
    }
    // A hard link is made by name, so it is kept only when it is the file opened above.
    if rustix::fs::linkat(dir, name, rustix::fs::CWD, target, AtFlags::empty()).is_ok() {
        match rustix::fs::lstat(target) {
            Ok(linked) if same_file(&linked, &opened) => return Ok(Ok(())),
            _ => std::fs::remove_file(target)?,
        }
    }
    let mut from = File::from(fd);
    let mut to = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(target)?;
    io::copy(&mut from, &mut to)?;
    Ok(Ok(()))
}

/// The names in `dir` but `.` and `..`.
fn entry_names(dir: &OwnedFd) -> io::Result<Vec<CString>> {
    let mut names = Vec::new();
    for entry in rustix::fs::Dir::read_from(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        if name.to_bytes() != b"." && name.to_bytes() != b".." {
            names.push(CString::from(name));
        }
    }
    Ok(names)
}

fn same_file(a: &Stat, b: &Stat) -> bool {
    a.st_dev == b.st_dev && a.st_ino == b.st_ino
}

/// What an entry that is not copied is, for the warning.
fn what(kind: FileType) -> &'static str {
    match kind {
        FileType::Symlink => "a symbolic link",
        FileType::Fifo => "a FIFO",
        FileType::Socket => "a socket",
        FileType::CharacterDevice | FileType::BlockDevice => "a device",
        FileType::RegularFile => "a file",
        FileType::Directory => "a directory",
        FileType::Unknown => "of an unknown kind",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn links_fifos_and_linked_folders_are_skipped_never_followed() {
        let root = tempfile::tempdir().unwrap();
        let private = root.path().join("private");
        std::fs::create_dir(&private).unwrap();
        std::fs::write(private.join("secret"), "s3cret").unwrap();
        let task = root.path().join("task");
        std::fs::create_dir_all(task.join("nested")).unwrap();
        std::fs::write(task.join("transcript.jsonl"), "t").unwrap();
        std::fs::write(task.join("nested/x"), "x").unwrap();
        symlink(private.join("secret"), task.join("diff.patch")).unwrap();
        symlink(&private, task.join("nested/dir")).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            task.join("fifo"),
            FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let out = root.path().join("out");
        let folder = copy_folder(&task, &out).unwrap();
        let Folder::Copied(mut skipped) = folder else {
            panic!("{folder:?}");
        };
        skipped.sort_by(|a, b| a.path.cmp(&b.path));
        let shown: Vec<(String, &str)> = skipped
            .iter()
            .map(|s| (s.path.display().to_string(), s.what))
            .collect();
        assert_eq!(
            shown,
            [
                ("diff.patch".to_string(), "a symbolic link"),
                ("fifo".to_string(), "a FIFO"),
                ("nested/dir".to_string(), "a symbolic link"),
            ]
        );
        assert_eq!(
            std::fs::read_to_string(out.join("transcript.jsonl")).unwrap(),
            "t"
        );
        assert_eq!(std::fs::read_to_string(out.join("nested/x")).unwrap(), "x");
        for gone in ["diff.patch", "fifo", "nested/dir"] {
            assert!(std::fs::symlink_metadata(out.join(gone)).is_err(), "{gone}");
        }
        // The folder itself a link: not copied as what it points to.
        let linked = root.path().join("linked");
        symlink(&private, &linked).unwrap();
        let folder = copy_folder(&linked, &root.path().join("out2")).unwrap();
        assert_eq!(folder, Folder::Other("a symbolic link"));
        assert!(!root.path().join("out2").exists());
        assert_eq!(
            copy_folder(&root.path().join("none"), &root.path().join("out3")).unwrap(),
            Folder::Missing
        );
    }
}
