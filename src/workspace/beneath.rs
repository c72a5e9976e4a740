//! File access beneath directory handles: how the file tools touch the disk.
//!
//! The policy judges a tool call on the path with every symlink resolved. The tool then
//! acts on exactly that path and nothing else: it opens the directory handle of the root
//! that holds it (the workspace or an additional directory, opened once when the task
//! starts) and resolves the rest with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
//! RESOLVE_NO_MAGICLINKS)`. A judged path has no symlink in it, so when one has appeared
//! since (an agent process flipping a directory into a link to `/`), the open fails and
//! the call reports the race; it never follows the link. Writes create their temp file
//! and rename it relative to the same directory descriptor.
//!
//! Paths outside every root (reachable only through an explicit absolute allow rule) are
//! resolved the same way beneath `/`. Kernels without `openat2` (before 5.6, or a seccomp
//! filter that answers ENOSYS) get the same guarantee from a walk that opens one
//! component at a time with `O_NOFOLLOW`.

use std::ffi::OsStr;
use std::fs::{File, Metadata};
use std::io::{self, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::SystemTime;

use rustix::fs::{AtFlags, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

use super::confined::ConfinedThread;

/// Permission bits for files that did not exist before.
const NEW_FILE_MODE: u32 = 0o644;
/// Permission bits for directories a write creates.
const NEW_DIR_MODE: u32 = 0o755;
/// How often an open is retried when the kernel reports a concurrent rename (EAGAIN).
const RETRIES: usize = 8;

/// Set once the kernel has said it has no `openat2`; later opens walk instead.
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

/// One root: a canonical directory and its handle, opened when the task started.
struct Root {
    path: PathBuf,
    handle: Result<OwnedFd, Errno>,
}

/// The directory handles a task's file tools act beneath, and the confined thread (when
/// the task has one) every open, create, rename and removal runs on.
pub(crate) struct Roots {
    handles: Arc<Handles>,
    confined: Option<Arc<ConfinedThread>>,
}

impl Roots {
    /// Open handles on `dirs` (canonical: the workspace and the additional directories).
    /// A directory that cannot be opened is remembered as such: every operation under it
    /// fails with the reason, rather than falling back to a path.
    pub(crate) fn new(dirs: &[PathBuf]) -> Self {
        Roots {
            handles: Arc::new(Handles::new(dirs)),
            confined: None,
        }
    }

    /// The same handles, with every operation run on `thread` (see [`ConfinedThread`]).
    pub(crate) fn confined_to(&self, thread: ConfinedThread) -> Self {
        Roots {
            handles: Arc::clone(&self.handles),
            confined: Some(Arc::new(thread)),
        }
    }

    /// Whether operations run on a confined thread.
    #[cfg(test)]
    pub(crate) fn is_confined(&self) -> bool {
        self.confined.is_some()
    }

    /// Run `op` on the handles, on the confined thread when there is one.
    fn call<T: Send + 'static>(
        &self,
        op: impl FnOnce(&Handles) -> io::Result<T> + Send + 'static,
    ) -> io::Result<T> {
        match &self.confined {
            None => op(&self.handles),
            Some(thread) => {
                let handles = Arc::clone(&self.handles);
                thread.run(move || op(&handles))?
            }
        }
    }

    /// Open `path` (absolute, symlinks already resolved) with `flags`, following no
    /// symlink and never leaving the root that holds it.
    pub(crate) fn open(&self, path: &Path, flags: OFlags) -> io::Result<OwnedFd> {
        let path = path.to_path_buf();
        self.call(move |h| h.open(&path, flags))
    }

    /// The metadata of `path` itself (a symlink at the end is reported as one).
    pub(crate) fn symlink_metadata(&self, path: &Path) -> io::Result<Metadata> {
        let fd = self.open(path, OFlags::PATH | OFlags::NOFOLLOW)?;
        File::from(fd).metadata()
    }

    /// The metadata of `path`, which must not be or contain a symlink.
    pub(crate) fn metadata(&self, path: &Path) -> io::Result<Metadata> {
        let fd = self.open(path, OFlags::PATH)?;
        File::from(fd).metadata()
    }

    /// Where the symlink `path` points (the link itself is found beneath the roots; its
    /// target is only text and is not resolved).
    pub(crate) fn read_link(&self, path: &Path) -> io::Result<PathBuf> {
        let fd = self.open(path, OFlags::PATH | OFlags::NOFOLLOW)?;
        let target = rustix::fs::readlinkat(&fd, "", Vec::new()).map_err(|e| explain(path, e))?;
        Ok(PathBuf::from(OsStr::from_bytes(target.as_bytes())))
    }

    /// Open a regular file for reading. Opening does not block on a FIFO or device an
    /// agent planted: anything but a regular file is refused.
    pub(crate) fn open_file(&self, path: &Path) -> io::Result<File> {
        let fd = self.open(path, OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY)?;
        regular_file(path, fd)
    }

    /// The whole content of a regular file.
    #[cfg(test)]
    pub(crate) fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        use std::io::Read;
        let mut file = self.open_file(path)?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        Ok(bytes)
    }

    /// Replace `path` with `bytes` atomically: missing parent directories are created
    /// beneath the root, a temp file is written in the parent directory's handle, given
    /// the old file's permission bits, synced, and renamed over the name in that same
    /// handle. A reader (or a crash) sees the old file or the new one. Returns the new
    /// file's modification time, taken from its own handle.
    pub(crate) fn write_atomic(&self, path: &Path, bytes: &[u8]) -> io::Result<Option<SystemTime>> {
        let path = path.to_path_buf();
        let bytes = bytes.to_vec();
        self.call(move |h| h.write_atomic(&path, &mut |file| file.write_all(&bytes)))
    }

    /// [`Roots::write_atomic`] with the content streamed from `source` (a large file
    /// is never held in memory).
    pub(crate) fn write_atomic_from(&self, path: &Path, mut source: File) -> io::Result<()> {
        let path = path.to_path_buf();
        self.call(move |h| {
            h.write_atomic(&path, &mut |file| io::copy(&mut source, file).map(|_| ()))
                .map(|_| ())
        })
    }

    /// Remove the file or symlink `path` (the link itself, never its target).
    pub(crate) fn remove_file(&self, path: &Path) -> io::Result<()> {
        let path = path.to_path_buf();
        self.call(move |h| h.remove_file(&path))
    }

    /// Remove everything inside directory `path`, following no symlink: a link is removed
    /// as a link, a subdirectory is emptied through its own handle and removed.
    pub(crate) fn clear_dir(&self, path: &Path) -> io::Result<()> {
        let path = path.to_path_buf();
        self.call(move |h| h.clear_dir(&path))
    }

    /// Open directory `path`, creating what is missing of it beneath its root, one
    /// component at a time and without following a symlink.
    pub(crate) fn create_dir_all(&self, path: &Path) -> io::Result<OwnedFd> {
        let path = path.to_path_buf();
        self.call(move |h| h.create_dir_all(&path))
    }
}

