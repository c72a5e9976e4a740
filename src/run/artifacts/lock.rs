//! One artifacts directory, one owner. Two runs writing one directory at once (a
//! nightly job and its retry, two CI steps) would interleave their transcripts and
//! reports and both report success, so a run takes an exclusive lock on the directory
//! before it touches anything there, and a second run is refused at once, told who
//! holds it.
//!
//! The lock is an advisory `flock` on `.drover.lock` inside the directory, which holds
//! the holder's pid, start time, host and command line for that message. The kernel
//! drops the lock when its process ends, however it ends (SIGKILL included), so a lock
//! file whose lock is free was left by a run that is gone: the next run takes it over,
//! and says whose it was when the file still names a holder (a run that ends empties
//! it; one that is killed cannot). The file is never removed (removing it would let a second
//! run lock a new file while the first still holds the old one). A filesystem that
//! cannot lock (some network filesystems) is refused with what to do: the one-owner
//! guarantee is the point, and a run that cannot have it says so rather than risk
//! corrupted transcripts.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use rustix::fs::{FileType, FlockOperation, Mode, OFlags};
use rustix::io::Errno;
use serde::{Deserialize, Serialize};

/// The lock file's name in the artifacts directory.
pub(crate) const LOCK_FILE: &str = ".drover.lock";

/// How much of a lock file is read: what drover writes is far smaller.
const READ_CAP: usize = 4096;

/// How much of a holder's field is shown.
const FIELD_CAP: usize = 300;

/// The artifacts directories (device, inode) this process holds the lock of, so that
/// publishing a killed run's folder into one of them does not wait for itself.
static HELD: Mutex<Vec<(u64, u64)>> = Mutex::new(Vec::new());

/// Who holds (or held) the lock: what the lock file says.
#[derive(Debug, Serialize, Deserialize)]
struct Holder {
    pid: u32,
    started: String,
    host: String,
    command: String,
}

impl Holder {
    fn this_process() -> Holder {
        let command: Vec<String> = std::env::args_os()
            .map(|arg| arg.to_string_lossy().into_owned())
            .collect();
        Holder {
            pid: std::process::id(),
            started: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
            host: rustix::system::uname()
                .nodename()
                .to_string_lossy()
                .into_owned(),
            command: capped(&command.join(" ")),
        }
    }

    /// `drover (pid N, started T on HOST), running `CMD``, every field capped.
    fn describe(&self) -> String {
        format!(
            "drover (pid {}, started {} on {}), running `{}`",
            self.pid,
            capped(&self.started),
            capped(&self.host),
            capped(&self.command)
        )
    }
}

fn capped(text: &str) -> String {
    match text.char_indices().nth(FIELD_CAP) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// Why the artifacts directory cannot be locked. Each says what to do.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LockError {
    #[error(
        "{} is in use by {holder}: two runs writing one artifacts directory corrupt each other's transcripts and reports; wait for that run to end, or give this one another --artifacts directory",
        dir.display()
    )]
    Held { dir: PathBuf, holder: String },
    #[error(
        "cannot lock the artifacts directory {} ({source}): drover locks it so that no second run writes there at once, and this filesystem (a network filesystem?) does not support flock; point --artifacts at a directory on a local disk (copy it elsewhere afterwards)",
        dir.display()
    )]
    Unsupported { dir: PathBuf, source: io::Error },
    #[error(
        "cannot use the artifacts directory {}: {source}; point --artifacts at a directory drover can create, read and write",
        dir.display()
    )]
    Open { dir: PathBuf, source: io::Error },
    #[error(
        "{} is not a regular file of its own (a symlink, a directory, a hard link to another file?), but it is where drover keeps the lock on its artifacts directory; remove it and run again",
        path.display()
    )]
    NotAFile { path: PathBuf },
}

/// The lock on an artifacts directory, held until dropped (or the process ends).
pub(crate) struct ArtifactsLock {
    file: OwnedFd,
    /// The directory itself, locked too where the filesystem allows: a lock file that a
    /// command deletes mid-run (the artifacts directory inside the workspace) must not
    /// let a second run in.
    _directory: OwnedFd,
    identity: (u64, u64),
    /// This process wrote itself into the lock file (and empties it when done).
    recorded: bool,
    /// The run that held the lock before, gone, as its lock file described it.
    previous: Option<String>,
}

