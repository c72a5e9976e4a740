//! What a drover process killed with SIGKILL leaves behind — temp directories (the
//! task's `TMPDIR`, a scratch copy, a worktree's home, a staging folder) and the temp
//! file of an atomic write cut short — named so that a later run can tell they belong
//! to a drover process that is gone, and remove them.
//!
//! A live run's directories must never be taken for a dead one's: several drover
//! processes share one temp directory (nightly jobs, retried CI steps, containers that
//! mount the same `/tmp`). A pid alone cannot say it: `/proc` shows only this pid
//! namespace, and a pid is reused. So each temp directory drover makes is held with an
//! advisory lock (`flock` on the directory, which the kernel drops when the process
//! dies, however it dies), and a sweep takes a directory only when it can take that
//! lock itself *and* its pid is no live drover's. On a filesystem without `flock` the
//! pid alone decides, as before.

use std::os::fd::{AsRawFd as _, IntoRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{FlockOperation, Mode, OFlags};
use rustix::io::Errno;
use tempfile::TempDir;

/// The prefix of a temp directory of `kind` made by this process:
/// `drover-<kind>-<pid>-` (tempfile adds a random suffix).
pub(crate) fn temp_prefix(kind: &str) -> String {
    format!("drover-{kind}-{}-", std::process::id())
}

/// The marker in an atomic write's temp file name: `.<name>.drover-<pid>-<n>-<x>.tmp`.
pub(crate) const WRITE_TEMP_MARK: &str = ".drover-";

/// Is `pid` a live drover process? (A reused pid of another program does not count.)
fn drover_alive(pid: u32) -> bool {
    let named = std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .is_ok_and(|comm| comm.trim_end().starts_with("drover"));
    named && !ended(pid)
}

/// Has process `pid` ended, though not yet reaped (a zombie, `Z`, or dead, `X`)? A
/// drover killed in a container with no init to reap it stays a zombie for good.
fn ended(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // `pid (comm) S …`: the state follows the last `)`, as comm may hold one.
    let state = stat
        .rfind(')')
        .and_then(|at| stat.get(at + 1..))
        .and_then(|rest| rest.trim_start().chars().next());
    matches!(state, Some('Z' | 'X' | 'x'))
}

/// The pid in `drover-<kind>-<pid>-…`, when `name` has that shape.
fn temp_dir_owner(name: &str) -> Option<u32> {
    let rest = name.strip_prefix("drover-")?;
    let (_kind, rest) = rest.split_once('-')?;
    let (pid, _) = rest.split_once('-')?;
    pid.parse().ok()
}

/// A temp directory of this process, `drover-<kind>-<pid>-…`, held (see the module's
/// comment) as long as it lives and removed when dropped.
#[derive(Debug)]
pub(crate) struct HeldTempDir {
    /// Declared first, so dropped first: the directory goes while it is still held.
    dir: TempDir,
    _hold: Option<OwnedFd>,
}

impl HeldTempDir {
    /// A new directory of `kind` in the system's temp directory.
    pub(crate) fn new(kind: &str) -> std::io::Result<HeldTempDir> {
        HeldTempDir::new_in(kind, None)
    }

    /// A new directory of `kind` in `parent` (default: the system's temp directory).
    pub(crate) fn new_in(kind: &str, parent: Option<&Path>) -> std::io::Result<HeldTempDir> {
        let prefix = temp_prefix(kind);
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix);
        let dir = match parent {
            Some(parent) => builder.tempdir_in(parent)?,
            None => builder.tempdir()?,
        };
        // A filesystem without flock on directories: the pid alone tells it is live.
        let hold = take(dir.path()).ok();
        Ok(HeldTempDir { dir, _hold: hold })
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Keep the directory when this is dropped (for a later run to find). It stays held
    /// until this process ends: a concurrent run takes it only once drover is gone.
    pub(crate) fn keep(self) -> PathBuf {
        if let Some(hold) = self._hold {
            let _ = hold.into_raw_fd();
        }
        self.dir.keep()
    }
}

/// Open directory `path` (not through a symlink) and take its lock without waiting.
fn take(path: &Path) -> Result<OwnedFd, Errno> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rustix::fs::open(path, flags, Mode::empty())?;
    rustix::fs::flock(&fd, FlockOperation::NonBlockingLockExclusive)?;
    Ok(fd)
}