/// The handles themselves, and the operations on them (run on whatever thread calls).
struct Handles {
    /// Longest path first, so the most specific root holds a path; `/` is always last.
    roots: Vec<Root>,
}

impl Handles {
    fn new(dirs: &[PathBuf]) -> Self {
        let mut roots: Vec<Root> = dirs
            .iter()
            .filter(|dir| dir.as_path() != Path::new("/"))
            .map(|dir| Root {
                path: dir.clone(),
                handle: open_root(dir),
            })
            .collect();
        roots.sort_by_key(|root| std::cmp::Reverse(root.path.components().count()));
        roots.push(Root {
            path: PathBuf::from("/"),
            handle: open_root(Path::new("/")),
        });
        Handles { roots }
    }

    /// The root handle holding `path` and the rest of the path beneath it (never empty:
    /// `.` for the root itself).
    fn locate<'a>(&'a self, path: &Path) -> io::Result<(BorrowedFd<'a>, PathBuf)> {
        if !path.is_absolute() {
            return Err(invalid(path, "is not absolute"));
        }
        for root in &self.roots {
            let Ok(rest) = path.strip_prefix(&root.path) else {
                continue;
            };
            let handle = root.handle.as_ref().map_err(|&errno| {
                io::Error::new(
                    io::Error::from(errno).kind(),
                    format!(
                        "{} cannot be opened, so nothing under it can be: {}",
                        root.path.display(),
                        io::Error::from(errno)
                    ),
                )
            })?;
            let mut relative = PathBuf::new();
            for component in rest.components() {
                match component {
                    Component::Normal(name) => relative.push(name),
                    Component::CurDir => {}
                    // A judged path is normalized; `..` here means it was not.
                    _ => return Err(invalid(path, "is not a normalized path")),
                }
            }
            if relative.as_os_str().is_empty() {
                relative.push(".");
            }
            return Ok((handle.as_fd(), relative));
        }
        Err(invalid(path, "is under no root"))
    }

    fn open(&self, path: &Path, flags: OFlags) -> io::Result<OwnedFd> {
        let (root, relative) = self.locate(path)?;
        open_beneath(root, &relative, flags | OFlags::CLOEXEC, Mode::empty())
            .map_err(|errno| explain(path, errno))
    }

    fn write_atomic(
        &self,
        path: &Path,
        fill: &mut dyn FnMut(&mut File) -> io::Result<()>,
    ) -> io::Result<Option<SystemTime>> {
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            return Err(invalid(path, "names no file"));
        };
        let dir = self.create_dir_all(parent)?;
        let mode = match rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => {
                let kind = rustix::fs::FileType::from_raw_mode(stat.st_mode);
                match kind {
                    rustix::fs::FileType::RegularFile => stat.st_mode & 0o7777,
                    rustix::fs::FileType::Directory => {
                        return Err(io::Error::new(
                            io::ErrorKind::IsADirectory,
                            format!("{} is a directory", path.display()),
                        ));
                    }
                    rustix::fs::FileType::Symlink => return Err(explain(path, Errno::LOOP)),
                    _ => return Err(invalid(path, "is not a regular file")),
                }
            }
            Err(Errno::NOENT) => NEW_FILE_MODE,
            Err(errno) => return Err(explain(path, errno)),
        };
        let (temp_name, temp) = create_temp(&dir, name).map_err(|e| with_path(path, e))?;
        let written = write_and_sync(temp, fill, mode).and_then(|mtime| {
            rustix::fs::renameat(&dir, &temp_name, &dir, name)?;
            Ok(mtime)
        });
        let mtime = match written {
            Ok(mtime) => mtime,
            Err(error) => {
                let _ = rustix::fs::unlinkat(&dir, &temp_name, AtFlags::empty());
                return Err(with_path(path, error));
            }
        };
        // Make the rename itself durable; failing to sync a directory is not worth an error.
        let _ = rustix::fs::fsync(&dir);
        Ok(mtime)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            return Err(invalid(path, "names no file"));
        };
        let dir = self.open(parent, OFlags::RDONLY | OFlags::DIRECTORY)?;
        rustix::fs::unlinkat(&dir, name, AtFlags::empty()).map_err(|e| explain(path, e))
    }

    fn clear_dir(&self, path: &Path) -> io::Result<()> {
        let dir = self.open(path, OFlags::RDONLY | OFlags::DIRECTORY)?;
        clear_dir_fd(&dir).map_err(|e| explain(path, e))
    }

    fn create_dir_all(&self, path: &Path) -> io::Result<OwnedFd> {
        let (root, relative) = self.locate(path)?;
        let dir_flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let mut dir = open_beneath(root, Path::new("."), dir_flags, Mode::empty())
            .map_err(|e| explain(path, e))?;
        for component in relative.components() {
            let Component::Normal(name) = component else {
                continue;
            };
            dir = match open_beneath(dir.as_fd(), Path::new(name), dir_flags, Mode::empty()) {
                Ok(next) => next,
                Err(Errno::NOENT) => {
                    match rustix::fs::mkdirat(&dir, name, Mode::from_raw_mode(NEW_DIR_MODE)) {
                        Ok(()) | Err(Errno::EXIST) => {}
                        Err(errno) => return Err(explain(path, errno)),
                    }
                    open_beneath(dir.as_fd(), Path::new(name), dir_flags, Mode::empty())
                        .map_err(|e| explain(path, e))?
                }
                Err(errno) => return Err(explain(path, errno)),
            };
        }
        Ok(dir)
    }
}

