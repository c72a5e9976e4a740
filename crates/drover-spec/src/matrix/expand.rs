//! One spec and its matrix entries made into one task per entry: every reference
//! checked against every entry first (so each problem is said once, not once per
//! entry), then each entry's values put in its references' places, and the task names
//! checked: each valid, all different even ignoring case (each names a folder, and two
//! names that differ only in case are one folder where case is not told apart).

use std::collections::HashMap;
use std::path::Path;

use serde_saphyr::Spanned;

use super::entries::{Entry, MatrixValues};
use super::fields::{PATH_FIELDS, insert_into, string_fields};
use super::template::{Insert, ShellPlacement, Template};
use super::walk::Found;
use crate::load::error::{Position, SpecError};
use crate::types::TaskSpec;
use crate::values::{InvalidValue, TaskName};

/// Whether the references of `found` can be filled from every entry: each key in each
/// entry, a shell command's references outside quotes, a path field's values relative
/// paths within, and the name made of values. Every problem, each once. `source` is the
/// text the spec was parsed from (to find a reference's own line and column).
pub(crate) fn reference_problems(
    (path, source): (&Path, &str),
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
            && let Err(placed) = found.template.check_shell()
        {
            errors.push(SpecError::Invalid {
                position: reference_at(path, source, found.location, &placed)
                    .unwrap_or_else(|| position.clone()),
                message: format!("{}: {placed}", found.at),
            });
        }
        for key in found.template.keys() {
            errors.extend(lacking(found, key, entries, &position));
            if PATH_FIELDS.contains(&found.field) {
                errors.extend(path_problems(found, key, entries, &position));
            }
        }
    }
    errors
}

/// An error when an entry lacks `key`, which `found` references: naming the first such
/// entry and how many others.
fn lacking(found: &Found, key: &str, entries: &[Entry], position: &Position) -> Option<SpecError> {
    let lacking: Vec<&Entry> = entries
        .iter()
        .filter(|entry| !entry.values.contains_key(key))
        .collect();
    let first = lacking.first()?;
    let others = match lacking.len() - 1 {
        0 => String::new(),
        1 => " (and 1 other entry)".to_string(),
        n => format!(" (and {n} other entries)"),
    };
    Some(SpecError::Invalid {
        position: position.clone(),
        message: format!(
            "{}: ${{{{ matrix.{key} }}}}: {} has no key `{key}`{others}; it has {}: give every entry a {key}, or use a key they have",
            found.at,
            first.label,
            first.keys()
        ),
    })
}

/// An error for each entry whose value of `key` would make the path field `found` point
/// elsewhere than a relative path within: absolute, or with a `..` component. The spec
/// writes where its tasks may go; a value (from a generated file, a recording) only
/// names a place beneath that.
fn path_problems(
    found: &Found,
    key: &str,
    entries: &[Entry],
    position: &Position,
) -> Vec<SpecError> {
    entries
        .iter()
        .filter_map(|entry| {
            let value = entry.values.get(key)?;
            let bad = Path::new(value).is_absolute()
                || Path::new(value)
                    .components()
                    .any(|part| part == std::path::Component::ParentDir);
            bad.then(|| SpecError::Invalid {
                position: position.clone(),
                message: format!(
                    "{}: {} makes ${{{{ matrix.{key} }}}} {value:?}: a value in a path must be a relative path without `..`; write the path beneath the spec's directory, or put the part that leaves it in the spec itself",
                    found.at, entry.label
                ),
            })
        })
        .collect()
}

/// Where the reference `placed` is about is written: the `nth` reference to its key from
/// the start of the scalar at `scalar` in `source`. None when the parser gave no offset
/// or the text is not found as written (a reference broken over a folded line).
fn reference_at(
    path: &Path,
    source: &str,
    scalar: serde_saphyr::Location,
    placed: &ShellPlacement,
) -> Option<Position> {
    let start = usize::try_from(scalar.span().byte_offset()?).ok()?;
    let mut at = start;
    let mut seen = 0;
    loop {
        let open = at + source.get(at..)?.find("${{")?;
        let close = open + source.get(open..)?.find("}}")?;
        at = close;
        let Ok(parsed) = Template::parse(source.get(open..close + 2)?) else {
            continue;
        };
        if parsed.keys() != [placed.key.as_str()] || source[..open].ends_with('$') {
            continue;
        }
        if seen == placed.nth {
            let before = &source[..open];
            let line = before.matches('\n').count() + 1;
            let line_start = before.rfind('\n').map_or(0, |i| i + 1);
            let column = source[line_start..open].chars().count() + 1;
            return Some(Position {
                path: path.to_path_buf(),
                line: line as u64,
                column: column as u64,
            });
        }
        seen += 1;
    }
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
    // By the name in lower case: two names that differ only in case are one folder on
    // a file system that does not tell case apart (macOS's, Windows').
    let mut named: HashMap<String, (&Entry, String)> = HashMap::new();
    for entry in entries {
        match task_of(spec, entry) {
            Ok(task) => {
                let name = task.name.value.to_string();
                if let Some((first, first_name)) = named.get(&name.to_lowercase()) {
                    let message = if *first_name == name {
                        format!(
                            "{} and {} both make the task name {name:?}: task names must be unique; put a value that tells them apart into name:",
                            first.label, entry.label
                        )
                    } else {
                        format!(
                            "{} makes the task name {first_name:?} and {} makes {name:?}: names that differ only in case are one folder where case is not told apart; make the values differ in more than case",
                            first.label, entry.label
                        )
                    };
                    errors.push(SpecError::Invalid {
                        position: name_at.clone(),
                        message,
                    });
                    continue;
                }
                named.insert(name.to_lowercase(), (entry, name));
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