/// A temp directory a drover process now gone left behind, claimed: its lock is held
/// (where the filesystem has locks) until this is dropped, so no other drover's sweep
/// takes it meanwhile.
pub(crate) struct StaleDir {
    pub path: PathBuf,
    _claim: Option<OwnedFd>,
}

/// Claim temp directory `path` named `name` when its owner is gone: no process holds
/// its lock, and its pid is no live drover's. None when it may be live.
fn claim_stale(path: PathBuf, name: &str) -> Option<StaleDir> {
    let pid = temp_dir_owner(name)?;
    let claim = match take(&path) {
        Ok(fd) => Some(fd),
        // Held: its drover is alive, whatever the pid says (another pid namespace).
        Err(Errno::WOULDBLOCK) => return None,
        // No lock to ask (another user's directory, a filesystem without flock).
        Err(_) => None,
    };
    (!drover_alive(pid)).then_some(StaleDir {
        path,
        _claim: claim,
    })
}

/// The temp directories of `kind` in `dir` that a drover process now gone left behind,
/// claimed.
pub(crate) fn stale_temp_dirs(dir: &Path, kind: &str) -> Vec<StaleDir> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let prefix = format!("drover-{kind}-");
    entries
        .flatten()
        .filter(|entry| {
            entry.file_name().to_string_lossy().starts_with(&prefix)
                && entry.file_type().is_ok_and(|t| t.is_dir())
        })
        .filter_map(|entry| claim_stale(entry.path(), &entry.file_name().to_string_lossy()))
        .collect()
}

/// Remove the temp directories in `dir` that a drover process now gone left behind,
/// but those in `spared`. Returns what was removed.
pub(crate) fn remove_stale_temp_dirs(dir: &Path, spared: &[PathBuf]) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        if !entry.file_type().is_ok_and(|t| t.is_dir()) || spared.contains(&entry.path()) {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(stale) = claim_stale(entry.path(), &name) else {
            continue;
        };
        unmount_checkout(&stale);
        if std::fs::remove_dir_all(&stale.path).is_ok() {
            removed.push(stale.path);
        }
    }
    removed
}

/// Take down the overlay a `repo:` checkout from the cache left mounted at `checkout`
/// in `stale` (root only; nothing where nothing is mounted), resolved through the
/// claimed directory's descriptor so that no path swapped in since the claim is
/// followed. Without it the removal would empty the mount and stop at its root.
fn unmount_checkout(stale: &StaleDir) {
    let Some(claim) = &stale._claim else {
        return;
    };
    unmount_at(claim);
    // A checkouts directory (`drover-repos-…`) holds a directory per task, each with its
    // `checkout`. Only one this user owns is searched, and only its real directories
    // (no symlink is followed), so no other user's planted entry leads anywhere.
    let owned = rustix::fs::fstat(claim)
        .is_ok_and(|stat| stat.st_uid == rustix::process::geteuid().as_raw());
    let Ok(entries) = std::fs::read_dir(format!("/proc/self/fd/{}", claim.as_raw_fd())) else {
        return;
    };
    if !owned {
        return;
    }
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    for entry in entries.flatten() {
        if let Ok(child) = rustix::fs::openat(claim, entry.file_name(), flags, Mode::empty()) {
            unmount_at(&child);
        }
    }
}

