//! Copying a workspace for `isolation: copy`, so a task can edit freely without touching
//! the original, and its diff is taken against exactly what was copied.

use std::io;
#[cfg(target_os = "linux")]
use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
#[cfg(unix)]
use std::os::unix::fs::MetadataExt as _;
#[cfg(target_os = "linux")]
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use super::RelPath;
use super::walk::{Stop, named, stopped, walk_noting_build_trees};

/// Copy the workspace's files (not ignored ones, not `.git/`, not build trees, not the
/// `excluded` directories) from `from` into `to`: the same files
/// workspace walks see, with permission
/// bits, and symlinks recreated as symlinks (their targets are not copied). `to` is
/// created if missing and may already exist empty.
#[cfg(test)]
pub(crate) fn copy_workspace(from: &Path, to: &Path, excluded: &[PathBuf]) -> io::Result<()> {
    copy_workspace_until(from, to, excluded, &|| false).map(|_| ())
}

/// [`copy_workspace`], stopping with an `Interrupted` error as soon as `stop` says so.
/// Returns the build trees it left out (relative): they are part of the starting state
/// the diff leaves out, though the copy does not hold them.
pub(crate) fn copy_workspace_until(
    from: &Path,
    to: &Path,
    excluded: &[PathBuf],
    stop: Stop<'_>,
) -> io::Result<Vec<RelPath>> {
    std::fs::create_dir_all(to).map_err(|e| named(to, e))?;
    // The list is complete before anything is written, so a `to` inside `from` is not
    // walked into while it fills up.
    let (entries, build_trees) = walk_noting_build_trees(from, excluded, stop)?;
    let to_canonical = to.canonicalize().map_err(|e| named(to, e))?;
    // A destination inside the source is not copied into itself: its place relative to
    // the source, worked out once (canonicalizing every entry costs a readlink per
    // path component).
    let to_inside = from.canonicalize().ok().and_then(|from| {
        to_canonical
            .strip_prefix(from)
            .ok()
            .map(RelPath::from_relative)
    });
    let mut directories = Vec::new();
    let mut files = Vec::new();
    // Directories and symlinks first, in walk order (parents before children); the
    // files, the bulk of the work, then in parallel.
    for entry in entries {
        if stop() {
            return Err(stopped());
        }
        if !entry.file_type.is_symlink()
            && to_inside
                .as_ref()
                .is_some_and(|inside| entry.relative.starts_with(inside))
        {
            continue;
        }
        let target = to.join(entry.relative.to_path());
        if entry.file_type.is_dir() {
            std::fs::create_dir_all(&target).map_err(|e| named(&target, e))?;
            directories.push((entry.path, target));
        } else if entry.file_type.is_symlink() {
            let link = std::fs::read_link(&entry.path).map_err(|e| named(&entry.path, e))?;
            make_symlink(&link, &target).map_err(|e| named(&target, e))?;
        } else if entry.file_type.is_file() {
            files.push((entry.path, target));
        }
    }
    copy_files_in_parallel(&files, stop)?;
    // Directory permissions last, innermost first: a read-only directory must still
    // receive its files before it becomes read-only.
    for (source, target) in directories.iter().rev() {
        let permissions = std::fs::metadata(source)
            .map_err(|e| named(source, e))?
            .permissions();
        std::fs::set_permissions(target, permissions).map_err(|e| named(target, e))?;
    }
    Ok(build_trees)
}

