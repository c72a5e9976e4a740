//! The artifacts directory holds what drover wrote there, and nothing else.
//!
//! Whatever reads the directory after a run — a workflow step looking for
//! `*/output.json`, a reviewer running `git apply */diff.patch`, `report merge` — takes
//! what it finds there for drover's. But the directory often lies where an agent's
//! commands may write (inside the workspace, by default), and an allowed `python3 -c`
//! with the path assembled from pieces is no rule's to see. So drover keeps a ledger of
//! what it vouches for: what the directory held when the run started, before any agent
//! ran (each entry by identity and ctime, which no program can set back), and each task
//! folder it published (each file's SHA-256, taken from its private staging folder).
//! When every task is over, the sweep removes everything else — a new folder, a file
//! added to or changed in a task folder, a symlink — through a handle on the directory
//! opened when the run started, following no symlink; then the reports are written, the
//! last word. An entry that cannot be removed fails the run.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::io::{self, Read};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;
use sha2::{Digest, Sha256};

use crate::workspace::Roots;
use crate::workspace::baseline::stat::StatKey;

/// What the ledger vouches for at one name.
enum Expected {
    /// There when the run started and not a directory: kept while it is the same entry,
    /// unchanged.
    Earlier(StatKey),
    /// A directory there when the run started, and what it held then.
    EarlierDir {
        identity: (u64, u64),
        entries: Entries,
    },
    /// A task folder published in this run: exactly these files, with these contents.
    Task(BTreeMap<OsString, [u8; 32]>),
    /// The lock file (`lock`) there when the run started: kept while it is the same
    /// file, whatever it says (it is the run's own lock; removing it would let a second
    /// run in).
    Lock((u64, u64)),
}

type Entries = BTreeMap<OsString, Expected>;

/// Why the artifacts directory cannot be vouched for. Each says what to do.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ArtifactsError {
    #[error(
        "cannot use the artifacts directory {path}: {source}; point --artifacts at a directory drover can create, read and write"
    )]
    Open { path: PathBuf, source: io::Error },
    #[error(
        "{spec}: the artifacts directory {} holds task {task}'s workspace or additional directory {}, whose files drover would remove at the end of the run as not its own; point --artifacts at a directory outside it",
        artifacts.display(),
        holds.display()
    )]
    HoldsWorkspace {
        artifacts: PathBuf,
        holds: PathBuf,
        task: String,
        spec: String,
    },
    #[error(
        "the artifacts directory {path} was moved or replaced during the run (by a program an agent ran?), so nothing there is drover's{}; the reports are not written: run again, with --artifacts outside the workspace",
        cleared_note(*.cleared)
    )]
    Replaced { path: PathBuf, cleared: usize },
}

fn cleared_note(cleared: usize) -> String {
    match cleared {
        0 => String::new(),
        n => format!(
            " ({} found there removed)",
            crate::output::counted(n as u64, "entry", "entries")
        ),
    }
}

/// What a sweep did: the entries it removed and those it could not (relative to the
/// artifacts directory).
#[derive(Debug, Default)]
pub(crate) struct Sweep {
    pub removed: Vec<PathBuf>,
    pub stuck: Vec<(PathBuf, io::Error)>,
}

/// The artifacts directory of a run and what drover vouches for in it.
pub(crate) struct Ledger {
    /// The directory, canonical, as it was resolved before any agent ran.
    root: PathBuf,
    identity: (u64, u64),
    /// Its handle, opened then: the sweep never resolves the path again.
    dir: OwnedFd,
    /// Handles for publishing beneath it (see `task_folder`).
    roots: Roots,
    expected: Mutex<Entries>,
}

