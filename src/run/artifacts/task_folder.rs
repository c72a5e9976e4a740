//! Where a task's transcript and diff are written while it runs, so that the agent can
//! never rewrite them, and no link planted in the artifacts directory redirects them.
//!
//! The artifacts directory defaults to `drover-artifacts/` in the current directory,
//! which is often inside the workspace the agent's commands may write (Landlock grants
//! whole directory trees and cannot carve one out). When it is, the task's folder is
//! written in a private staging directory outside every writable tree while the task
//! runs, and published into `artifacts/<task>/` when the task is over and every process
//! it started is gone. Publishing goes beneath the handle on the artifacts directory
//! opened before any agent ran, following no symlink: a link or folder the agent planted
//! there is replaced, never followed.
//!
//! Otherwise the folder is written in place, live, as the task runs (no agent can write
//! there). But the directory may come from elsewhere — used again, downloaded from
//! another job, the one a resumed task was recorded in — and hold links where drover is
//! about to write: the folder is made beneath the same handle, a link or file at its
//! name replaced, and it is left holding nothing but plain files of its own (no link, no
//! directory, no file hard-linked elsewhere) before the task writes into it.
//!
//! Either way the published files are recorded in the run's [`Ledger`], which vouches
//! for them when the end of the run sweeps the directory.

use std::ffi::OsString;
use std::io;
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType};

use super::ledger::{Ledger, remove_entry};
use crate::workspace::Roots;
use crate::workspace::leftovers::HeldTempDir;

/// The file in a staging folder saying where it is to be published.
pub(super) const DESTINATION: &str = ".drover-destination.json";

/// Where a staged folder goes: `artifacts/task`, the artifacts directory as identified
/// before any agent ran.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct Destination {
    pub artifacts: PathBuf,
    pub identity: (u64, u64),
    pub task: String,
}

/// The folder of one task.
pub(crate) struct TaskFolder {
    /// `artifacts/<task>`, where a user finds it.
    final_dir: PathBuf,
    /// Its name in the artifacts directory.
    name: OsString,
    place: Place,
}

/// Where the task writes while it runs.
enum Place {
    /// In its folder in the artifacts directory (canonical path), which no agent of
    /// the run can write.
    InPlace(PathBuf),
    /// In a private staging directory, published when the task is over.
    Staged(HeldTempDir),
}

impl TaskFolder {
    /// The folder for `final_dir` (`artifacts/<task>`) in `ledger`'s artifacts
    /// directory. `exposed`: that directory lies inside a directory some agent of this
    /// run may write; the folder is then staged. `resumed`: the task continues the
    /// recording in that folder, whose files written in place stay beside the new ones.
    pub(crate) fn new(
        final_dir: &Path,
        ledger: &Ledger,
        exposed: bool,
        resumed: bool,
    ) -> io::Result<Self> {
        let name = final_dir
            .file_name()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the task has no name"))?
            .to_os_string();
        let place = if exposed {
            Place::Staged(staging(ledger, &name)?)
        } else {
            let target = ledger.root().join(&name);
            prepare_in_place(ledger.roots(), &target, resumed)?;
            Place::InPlace(target)
        };
        Ok(TaskFolder {
            final_dir: final_dir.to_path_buf(),
            name,
            place,
        })
    }

    /// Where the task writes its files now.
    pub(crate) fn dir(&self) -> &Path {
        match &self.place {
            Place::InPlace(dir) => dir,
            Place::Staged(staging) => staging.path(),
        }
    }

    /// Record the folder's files in `ledger`, and move a staged folder into
    /// `artifacts/<task>/`. Call it once the task's processes are all gone. On error the
    /// staged files are kept, and the error says where.
    pub(crate) fn publish(self, ledger: &Ledger) -> io::Result<()> {
        let staging = match self.place {
            Place::InPlace(dir) => return ledger.record_task(&self.name, &dir, DESTINATION),
            Place::Staged(staging) => staging,
        };
        let kept = |error: io::Error, staging: HeldTempDir| {
            let at = staging.keep();
            io::Error::new(
                error.kind(),
                format!(
                    "cannot publish the task's artifacts into {}: {error}; they are kept in {}",
                    self.final_dir.display(),
                    at.display()
                ),
            )
        };
        if let Err(error) = same_directory(ledger.root(), ledger.identity()) {
            return Err(kept(error, staging));
        }
        let target = ledger.root().join(&self.name);
        let published = ledger
            .record_task(&self.name, staging.path(), DESTINATION)
            .and_then(|()| copy_into(ledger.roots(), staging.path(), &target));
        match published {
            Ok(()) => Ok(()),
            Err(error) => Err(kept(error, staging)),
        }
    }
}