/// Copy `(source, target)` pairs on every core. The calling thread copies its share and
/// asks `stop` between files; once it says stop, the other threads stop at their next
/// file too, and the copy ends with an `Interrupted` error.
fn copy_files_in_parallel(files: &[(PathBuf, PathBuf)], stop: Stop<'_>) -> io::Result<()> {
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .clamp(1, 8);
    let next = AtomicUsize::new(0);
    let cancelled = AtomicBool::new(false);
    // Cleared at the first file the file system cannot reflink: it will not for the rest.
    let reflinks = AtomicBool::new(true);
    let copy_next = || -> io::Result<bool> {
        if cancelled.load(Ordering::Relaxed) {
            return Ok(false);
        }
        let at = next.fetch_add(1, Ordering::Relaxed);
        let Some((source, target)) = files.get(at) else {
            return Ok(false);
        };
        copy_file(source, target, &reflinks)?;
        Ok(true)
    };
    std::thread::scope(|scope| {
        let helpers: Vec<_> = (1..threads)
            .map(|_| {
                scope.spawn(|| -> io::Result<()> {
                    while copy_next().inspect_err(|_| cancelled.store(true, Ordering::Relaxed))? {}
                    Ok(())
                })
            })
            .collect();
        let mut result = Ok(());
        loop {
            if stop() {
                cancelled.store(true, Ordering::Relaxed);
                result = Err(stopped());
                break;
            }
            match copy_next() {
                Ok(true) => {}
                Ok(false) => break,
                Err(error) => {
                    cancelled.store(true, Ordering::Relaxed);
                    result = Err(error);
                    break;
                }
            }
        }
        // Helpers finish the file they are on; keep answering a signal meanwhile.
        for helper in helpers {
            while !helper.is_finished() {
                if stop() {
                    cancelled.store(true, Ordering::Relaxed);
                }
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            let joined = helper
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("a copying thread panicked")));
            if result.is_ok() {
                result = joined;
            }
        }
        result
    })
}

/// One file, with its permission bits and modification time (tools that sort by it,
/// like Glob, then see the same order in the copy). A reflink (`FICLONE`) shares the
/// blocks on file systems that can (btrfs, XFS): instant and no extra space.
fn copy_file(source: &Path, target: &Path, reflinks: &AtomicBool) -> io::Result<()> {
    let cloned = reflinks.load(Ordering::Relaxed) && clone_file(source, target);
    if !cloned {
        reflinks.store(false, Ordering::Relaxed);
        if is_sparse(source) {
            copy_sparse(source, target).map_err(|e| named(source, e))?;
        } else {
            // std::fs::copy carries the permission bits along (and uses copy_file_range).
            std::fs::copy(source, target).map_err(|e| named(source, e))?;
        }
    }
    keep_mtime(source, target).map_err(|e| named(target, e))
}

/// Whether the file has holes (fewer blocks allocated than its size needs).
#[cfg(unix)]
fn is_sparse(source: &Path) -> bool {
    std::fs::symlink_metadata(source)
        .is_ok_and(|meta| meta.blocks().saturating_mul(512) < meta.size())
}

#[cfg(not(unix))]
fn is_sparse(_source: &Path) -> bool {
    false
}

/// Copy only the data of a sparse file, leaving its holes as holes (a 2 GB sparse file
/// copies in milliseconds and takes no space).
#[cfg(target_os = "linux")]
fn copy_sparse(source: &Path, target: &Path) -> io::Result<()> {
    let mut from = std::fs::File::open(source)?;
    let metadata = from.metadata()?;
    let mut to = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(metadata.permissions().mode() & 0o7777)
        .open(target)?;
    let size = metadata.len();
    let mut position = 0;
    let mut buffer = vec![0u8; 256 * 1024];
    while position < size {
        let data = match rustix::fs::seek(&from, rustix::fs::SeekFrom::Data(position)) {
            Ok(data) => data,
            Err(rustix::io::Errno::NXIO) => break, // only a hole is left
            Err(error) => return Err(error.into()),
        };
        let hole = rustix::fs::seek(&from, rustix::fs::SeekFrom::Hole(data))?.min(size);
        from.seek(SeekFrom::Start(data))?;
        to.seek(SeekFrom::Start(data))?;
        let mut left = hole - data;
        while left > 0 {
            let want = usize::try_from(left)
                .unwrap_or(usize::MAX)
                .min(buffer.len());
            let read = from.read(&mut buffer[..want])?;
            if read == 0 {
                break;
            }
            to.write_all(&buffer[..read])?;
            left -= read as u64;
        }
        position = hole;
    }
    to.set_len(size)?;
    to.set_permissions(metadata.permissions())
}

