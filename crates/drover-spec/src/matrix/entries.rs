//! `matrix:` as written and its entries as read: a list of maps of scalars inline, or
//! `{ from: FILE }`, a YAML or JSON file of such a list beside the spec, read with the
//! rules of a spec file (a regular file, its size capped, the same YAML budgets, its
//! errors at its own line and column). Every value can go into a command's environment
//! (no NUL, at most [`MAX_MATRIX_VALUE_BYTES`]) and is the text written (no YAML 1.1
//! word that a reader could take for a boolean or null); no two keys name the same
//! variable. A recorded entry is held to the same rules ([`check_recorded`]).

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::Spanned;

use super::template::{env_name, valid_key};
use crate::defaults::tree::written;
use crate::load::error::{Position, SpecError};
use crate::load::read::spec_text;
use crate::load::yaml::from_yaml;

/// The values of one entry as they are substituted (a number as written, a bool as
/// `true`/`false`), by key: what `run_start` records and `drover plan --json` lists.
pub type MatrixValues = BTreeMap<String, String>;

/// The most entries a matrix may have: each is a task, and a run of more is a mistake
/// (a generated file gone wrong) rather than a fleet.
pub const MAX_MATRIX_ENTRIES: usize = 10_000;

/// The longest value a matrix entry may hold, in bytes: each value is put in the
/// environment of the task's setup steps and checks, and the kernel refuses a command
/// whose environment strings are too long (one may not pass 128 KiB, and all together
/// share one limit with the arguments); a value this long is a mistake, not a setting.
pub const MAX_MATRIX_VALUE_BYTES: usize = 32 * 1024;

/// Plain YAML words that YAML 1.1 readers take for a boolean or null. The parser reads
/// most of them as booleans itself (`y`, `NO`, `off`, `True`, any case: a value would be
/// `true` or `false` where the file wrote something else, see `entry_of`); any it reads
/// as text is refused as well, so a value never depends on which YAML its reader speaks.
/// Quoted, each is text.
const YAML11_WORDS: &[&str] = &[
    "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "true", "True", "TRUE", "false",
    "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF", "~", "null", "Null", "NULL",
];

/// A key or value that cannot be a matrix entry's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct Refused(pub String);

/// Whether `value` can be given to a command in its environment.
pub(crate) fn check_value(key: &str, value: &str) -> Result<(), Refused> {
    if value.contains('\0') {
        return Err(Refused(format!(
            "matrix value of `{key}` holds a NUL character, which no environment variable can: remove it"
        )));
    }
    if value.len() > MAX_MATRIX_VALUE_BYTES {
        return Err(Refused(format!(
            "matrix value of `{key}` has {} bytes, more than the {MAX_MATRIX_VALUE_BYTES} a value may have: put such data in a file of the workspace and the file's path in the matrix",
            value.len()
        )));
    }
    Ok(())
}

/// Two of `keys` that name the same variable (`a-b` and `a_b`), if any.
fn colliding<'a>(keys: impl IntoIterator<Item = &'a str>) -> Option<(&'a str, &'a str)> {
    let mut named: BTreeMap<String, &str> = BTreeMap::new();
    for key in keys {
        match named.get(&env_name(key)) {
            Some(first) if *first != key => return Some((first, key)),
            _ => {
                named.insert(env_name(key), key);
            }
        }
    }
    None
}

/// What is wrong with `a` and `b` naming one variable.
fn collision(a: &str, b: &str) -> Refused {
    Refused(format!(
        "matrix keys `{a}` and `{b}` both give setup steps and checks the variable {}: rename one",
        env_name(a)
    ))
}

/// Whether an entry a recording holds could have been read from a matrix: its keys and
/// values by the rules of a written entry (the recording is not trusted to keep them).
pub(crate) fn check_recorded(values: &MatrixValues) -> Result<(), Refused> {
    for (key, value) in values {
        if !valid_key(key) {
            return Err(Refused(format!(
                "matrix key {key:?}: use letters, digits, '_' and '-', starting with a letter or '_'"
            )));
        }
        check_value(key, value)?;
    }
    match colliding(values.keys().map(String::as_str)) {
        Some((a, b)) => Err(collision(a, b)),
        None => Ok(()),
    }
}

/// `matrix:` as written in a spec.
#[derive(Debug, Clone)]
pub enum MatrixSpec {
    Entries(Vec<Spanned<WrittenEntry>>),
    From(Spanned<String>),
}

/// One entry as written: its keys and values in order.
#[derive(Debug, Clone)]
pub struct WrittenEntry(Vec<(Spanned<String>, Spanned<Scalar>)>);

/// A value of an entry.
#[derive(Debug, Clone, PartialEq)]
pub enum Scalar {
    Text(String),
    /// As the YAML wrote it where the span says (`1.10` stays `1.10`).
    Number(String),
    Bool(bool),
}