/// A private staging directory for task `name` of `ledger`'s artifacts directory.
fn staging(ledger: &Ledger, name: &OsString) -> io::Result<HeldTempDir> {
    let staging = HeldTempDir::new("task")?;
    // Private: a transcript may hold what others on the machine should not read, and
    // only a private folder is published should this drover be killed.
    std::fs::set_permissions(
        staging.path(),
        <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o700),
    )?;
    // Should drover be killed before it publishes, the next run publishes the folder
    // for it (see `run::artifacts::orphaned_folders`): the transcript of a killed task is never lost
    // with the temp directory.
    let destination = Destination {
        artifacts: ledger.root().to_path_buf(),
        identity: ledger.identity(),
        task: name.to_string_lossy().into_owned(),
    };
    let text = serde_json::to_vec(&destination).map_err(io::Error::other)?;
    std::fs::write(staging.path().join(DESTINATION), text)?;
    Ok(staging)
}

/// Make `target` a directory beneath `roots` to write in by path: a symlink or file at
/// its name goes, and so does everything in it — but for a resumed task (`resumed`)
/// its regular files with one link, the recordings it continues; never an entry a write
/// by path would follow (a symlink, a FIFO, a directory, a file hard-linked elsewhere).
fn prepare_in_place(roots: &Roots, target: &Path, resumed: bool) -> io::Result<()> {
    match roots.symlink_metadata(target) {
        Ok(meta) if !meta.file_type().is_dir() => roots.remove_file(target)?,
        Err(error) if error.kind() != io::ErrorKind::NotFound => return Err(error),
        _ => {}
    }
    let dir = roots.create_dir_all(target)?;
    let mut names = Vec::new();
    for entry in rustix::fs::Dir::read_from(&dir)? {
        let name = entry?.file_name().to_bytes().to_vec();
        if name != b"." && name != b".." {
            names.push(OsString::from_vec(name));
        }
    }
    for name in names {
        let stat = rustix::fs::statat(&dir, &name, AtFlags::SYMLINK_NOFOLLOW)?;
        let plain =
            FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile && stat.st_nlink == 1;
        if !(resumed && plain) {
            remove_entry(dir.as_fd(), &name)?;
        }
    }
    Ok(())
}

/// Is `root` still the directory whose identity was taken before the agent ran (not
/// moved away and replaced, not a symlink now)?
pub(super) fn same_directory(root: &Path, identity: (u64, u64)) -> io::Result<()> {
    let meta = std::fs::symlink_metadata(root)?;
    if meta.file_type().is_dir() && (meta.dev(), meta.ino()) == identity {
        return Ok(());
    }
    Err(io::Error::other(format!(
        "{} was moved or replaced while the task ran",
        root.display()
    )))
}

/// Copy every file of `staging` into `target` beneath `roots`, replacing what is there.
pub(super) fn copy_into(roots: &Roots, staging: &Path, target: &Path) -> io::Result<()> {
    // Whatever the agent planted at the task's name (a symlink, a file, a folder with
    // its own transcript) is cleared first.
    remove_planted(roots, target)?;
    roots.create_dir_all(target)?;
    for entry in std::fs::read_dir(staging)? {
        let entry = entry?;
        if !entry.file_type()?.is_file() || entry.file_name() == DESTINATION {
            continue;
        }
        // Streamed: a transcript or diff of any size is never held in memory.
        let source = std::fs::File::open(entry.path())?;
        roots.write_atomic_from(&target.join(entry.file_name()), source)?;
    }
    Ok(())
}

