//! YAML as drover reads it: serde-saphyr with budgets (so a YAML bomb is refused in
//! milliseconds), and its errors in drover's words at `file:line:column`. Specs and
//! the defaults file of their directory are read alike.

use std::path::Path;

use serde::de::DeserializeOwned;
use serde_saphyr::budget::BudgetBreach;
use serde_saphyr::{Budget, Error as YamlError, Options};

use super::error::{Position, SpecError};
use super::unknown_keys;

const MAX_ALIASES: usize = 1_000;
const MAX_ANCHORS: usize = 1_000;
const MAX_NODES: usize = 100_000;
const MAX_EVENTS: usize = 200_000;
const MAX_DEPTH: usize = 64;
const MAX_SCALAR_BYTES: usize = 16 * 1024 * 1024;

/// Budgets for task specs: generous for real specs, tight enough that a YAML bomb is
/// refused in milliseconds instead of expanding into gigabytes.
pub(crate) fn options() -> Options {
    let mut budget = Budget::default();
    budget.max_aliases = MAX_ALIASES;
    budget.max_anchors = MAX_ANCHORS;
    budget.max_nodes = MAX_NODES;
    budget.max_events = MAX_EVENTS;
    budget.max_depth = MAX_DEPTH;
    budget.max_documents = 1;
    budget.max_total_scalar_bytes = MAX_SCALAR_BYTES;
    let mut options = Options::default();
    options.budget = Some(budget);
    options
}

/// `text`, which came from `path`, as a `T`; an error names `path`, its line and column.
pub(crate) fn from_yaml<T: DeserializeOwned>(path: &Path, text: &str) -> Result<T, SpecError> {
    serde_saphyr::from_str_with_options(text, options())
        .map_err(|error| yaml_error(path, text, &error))
}

/// `text`, which came from `path`, as a `T`, with every problem the parser finds: a
/// syntax or type error is the parser's last word on a file (it cannot go on past one),
/// but every unknown key is named (see `unknown_keys`), and the `T` that remains without
/// them is returned with the text it was read from (every other line and column as in
/// `text`).
pub(crate) fn from_yaml_every<T: DeserializeOwned>(
    path: &Path,
    text: &str,
) -> (Option<(T, String)>, Vec<SpecError>) {
    let mut errors = Vec::new();
    let mut current = text.to_string();
    loop {
        match serde_saphyr::from_str_with_options::<T>(&current, options()) {
            Ok(value) => return (Some((value, current)), errors),
            Err(error) => {
                errors.push(yaml_error(path, &current, &error));
                let next = unknown_keys::unknown_key(&error)
                    .filter(|_| errors.len() < unknown_keys::MAX_ERRORS)
                    .and_then(|(field, line, column)| {
                        unknown_keys::without_entry(&current, field, line, column)
                    });
                match next {
                    Some(next) => current = next,
                    None => return (None, errors),
                }
            }
        }
    }
}

/// A parser error at its `file:line:column`, in drover's words where the parser's name
/// library internals, and naming the key a value error is about.
fn yaml_error(path: &Path, text: &str, error: &YamlError) -> SpecError {
    let position = Position::at(path, error.location());
    // Budget and duplicate-key messages say what is wrong in their own words.
    let message = own_message(error)
        .or_else(|| star_message(error, text, &position))
        .unwrap_or_else(|| {
            let message = plain_message(error);
            match key_before(text, &position) {
                Some(key) if !message.contains(&key) => format!("{key}: {message}"),
                _ => message,
            }
        });
    SpecError::Invalid { position, message }
}

/// The error an alias or snippet wrapper holds.
fn innermost(mut error: &YamlError) -> &YamlError {
    while let YamlError::AliasError { error: inner, .. }
    | YamlError::WithSnippet { error: inner, .. } = error
    {
        error = inner;
    }
    error
}

