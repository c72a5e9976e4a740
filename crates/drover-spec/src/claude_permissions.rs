//! `permissions_from:` — the `permissions` of Claude Code settings files, read as Claude
//! Code writes them (`.claude/settings.json`), with each rule's line and column so a rule
//! drover refuses is reported where it is written.
//!
//! Plain data: which rules apply, and how, is the policy's to say. A settings file
//! usually lives in the repository under test, so what it may add is narrower than what
//! the spec's own rules may (see the policy's `borrowed` rules and docs/claude-code.md).

use std::collections::BTreeMap;

use serde::de::{self, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_saphyr::Spanned;

use super::referenced::JsonError;

/// `permissions_from:`: one settings file, or several, each with how far it is trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermissionsFrom(pub Vec<SettingsSource>);

/// One settings file `permissions_from:` names.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SettingsSource {
    /// Relative to the spec file.
    pub file: String,
    /// Whether its `allow` rules apply (its `deny` and `ask` rules always do). `false`
    /// takes only what narrows the spec's policy, for a file a pull request may change.
    #[serde(default = "allow_by_default")]
    pub allow: bool,
}

fn allow_by_default() -> bool {
    true
}

impl<'de> Deserialize<'de> for PermissionsFrom {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        /// A file as a bare path, or `{file, allow}`.
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Entry {
            Path(String),
            Source(SettingsSource),
        }
        impl From<Entry> for SettingsSource {
            fn from(entry: Entry) -> Self {
                match entry {
                    Entry::Path(file) => SettingsSource { file, allow: true },
                    Entry::Source(source) => source,
                }
            }
        }
        struct EntriesVisitor;
        impl<'de> Visitor<'de> for EntriesVisitor {
            type Value = PermissionsFrom;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "a settings file (.claude/settings.json), {file: F, allow: false}, or a list of them",
                )
            }
            fn visit_str<E: de::Error>(self, file: &str) -> Result<PermissionsFrom, E> {
                Ok(PermissionsFrom(vec![SettingsSource {
                    file: file.to_string(),
                    allow: true,
                }]))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<PermissionsFrom, A::Error> {
                let source =
                    SettingsSource::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(PermissionsFrom(vec![source]))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<PermissionsFrom, A::Error> {
                let mut sources = Vec::new();
                while let Some(entry) = seq.next_element::<Entry>()? {
                    sources.push(entry.into());
                }
                if sources.is_empty() {
                    return Err(de::Error::custom(
                        "permissions_from: name at least one settings file, or leave the key out",
                    ));
                }
                Ok(PermissionsFrom(sources))
            }
        }
        deserializer.deserialize_any(EntriesVisitor)
    }
}

/// The `permissions` of one Claude Code settings file, each rule with its position.
#[derive(Debug, Default)]
pub struct SettingsPermissions {
    pub allow: Vec<Spanned<String>>,
    pub deny: Vec<Spanned<String>>,
    /// Rules Claude Code asks a person about; headless, nobody answers.
    pub ask: Vec<Spanned<String>>,
    pub additional_directories: Vec<Spanned<String>>,
    /// `defaultMode` as written.
    pub default_mode: Option<Spanned<String>>,
    /// Other keys of `permissions` (`disableBypassPermissionsMode`, …), by name.
    pub other_keys: Vec<String>,
    /// Whether the file has a `sandbox` object (Claude Code's own sandbox settings).
    pub has_sandbox: bool,
}

/// The keys of `permissions` drover reads, as Claude Code spells them. `S` is a string:
/// plain to check the shape as JSON, spanned to find where each one is written.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PermissionsKeys<S> {
    #[serde(default = "Vec::new")]
    allow: Vec<S>,
    #[serde(default = "Vec::new")]
    deny: Vec<S>,
    #[serde(default = "Vec::new")]
    ask: Vec<S>,
    #[serde(default = "Vec::new")]
    additional_directories: Vec<S>,
    #[serde(default = "Option::default")]
    default_mode: Option<S>,
    #[serde(flatten)]
    other: BTreeMap<String, IgnoredAny>,
}

/// A settings file: only `permissions` is read here (`hooks` by `hooks_from:`); the
/// `sandbox` key is looked at to say it is not used.
#[derive(Deserialize)]
#[serde(bound = "S: Deserialize<'de>")]
struct Settings<S> {
    #[serde(default = "Option::default")]
    permissions: Option<PermissionsKeys<S>>,
    #[serde(default)]
    sandbox: Option<IgnoredAny>,
    #[serde(flatten)]
    _other: BTreeMap<String, IgnoredAny>,
}

/// The `permissions` of the settings file whose text is `text`; a file that is not JSON,
/// or whose `permissions` are not Claude Code's shape, is an error at its line and column.
pub fn permissions_of_claude_settings(text: &str) -> Result<SettingsPermissions, JsonError> {
    // JSON decides what is valid (YAML, which reads the positions, accepts more: it
    // would take a number where a rule should be).
    serde_json::from_str::<Settings<String>>(text)?;
    let settings: Settings<Spanned<String>> = serde_saphyr::from_str(text).map_err(saphyr_error)?;
    let has_sandbox = settings.sandbox.is_some();
    let Some(keys) = settings.permissions else {
        return Ok(SettingsPermissions {
            has_sandbox,
            ..SettingsPermissions::default()
        });
    };
    Ok(SettingsPermissions {
        allow: keys.allow,
        deny: keys.deny,
        ask: keys.ask,
        additional_directories: keys.additional_directories,
        default_mode: keys.default_mode,
        other_keys: keys.other.into_keys().collect(),
        has_sandbox,
    })
}

/// A shape error found while reading the positions: valid JSON, but not a settings file.
fn saphyr_error(error: serde_saphyr::Error) -> JsonError {
    let (line, column) = error
        .location()
        .map(|location| (location.line() as usize, location.column() as usize))
        .unwrap_or((1, 1));
    JsonError {
        line,
        column,
        message: super::load::plain_message(&error),
    }
}

#[cfg(test)]
#[path = "claude_permissions_tests.rs"]
mod tests;