impl Ledger {
    /// The ledger of `artifacts` (created when missing), with what it holds now. Call it
    /// before any agent runs.
    pub(crate) fn open(artifacts: &Path) -> Result<Ledger, ArtifactsError> {
        let failed = |source: io::Error| ArtifactsError::Open {
            path: artifacts.to_path_buf(),
            source,
        };
        std::fs::create_dir_all(artifacts).map_err(failed)?;
        let root = artifacts.canonicalize().map_err(failed)?;
        let dir = rustix::fs::open(&root, dir_flags(), Mode::empty())
            .map_err(|errno| failed(errno.into()))?;
        let stat = rustix::fs::fstat(&dir).map_err(|errno| failed(errno.into()))?;
        let key = StatKey::from_stat(&stat);
        let mut entries = snapshot(&dir).map_err(|errno| failed(errno.into()))?;
        if let Some(Expected::Earlier(lock)) = entries.get(OsStr::new(super::LOCK_FILE)) {
            let identity = (lock.dev, lock.ino);
            entries.insert(super::LOCK_FILE.into(), Expected::Lock(identity));
        }
        Ok(Ledger {
            roots: Roots::new(std::slice::from_ref(&root)),
            root,
            identity: (key.dev, key.ino),
            dir,
            expected: Mutex::new(entries),
        })
    }

    /// The artifacts directory, canonical.
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// Its device and inode when the run started.
    pub(crate) fn identity(&self) -> (u64, u64) {
        self.identity
    }

    /// Handles to publish beneath.
    pub(crate) fn roots(&self) -> &Roots {
        &self.roots
    }

    /// Vouch for task folder `name` as the regular files of `staging` (the private
    /// folder it is published from; `skip` is drover's own note there, not published).
    pub(crate) fn record_task(&self, name: &OsStr, staging: &Path, skip: &str) -> io::Result<()> {
        let mut files = BTreeMap::new();
        for entry in std::fs::read_dir(staging)? {
            let entry = entry?;
            if !entry.file_type()?.is_file() || entry.file_name() == skip {
                continue;
            }
            let digest = sha256(std::fs::File::open(entry.path())?)?;
            files.insert(entry.file_name(), digest);
        }
        self.expected
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(name.to_os_string(), Expected::Task(files));
        Ok(())
    }

    /// Remove every entry of the directory the ledger does not vouch for. Call it when
    /// every task is over (no agent's process is left to plant more). A directory that
    /// is no longer the one the run started with is refused, and what is there emptied.
    pub(crate) fn sweep(&self) -> Result<Sweep, ArtifactsError> {
        let same = std::fs::symlink_metadata(&self.root)
            .is_ok_and(|meta| meta.is_dir() && (meta.dev(), meta.ino()) == self.identity);
        if !same {
            return Err(ArtifactsError::Replaced {
                path: self.root.clone(),
                cleared: clear_replacement(&self.root),
            });
        }
        let expected = self.expected.lock().unwrap_or_else(|e| e.into_inner());
        let mut sweep = Sweep::default();
        sweep_dir(&self.dir, Path::new(""), &expected, &mut sweep);
        sweep.removed.sort();
        Ok(sweep)
    }
}

/// Flags to open a directory to read, never through a symlink.
fn dir_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

/// The names in directory `dir` (`.` and `..` left out).
fn names(dir: &OwnedFd) -> Result<Vec<OsString>, Errno> {
    let mut names = Vec::new();
    for entry in rustix::fs::Dir::read_from(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_bytes();
        if name != b"." && name != b".." {
            names.push(OsStr::from_bytes(name).to_os_string());
        }
    }
    Ok(names)
}

/// Everything below `dir` as it is now.
fn snapshot(dir: &OwnedFd) -> Result<Entries, Errno> {
    let mut entries = Entries::new();
    for name in names(dir)? {
        let stat = rustix::fs::statat(dir, &name, AtFlags::SYMLINK_NOFOLLOW)?;
        let key = StatKey::from_stat(&stat);
        let expected = if FileType::from_raw_mode(stat.st_mode) == FileType::Directory {
            let sub = rustix::fs::openat(dir, &name, dir_flags(), Mode::empty())?;
            Expected::EarlierDir {
                identity: (key.dev, key.ino),
                entries: snapshot(&sub)?,
            }
        } else {
            Expected::Earlier(key)
        };
        entries.insert(name, expected);
    }
    Ok(entries)
}