/// Empty the directory open as `dir`, depth first, never following a symlink.
pub(crate) fn clear_dir_fd(dir: &OwnedFd) -> Result<(), Errno> {
    let mut names = Vec::new();
    for entry in rustix::fs::Dir::read_from(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_bytes();
        if name != b"." && name != b".." {
            names.push(std::ffi::CString::from(entry.file_name()));
        }
    }
    for name in names {
        let stat = rustix::fs::statat(dir, name.as_c_str(), AtFlags::SYMLINK_NOFOLLOW)?;
        if rustix::fs::FileType::from_raw_mode(stat.st_mode) == rustix::fs::FileType::Directory {
            let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            let sub = rustix::fs::openat(dir, name.as_c_str(), flags, Mode::empty())?;
            clear_dir_fd(&sub)?;
            rustix::fs::unlinkat(dir, name.as_c_str(), AtFlags::REMOVEDIR)?;
        } else {
            rustix::fs::unlinkat(dir, name.as_c_str(), AtFlags::empty())?;
        }
    }
    Ok(())
}

/// `fd` as a regular file, or the error that says what it is instead.
fn regular_file(path: &Path, fd: OwnedFd) -> io::Result<File> {
    let file = File::from(fd);
    let kind = file.metadata()?.file_type();
    if kind.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::IsADirectory,
            format!("{} is a directory", path.display()),
        ));
    }
    if !kind.is_file() {
        return Err(invalid(
            path,
            "is not a regular file (a FIFO, socket or device)",
        ));
    }
    // Regular files ignore O_NONBLOCK; clear it anyway so reads behave as usual.
    let flags = rustix::fs::fcntl_getfl(&file)?;
    rustix::fs::fcntl_setfl(&file, flags - OFlags::NONBLOCK)?;
    Ok(file)
}