/// Remove `target` if it is not a plain directory drover can publish into: a symlink or
/// a file goes; a directory has its entries removed (without following links).
fn remove_planted(roots: &Roots, target: &Path) -> io::Result<()> {
    match roots.symlink_metadata(target) {
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(error),
        Ok(meta) if meta.file_type().is_dir() => roots.clear_dir(target),
        Ok(_) => roots.remove_file(target),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unexposed_folder_is_written_in_place_through_no_planted_link() {
        let dir = tempfile::tempdir().unwrap();
        let artifacts = dir.path().join("artifacts");
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::fs::write(elsewhere.join("precious"), "keep").unwrap();
        // Left in the directory before the run: the task's name a link out, another
        // task's folder with a link and a hard link where drover writes.
        std::fs::create_dir_all(artifacts.join("other")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, artifacts.join("task")).unwrap();
        std::os::unix::fs::symlink(
            elsewhere.join("precious"),
            artifacts.join("other/diff.patch"),
        )
        .unwrap();
        std::fs::hard_link(
            elsewhere.join("precious"),
            artifacts.join("other/transcript.jsonl"),
        )
        .unwrap();
        std::fs::write(
            artifacts.join("other/transcript.before-resume-1.jsonl"),
            "kept\n",
        )
        .unwrap();
        std::fs::create_dir_all(artifacts.join("fresh")).unwrap();
        std::fs::write(
            artifacts.join("fresh/output.json"),
            "{\"verdict\":\"approve\"}",
        )
        .unwrap();
        let ledger = Ledger::open(&artifacts).unwrap();
        for (name, resumed) in [("task", false), ("other", true), ("fresh", false)] {
            let final_dir = artifacts.join(name);
            let folder = TaskFolder::new(&final_dir, &ledger, false, resumed).unwrap();
            assert_eq!(folder.dir(), artifacts.canonicalize().unwrap().join(name));
            std::fs::write(folder.dir().join("transcript.jsonl"), "real\n").unwrap();
            std::fs::write(folder.dir().join("diff.patch"), "patch").unwrap();
            folder.publish(&ledger).unwrap();
            assert!(std::fs::symlink_metadata(&final_dir).unwrap().is_dir());
        }
        assert_eq!(
            std::fs::read_to_string(elsewhere.join("precious")).unwrap(),
            "keep"
        );
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 1);
        assert!(
            artifacts
                .join("other/transcript.before-resume-1.jsonl")
                .exists(),
            "a resumed task's earlier recordings stay"
        );
        assert!(
            !artifacts.join("fresh/output.json").exists(),
            "a new task's folder holds only what it writes"
        );
        assert!(ledger.sweep().unwrap().removed.is_empty());
    }

    #[test]
    fn a_folder_is_staged_outside_the_artifacts_and_published_there() {
        let dir = tempfile::tempdir().unwrap();
        let artifacts = dir.path().join("artifacts");
        let ledger = Ledger::open(&artifacts).unwrap();
        let final_dir = artifacts.join("task");
        let folder = TaskFolder::new(&final_dir, &ledger, true, false).unwrap();
        assert!(!folder.dir().starts_with(dir.path()));
        std::fs::write(folder.dir().join("transcript.jsonl"), "real\n").unwrap();
        assert!(
            !final_dir.exists(),
            "nothing is written there while the task runs"
        );
        folder.publish(&ledger).unwrap();
        assert_eq!(
            std::fs::read_to_string(final_dir.join("transcript.jsonl")).unwrap(),
            "real\n"
        );
        assert!(!final_dir.join(DESTINATION).exists());
    }

    #[test]
    fn a_staged_folder_replaces_what_the_agent_planted() {
        let dir = tempfile::tempdir().unwrap();
        let artifacts = dir.path().join("artifacts");
        let ledger = Ledger::open(&artifacts).unwrap();
        let final_dir = artifacts.join("task");
        let folder = TaskFolder::new(&final_dir, &ledger, true, false).unwrap();
        std::fs::write(folder.dir().join("transcript.jsonl"), "real\n").unwrap();
        // The agent plants a forged folder, with a link out and a fake transcript.
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::fs::create_dir_all(final_dir.join("sub")).unwrap();
        std::fs::write(final_dir.join("transcript.jsonl"), "forged\n").unwrap();
        std::os::unix::fs::symlink(&elsewhere, final_dir.join("diff.patch")).unwrap();
        folder.publish(&ledger).unwrap();
        assert_eq!(
            std::fs::read_to_string(final_dir.join("transcript.jsonl")).unwrap(),
            "real\n"
        );
        assert!(!final_dir.join("diff.patch").exists());
        assert!(!final_dir.join("sub").exists());
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    }

    #[test]
    fn a_task_name_planted_as_a_symlink_is_replaced_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let artifacts = dir.path().join("artifacts");
        let ledger = Ledger::open(&artifacts).unwrap();
        let final_dir = artifacts.join("task");
        let folder = TaskFolder::new(&final_dir, &ledger, true, false).unwrap();
        std::fs::write(folder.dir().join("diff.patch"), "patch").unwrap();
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &final_dir).unwrap();
        folder.publish(&ledger).unwrap();
        assert!(std::fs::symlink_metadata(&final_dir).unwrap().is_dir());
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    }

    #[test]
    fn a_replaced_artifacts_directory_keeps_the_staged_files() {
        let dir = tempfile::tempdir().unwrap();
        let artifacts = dir.path().join("artifacts");
        let ledger = Ledger::open(&artifacts).unwrap();
        let final_dir = artifacts.join("task");
        let folder = TaskFolder::new(&final_dir, &ledger, true, false).unwrap();
        std::fs::write(folder.dir().join("transcript.jsonl"), "real\n").unwrap();
        std::fs::rename(&artifacts, dir.path().join("moved")).unwrap();
        std::fs::create_dir_all(&artifacts).unwrap();
        let error = folder.publish(&ledger).unwrap_err().to_string();
        assert!(error.contains("moved or replaced"), "{error}");
        let kept = error.rsplit("kept in ").next().unwrap();
        assert_eq!(
            std::fs::read_to_string(Path::new(kept).join("transcript.jsonl")).unwrap(),
            "real\n"
        );
        std::fs::remove_dir_all(kept).unwrap();
    }
}
