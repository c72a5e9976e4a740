//! The small values a spec is written in: a task name, an on/off switch, a duration,
//! and the error of a value that does not convert.

use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize};
use serde_saphyr::Spanned;

use crate::matrix::template::{Insert, Template};

/// The longest task name: it names a directory (255 bytes at most on every common file
/// system), with room for drover's prefixes and suffixes (worktree labels, staging).
pub(crate) const MAX_TASK_NAME: usize = 100;

/// A task name: it names the artifact directory, so it is restricted to `[A-Za-z0-9._-]`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String")]
pub struct TaskName(String);

impl TaskName {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for TaskName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl TaskName {
    /// A spec's `name:`, which may reference matrix values: checked as a name with each
    /// reference taken for one letter (the name of each expanded task is checked again).
    fn template(value: String) -> Result<TaskName, InvalidValue> {
        let template = Template::parse(&value).map_err(|error| InvalidValue(error.0))?;
        if template.is_plain() {
            return TaskName::try_from(value);
        }
        let keys: std::collections::BTreeMap<String, String> = template
            .keys()
            .into_iter()
            .map(|key| (key.to_string(), "x".to_string()))
            .collect();
        TaskName::try_from(template.render(&keys, Insert::AsIs))?;
        Ok(TaskName(value))
    }
}

/// A spec's `name:`, where it was written: a task name, or a template of them.
pub(crate) fn task_name_template<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Spanned<TaskName>, D::Error> {
    let name = Spanned::<NameTemplate>::deserialize(deserializer)?;
    Ok(Spanned::new(name.value.0, name.referenced, name.defined))
}

/// A task name that may reference matrix values.
#[derive(Deserialize)]
#[serde(try_from = "String")]
struct NameTemplate(TaskName);

impl TryFrom<String> for NameTemplate {
    type Error = InvalidValue;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        TaskName::template(value).map(NameTemplate)
    }
}

impl TryFrom<String> for TaskName {
    type Error = InvalidValue;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        let valid_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
        if value.is_empty() {
            Err(InvalidValue(
                "the task name is empty; use letters, digits, '.', '_' and '-'".into(),
            ))
        } else if !value.chars().all(valid_char) {
            Err(InvalidValue(format!(
                "invalid task name {value:?}: use only letters, digits, '.', '_' and '-' (it names the artifact directory)"
            )))
        } else if value.len() > MAX_TASK_NAME {
            Err(InvalidValue(format!(
                "the task name has {} characters, more than {MAX_TASK_NAME} (it names the artifact directory and the worktree)",
                value.len()
            )))
        } else if value == "." || value == ".." {
            Err(InvalidValue(format!(
                "invalid task name {value:?}: it cannot name a directory"
            )))
        } else {
            Ok(TaskName(value))
        }
    }
}

/// An explicit on/off setting.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Switch {
    #[default]
    On,
    Off,
}

/// A spec value that does not convert (a bad duration, name, glob or price); the YAML
/// parser adds the file, line and column, and the text says what to write instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidValue(pub String);

/// A duration written the human way: `90s`, `20m`, `1h 30m`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct SpecDuration(pub Duration);

impl TryFrom<String> for SpecDuration {
    type Error = InvalidValue;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        match humantime::parse_duration(value.trim()) {
            Ok(duration) if !duration.is_zero() => Ok(SpecDuration(duration)),
            Ok(_) => Err(InvalidValue(format!(
                "duration {value:?} is zero; give a positive duration such as 90s or 20m"
            ))),
            Err(error) => Err(InvalidValue(format!(
                "invalid duration {value:?} ({error}); write e.g. 90s, 20m or 1h 30m"
            ))),
        }
    }
}
