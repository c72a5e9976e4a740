//! One spec and its matrix entries made into one task per entry: every reference
//! checked against every entry first (so each problem is said once, not once per
//! entry), then each entry's values put in its references' places, and the task names
//! checked: each valid, all different.

use std::collections::HashMap;
use std::path::Path;

use serde_saphyr::Spanned;

use super::entries::{Entry, MatrixValues};
use super::fields::{insert_into, string_fields};
use super::template::{Insert, Template};
use super::walk::Found;
use crate::load::error::{Position, SpecError};
use crate::types::TaskSpec;
use crate::values::{InvalidValue, TaskName};

/// Whether the references of `found` can be filled from every entry: each key in each
/// entry, a shell command's references outside quotes, and the name made of values.
/// Every problem, each once.
pub(crate) fn reference_problems(
    path: &Path,
    name_at: Position,
    found: &[Found],
    entries: &[Entry],
) -> Vec<SpecError> {
    let mut errors = Vec::new();
    if !found.iter().any(|found| found.field == "name") {
        errors.push(SpecError::Invalid {
            position: name_at,
            message: "every task of a matrix needs a name of its own: put a matrix value in it, such as name: bump-${{ matrix.service }}".to_string(),
        });
    }
    for found in found {
        let position = Position::at(path, Some(found.location));
        if insert_into(found.field) == Insert::Shell
            && let Err(error) = found.template.check_shell()
        {
            errors.push(SpecError::Invalid {
                position: position.clone(),
                message: format!("{}: {error}", found.at),
            });
        }
        for key in found.template.keys() {
            let lacking: Vec<&Entry> = entries
                .iter()
                .filter(|entry| !entry.values.contains_key(key))
                .collect();
            let Some(first) = lacking.first() else {
                continue;
            };
            let others = match lacking.len() - 1 {
                0 => String::new(),
                1 => " (and 1 other entry)".to_string(),
                n => format!(" (and {n} other entries)"),
            };
            errors.push(SpecError::Invalid {
                position: position.clone(),
                message: format!(
                    "{}: ${{{{ matrix.{key} }}}}: {} has no key `{key}`{others}; it has {}: give every entry a {key}, or use a key they have",
                    found.at,
                    first.label,
                    first.keys()
                ),
            });
        }
    }
    errors
}

/// The task of `spec` for each entry, its values substituted; the references were
/// checked (see [`reference_problems`]). Errors: a name that is no valid task name, two
/// entries that make the same name.
pub(crate) fn expand(
    path: &Path,
    spec: &TaskSpec,
    entries: &[Entry],
) -> Result<Vec<(TaskSpec, MatrixValues)>, Vec<SpecError>> {
    let name_at = Position::at(path, Some(spec.name.referenced));
    let mut tasks = Vec::new();
    let mut errors = Vec::new();
    let mut named: HashMap<String, &Entry> = HashMap::new();
    for entry in entries {
        match task_of(spec, entry) {
            Ok(task) => {
                let name = task.name.value.to_string();
                if let Some(first) = named.get(&name) {
                    errors.push(SpecError::Invalid {
                        position: name_at.clone(),
                        message: format!(
                            "{} and {} both make the task name {name:?}: task names must be unique; put a value that tells them apart into name:",
                            first.label, entry.label
                        ),
                    });
                    continue;
                }
                named.insert(name, entry);
                tasks.push((task, entry.values.clone()));
            }
            Err(bad) => errors.push(SpecError::Invalid {
                position: name_at.clone(),
                message: bad.to_string(),
            }),
        }
    }
    if errors.is_empty() {
        Ok(tasks)
    } else {
        Err(errors)
    }
}

/// A task name an entry's values make that is no valid task name.
#[derive(Debug, thiserror::Error)]
#[error("name: {entry} makes the task name invalid: {error}")]
struct BadName {
    entry: String,
    error: InvalidValue,
}

/// `spec` with `entry`'s values in its references' places; an error when the name it
/// makes is no valid task name.
fn task_of(spec: &TaskSpec, entry: &Entry) -> Result<TaskSpec, BadName> {
    let mut task = spec.clone();
    let name = fill(spec.name.value.as_str(), &entry.values, Insert::AsIs);
    let name = TaskName::try_from(name).map_err(|error| BadName {
        entry: entry.label.clone(),
        error,
    })?;
    task.name = Spanned::new(name, spec.name.referenced, spec.name.defined);
    fill_fields(&mut task, &entry.values);
    Ok(task)
}

/// Every substituted field of `task` but its name filled from `values` (none for a spec
/// without a matrix, whose written-out references `$${{ matrix.KEY }}` become
/// `${{ matrix.KEY }}`).
pub(crate) fn fill_fields<M>(task: &mut TaskSpec<M>, values: &MatrixValues) {
    for field in string_fields(task) {
        *field.value = fill(field.value, values, insert_into(field.field));
    }
}

/// `text` with `values` in its references' places; as written when it does not parse
/// (its error is reported by the walk of the document).
fn fill(text: &str, values: &MatrixValues, insert: Insert) -> String {
    match Template::parse(text) {
        Ok(template) => template.render(values, insert),
        Err(_) => text.to_string(),
    }
}