/// Take down what is mounted at `checkout` in directory `dir`, through its descriptor.
fn unmount_at(dir: &OwnedFd) {
    let target = format!("/proc/self/fd/{}/checkout", dir.as_raw_fd());
    let flags = rustix::mount::UnmountFlags::DETACH | rustix::mount::UnmountFlags::NOFOLLOW;
    let _ = rustix::mount::unmount(target.as_str(), flags);
}

/// Is `name` the temp file of an atomic write by a drover process that is gone?
pub(crate) fn is_stale_write_temp(name: &str) -> bool {
    let Some(body) = name.strip_suffix(".tmp") else {
        return false;
    };
    let Some(at) = body.rfind(WRITE_TEMP_MARK) else {
        return false;
    };
    let mut parts = body[at + WRITE_TEMP_MARK.len()..].split('-');
    let (Some(pid), Some(count), Some(nanos), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let shaped = name.starts_with('.')
        && count.chars().all(|c| c.is_ascii_digit())
        && nanos.chars().all(|c| c.is_ascii_hexdigit());
    shaped && pid.parse::<u32>().is_ok_and(|pid| !drover_alive(pid))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pid no process has (beyond the kernel's default pid_max of 4,194,304).
    const GONE: u32 = 4_999_999;

    #[test]
    fn dirs_of_dead_drovers_go_and_live_ones_stay() {
        let dir = tempfile::tempdir().unwrap();
        let dead = dir.path().join(format!("drover-tmp-{GONE}-abc"));
        let mine = dir.path().join(format!("{}xyz", temp_prefix("ws")));
        let other = dir.path().join("drover-tmp-abc");
        for path in [&dead, &mine, &other] {
            std::fs::create_dir(path).unwrap();
        }
        let removed = remove_stale_temp_dirs(dir.path(), &[]);
        assert_eq!(removed, vec![dead.clone()]);
        assert!(!dead.exists());
        // This test binary is `drover-<hash>`: its own dir is a live drover's and stays.
        assert!(mine.exists());
        assert!(other.exists());
    }

    #[test]
    fn a_held_dir_stays_whatever_its_pid_says() {
        let dir = tempfile::tempdir().unwrap();
        // As a drover in another pid namespace would name it: a pid not seen here.
        let elsewhere = dir.path().join(format!("drover-ws-{GONE}-abc"));
        std::fs::create_dir(&elsewhere).unwrap();
        let hold = take(&elsewhere).unwrap();
        assert!(remove_stale_temp_dirs(dir.path(), &[]).is_empty());
        assert!(stale_temp_dirs(dir.path(), "ws").is_empty());
        assert!(elsewhere.exists());
        drop(hold);
        assert_eq!(
            remove_stale_temp_dirs(dir.path(), &[]),
            vec![elsewhere.clone()]
        );
    }

    #[test]
    fn a_held_temp_dir_is_held_until_dropped() {
        let parent = tempfile::tempdir().unwrap();
        let held = HeldTempDir::new_in("ws", Some(parent.path())).unwrap();
        let path = held.path().to_path_buf();
        assert_eq!(take(&path).unwrap_err(), Errno::WOULDBLOCK);
        drop(held);
        assert!(!path.exists());
    }

    #[test]
    fn a_zombie_has_ended_though_its_pid_is_still_listed() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        // Not reaped yet: a zombie, as a killed drover with no init to reap it stays.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !ended(pid) {
            assert!(
                std::time::Instant::now() < deadline,
                "never became a zombie"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(!ended(std::process::id()), "this process runs");
        child.wait().unwrap();
    }

    #[test]
    fn write_temps_of_dead_drovers_are_recognised() {
        assert!(is_stale_write_temp(&format!(
            ".big.bin.drover-{GONE}-0-1a2b.tmp"
        )));
        assert!(!is_stale_write_temp("notes.tmp"));
        assert!(!is_stale_write_temp(&format!(
            "big.drover-{GONE}-0-1a2b.tmp"
        )));
        assert!(!is_stale_write_temp(&format!(
            ".big.drover-{GONE}-x-1a2b.tmp"
        )));
    }
}