/// Open a root directory by path (once, when the task starts).
fn open_root(dir: &Path) -> Result<OwnedFd, Errno> {
    rustix::fs::open(
        dir,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// Resolve `relative` beneath `root` following no symlink, retrying when the kernel
/// reports a concurrent rename.
pub(crate) fn open_beneath(
    root: BorrowedFd<'_>,
    relative: &Path,
    flags: OFlags,
    mode: Mode,
) -> Result<OwnedFd, Errno> {
    if !NO_OPENAT2.load(Ordering::Relaxed) {
        let resolve =
            ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
        for _ in 0..RETRIES {
            match rustix::fs::openat2(root, relative, flags, mode, resolve) {
                Err(Errno::AGAIN) | Err(Errno::INTR) => continue,
                Err(Errno::NOSYS) => {
                    NO_OPENAT2.store(true, Ordering::Relaxed);
                    break;
                }
                other => return other,
            }
        }
        if !NO_OPENAT2.load(Ordering::Relaxed) {
            return Err(Errno::AGAIN);
        }
    }
    open_by_walking(root, relative, flags, mode)
}

/// The `openat2` guarantee without `openat2`: each directory opened relative to the
/// previous one with `O_NOFOLLOW`, so no symlink is ever followed.
fn open_by_walking(
    root: BorrowedFd<'_>,
    relative: &Path,
    flags: OFlags,
    mode: Mode,
) -> Result<OwnedFd, Errno> {
    let names: Vec<&OsStr> = relative
        .components()
        .filter_map(|c| match c {
            Component::Normal(name) => Some(name),
            _ => None,
        })
        .collect();
    let dir_flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let Some((last, parents)) = names.split_last() else {
        return rustix::fs::openat(root, ".", flags, mode);
    };
    let mut dir: Option<OwnedFd> = None;
    for name in parents {
        let at = dir.as_ref().map_or(root, |d| d.as_fd());
        dir = Some(rustix::fs::openat(at, *name, dir_flags, Mode::empty())?);
    }
    let at = dir.as_ref().map_or(root, |d| d.as_fd());
    let fd = rustix::fs::openat(at, *last, flags | OFlags::NOFOLLOW, mode)?;
    // O_PATH | O_NOFOLLOW opens a symlink itself; a judged path has none.
    if flags.contains(OFlags::PATH) && !flags.contains(OFlags::NOFOLLOW) {
        let stat = rustix::fs::fstat(&fd)?;
        if rustix::fs::FileType::from_raw_mode(stat.st_mode) == rustix::fs::FileType::Symlink {
            return Err(Errno::LOOP);
        }
    }
    Ok(fd)
}

/// Create a fresh temp file next to `name` in `dir` (O_EXCL, mode 0600).
fn create_temp(dir: &OwnedFd, name: &OsStr) -> io::Result<(PathBuf, File)> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    // Keep the temp name within NAME_MAX whatever the target's length.
    let stem: Vec<u8> = name.as_bytes().iter().copied().take(120).collect();
    for _ in 0..16 {
        let unique = COUNTER.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let mut temp = b".".to_vec();
        temp.extend_from_slice(&stem);
        temp.extend_from_slice(
            format!(".drover-{}-{unique}-{nanos:x}.tmp", std::process::id()).as_bytes(),
        );
        let temp = PathBuf::from(OsStr::from_bytes(&temp));
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW;
        match rustix::fs::openat(dir, &temp, flags | OFlags::CLOEXEC, Mode::RUSR | Mode::WUSR) {
            Ok(fd) => return Ok((temp, File::from(fd))),
            Err(Errno::EXIST) => continue,
            Err(errno) => return Err(errno.into()),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        "could not create a temp file for the atomic write",
    ))
}

fn write_and_sync(
    mut file: File,
    fill: &mut dyn FnMut(&mut File) -> io::Result<()>,
    mode: u32,
) -> io::Result<Option<SystemTime>> {
    fill(&mut file)?;
    rustix::fs::fchmod(&file, Mode::from_raw_mode(mode))?;
    file.sync_all()?;
    Ok(file.metadata()?.modified().ok())
}

/// The error a caller sees for `errno` on `path`: a symlink or an escape (a path that
/// changed since it was judged) is named as the race it is.
fn explain(path: &Path, errno: Errno) -> io::Error {
    match errno {
        Errno::LOOP | Errno::XDEV | Errno::AGAIN => io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} changed while drover acted on it (a symlink or a rename appeared on its path since the call was judged); nothing was read or written there",
                path.display()
            ),
        ),
        other => with_path(path, other.into()),
    }
}

fn with_path(path: &Path, error: io::Error) -> io::Error {
    io::Error::new(error.kind(), format!("{}: {error}", path.display()))
}

fn invalid(path: &Path, what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{} {what}", path.display()),
    )
}

#[cfg(test)]
#[path = "beneath_tests.rs"]
mod tests;