/// An entry as read: where it was written, its values.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    /// `matrix[2] (services.yaml:7:3)`, or the recording it came from.
    pub label: String,
    pub values: MatrixValues,
}

impl Entry {
    /// The entry a recording holds: its values are those the recorded run substituted.
    pub(crate) fn recorded(values: &MatrixValues) -> Entry {
        Entry {
            label: "the recorded matrix entry".to_string(),
            values: values.clone(),
        }
    }

    /// Its keys, for an error that says what it has.
    pub(crate) fn keys(&self) -> String {
        let keys: Vec<&str> = self.values.keys().map(String::as_str).collect();
        if keys.is_empty() {
            "no keys".to_string()
        } else {
            keys.join(", ")
        }
    }
}

/// The entries of `matrix` (written in the spec at `spec_path`, whose text `source` is
/// as parsed), read from its file for `from:`; every problem at its line and column (a
/// problem of the file's after the `spec:line:col: matrix.from:` that names it).
pub(crate) fn read_entries(
    spec_path: &Path,
    source: &str,
    matrix: &Spanned<MatrixSpec>,
) -> Result<Vec<Entry>, SpecError> {
    match &matrix.value {
        MatrixSpec::Entries(entries) => {
            let at_matrix = Position::at(spec_path, Some(matrix.referenced));
            entries_read(spec_path, source, entries, at_matrix)
        }
        MatrixSpec::From(file) => {
            let path = from_path(spec_path, file);
            let in_file = |error: SpecError| SpecError::Invalid {
                position: Position::at(spec_path, Some(file.referenced)),
                message: format!("matrix.from: {error}"),
            };
            let text = spec_text(&path).map_err(in_file)?;
            let list: MatrixList = from_yaml(&path, &text).map_err(in_file)?;
            entries_read(&path, &text, &list.0, Position::at(&path, None)).map_err(in_file)
        }
    }
}

/// Where a `from:` file lies: beside the spec.
pub(crate) fn from_path(spec_path: &Path, file: &Spanned<String>) -> std::path::PathBuf {
    spec_path
        .parent()
        .unwrap_or(Path::new(""))
        .join(&file.value)
}

/// The entries `written` in the file at `path` (text `source`); `at_list` is where an
/// empty list is reported.
fn entries_read(
    path: &Path,
    source: &str,
    written: &[Spanned<WrittenEntry>],
    at_list: Position,
) -> Result<Vec<Entry>, SpecError> {
    if written.is_empty() {
        return Err(SpecError::Invalid {
            position: at_list,
            message: "the matrix has no entries: give at least one, such as - { service: billing }, or remove matrix:".to_string(),
        });
    }
    let entries = written
        .iter()
        .enumerate()
        .map(|(index, entry)| entry_of(path, source, index, entry))
        .collect::<Result<Vec<Entry>, SpecError>>()?;
    let keys: Vec<&Spanned<String>> = written
        .iter()
        .flat_map(|entry| entry.value.0.iter().map(|(key, _)| key))
        .collect();
    if let Some((first, second)) = colliding(keys.iter().map(|key| key.value.as_str())) {
        let at = keys
            .iter()
            .find(|key| key.value == second)
            .map(|key| key.referenced);
        return Err(SpecError::Invalid {
            position: Position::at(path, at),
            message: collision(first, second).0,
        });
    }
    Ok(entries)
}

fn entry_of(
    path: &Path,
    source: &str,
    index: usize,
    entry: &Spanned<WrittenEntry>,
) -> Result<Entry, SpecError> {
    let mut values = MatrixValues::new();
    for (key, value) in &entry.value.0 {
        let refused = |message: String| SpecError::Invalid {
            position: Position::at(path, Some(value.referenced)),
            message,
        };
        let raw = written(source, &value.referenced);
        let text = match &value.value {
            Scalar::Text(text) => {
                if let Some(word) = raw.filter(|raw| YAML11_WORDS.contains(raw)) {
                    return Err(refused(yaml11_word(&key.value, word)));
                }
                text.clone()
            }
            Scalar::Bool(flag) => {
                if let Some(word) = raw.filter(|raw| !matches!(*raw, "true" | "false")) {
                    return Err(refused(yaml11_word(&key.value, word)));
                }
                flag.to_string()
            }
            Scalar::Number(number) => raw.map_or_else(|| number.clone(), str::to_string),
        };
        check_value(&key.value, &text).map_err(|error| refused(error.0))?;
        values.insert(key.value.clone(), text);
    }
    Ok(Entry {
        label: format!(
            "matrix[{index}] ({})",
            Position::at(path, Some(entry.referenced))
        ),
        values,
    })
}