/// An unknown alias where a value starts with `*`: YAML reads an unquoted `*.example.org`
/// (a host pattern of `sandbox.network`) as an alias, so say to quote it.
fn star_message(error: &YamlError, text: &str, position: &Position) -> Option<String> {
    let error = innermost(error);
    if !matches!(error, YamlError::UnknownAnchor { .. }) {
        return None;
    }
    let line = text
        .lines()
        .nth(usize::try_from(position.line).ok()?.checked_sub(1)?)?;
    let column = usize::try_from(position.column).ok()?.saturating_sub(1);
    let written: String = line
        .chars()
        .skip(column)
        .take_while(|c| !c.is_whitespace() && !matches!(c, ',' | ']' | '}'))
        .collect();
    written.starts_with('*').then(|| {
        format!(
            "{written} is read as a YAML alias (`*name` repeats the value marked `&name`); to write a value that starts with `*`, quote it: \"{written}\""
        )
    })
}

/// drover's wording for parser errors whose own message names library internals (a
/// budget breach's Rust variant, the parser option that would allow duplicate keys).
fn own_message(error: &YamlError) -> Option<String> {
    let error = innermost(error);
    match error {
        YamlError::Budget { breach, .. } => Some(budget_message(breach)),
        YamlError::DuplicateMappingKey { key: Some(key), .. } => {
            Some(format!("key `{key}` appears twice in the same mapping"))
        }
        YamlError::DuplicateMappingKey { key: None, .. } => {
            Some("a key appears twice in the same mapping".to_string())
        }
        _ => None,
    }
}

fn budget_message(breach: &BudgetBreach) -> String {
    const WHY: &str = "drover caps specs so a YAML bomb cannot hang it";
    match breach {
        BudgetBreach::Nodes { .. } => {
            format!("the YAML expands to more than {MAX_NODES} nodes (aliases?); {WHY}")
        }
        BudgetBreach::Events { .. } => {
            format!("the YAML expands to more than {MAX_EVENTS} parser events (aliases?); {WHY}")
        }
        BudgetBreach::Aliases { .. } => {
            format!("the YAML uses more than {MAX_ALIASES} aliases (*name); {WHY}")
        }
        BudgetBreach::Anchors { .. } => {
            format!("the YAML defines more than {MAX_ANCHORS} anchors (&name); {WHY}")
        }
        BudgetBreach::Depth { .. } => {
            format!("the YAML nests deeper than {MAX_DEPTH} levels; {WHY}")
        }
        BudgetBreach::Documents { .. } => {
            "the file holds more than one YAML document (`---`); a spec is one document".to_string()
        }
        BudgetBreach::ScalarBytes { .. } => format!(
            "the YAML's strings add up to more than {} MiB; {WHY}",
            MAX_SCALAR_BYTES / (1024 * 1024)
        ),
        _ => format!("the YAML is too large or uses too many aliases; {WHY}"),
    }
}

/// The parser's message without its own location prefix or source snippet (we print the
/// position ourselves, in the `file:line:column` form editors understand).
pub(crate) fn plain_message(error: &serde_saphyr::Error) -> String {
    let rendered = error.without_snippet().to_string();
    let first = rendered.lines().next().unwrap_or_default().trim();
    // Drop a trailing " at line X column Y" the parser may add.
    match first.rfind(" at line ") {
        Some(index) => first[..index].to_string(),
        None => first.to_string(),
    }
}

/// The mapping key written just before `position` on its line (`max_turns: five` → the
/// error at `five` is about `max_turns`), so value errors name their key.
fn key_before(text: &str, position: &Position) -> Option<String> {
    let line = text
        .lines()
        .nth(usize::try_from(position.line).ok()?.checked_sub(1)?)?;
    let column = usize::try_from(position.column).ok()?.saturating_sub(1);
    let before: String = line.chars().take(column).collect();
    let before = before.trim_end().strip_suffix(':')?;
    let key: String = before
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    (!key.is_empty()).then_some(key)
}
