//! `matrix:` — one spec expanded into one task per entry. Values go into parsed strings
//! only (never into the YAML text before it is parsed, so no value can add a key or
//! change the spec's shape), and only into the fields `fields` lists; a value in a
//! shell command is never written into its text: drover writes `"${DROVER_MATRIX_KEY}"`
//! there and the command gets the value in its environment. Task names come from the
//! values alone, never from an entry's place in the list, so they stay the same when the
//! list is reordered or grows. A recorded task is expanded again from the spec's own
//! entry when the user names the spec file (the recording's entry must be that one), and
//! from the entry its `run_start` holds only when the spec's matrix file is gone or the
//! spec is the recorded text; a recorded entry is checked as a written one is, and the
//! task it makes must be the recorded task.

use std::path::Path;

use serde_saphyr::Spanned;

use crate::defaults::tree::Node;
use crate::load::error::{Position, SpecError};
use crate::load::yaml::from_yaml;
use crate::types::TaskSpec;

mod entries;
mod expand;
pub(crate) mod fields;
mod recorded;
pub(crate) mod template;
pub(crate) mod walk;

pub use entries::{
    MAX_MATRIX_ENTRIES, MAX_MATRIX_VALUE_BYTES, MatrixSpec, MatrixValues, Scalar as MatrixScalar,
    WrittenEntry,
};
pub use template::env_name as matrix_env_name;

/// Which entries a spec is expanded with.
#[derive(Debug, Clone, Copy)]
pub enum Expansion<'a> {
    /// Those the spec writes (or its `from:` file holds): every task of the spec.
    Written,
    /// The recorded task, from a spec file the user names and so vouches for (`resume`,
    /// `replay --spec`): the spec's own entry of that name, which the recorded one must
    /// equal; the recorded entry only when the spec's `from:` file is gone.
    Vouched(RecordedTask<'a>),
    /// The recorded task, from the spec text the recording holds (`replay`): the
    /// recorded entry; no file is read.
    Recorded(RecordedTask<'a>),
}

/// What a recording's `run_start` says of its task: its name and the matrix entry it
/// was expanded from (None: it holds none).
#[derive(Debug, Clone, Copy)]
pub struct RecordedTask<'a> {
    pub name: &'a str,
    pub entry: Option<&'a MatrixValues>,
}

/// The environment a task's setup steps and checks get its entry's values in: each key
/// as [`matrix_env_name`] names it (what `"${DROVER_MATRIX_KEY}"` in their `run:`
/// expands).
pub fn matrix_env(values: &MatrixValues) -> Vec<(String, String)> {
    values
        .iter()
        .map(|(key, value)| (template::env_name(key), value.clone()))
        .collect()
}

/// The tasks of one spec, each with the values it was expanded with, and every problem
/// found. With problems, the one task is the spec as written: for further checks only.
#[derive(Debug)]
pub(crate) struct Tasks {
    pub tasks: Vec<(TaskSpec, Option<MatrixValues>)>,
    pub errors: Vec<SpecError>,
}

/// The tasks of `spec`, read from `read` (the text it was parsed from) at `path`.
pub(crate) fn tasks(path: &Path, read: &str, spec: TaskSpec, expansion: Expansion) -> Tasks {
    let tree: Node = match from_yaml(path, read) {
        Ok(tree) => tree,
        Err(error) => return as_written(spec, vec![error]),
    };
    let walked = walk::walk(path, &tree, walk::Document::Spec);
    let mut errors = walked.errors;
    let recorded = match expansion {
        Expansion::Written => None,
        Expansion::Vouched(task) | Expansion::Recorded(task) => Some(task),
    };
    let Some(matrix) = &spec.matrix else {
        if recorded.is_some_and(|task| task.entry.is_some()) {
            errors.push(SpecError::Invalid {
                position: Position::at(path, None),
                message: "the recording holds a matrix entry, but this spec has no matrix: it is not the spec the task ran from".to_string(),
            });
        }
        errors.extend(walked.found.iter().map(|found| SpecError::Invalid {
            position: Position::at(path, Some(found.location)),
            message: format!(
                "{}: ${{{{ matrix.{} }}}} but the spec has no matrix:; add matrix: with the values, or write the value itself ($${{{{ matrix.… }}}} writes the characters ${{{{ matrix.… }}}})",
                found.at,
                found.template.keys().join(" }}, ${{ matrix.")
            ),
        }));
        let mut spec = spec;
        expand::fill_fields(&mut spec, &Default::default());
        return Tasks {
            tasks: vec![(spec, None)],
            errors,
        };
    };
    let at_matrix = Position::at(path, Some(matrix.referenced));
    let (entries, from_spec) = match entries_of(path, read, matrix, expansion) {
        Ok(entries) => entries,
        Err(error) => {
            errors.push(error);
            return as_written(spec, errors);
        }
    };
    if !from_spec && matches!(expansion, Expansion::Vouched(_)) && repo_takes_values(&spec) {
        errors.push(recording_chooses_repository(at_matrix));
        return as_written(spec, errors);
    }
    let name_at = Position::at(path, Some(spec.name.referenced));
    errors.extend(expand::reference_problems(
        (path, read),
        name_at,
        &walked.found,
        &entries,
    ));
    if !errors.is_empty() {
        return as_written(spec, errors);
    }
    let tasks = match expand::expand(path, &spec, &entries) {
        Ok(tasks) => tasks,
        Err(found) => return as_written(spec, found),
    };
    let credentials = credentials_in_values(path, &spec, &tasks);
    if !credentials.is_empty() {
        return as_written(spec, credentials);
    }
    let tasks = match recorded {
        None => tasks,
        Some(task) => match recorded::the_recorded(tasks, task, from_spec, &at_matrix) {
            Ok(one) => vec![one],
            Err(error) => return as_written(spec, vec![error]),
        },
    };
    Tasks {
        tasks: tasks
            .into_iter()
            .map(|(task, values)| (task, Some(values)))
            .collect(),
        errors,
    }
}