impl ArtifactsLock {
    /// Lock `dir` (created when missing) without waiting, and write this process into
    /// its lock file. Call it before anything in the directory is touched.
    pub(crate) fn acquire(dir: &Path) -> Result<ArtifactsLock, LockError> {
        ArtifactsLock::acquire_as(dir, true)
    }

    /// Lock `dir`; `record`: write this process into the lock file (a lock taken for a
    /// moment leaves the file naming the run before).
    fn acquire_as(dir: &Path, record: bool) -> Result<ArtifactsLock, LockError> {
        let open = |source: io::Error| LockError::Open {
            dir: dir.to_path_buf(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(open)?;
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let handle = rustix::fs::open(dir, flags, Mode::empty()).map_err(|e| open(e.into()))?;
        let stat = rustix::fs::fstat(&handle).map_err(|e| open(e.into()))?;
        let identity = (stat.st_dev, stat.st_ino);
        let path = dir.join(LOCK_FILE);
        let flags =
            OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let file = match rustix::fs::openat(&handle, LOCK_FILE, flags, Mode::from_raw_mode(0o644)) {
            Ok(file) => file,
            Err(Errno::LOOP) => return Err(LockError::NotAFile { path }),
            Err(errno) => return Err(open(errno.into())),
        };
        // A regular file with no other name: a hard link to a user's file would be
        // written over and emptied.
        let regular = rustix::fs::fstat(&file).is_ok_and(|stat| {
            FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile && stat.st_nlink == 1
        });
        if !regular {
            return Err(LockError::NotAFile { path });
        }
        let held_elsewhere = |file: &OwnedFd| LockError::Held {
            dir: dir.to_path_buf(),
            holder: read_holder(file).map_or_else(
                || "another drover process (which has not yet written who it is)".to_string(),
                |holder| holder.describe(),
            ),
        };
        // The directory first: held by a live run even when its lock file was deleted
        // and made anew. A filesystem that cannot lock a directory keeps the file's lock.
        if let Err(Errno::WOULDBLOCK) =
            rustix::fs::flock(&handle, FlockOperation::NonBlockingLockExclusive)
        {
            return Err(held_elsewhere(&file));
        }
        match rustix::fs::flock(&file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(Errno::WOULDBLOCK) => return Err(held_elsewhere(&file)),
            Err(errno) => {
                return Err(LockError::Unsupported {
                    dir: dir.to_path_buf(),
                    source: errno.into(),
                });
            }
        }
        let previous = read_holder(&file).map(|holder| holder.describe());
        if record {
            write_holder(&file, &Holder::this_process()).map_err(open)?;
        }
        HELD.lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(identity);
        Ok(ArtifactsLock {
            file,
            _directory: handle,
            identity,
            recorded: record,
            previous,
        })
    }

    /// The run that held the lock before and is gone, when its lock file said who it
    /// was.
    pub(crate) fn previous(&self) -> Option<&str> {
        self.previous.as_deref()
    }
}

impl Drop for ArtifactsLock {
    /// A run that ends (however it ends, short of being killed) empties its lock file
    /// while it still holds the lock: only a run that was killed leaves a holder behind
    /// for the next run's note.
    fn drop(&mut self) {
        if self.recorded {
            let _ = rustix::fs::ftruncate(&self.file, 0);
        }
        let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(at) = held.iter().position(|id| *id == self.identity) {
            held.swap_remove(at);
        }
    }
}

/// May drover write into `dir` now, on behalf of a run that is gone? Some(lock) when
/// it took the lock for the while (drop it when done), Some(None) when this process
/// already holds it or the filesystem cannot lock, None when another run holds it.
pub(crate) fn lock_for_a_moment(dir: &Path) -> Option<Option<ArtifactsLock>> {
    let ours = std::fs::metadata(dir).is_ok_and(|meta| {
        let identity = (
            std::os::unix::fs::MetadataExt::dev(&meta),
            std::os::unix::fs::MetadataExt::ino(&meta),
        );
        HELD.lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(&identity)
    });
    if ours {
        return Some(None);
    }
    match ArtifactsLock::acquire_as(dir, false) {
        Ok(lock) => Some(Some(lock)),
        Err(LockError::Held { .. }) => None,
        Err(_) => Some(None),
    }
}

/// What the lock file says, if it is drover's record of a holder.
fn read_holder(file: &OwnedFd) -> Option<Holder> {
    let mut buffer = vec![0; READ_CAP];
    let read = rustix::io::pread(file, &mut buffer, 0).ok()?;
    serde_json::from_slice(&buffer[..read]).ok()
}

/// Make the lock file say `holder`, and nothing more.
fn write_holder(file: &OwnedFd, holder: &Holder) -> io::Result<()> {
    let mut text = serde_json::to_vec(holder).map_err(io::Error::other)?;
    text.push(b'\n');
    rustix::fs::ftruncate(file, 0)?;
    let mut at = 0;
    while at < text.len() {
        at += rustix::io::pwrite(file.as_fd(), &text[at..], at as u64)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_directory_is_refused_naming_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let first = ArtifactsLock::acquire(&out).unwrap();
        assert!(first.previous().is_none());
        let error = ArtifactsLock::acquire(&out).err().unwrap().to_string();
        let pid = format!("pid {}", std::process::id());
        assert!(error.contains(&pid), "{error}");
        assert!(error.contains("is in use by drover"), "{error}");
        assert!(lock_for_a_moment(&out).is_some_and(|lock| lock.is_none()));
        drop(first);
        let second = ArtifactsLock::acquire(&out).unwrap();
        assert!(
            second.previous().is_none(),
            "a run that ended leaves no holder"
        );
        // Killed: the file still names it.
        drop(second);
        let dir2 = tempfile::tempdir().unwrap();
        std::fs::write(
            dir2.path().join(LOCK_FILE),
            serde_json::to_vec(&Holder::this_process()).unwrap(),
        )
        .unwrap();
        let third = ArtifactsLock::acquire(dir2.path()).unwrap();
        assert!(
            third.previous().is_some_and(|was| was.contains(&pid)),
            "the run before is named"
        );
    }

    #[test]
    fn a_lock_file_that_is_a_symlink_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("elsewhere"), "x").unwrap();
        std::os::unix::fs::symlink(dir.path().join("elsewhere"), dir.path().join(LOCK_FILE))
            .unwrap();
        let error = ArtifactsLock::acquire(dir.path()).err().unwrap();
        assert!(matches!(error, LockError::NotAFile { .. }), "{error}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("elsewhere")).unwrap(),
            "x"
        );
    }

