//! `matrix:` — one spec expanded into one task per entry. Values go into parsed strings
//! only (never into the YAML text before it is parsed, so no value can add a key or
//! change the spec's shape), and only into the fields `fields` lists; a value in a
//! shell command is quoted as one word. Task names come from the values alone, never
//! from an entry's place in the list, so they stay the same when the list is reordered
//! or grows. A recorded task is expanded again from the entry its `run_start` holds,
//! without reading the matrix's file.

use std::path::Path;

use crate::defaults::tree::Node;
use crate::load::error::{Position, SpecError};
use crate::load::yaml::from_yaml;
use crate::types::TaskSpec;

mod entries;
mod expand;
pub(crate) mod fields;
pub(crate) mod template;
pub(crate) mod walk;

pub use entries::{
    MAX_MATRIX_ENTRIES, MatrixSpec, MatrixValues, Scalar as MatrixScalar, WrittenEntry,
};

/// Which entries a spec is expanded with.
#[derive(Debug, Clone, Copy)]
pub enum Expansion<'a> {
    /// Those the spec writes (or its `from:` file holds): every task of the spec.
    Written,
    /// The one a recording holds (None: it holds none); no file is read.
    Recorded(Option<&'a MatrixValues>),
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
    let Some(matrix) = &spec.matrix else {
        if let Expansion::Recorded(Some(_)) = expansion {
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
                found.template.keys().join(", matrix.")
            ),
        }));
        let mut spec = spec;
        expand::fill_fields(&mut spec, &Default::default());
        return Tasks {
            tasks: vec![(spec, None)],
            errors,
        };
    };
    let entries = match expansion {
        Expansion::Written => entries::read_entries(path, read, matrix),
        Expansion::Recorded(Some(values)) => Ok(vec![entries::Entry::recorded(values)]),
        Expansion::Recorded(None) => Err(SpecError::Invalid {
            position: Position::at(path, Some(matrix.referenced)),
            message: "the spec has matrix:, but the recording names no matrix entry: it cannot tell which task of the matrix it ran; run the task again".to_string(),
        }),
    };
    let entries = match entries {
        Ok(entries) => entries,
        Err(error) => {
            errors.push(error);
            return as_written(spec, errors);
        }
    };
    let name_at = Position::at(path, Some(spec.name.referenced));
    errors.extend(expand::reference_problems(
        path,
        name_at,
        &walked.found,
        &entries,
    ));
    if !errors.is_empty() {
        return as_written(spec, errors);
    }
    match expand::expand(path, &spec, &entries) {
        Ok(tasks) => Tasks {
            tasks: tasks
                .into_iter()
                .map(|(task, values)| (task, Some(values)))
                .collect(),
            errors,
        },
        Err(found) => as_written(spec, found),
    }
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