/// Remove what `expected` does not vouch for in `dir` (at `at`, relative to the
/// artifacts directory), depth first.
fn sweep_dir(dir: &OwnedFd, at: &Path, expected: &Entries, sweep: &mut Sweep) {
    let names = match names(dir) {
        Ok(names) => names,
        Err(errno) => {
            sweep.stuck.push((at.to_path_buf(), errno.into()));
            return;
        }
    };
    for name in names {
        let path = at.join(&name);
        let kept = match expected.get(&name) {
            None => false,
            Some(Expected::Earlier(key)) => {
                rustix::fs::statat(dir, &name, AtFlags::SYMLINK_NOFOLLOW)
                    .is_ok_and(|stat| StatKey::from_stat(&stat) == *key)
            }
            Some(Expected::EarlierDir { identity, entries }) => {
                match open_dir(dir, &name).filter(|(_, id)| id == identity) {
                    Some((sub, _)) => {
                        sweep_dir(&sub, &path, entries, sweep);
                        true
                    }
                    None => false,
                }
            }
            Some(Expected::Lock(identity)) => {
                rustix::fs::statat(dir, &name, AtFlags::SYMLINK_NOFOLLOW).is_ok_and(|stat| {
                    FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile
                        && (stat.st_dev, stat.st_ino) == *identity
                })
            }
            Some(Expected::Task(files)) => match open_dir(dir, &name) {
                Some((sub, _)) => {
                    sweep_task(&sub, &path, files, sweep);
                    true
                }
                None => false,
            },
        };
        if !kept {
            remove(dir, &name, path, sweep);
        }
    }
}

/// Remove from task folder `dir` every entry that is not one of `files`, unchanged.
fn sweep_task(dir: &OwnedFd, at: &Path, files: &BTreeMap<OsString, [u8; 32]>, sweep: &mut Sweep) {
    let names = match names(dir) {
        Ok(names) => names,
        Err(errno) => {
            sweep.stuck.push((at.to_path_buf(), errno.into()));
            return;
        }
    };
    for name in names {
        let same = files.get(&name).is_some_and(|want| {
            let regular = rustix::fs::statat(dir, &name, AtFlags::SYMLINK_NOFOLLOW)
                .is_ok_and(|stat| FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile);
            regular
                && rustix::fs::openat(
                    dir,
                    &name,
                    OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
                    Mode::empty(),
                )
                .ok()
                .and_then(|fd| sha256(std::fs::File::from(fd)).ok())
                .is_some_and(|digest| digest == *want)
        });
        if !same {
            remove(dir, &name, at.join(&name), sweep);
        }
    }
}

/// The directory `name` in `dir` (not a symlink) and its identity.
fn open_dir(dir: &OwnedFd, name: &OsStr) -> Option<(OwnedFd, (u64, u64))> {
    let sub = rustix::fs::openat(dir, name, dir_flags(), Mode::empty()).ok()?;
    let key = StatKey::from_stat(&rustix::fs::fstat(&sub).ok()?);
    Some((sub, (key.dev, key.ino)))
}

/// Remove entry `name` of `dir` (a directory with all it holds; a symlink as a link),
/// noting it as removed or stuck.
fn remove(dir: &OwnedFd, name: &OsStr, path: PathBuf, sweep: &mut Sweep) {
    // An agent running as drover's user may have taken the write bit off the directory
    // (`chmod 0555`) to keep what it planted: drover owns it and gives it back.
    let removed = remove_entry(dir.as_fd(), name).or_else(|errno| match errno {
        Errno::ACCESS | Errno::PERM if make_writable(dir.as_fd()).is_ok() => {
            remove_entry(dir.as_fd(), name)
        }
        _ => Err(errno),
    });
    match removed {
        Ok(()) => sweep.removed.push(path),
        Err(errno) => sweep.stuck.push((path, errno.into())),
    }
}

pub(super) fn remove_entry(dir: std::os::fd::BorrowedFd<'_>, name: &OsStr) -> Result<(), Errno> {
    let stat = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::Directory {
        return rustix::fs::unlinkat(dir, name, AtFlags::empty());
    }
    let sub = rustix::fs::openat(dir, name, dir_flags(), Mode::empty())?;
    if let Err(errno) = crate::workspace::beneath::clear_dir_fd(&sub) {
        if !matches!(errno, Errno::ACCESS | Errno::PERM) {
            return Err(errno);
        }
        make_writable(sub.as_fd())?;
        crate::workspace::beneath::clear_dir_fd(&sub)?;
    }
    rustix::fs::unlinkat(dir, name, AtFlags::REMOVEDIR)
}

