//! Where a task's transcript and diff are written while it runs, so that the agent can
//! never rewrite them.
//!
//! The artifacts directory defaults to `drover-artifacts/` in the current directory,
//! which is often inside the workspace the agent's commands may write (Landlock grants
//! whole directory trees and cannot carve one out). When it is, the task's folder is
//! written in a private staging directory outside every writable tree while the task
//! runs, and published into `artifacts/<task>/` when the task is over and every process
//! it started is gone. Publishing goes beneath a handle on the artifacts directory opened
//! before the task started, following no symlink: a link or folder the agent planted
//! there is replaced, never followed.

use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::workspace::Roots;

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
pub(super) struct TaskFolder {
    /// `artifacts/<task>`, where a user finds it.
    final_dir: PathBuf,
    /// The artifacts directory's handle and identity, taken before the agent ran.
    artifacts: Option<Published>,
}

/// What publishing needs: the artifacts directory (canonical), its handle, its identity,
/// and the staging directory the task writes meanwhile.
struct Published {
    root: PathBuf,
    roots: Roots,
    identity: (u64, u64),
    staging: tempfile::TempDir,
}

impl TaskFolder {
    /// The folder for `final_dir` (`artifacts/<task>`). `exposed`: the artifacts directory
    /// lies inside a directory some agent of this run may write; the folder is then
    /// staged. The artifacts directory is created here, before any agent runs.
    pub(super) fn new(final_dir: &Path, exposed: bool) -> io::Result<Self> {
        let artifacts_dir = final_dir.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(artifacts_dir)?;
        if !exposed {
            std::fs::create_dir_all(final_dir)?;
            return Ok(TaskFolder {
                final_dir: final_dir.to_path_buf(),
                artifacts: None,
            });
        }
        let root = artifacts_dir.canonicalize()?;
        let meta = std::fs::metadata(&root)?;
        let staging = tempfile::Builder::new()
            .prefix(&crate::workspace::leftovers::temp_prefix("task"))
            .tempdir()?;
        // Private: a transcript may hold what others on the machine should not read, and
        // only a private folder is published should this drover be killed.
        std::fs::set_permissions(
            staging.path(),
            <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o700),
        )?;
        // Should drover be killed before it publishes, the next run publishes the
        // folder for it (see `orphaned_folders`): the transcript of a killed task is
        // never lost with the temp directory.
        let destination = Destination {
            artifacts: root.clone(),
            identity: (meta.dev(), meta.ino()),
            task: final_dir
                .file_name()
                .map(|name| name.to_string_lossy().into_owned())
                .unwrap_or_default(),
        };
        let text = serde_json::to_vec(&destination).map_err(io::Error::other)?;
        std::fs::write(staging.path().join(DESTINATION), text)?;
        Ok(TaskFolder {
            final_dir: final_dir.to_path_buf(),
            artifacts: Some(Published {
                roots: Roots::new(std::slice::from_ref(&root)),
                root,
                identity: (meta.dev(), meta.ino()),
                staging,
            }),
        })
    }

    /// Where the task writes its files now.
    pub(super) fn dir(&self) -> &Path {
        match &self.artifacts {
            Some(published) => published.staging.path(),
            None => &self.final_dir,
        }
    }

    /// Move a staged folder into `artifacts/<task>/` (nothing to do when not staged).
    /// Call it once the task's processes are all gone. On error the staged files are
    /// kept, and the error says where.
    pub(super) fn publish(self) -> io::Result<()> {
        let Some(published) = self.artifacts else {
            return Ok(());
        };
        let kept = |error: io::Error, staging: tempfile::TempDir| {
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
        if let Err(error) = same_directory(&published.root, published.identity) {
            return Err(kept(error, published.staging));
        }
        let Some(name) = self.final_dir.file_name() else {
            let error = io::Error::new(io::ErrorKind::InvalidInput, "the task has no name");
            return Err(kept(error, published.staging));
        };
        let target = published.root.join(name);
        match copy_into(&published.roots, published.staging.path(), &target) {
            Ok(()) => Ok(()),
            Err(error) => Err(kept(error, published.staging)),
        }
    }
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
    fn an_unexposed_folder_is_written_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let final_dir = dir.path().join("artifacts/task");
        let folder = TaskFolder::new(&final_dir, false).unwrap();
        assert_eq!(folder.dir(), final_dir);
        assert!(final_dir.is_dir());
        folder.publish().unwrap();
    }

    #[test]
    fn a_staged_folder_replaces_what_the_agent_planted() {
        let dir = tempfile::tempdir().unwrap();
        let artifacts = dir.path().join("artifacts");
        let final_dir = artifacts.join("task");
        let folder = TaskFolder::new(&final_dir, true).unwrap();
        assert!(!folder.dir().starts_with(dir.path()));
        std::fs::write(folder.dir().join("transcript.jsonl"), "real\n").unwrap();
        // The agent plants a forged folder, with a link out and a fake transcript.
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::fs::create_dir_all(final_dir.join("sub")).unwrap();
        std::fs::write(final_dir.join("transcript.jsonl"), "forged\n").unwrap();
        std::os::unix::fs::symlink(&elsewhere, final_dir.join("diff.patch")).unwrap();
        folder.publish().unwrap();
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
        let final_dir = artifacts.join("task");
        let folder = TaskFolder::new(&final_dir, true).unwrap();
        std::fs::write(folder.dir().join("diff.patch"), "patch").unwrap();
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &final_dir).unwrap();
        folder.publish().unwrap();
        assert!(std::fs::symlink_metadata(&final_dir).unwrap().is_dir());
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    }

    #[test]
    fn a_replaced_artifacts_directory_keeps_the_staged_files() {
        let dir = tempfile::tempdir().unwrap();
        let artifacts = dir.path().join("artifacts");
        let final_dir = artifacts.join("task");
        let folder = TaskFolder::new(&final_dir, true).unwrap();
        std::fs::write(folder.dir().join("transcript.jsonl"), "real\n").unwrap();
        std::fs::rename(&artifacts, dir.path().join("moved")).unwrap();
        std::fs::create_dir_all(&artifacts).unwrap();
        let error = folder.publish().unwrap_err().to_string();
        assert!(error.contains("moved or replaced"), "{error}");
        let kept = error.rsplit("kept in ").next().unwrap();
        assert_eq!(
            std::fs::read_to_string(Path::new(kept).join("transcript.jsonl")).unwrap(),
            "real\n"
        );
        std::fs::remove_dir_all(kept).unwrap();
    }
}
