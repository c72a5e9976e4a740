//! The task folders a killed drover staged and never published (see `task_folder`):
//! the next drover publishes them where they were going, so the transcript of a task
//! killed with SIGKILL is there to read, verify and resume, not deleted with the temp
//! directory.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::task_folder::{DESTINATION, Destination, copy_into, same_directory};
use crate::workspace::Roots;

/// Publish every orphaned staging folder in `temp` that holds a transcript; the task
/// folders written. A folder is trusted only if this user made it private (as drover
/// makes them) and its artifacts directory is still the one identified when it was
/// made; anything else is left for the temp-directory clean-up. A folder whose
/// artifacts directory another live run holds now (see `lock`) waits: that run's
/// directory is its own until it ends.
pub(crate) fn publish_orphaned_folders(temp: &Path) -> Orphans {
    let mut orphans = Orphans::default();
    for staging in crate::workspace::leftovers::stale_temp_dirs(temp, "task") {
        match publish(&staging.path) {
            Some(Published::Into(target)) => orphans.published.push(target),
            Some(Published::Waiting) => orphans.waiting.push(staging.path.clone()),
            None => {}
        }
    }
    orphans
}

/// The orphaned staging folders: published (the task folders written), or waiting for
/// the live run that holds their artifacts directory (not to be removed as leftovers).
#[derive(Debug, Default)]
pub(crate) struct Orphans {
    pub published: Vec<PathBuf>,
    pub waiting: Vec<PathBuf>,
}

enum Published {
    Into(PathBuf),
    Waiting,
}

fn publish(staging: &Path) -> Option<Published> {
    let meta = std::fs::symlink_metadata(staging).ok()?;
    // Only this user's private folders: another user's, in a shared /tmp, could
    // otherwise make drover write their files into its artifacts.
    let own =
        meta.uid() == rustix::process::geteuid().as_raw() && meta.permissions().mode() & 0o077 == 0;
    if !own || !staging.join("transcript.jsonl").is_file() {
        return None;
    }
    let text = std::fs::read(staging.join(DESTINATION)).ok()?;
    let destination: Destination = serde_json::from_slice(&text).ok()?;
    let plain = !destination.task.is_empty()
        && Path::new(&destination.task).components().count() == 1
        && !destination.task.starts_with('.');
    if !plain || same_directory(&destination.artifacts, destination.identity).is_err() {
        return None;
    }
    let Some(_lock) = super::lock::lock_for_a_moment(&destination.artifacts) else {
        return Some(Published::Waiting);
    };
    let roots = Roots::new(std::slice::from_ref(&destination.artifacts));
    let target = destination.artifacts.join(&destination.task);
    copy_into(&roots, staging, &target).ok()?;
    let _ = std::fs::remove_dir_all(staging);
    Some(Published::Into(target))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pid no process has (beyond the kernel's default pid_max of 4,194,304).
    const GONE: u32 = 4_999_999;

    fn staged(temp: &Path, artifacts: &Path, task: &str) -> PathBuf {
        let staging = temp.join(format!("drover-task-{GONE}-abc{task}"));
        std::fs::create_dir(&staging).unwrap();
        std::fs::set_permissions(&staging, std::fs::Permissions::from_mode(0o700)).unwrap();
        let meta = std::fs::metadata(artifacts).unwrap();
        let destination = Destination {
            artifacts: artifacts.canonicalize().unwrap(),
            identity: (meta.dev(), meta.ino()),
            task: task.to_string(),
        };
        std::fs::write(
            staging.join(DESTINATION),
            serde_json::to_vec(&destination).unwrap(),
        )
        .unwrap();
        std::fs::write(staging.join("transcript.jsonl"), "killed mid-run\n").unwrap();
        staging
    }

    #[test]
    fn a_killed_runs_staged_folder_is_published_where_it_was_going() {
        let dir = tempfile::tempdir().unwrap();
        let temp = dir.path().join("tmp");
        let artifacts = dir.path().join("out");
        std::fs::create_dir_all(&temp).unwrap();
        std::fs::create_dir_all(artifacts.join("t")).unwrap();
        std::fs::write(artifacts.join("t/transcript.jsonl"), "planted\n").unwrap();
        let staging = staged(&temp, &artifacts, "t");
        let published = publish_orphaned_folders(&temp).published;
        assert_eq!(published.len(), 1);
        assert_eq!(
            std::fs::read_to_string(artifacts.join("t/transcript.jsonl")).unwrap(),
            "killed mid-run\n"
        );
        assert!(!artifacts.join("t").join(DESTINATION).exists());
        assert!(!staging.exists());
    }

    #[test]
    fn a_folder_for_a_directory_a_live_run_holds_waits() {
        let dir = tempfile::tempdir().unwrap();
        let temp = dir.path().join("tmp");
        let artifacts = dir.path().join("out");
        std::fs::create_dir_all(&temp).unwrap();
        std::fs::create_dir_all(&artifacts).unwrap();
        let staging = staged(&temp, &artifacts, "t");
        // Another run's lock: a lock file held through a descriptor of its own.
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(artifacts.join(super::super::LOCK_FILE))
            .unwrap();
        rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive).unwrap();
        let orphans = publish_orphaned_folders(&temp);
        assert!(orphans.published.is_empty());
        assert_eq!(orphans.waiting, [staging]);
        assert!(!artifacts.join("t").exists());
        drop(lock);
        assert_eq!(publish_orphaned_folders(&temp).published.len(), 1);
    }

    #[test]
    fn a_shared_or_misdirected_folder_is_not_published() {
        let dir = tempfile::tempdir().unwrap();
        let temp = dir.path().join("tmp");
        let artifacts = dir.path().join("out");
        std::fs::create_dir_all(&temp).unwrap();
        std::fs::create_dir_all(&artifacts).unwrap();
        let open = staged(&temp, &artifacts, "open");
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        staged(&temp, &artifacts, "..");
        // The artifacts directory was replaced since.
        let moved = dir.path().join("moved");
        let elsewhere = staged(&temp, &artifacts, "t");
        std::fs::rename(&artifacts, &moved).unwrap();
        std::fs::create_dir_all(&artifacts).unwrap();
        assert!(publish_orphaned_folders(&temp).published.is_empty());
        assert!(elsewhere.exists());
        assert_eq!(std::fs::read_dir(&artifacts).unwrap().count(), 0);
    }
}
