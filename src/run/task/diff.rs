//! The task's diff: the workspace compared with its starting state, written as
//! `diff.patch` (redacted), and the paths the agent changed.

use std::path::Path;

use crate::record::{ExcludedFromDiff, Redactor, TaskReport};
use crate::spec::DiffSpec;
use crate::workspace::RelPath;
use crate::workspace::atomic::write_atomic;

use super::error::TaskError;
use super::start::Started;

/// What the agent changed.
pub(super) struct Changes {
    pub paths: Vec<RelPath>,
    /// Files that could not be read for the diff, each with why.
    pub unreadable: Vec<String>,
}

/// Compare the workspace with its start and write `diff.patch` (redacted; files drover
/// could not read are named in notes, not fatal), leaving out what the spec's
/// `diff.exclude` names (and naming it in the report). Done even after a signal: the
/// diff is what an interrupted task most needs to keep.
pub(super) fn diff(
    exclude: Option<&DiffSpec>,
    started: &Started,
    task_dir: &Path,
    redactor: &Redactor,
    report: &mut TaskReport,
) -> Result<Changes, TaskError> {
    let baseline = &started.baseline;
    let mut comparison = baseline
        .compare_until(&|| false)
        .map_err(TaskError::Compare)?;
    if let Some(exclude) = exclude {
        let mut left_out = Vec::new();
        comparison.changes.retain(|change| {
            let excluded = exclude.excludes(change.path.to_path());
            if excluded {
                left_out.push(change.path.to_string());
            }
            !excluded
        });
        report.excluded_from_diff = ExcludedFromDiff::of(&left_out);
    }
    let patch = baseline.patch(&comparison);
    let unreadable: Vec<String> = baseline
        .unreadable
        .iter()
        .chain(&comparison.unreadable)
        .map(|(path, why)| format!("{path} ({why})"))
        .collect();
    let mut note: String = unreadable
        .iter()
        .map(|line| format!("# drover: not in this diff, could not be read: {line}\n"))
        .collect();
    for line in &patch.notes {
        note.push_str(&format!("# drover: changed but not in this diff: {line}\n"));
    }
    // The agent may have written a secret it read into a file: the diff is an artifact
    // like the others, so it is redacted too (a redacted hunk no longer applies, which
    // is the lesser harm).
    let patch = redactor.redact_owned(note + &patch.text);
    write_diff(task_dir, patch.as_bytes())?;
    let paths = comparison.paths();
    report.files_changed = paths.iter().map(ToString::to_string).collect();
    report.ignored_changes = comparison.excluded_changes;
    Ok(Changes { paths, unreadable })
}

/// Write the task's `diff.patch`.
pub(super) fn write_diff(task_dir: &Path, patch: &[u8]) -> Result<(), TaskError> {
    let path = task_dir.join("diff.patch");
    write_atomic(&path, patch).map_err(|source| TaskError::Write { path, source })
}