#[cfg(not(target_os = "linux"))]
fn copy_sparse(source: &Path, target: &Path) -> io::Result<()> {
    std::fs::copy(source, target).map(|_| ())
}

/// Try a reflink of `source` at `target` (a new file with the source's permissions);
/// false when the file system cannot, leaving no `target` behind.
#[cfg(target_os = "linux")]
fn clone_file(source: &Path, target: &Path) -> bool {
    let Ok(from) = std::fs::File::open(source) else {
        return false;
    };
    let Ok(metadata) = from.metadata() else {
        return false;
    };
    let Ok(to) = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(metadata.permissions().mode() & 0o7777)
        .open(target)
    else {
        return false;
    };
    if rustix::fs::ioctl_ficlone(&to, &from).is_ok()
        && to.set_permissions(metadata.permissions()).is_ok()
    {
        return true;
    }
    drop(to);
    let _ = std::fs::remove_file(target);
    false
}

#[cfg(not(target_os = "linux"))]
fn clone_file(_source: &Path, _target: &Path) -> bool {
    false
}

#[cfg(unix)]
fn keep_mtime(source: &Path, target: &Path) -> io::Result<()> {
    let modified = std::fs::metadata(source)?.modified()?;
    // Setting times needs ownership, not write access: read-only files work too.
    std::fs::File::open(target)?.set_modified(modified)
}

fn make_symlink(link: &Path, at: &Path) -> io::Result<()> {
    std::os::unix::fs::symlink(link, at)
}

#[cfg(windows)]
fn make_symlink(link: &Path, at: &Path) -> io::Result<()> {
    std::os::windows::fs::symlink_file(link, at)
}

#[cfg(not(any(unix, windows)))]
fn make_symlink(_link: &Path, at: &Path) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        format!("cannot create symlink {}", at.display()),
    ))
}

#[cfg(test)]
mod stop_tests {
    use super::*;

