//! A recorded task of a matrix made again: the entry a recording holds is no more trusted
//! than the recording (anyone can edit a transcript), so it is taken only where the
//! spec's own entries cannot be read, checked as a written entry is, and the task must be
//! the one the recording names.

use std::path::Path;

use super::entries::{self, Entry, MatrixSpec, MatrixValues};
use super::{RecordedTask, Spanned};
use crate::load::error::{Position, SpecError};
use crate::types::TaskSpec;

/// Whether the spec's matrix is a `from:` file that no longer exists (then only the
/// recording knows the entry). An inline matrix, or a file that exists but cannot be
/// read, is not gone: its entries are read, or their error is the answer.
pub(super) fn from_file_gone(spec_path: &Path, matrix: &Spanned<MatrixSpec>) -> bool {
    let MatrixSpec::From(file) = &matrix.value else {
        return false;
    };
    std::fs::symlink_metadata(entries::from_path(spec_path, file))
        .is_err_and(|error| error.kind() == std::io::ErrorKind::NotFound)
}

/// The recorded entry `values`, if it could have been read from a matrix file.
pub(super) fn entry(values: &MatrixValues, at_matrix: Position) -> Result<Entry, SpecError> {
    entries::check_recorded(values).map_err(|refused| SpecError::Invalid {
        position: at_matrix,
        message: format!(
            "the recording's matrix entry is refused: {refused}; it is not an entry a matrix can hold"
        ),
    })?;
    Ok(Entry::recorded(values))
}

/// Of `tasks` (expanded from the spec's entries when `from_spec`, else from the
/// recorded one), the recorded `task`: the one of its name, whose entry must be the
/// recorded one.
pub(super) fn the_recorded(
    tasks: Vec<(TaskSpec, MatrixValues)>,
    task: RecordedTask,
    from_spec: bool,
    at_matrix: &Position,
) -> Result<(TaskSpec, MatrixValues), SpecError> {
    let refused = |message: String| SpecError::Invalid {
        position: at_matrix.clone(),
        message,
    };
    let made: Vec<String> = tasks
        .iter()
        .map(|(spec, _)| spec.name.value.to_string())
        .collect();
    let Some(one) = tasks
        .into_iter()
        .find(|(spec, _)| spec.name.value.as_str() == task.name)
    else {
        return Err(refused(if from_spec {
            format!(
                "the spec's matrix makes no task named {:?}, the recording's task: the recording is not of this spec's matrix",
                task.name
            )
        } else {
            format!(
                "the recording's matrix entry makes the task {:?}, not the recording's task {:?}: the recording does not hold the entry of its task",
                made.join(", "),
                task.name
            )
        }));
    };
    if let Some(recorded) = task.entry
        && *recorded != one.1
    {
        return Err(refused(format!(
            "the recording's matrix entry is not the spec's: the spec's entry of task {:?} differs in {}; replay or resume with the spec and matrix the run used, or run the task again",
            task.name,
            differing(recorded, &one.1)
        )));
    }
    Ok(one)
}

/// The keys two entries differ in, for a person: `path`, `port`.
fn differing(a: &MatrixValues, b: &MatrixValues) -> String {
    let mut keys: Vec<&str> = a
        .keys()
        .chain(b.keys())
        .filter(|key| a.get(*key) != b.get(*key))
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    keys.dedup();
    let keys: Vec<String> = keys.iter().map(|key| format!("`{key}`")).collect();
    keys.join(", ")
}

#[cfg(test)]
#[path = "recorded_tests.rs"]
mod tests;