/// Give the owner of directory `dir` back its right to change it (`u+rwx`).
fn make_writable(dir: std::os::fd::BorrowedFd<'_>) -> Result<(), Errno> {
    let stat = rustix::fs::fstat(dir)?;
    let mode = Mode::from_raw_mode(stat.st_mode) | Mode::RWXU;
    rustix::fs::fchmod(dir, mode)
}

/// Empty (or remove, when it is no directory) what is at `root` now: a directory an
/// agent put in the artifacts directory's place is wholly its own. Its parent is found
/// through no symlink (one planted on the way would lead elsewhere), and nothing is
/// followed below it. Returns how many entries went.
fn clear_replacement(root: &Path) -> usize {
    let (Some(parent), Some(name)) = (root.parent(), root.file_name()) else {
        return 0;
    };
    let beneath_slash = Roots::new(&[]);
    let Ok(parent) = beneath_slash.open(parent, OFlags::RDONLY | OFlags::DIRECTORY) else {
        return 0;
    };
    match rustix::fs::openat(&parent, name, dir_flags(), Mode::empty()) {
        Ok(dir) => {
            let count = names(&dir).map_or(0, |names| names.len());
            match crate::workspace::beneath::clear_dir_fd(&dir) {
                Ok(()) => count,
                Err(_) => 0,
            }
        }
        // Not a directory (a symlink, a file): the name itself goes.
        Err(_) => usize::from(rustix::fs::unlinkat(&parent, name, AtFlags::empty()).is_ok()),
    }
}