    #[test]
    fn a_copy_stops_when_asked() {
        let from = tempfile::tempdir().unwrap();
        for i in 0..50 {
            std::fs::write(from.path().join(format!("f{i}")), "x").unwrap();
        }
        let to = tempfile::tempdir().unwrap();
        let asked = std::cell::Cell::new(0);
        let stop = || {
            asked.set(asked.get() + 1);
            asked.get() > 10
        };
        let error = copy_workspace_until(from.path(), to.path(), &[], &stop).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::Interrupted);
        assert!(std::fs::read_dir(to.path()).unwrap().count() < 50);
        let error = super::super::TreeInMemory::take_until(from.path(), &[], &|| true).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::Interrupted);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workspace::TreeInMemory;
    use std::fs;

    fn write(root: &Path, rel: &str, content: &str) {
        let path = root.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, content).unwrap();
    }

    #[test]
    fn copy_has_the_same_snapshot_and_skips_git_and_ignored() {
        let from = tempfile::tempdir().unwrap();
        let to = tempfile::tempdir().unwrap();
        let root = from.path();
        write(root, "src/lib.rs", "pub fn f() {}\n");
        write(root, ".env.example", "KEY=\n");
        write(root, ".gitignore", "/target\n");
        write(root, "target/big.bin", "x");
        write(root, ".git/HEAD", "ref: refs/heads/main\n");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            write(root, "bin/run", "#!/bin/sh\n");
            fs::set_permissions(root.join("bin/run"), fs::Permissions::from_mode(0o755)).unwrap();
            std::os::unix::fs::symlink("src/lib.rs", root.join("link.rs")).unwrap();
            std::os::unix::fs::symlink("/does/not/exist", root.join("dangling")).unwrap();
        }
        copy_workspace(root, to.path(), &[]).unwrap();
        let original = TreeInMemory::take(root).unwrap();
        let copied = TreeInMemory::take(to.path()).unwrap();
        assert_eq!(original, copied);
        assert!(!to.path().join(".git").exists());
        assert!(!to.path().join("target").exists());
        #[cfg(unix)]
        {
            let meta = fs::symlink_metadata(to.path().join("link.rs")).unwrap();
            assert!(meta.file_type().is_symlink());
            assert_eq!(
                fs::read_link(to.path().join("dangling")).unwrap(),
                Path::new("/does/not/exist")
            );
        }
    }

    #[test]
    fn build_trees_and_excluded_directories_are_not_copied() {
        let from = tempfile::tempdir().unwrap();
        let to = tempfile::tempdir().unwrap();
        let root = from.path();
        write(root, "src/lib.rs", "pub fn f() {}\n");
        write(
            root,
            "target/CACHEDIR.TAG",
            "Signature: 8a477f597d28d172789f06886806bc55\n",
        );
        write(root, "target/x", "x");
        write(root, "node_modules/m/i.js", "js");
        write(root, "drover-artifacts/t/transcript.jsonl", "{}");
        copy_workspace(root, to.path(), &[root.join("drover-artifacts")]).unwrap();
        assert!(to.path().join("src/lib.rs").exists());
        for skipped in ["target", "node_modules", "drover-artifacts"] {
            assert!(!to.path().join(skipped).exists(), "{skipped} was copied");
        }
    }

    #[test]
    fn a_sparse_file_stays_sparse_and_whole() {
        use std::os::unix::fs::MetadataExt;
        let from = tempfile::tempdir().unwrap();
        let to = tempfile::tempdir().unwrap();
        let path = from.path().join("disk.img");
        fs::write(&path, b"head").unwrap();
        let file = fs::OpenOptions::new().append(true).open(&path).unwrap();
        file.set_len(64 * 1024 * 1024).unwrap();
        drop(file);
        // Data after the hole too.
        let mut file = fs::OpenOptions::new().write(true).open(&path).unwrap();
        std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(32 * 1024 * 1024)).unwrap();
        std::io::Write::write_all(&mut file, b"middle").unwrap();
        drop(file);
        // Whether the temporary directory's file system keeps holes is known only here.
        let keeps_holes = fs::metadata(&path).unwrap().blocks() * 512 < 64 * 1024 * 1024;
        copy_workspace(from.path(), to.path(), &[]).unwrap();
        let copied = to.path().join("disk.img");
        let meta = fs::metadata(&copied).unwrap();
        assert_eq!(meta.len(), 64 * 1024 * 1024);
        assert_eq!(fs::read(&copied).unwrap(), fs::read(&path).unwrap());
        if keeps_holes {
            assert!(
                meta.blocks() * 512 < 1024 * 1024,
                "the copy filled its holes"
            );
        } else {
            crate::esay!(
                "note: part skipped: this file system does not keep holes, so the copy's cannot be checked"
            );
        }
    }

    #[test]
    fn creates_a_missing_destination() {
        let from = tempfile::tempdir().unwrap();
        let to = tempfile::tempdir().unwrap();
        write(from.path(), "a/b/c.txt", "deep\n");
        let dest = to.path().join("fresh/copy");
        copy_workspace(from.path(), &dest, &[]).unwrap();
        assert_eq!(
            fs::read_to_string(dest.join("a/b/c.txt")).unwrap(),
            "deep\n"
        );
    }

    #[test]
    fn destination_inside_source_is_not_copied_into_itself() {
        let from = tempfile::tempdir().unwrap();
        write(from.path(), "a.txt", "a\n");
        let dest = from.path().join("nested-copy");
        fs::create_dir(&dest).unwrap();
        copy_workspace(from.path(), &dest, &[]).unwrap();
        assert_eq!(fs::read_to_string(dest.join("a.txt")).unwrap(), "a\n");
        assert!(!dest.join("nested-copy").exists());
    }
}