    #[test]
    fn a_lock_file_with_another_name_is_refused_and_left_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let precious = dir.path().join("precious.txt");
        std::fs::write(&precious, "IMPORTANT USER DATA").unwrap();
        let artifacts = dir.path().join("out");
        std::fs::create_dir_all(&artifacts).unwrap();
        std::fs::hard_link(&precious, artifacts.join(LOCK_FILE)).unwrap();
        let error = ArtifactsLock::acquire(&artifacts).err().unwrap();
        assert!(matches!(error, LockError::NotAFile { .. }), "{error}");
        assert_eq!(
            std::fs::read_to_string(&precious).unwrap(),
            "IMPORTANT USER DATA"
        );
    }

    /// A command that deletes the lock file mid-run (the artifacts directory inside the
    /// workspace) does not let a second run in: the directory itself is held.
    #[test]
    fn a_deleted_lock_file_does_not_free_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        let held = ArtifactsLock::acquire(dir.path()).unwrap();
        std::fs::remove_file(dir.path().join(LOCK_FILE)).unwrap();
        let error = ArtifactsLock::acquire(dir.path()).err().unwrap();
        assert!(matches!(error, LockError::Held { .. }), "{error}");
        drop(held);
        assert!(ArtifactsLock::acquire(dir.path()).is_ok());
    }
}
