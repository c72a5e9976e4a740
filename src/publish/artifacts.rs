//! The tasks of an artifacts directory, as `drover publish` reads them: their reports
//! from `summary.json` and each one's `diff.patch`, read without following a symlink
//! and only for task names that are one plain path part.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};

use crate::record::{Status, TaskReport};

use super::gates::{Gate, Refusal};

/// One task to publish.
pub(crate) struct PublishedTask {
    pub report: TaskReport,
    pub patch: Vec<u8>,
}

impl PublishedTask {
    /// The commit the task started from, when it started from a clean one.
    pub(crate) fn base(&self) -> Option<&str> {
        self.report
            .start
            .as_ref()
            .filter(|start| !start.dirty)
            .map(|start| start.commit.as_str())
    }

    /// What the task's own record refuses: it did not pass, or did not start from a
    /// clean commit (its diff would not be the change from any commit).
    pub(crate) fn refusals(&self) -> Vec<Refusal> {
        let mut refusals = Vec::new();
        if self.report.status != Status::Passed {
            refusals.push(Refusal {
                gate: Gate::Passed,
                why: format!(
                    "the task did not pass ({}: {}); only passed tasks are published",
                    status_text(self.report.status),
                    self.report.message
                ),
            });
        }
        match &self.report.start {
            None => refusals.push(Refusal {
                gate: Gate::CleanStart,
                why: "its workspace was not a git repository, so there is no commit to build on".to_string(),
            }),
            Some(start) if start.dirty => refusals.push(Refusal {
                gate: Gate::CleanStart,
                why: format!(
                    "its workspace had changes of its own beside commit {}, so its diff is not a change to that commit; run the task on a clean checkout",
                    start.commit
                ),
            }),
            Some(_) => {}
        }
        let noted = self
            .patch
            .split(|byte| *byte == b'\n')
            .any(|line| line.starts_with(b"# drover: "));
        let excluded = self
            .report
            .excluded_from_diff
            .as_ref()
            .is_some_and(|excluded| excluded.count > 0);
        if noted || excluded {
            refusals.push(Refusal {
                gate: Gate::Incomplete,
                why: "its diff.patch does not hold all it changed (files left out by diff.exclude, too large or unreadable; see the notes at the top of diff.patch), so a commit of it would not be the task's work; publish such a task by hand".to_string(),
            });
        }
        refusals
    }
}

/// Why the artifacts could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ArtifactsError {
    #[error("cannot read {path}: {source}; give the artifacts directory of a `drover run`")]
    Unreadable {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a drover summary: {source}")]
    NotASummary {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error(
        "a task of the summary is named {name:?}, which is no drover task name; this summary was not written by drover"
    )]
    BadName { name: String },
    #[error("no task named {name} in {dir}; its tasks: {tasks}")]
    NoSuchTask {
        name: String,
        dir: PathBuf,
        tasks: String,
    },
}

/// The summary's part publish reads.
#[derive(serde::Deserialize)]
struct Summary {
    tasks: Vec<TaskReport>,
}

/// The tasks of `dir` named in `only` (every task when empty), in the summary's order.
pub(crate) fn read(dir: &Path, only: &[String]) -> Result<Vec<PublishedTask>, ArtifactsError> {
    let summary_path = dir.join("summary.json");
    let text = read_file(&summary_path)?;
    let summary: Summary =
        serde_json::from_slice(&text).map_err(|source| ArtifactsError::NotASummary {
            path: summary_path.clone(),
            source,
        })?;
    let names: Vec<String> = summary.tasks.iter().map(|t| t.name.clone()).collect();
    for name in only {
        if !names.contains(name) {
            return Err(ArtifactsError::NoSuchTask {
                name: name.clone(),
                dir: dir.to_path_buf(),
                tasks: names.join(", "),
            });
        }
    }
    let mut tasks = Vec::new();
    for report in summary.tasks {
        if !only.is_empty() && !only.contains(&report.name) {
            continue;
        }
        if !crate::record::is_plain_task_name(&report.name) {
            return Err(ArtifactsError::BadName { name: report.name });
        }
        let patch = read_file(&dir.join(&report.name).join("diff.patch"))?;
        tasks.push(PublishedTask { report, patch });
    }
    Ok(tasks)
}

/// `path`'s bytes, its last part never a symlink, its task folder neither.
fn read_file(path: &Path) -> Result<Vec<u8>, ArtifactsError> {
    let unreadable = |source| ArtifactsError::Unreadable {
        path: path.to_path_buf(),
        source,
    };
    if let Some(folder) = path.parent()
        && std::fs::symlink_metadata(folder).is_ok_and(|meta| meta.file_type().is_symlink())
    {
        return Err(unreadable(std::io::Error::other("its folder is a symlink")));
    }
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rustix::fs::open(path, flags, Mode::empty()).map_err(|e| unreadable(e.into()))?;
    let mut bytes = Vec::new();
    std::fs::File::from(fd)
        .read_to_end(&mut bytes)
        .map_err(unreadable)?;
    Ok(bytes)
}

fn status_text(status: Status) -> &'static str {
    match status {
        Status::Passed => "passed",
        Status::Failed => "failed",
        Status::Error => "error",
    }
}