/// The SHA-256 of everything `file` holds, streamed.
fn sha256(mut file: std::fs::File) -> io::Result<[u8; 32]> {
    let mut hasher = Sha256::new();
    let mut buffer = vec![0; 64 * 1024];
    loop {
        let read = file.read(&mut buffer)?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
    }
    Ok(hasher.finalize().into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A staging folder holding `files`.
    fn staged(dir: &Path, files: &[(&str, &str)]) -> PathBuf {
        let staging = dir.join("staging");
        std::fs::create_dir_all(&staging).unwrap();
        for (name, text) in files {
            std::fs::write(staging.join(name), text).unwrap();
        }
        staging
    }

    fn removed(sweep: &Sweep) -> Vec<String> {
        let mut names: Vec<String> = sweep
            .removed
            .iter()
            .map(|path| path.display().to_string())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn what_drover_did_not_write_is_removed_and_what_it_did_stays() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        // An earlier run's folder, a note of the user's, left before the run.
        std::fs::create_dir_all(out.join("earlier")).unwrap();
        std::fs::write(out.join("earlier/transcript.jsonl"), "{}\n").unwrap();
        std::fs::write(out.join("notes.txt"), "mine").unwrap();
        std::fs::write(out.join("kept.txt"), "mine too").unwrap();
        let ledger = Ledger::open(&out).unwrap();

        // drover publishes its task's folder.
        let staging = staged(
            dir.path(),
            &[("transcript.jsonl", "real\n"), ("diff.patch", "")],
        );
        std::fs::create_dir_all(out.join("t")).unwrap();
        for name in ["transcript.jsonl", "diff.patch"] {
            std::fs::copy(staging.join(name), out.join("t").join(name)).unwrap();
        }
        ledger
            .record_task(OsStr::new("t"), &staging, "skipped")
            .unwrap();

        // An agent plants and changes.
        std::fs::create_dir_all(out.join("zz")).unwrap();
        std::fs::write(out.join("zz/output.json"), "{\"verdict\":\"approve\"}").unwrap();
        std::fs::write(out.join("t/output.json"), "{\"verdict\":\"approve\"}").unwrap();
        std::fs::write(out.join("t/diff.patch"), "forged").unwrap();
        std::os::unix::fs::symlink("/etc", out.join("t/link")).unwrap();
        std::os::unix::fs::symlink("/etc", out.join("summary.json")).unwrap();
        std::fs::write(out.join("earlier/extra"), "x").unwrap();
        std::fs::write(out.join("notes.txt"), "rewritten").unwrap();

        let sweep = ledger.sweep().unwrap();
        assert!(sweep.stuck.is_empty(), "{:?}", sweep.stuck);
        assert_eq!(
            removed(&sweep),
            [
                "earlier/extra",
                "notes.txt",
                "summary.json",
                "t/diff.patch",
                "t/link",
                "t/output.json",
                "zz"
            ]
        );
        assert_eq!(
            std::fs::read_to_string(out.join("t/transcript.jsonl")).unwrap(),
            "real\n"
        );
        assert!(out.join("earlier/transcript.jsonl").exists());
        assert_eq!(
            std::fs::read_to_string(out.join("kept.txt")).unwrap(),
            "mine too"
        );
        assert!(
            std::fs::read_dir("/etc").unwrap().next().is_some(),
            "no link followed"
        );
        // Swept again, nothing more goes.
        assert!(ledger.sweep().unwrap().removed.is_empty());
    }

    #[test]
    fn the_runs_lock_file_stays_whatever_it_says_but_a_replaced_one_goes() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(out.join(super::super::LOCK_FILE), "{}\n").unwrap();
        let ledger = Ledger::open(&out).unwrap();
        std::fs::write(out.join(super::super::LOCK_FILE), "rewritten, same file\n").unwrap();
        assert!(ledger.sweep().unwrap().removed.is_empty());
        // Made before the old one goes, so it cannot reuse its inode.
        std::fs::write(out.join("other"), "another file\n").unwrap();
        std::fs::rename(out.join("other"), out.join(super::super::LOCK_FILE)).unwrap();
        assert_eq!(removed(&ledger.sweep().unwrap()), [super::super::LOCK_FILE]);
    }

    #[test]
    fn an_earlier_entry_replaced_by_another_of_the_same_name_goes() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        std::fs::create_dir_all(out.join("earlier")).unwrap();
        std::fs::write(out.join("earlier/transcript.jsonl"), "{}\n").unwrap();
        let ledger = Ledger::open(&out).unwrap();
        std::fs::rename(out.join("earlier"), dir.path().join("moved")).unwrap();
        std::fs::create_dir_all(out.join("earlier")).unwrap();
        std::fs::write(out.join("earlier/transcript.jsonl"), "{}\n").unwrap();
        let sweep = ledger.sweep().unwrap();
        assert_eq!(removed(&sweep), ["earlier"]);
    }

    #[test]
    fn a_replaced_directory_is_refused_and_emptied() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let ledger = Ledger::open(&out).unwrap();
        std::fs::rename(&out, dir.path().join("moved")).unwrap();
        std::fs::create_dir_all(out.join("zz")).unwrap();
        std::fs::write(out.join("summary.json"), "{\"forged\": true}").unwrap();
        let error = ledger.sweep().unwrap_err().to_string();
        assert!(error.contains("moved or replaced"), "{error}");
        assert!(error.contains("2 entries found there removed"), "{error}");
        assert_eq!(std::fs::read_dir(&out).unwrap().count(), 0);

        // A symlink in its place: the link goes, what it points to stays.
        let victim = dir.path().join("victim");
        std::fs::create_dir_all(&victim).unwrap();
        std::fs::write(victim.join("keep"), "x").unwrap();
        std::fs::remove_dir(&out).unwrap();
        std::os::unix::fs::symlink(&victim, &out).unwrap();
        assert!(ledger.sweep().is_err());
        assert!(std::fs::symlink_metadata(&out).is_err());
        assert!(victim.join("keep").exists());
    }

    #[test]
    fn a_task_folder_that_is_a_symlink_goes_as_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let ledger = Ledger::open(&out).unwrap();
        let staging = staged(dir.path(), &[("transcript.jsonl", "real\n")]);
        ledger
            .record_task(OsStr::new("t"), &staging, "skipped")
            .unwrap();
        // The staging folder itself, linked where the task folder goes: same files, but
        // not the folder drover published.
        std::os::unix::fs::symlink(&staging, out.join("t")).unwrap();
        let sweep = ledger.sweep().unwrap();
        assert_eq!(removed(&sweep), ["t"]);
        assert!(staging.join("transcript.jsonl").exists());
    }
}