/// Why the plain word `word` is refused as the value of `key`.
fn yaml11_word(key: &str, word: &str) -> String {
    format!(
        "matrix value of `{key}` is the plain word {word}, which YAML readers take as a boolean or null, or as text, each their own way: quote it ({key}: \"{word}\"), or write true or false for a boolean"
    )
}

/// A matrix file: a list of entries.
struct MatrixList(Vec<Spanned<WrittenEntry>>);

/// The entries of a list, at most [`MAX_MATRIX_ENTRIES`].
fn entries_of<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<Vec<Spanned<WrittenEntry>>, A::Error> {
    let mut entries = Vec::new();
    while let Some(entry) = seq.next_element::<Spanned<WrittenEntry>>()? {
        if entries.len() == MAX_MATRIX_ENTRIES {
            return Err(de::Error::custom(format!(
                "the matrix has more than {MAX_MATRIX_ENTRIES} entries; split it over several specs"
            )));
        }
        entries.push(entry);
    }
    Ok(entries)
}

impl<'de> Deserialize<'de> for MatrixList {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ListVisitor;
        impl<'de> Visitor<'de> for ListVisitor {
            type Value = MatrixList;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a list of matrix entries, such as - { service: billing, path: services/billing }")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<MatrixList, A::Error> {
                entries_of(seq).map(MatrixList)
            }
        }
        deserializer.deserialize_seq(ListVisitor)
    }
}

impl<'de> Deserialize<'de> for MatrixSpec {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct SpecVisitor;
        impl<'de> Visitor<'de> for SpecVisitor {
            type Value = MatrixSpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a list of entries (- { service: billing }) or { from: FILE }")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<MatrixSpec, A::Error> {
                entries_of(seq).map(MatrixSpec::Entries)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<MatrixSpec, A::Error> {
                let mut from = None;
                while let Some(key) = map.next_key::<String>()? {
                    if key != "from" || from.is_some() {
                        return Err(de::Error::custom(format!(
                            "matrix: unknown key `{key}`: write a list of entries, or {{ from: FILE }} for a file of them"
                        )));
                    }
                    from = Some(map.next_value::<Spanned<String>>()?);
                }
                from.map(MatrixSpec::From).ok_or_else(|| {
                    de::Error::custom(
                        "matrix: write a list of entries, or { from: FILE } for a file of them",
                    )
                })
            }
        }
        deserializer.deserialize_any(SpecVisitor)
    }
}

impl<'de> Deserialize<'de> for WrittenEntry {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct EntryVisitor;
        impl<'de> Visitor<'de> for EntryVisitor {
            type Value = WrittenEntry;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(
                    "a matrix entry: a map of keys to values, such as { service: billing, path: services/billing }",
                )
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<WrittenEntry, A::Error> {
                let mut values = Vec::new();
                while let Some(key) = map.next_key::<Spanned<String>>()? {
                    if !valid_key(&key.value) {
                        return Err(de::Error::custom(format!(
                            "matrix key {:?}: use letters, digits, '_' and '-', starting with a letter or '_'",
                            key.value
                        )));
                    }
                    values.push((key, map.next_value::<Spanned<Scalar>>()?));
                }
                Ok(WrittenEntry(values))
            }
        }
        deserializer.deserialize_any(EntryVisitor)
    }
}

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ScalarVisitor)
    }
}

struct ScalarVisitor;

impl<'de> Visitor<'de> for ScalarVisitor {
    type Value = Scalar;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(
            "a matrix value: a string, a number or true/false (write nested data as a string)",
        )
    }
    fn visit_str<E: de::Error>(self, value: &str) -> Result<Scalar, E> {
        Ok(Scalar::Text(value.to_string()))
    }
    fn visit_bool<E: de::Error>(self, value: bool) -> Result<Scalar, E> {
        Ok(Scalar::Bool(value))
    }
    fn visit_i64<E: de::Error>(self, value: i64) -> Result<Scalar, E> {
        Ok(Scalar::Number(value.to_string()))
    }
    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Scalar, E> {
        Ok(Scalar::Number(value.to_string()))
    }
    fn visit_i128<E: de::Error>(self, value: i128) -> Result<Scalar, E> {
        Ok(Scalar::Number(value.to_string()))
    }
    fn visit_u128<E: de::Error>(self, value: u128) -> Result<Scalar, E> {
        Ok(Scalar::Number(value.to_string()))
    }
    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Scalar, E> {
        Ok(Scalar::Number(value.to_string()))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Scalar, E> {
        Err(E::custom(
            "a matrix value is empty (null): write a string, a number or true/false; quote it for text ('' for an empty string, '~' or 'null' for those characters)",
        ))
    }
    fn visit_none<E: de::Error>(self) -> Result<Scalar, E> {
        self.visit_unit()
    }
}