/// A user name or password a matrix value put into `repo.url`: refused, for the
/// matrix's values are in the spec text every task records and in a file any task's
/// commands may read, where no redaction of one task's own token covers the others'.
fn credentials_in_values(
    path: &Path,
    spec: &TaskSpec,
    tasks: &[(TaskSpec, MatrixValues)],
) -> Vec<SpecError> {
    let Some(written) = spec
        .repo
        .as_ref()
        .filter(|repo| repo.value.url.value.contains("${{"))
    else {
        return Vec::new();
    };
    let with_credentials = tasks.iter().find(|(task, _)| {
        task.repo.as_ref().is_some_and(|repo| {
            crate::RepoUrl::parse(&repo.value.url.value)
                .is_ok_and(|url| url.password.is_some() || url.username.is_some())
        })
    });
    with_credentials
        .map(|(task, _)| SpecError::Invalid {
            position: Position::at(path, Some(written.value.url.referenced)),
            message: format!(
                "repo.url: the matrix puts a user name or password into the URL of task {}; a token in a matrix value would be in every task's recorded spec and readable by every task's commands: give it with credentials: {{ env: NAME }} instead",
                task.name.value.as_str()
            ),
        })
        .into_iter()
        .collect()
}

/// Why a recorded entry may not make a task whose `repo:` takes matrix values.
fn recording_chooses_repository(at_matrix: Position) -> SpecError {
    SpecError::Invalid {
        position: at_matrix,
        message: "the matrix's file is gone and this spec's repo: takes its values: an entry from the recording cannot choose the repository drover fetches with this machine's credentials; put the matrix's file back".to_string(),
    }
}

/// Whether a matrix value reaches `repo:` (its URL, ref or path): then only the spec's
/// own entries may make the task's repository, never a recording's.
fn repo_takes_values(spec: &TaskSpec) -> bool {
    spec.repo.as_ref().is_some_and(|repo| {
        let repo = &repo.value;
        std::iter::once(repo.url.value.as_str())
            .chain(repo.git_ref.as_ref().map(|r| r.value.as_str()))
            .chain(repo.path.as_ref().map(|p| p.value.as_str()))
            .any(|text| text.contains("${{"))
    })
}

/// The entries `spec`'s tasks are made of, as `expansion` says, and whether they are the
/// spec's own (true) or the recording's.
fn entries_of(
    path: &Path,
    read: &str,
    matrix: &Spanned<MatrixSpec>,
    expansion: Expansion,
) -> Result<(Vec<entries::Entry>, bool), SpecError> {
    let at_matrix = Position::at(path, Some(matrix.referenced));
    let task = match expansion {
        Expansion::Written => return Ok((entries::read_entries(path, read, matrix)?, true)),
        Expansion::Vouched(task) | Expansion::Recorded(task) => task,
    };
    let Some(values) = task.entry else {
        return Err(SpecError::Invalid {
            position: at_matrix,
            message: "the spec has matrix:, but the recording names no matrix entry: it cannot tell which task of the matrix it ran; run the task again".to_string(),
        });
    };
    if let Expansion::Vouched(_) = expansion
        && !recorded::from_file_gone(path, matrix)
    {
        return Ok((entries::read_entries(path, read, matrix)?, true));
    }
    recorded::entry(values, at_matrix).map(|entry| (vec![entry], false))
}
/// The spec as written, with its problems.
fn as_written(spec: TaskSpec, errors: Vec<SpecError>) -> Tasks {
    Tasks {
        tasks: vec![(spec, None)],
        errors,
    }
}

#[cfg(test)]
#[path = "matrix_tests.rs"]
mod tests;
