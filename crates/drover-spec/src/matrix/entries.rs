//! `matrix:` as written and its entries as read: a list of maps of scalars inline, or
//! `{ from: FILE }`, a YAML or JSON file of such a list beside the spec, read with the
//! rules of a spec file (a regular file, its size capped, the same YAML budgets, its
//! errors at its own line and column).

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::Spanned;

use super::template::valid_key;
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
/// as parsed), read from its file for `from:`; every problem at its line and column.
pub(crate) fn read_entries(
    spec_path: &Path,
    source: &str,
    matrix: &Spanned<MatrixSpec>,
) -> Result<Vec<Entry>, SpecError> {
    let at_matrix = Position::at(spec_path, Some(matrix.referenced));
    let (path, text, written) = match &matrix.value {
        MatrixSpec::Entries(entries) => (spec_path.to_path_buf(), None, entries.clone()),
        MatrixSpec::From(file) => {
            let path = spec_path
                .parent()
                .unwrap_or(Path::new(""))
                .join(&file.value);
            let text = spec_text(&path).map_err(|error| SpecError::Invalid {
                position: Position::at(spec_path, Some(file.referenced)),
                message: format!("matrix.from: {error}"),
            })?;
            let list: MatrixList = from_yaml(&path, &text)?;
            (path, Some(text), list.0)
        }
    };
    let source = text.as_deref().unwrap_or(source);
    if written.is_empty() {
        let position = match &matrix.value {
            MatrixSpec::Entries(_) => at_matrix,
            MatrixSpec::From(_) => Position::at(&path, None),
        };
        return Err(SpecError::Invalid {
            position,
            message: "the matrix has no entries: give at least one, such as - { service: billing }, or remove matrix:".to_string(),
        });
    }
    Ok(written
        .iter()
        .enumerate()
        .map(|(index, entry)| entry_of(&path, source, index, entry))
        .collect())
}

fn entry_of(path: &Path, source: &str, index: usize, entry: &Spanned<WrittenEntry>) -> Entry {
    let values = entry
        .value
        .0
        .iter()
        .map(|(key, value)| {
            let text = match &value.value {
                Scalar::Text(text) => text.clone(),
                Scalar::Bool(flag) => flag.to_string(),
                Scalar::Number(number) => written(source, &value.referenced)
                    .map_or_else(|| number.clone(), str::to_string),
            };
            (key.value.clone(), text)
        })
        .collect();
    Entry {
        label: format!(
            "matrix[{index}] ({})",
            Position::at(path, Some(entry.referenced))
        ),
        values,
    }
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
            "a matrix value is empty (null): write a string, a number or true/false ('' for an empty string)",
        ))
    }
    fn visit_none<E: de::Error>(self) -> Result<Scalar, E> {
        self.visit_unit()
    }
}
