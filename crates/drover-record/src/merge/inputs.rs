//! The inputs of `report merge`: an artifacts directory (`drover run --artifacts`,
//! holding `summary.json`), or one task folder inside one (`out-7/fix-billing`), which
//! stands for that task alone. Every file is read without following a link out of the
//! input, and task names are checked before any is used as a path.

use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use serde::Deserialize;

use super::error::MergeError;
use crate::{ShardId, TaskReport};

/// The part of `summary.json` a merge needs (other fields are recomputed).
#[derive(Deserialize)]
pub(super) struct SummaryFile {
    pub tasks: Vec<TaskReport>,
    /// Which shard the run was; absent in summaries older than it and null for a run
    /// without `--shard`.
    #[serde(default)]
    pub shard: Option<ShardId>,
}

/// One input of a merge, read.
pub(super) struct Input {
    /// As the user named it: what errors and `earlier_runs[].from` say.
    pub given: PathBuf,
    /// The artifacts directory holding the task folders (`given`, or its parent for a
    /// task folder).
    pub artifacts: PathBuf,
    pub summary: SummaryFile,
}

/// `given` read as an artifacts directory, or as a task folder of one. A task folder
/// counts as a whole run of its one task (not as its shard: the shard's other tasks are
/// not among the inputs on purpose).
pub(super) fn read_input(given: &Path) -> Result<Input, MergeError> {
    let own_summary = given.join("summary.json");
    let parent = given.parent().filter(|p| !p.as_os_str().is_empty());
    let is_task_folder = std::fs::symlink_metadata(&own_summary).is_err()
        && given.is_dir()
        && parent.is_some_and(|p| std::fs::symlink_metadata(p.join("summary.json")).is_ok());
    if !is_task_folder {
        return Ok(Input {
            given: given.to_path_buf(),
            artifacts: given.to_path_buf(),
            summary: read_summary(given)?,
        });
    }
    let artifacts = parent.map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let name = given
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut summary = read_summary(&artifacts)?;
    summary.tasks.retain(|task| task.name == name);
    if summary.tasks.is_empty() {
        return Err(MergeError::NotATaskFolder {
            folder: given.to_path_buf(),
            summary: artifacts.join("summary.json"),
        });
    }
    summary.shard = None;
    Ok(Input {
        given: given.to_path_buf(),
        artifacts,
        summary,
    })
}

/// The summary of one artifacts directory: a regular file, read without following a
/// symbolic link (it could point at any file drover can read).
pub(super) fn read_summary(dir: &Path) -> Result<SummaryFile, MergeError> {
    let path = dir.join("summary.json");
    let text = read_regular_file(&path)?;
    let mut summary: SummaryFile =
        serde_json::from_str(&text).map_err(|source| MergeError::NotASummary {
            path: path.clone(),
            source,
        })?;
    // A status its reason contradicts (`passed` with `checks_failed`) is read as the
    // worse of the two: an edited summary cannot turn a failure into a pass.
    for task in &mut summary.tasks {
        task.status = task.status.max(task.reason.status());
        for earlier in &mut task.earlier_runs {
            earlier.status = earlier.status.max(earlier.reason.status());
        }
    }
    // A task directory outside the input could be anything; names are checked at load.
    if let Some(task) = summary
        .tasks
        .iter()
        .find(|task| !crate::is_plain_task_name(&task.name))
    {
        return Err(MergeError::BadTaskName {
            path,
            task: task.name.clone(),
        });
    }
    Ok(summary)
}

fn read_regular_file(path: &Path) -> Result<String, MergeError> {
    let unreadable = |source: std::io::Error| MergeError::UnreadableSummary {
        path: path.to_path_buf(),
        source,
    };
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let file = match rustix::fs::open(path, flags, Mode::empty()) {
        Ok(fd) => std::fs::File::from(fd),
        Err(Errno::LOOP) => {
            return Err(MergeError::SummaryNotAFile {
                path: path.to_path_buf(),
                what: "a symbolic link",
            });
        }
        Err(errno) => return Err(unreadable(errno.into())),
    };
    let kind = file.metadata().map_err(unreadable)?.file_type();
    if !kind.is_file() {
        let what = if kind.is_dir() {
            "a directory"
        } else {
            "a FIFO, socket or device"
        };
        return Err(MergeError::SummaryNotAFile {
            path: path.to_path_buf(),
            what,
        });
    }
    let mut text = String::new();
    std::io::Read::read_to_string(&mut &file, &mut text).map_err(unreadable)?;
    Ok(text)
}
