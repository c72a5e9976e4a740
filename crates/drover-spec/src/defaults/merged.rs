//! The merge of a spec with its directory's defaults, key by key, each key remembering
//! the file it comes from. This tree is the one statement of the merge rules: the typed
//! spec takes each setting from the file the tree names (`defaults::apply`), and
//! `drover validate --show-merged` prints it.
//!
//! The rules (docs/defaults.md): a key only one file writes is that file's; when both
//! write it, two mappings merge key by key, at every depth, and anything else (a value,
//! a list, `on`/`off`, a mapping against a value) is the spec's. Two exceptions:
//! `model:` is taken whole (a spec's provider must never meet a default's `base_url`),
//! and `permissions.deny` (and `sandbox.network.deny`) is both lists, the defaults' first
//! (a default deny is a floor no spec drops by writing a deny list of its own).

use serde_saphyr::Location;

use super::tree::{Entry, Node};

/// The keys the defaults file's values come under; its `version:` is its own.
const NOT_MERGED: &[&str] = &["version"];

/// Keys whose value is taken whole from the spec when it has one.
const WHOLE: &[&[&str]] = &[&["model"]];

/// Lists that are the union of both files' (the defaults' items first).
const UNION: &[&[&str]] = &[&["permissions", "deny"], &["sandbox", "network", "deny"]];

/// Which file a value was written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    Spec,
    Defaults,
}

/// A value of the merged spec: where it was written (its key's position, or the item's)
/// and in which file.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Merged {
    pub source: Source,
    pub at: Location,
    pub value: MergedValue,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum MergedValue {
    Map(Vec<(String, Merged)>),
    Seq(Vec<Merged>),
    Scalar(String),
}

impl Merged {
    /// The file the setting at `path` comes from: the file of the deepest value on the
    /// way that is not a mapping both files wrote; None when neither writes it.
    pub(crate) fn origin(&self, path: &[&str]) -> Option<Source> {
        let mut node = self;
        for key in path {
            match &node.value {
                MergedValue::Map(entries) => {
                    node = entries
                        .iter()
                        .find(|(name, _)| name == key)
                        .map(|(_, value)| value)?;
                }
                MergedValue::Seq(_) | MergedValue::Scalar(_) => return Some(node.source),
            }
        }
        Some(node.source)
    }
}

/// The spec's document (`spec`) merged with the defaults file's (`defaults`).
pub(crate) fn merge(spec: &Node, defaults: Option<&Node>) -> Merged {
    let root = Location::UNKNOWN;
    match defaults {
        Some(defaults) => {
            let defaults = without_own_keys(defaults);
            both(&[], (root, spec), (root, &defaults))
        }
        None => from(Source::Spec, root, spec),
    }
}

/// The defaults document without the keys that are its own (`version`).
fn without_own_keys(defaults: &Node) -> Node {
    match defaults {
        Node::Map(entries) => Node::Map(
            entries
                .iter()
                .filter(|entry| !NOT_MERGED.contains(&entry.key.value.as_str()))
                .cloned()
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The value at `path` that both files write: `spec` at its position, `defaults` at its.
fn both(path: &[&str], spec: (Location, &Node), defaults: (Location, &Node)) -> Merged {
    let (at, own) = spec;
    if WHOLE.contains(&path) {
        return from(Source::Spec, at, own);
    }
    match (own, defaults.1) {
        (Node::Seq(own_items), Node::Seq(default_items)) if UNION.contains(&path) => {
            let items = default_items
                .iter()
                .map(|item| from(Source::Defaults, item.referenced, &item.value))
                .chain(
                    own_items
                        .iter()
                        .map(|item| from(Source::Spec, item.referenced, &item.value)),
                )
                .collect();
            Merged {
                source: Source::Spec,
                at,
                value: MergedValue::Seq(items),
            }
        }
        (Node::Map(own_entries), Node::Map(default_entries)) => Merged {
            source: Source::Spec,
            at,
            value: MergedValue::Map(entries(path, own_entries, default_entries)),
        },
        _ => from(Source::Spec, at, own),
    }
}

/// The keys of two mappings both files write at `path`: the spec's in its order, then
/// those only the defaults have, in theirs.
fn entries(path: &[&str], own: &[Entry], defaults: &[Entry]) -> Vec<(String, Merged)> {
    let mut merged = Vec::new();
    for entry in own {
        let key = entry.key.value.as_str();
        let value = match defaults.iter().find(|other| other.key.value == key) {
            Some(other) => {
                let mut deeper = path.to_vec();
                deeper.push(key);
                both(
                    &deeper,
                    (entry.key.referenced, &entry.value.value),
                    (other.key.referenced, &other.value.value),
                )
            }
            None => from(Source::Spec, entry.key.referenced, &entry.value.value),
        };
        merged.push((key.to_string(), value));
    }
    for entry in defaults {
        if !own.iter().any(|other| other.key.value == entry.key.value) {
            merged.push((
                entry.key.value.clone(),
                from(Source::Defaults, entry.key.referenced, &entry.value.value),
            ));
        }
    }
    merged
}

/// `node`, written at `at` in one file, as a merged value of that file throughout.
fn from(source: Source, at: Location, node: &Node) -> Merged {
    let value = match node {
        Node::Map(entries) => MergedValue::Map(
            entries
                .iter()
                .map(|entry| {
                    (
                        entry.key.value.clone(),
                        from(source, entry.key.referenced, &entry.value.value),
                    )
                })
                .collect(),
        ),
        Node::Seq(items) => MergedValue::Seq(
            items
                .iter()
                .map(|item| from(source, item.referenced, &item.value))
                .collect(),
        ),
        Node::Scalar(text) => MergedValue::Scalar(text.clone()),
    };
    Merged { source, at, value }
}

#[cfg(test)]
#[path = "merged_tests.rs"]
mod tests;
