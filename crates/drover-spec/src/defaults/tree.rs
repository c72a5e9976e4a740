//! A YAML document as a tree of keys, each with where it was written: what the merge of
//! a spec and its directory's defaults walks to decide where each setting comes from,
//! and what `drover validate --show-merged` prints.

use std::fmt;
use std::path::Path;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::Spanned;

use crate::load::error::SpecError;
use crate::load::yaml::from_yaml;

/// The document in `text` (from `path`), each one-line scalar as written (`off`, not the
/// `false` YAML reads it as; `"Read(.env)"` with its quotes).
pub(crate) fn read_tree(path: &Path, text: &str) -> Result<Node, SpecError> {
    let mut node: Node = from_yaml(path, text)?;
    node.as_written(text);
    Ok(node)
}

/// A YAML value with the positions of its keys and items.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Node {
    Map(Vec<Entry>),
    Seq(Vec<Spanned<Node>>),
    /// A scalar as text (`null` for an empty value).
    Scalar(String),
}

/// One key of a mapping and its value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entry {
    pub key: Spanned<String>,
    pub value: Spanned<Node>,
}

impl Node {
    /// Each one-line scalar below this node replaced by its text in `source`.
    fn as_written(&mut self, source: &str) {
        let items: Vec<&mut Spanned<Node>> = match self {
            Node::Map(entries) => entries.iter_mut().map(|entry| &mut entry.value).collect(),
            Node::Seq(items) => items.iter_mut().collect(),
            Node::Scalar(_) => return,
        };
        for item in items {
            if let Node::Scalar(text) = &mut item.value {
                if let Some(raw) = written(source, &item.referenced) {
                    *text = raw.to_string();
                }
            } else {
                item.value.as_written(source);
            }
        }
    }
}

/// The one line of `source` a scalar at `at` was written as, if its span says.
pub(crate) fn written<'a>(source: &'a str, at: &serde_saphyr::Location) -> Option<&'a str> {
    let span = at.span();
    let start = usize::try_from(span.byte_offset()?).ok()?;
    let len = usize::try_from(span.byte_len()?).ok()?;
    let raw = source.get(start..start.checked_add(len)?)?;
    (!raw.is_empty() && !raw.contains('\n')).then_some(raw)
}

#[cfg(test)]
impl Node {
    /// The value of `key`, when this is a mapping that has it.
    pub(crate) fn get(&self, key: &str) -> Option<&Entry> {
        match self {
            Node::Map(entries) => entries.iter().find(|entry| entry.key.value == key),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a YAML value")
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<Node, E> {
        Ok(Node::Scalar(value.to_string()))
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<Node, E> {
        Ok(Node::Scalar(value.to_string()))
    }

    fn visit_i128<E: de::Error>(self, value: i128) -> Result<Node, E> {
        Ok(Node::Scalar(value.to_string()))
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Node, E> {
        Ok(Node::Scalar(value.to_string()))
    }

    fn visit_u128<E: de::Error>(self, value: u128) -> Result<Node, E> {
        Ok(Node::Scalar(value.to_string()))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Node, E> {
        Ok(Node::Scalar(value.to_string()))
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<Node, E> {
        Ok(Node::Scalar(value.to_string()))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Node, E> {
        Ok(Node::Scalar("null".to_string()))
    }

    fn visit_none<E: de::Error>(self) -> Result<Node, E> {
        Ok(Node::Scalar("null".to_string()))
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Node, D::Error> {
        Node::deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Spanned<Node>>()? {
            items.push(item);
        }
        Ok(Node::Seq(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<Spanned<String>>()? {
            let value = map.next_value::<Spanned<Node>>()?;
            entries.push(Entry { key, value });
        }
        Ok(Node::Map(entries))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Node {
        read_tree(Path::new("t.yaml"), text).unwrap()
    }

    fn at<T>(spanned: &Spanned<T>) -> (u64, u64) {
        (spanned.referenced.line(), spanned.referenced.column())
    }

    #[test]
    fn keys_and_items_keep_their_line_and_column() {
        let tree = parse(
            "version: 1\nlimits:\n  max_turns: 5\n  timeout: 20m\npermissions:\n  deny:\n    - Bash(rm *)\n    - \"Read(.env)\"\nsandbox: off\nenv: {}\n",
        );
        let limits = tree.get("limits").unwrap();
        assert_eq!(at(&limits.key), (2, 1));
        let turns = limits.value.value.get("max_turns").unwrap();
        assert_eq!(at(&turns.key), (3, 3));
        assert_eq!(turns.value.value, Node::Scalar("5".into()));
        let deny = tree
            .get("permissions")
            .unwrap()
            .value
            .value
            .get("deny")
            .unwrap();
        let Node::Seq(items) = &deny.value.value else {
            panic!("{deny:?}")
        };
        assert_eq!(
            items.iter().map(at).collect::<Vec<_>>(),
            vec![(7, 7), (8, 7)]
        );
        assert_eq!(items[1].value, Node::Scalar("\"Read(.env)\"".into()));
        assert_eq!(
            tree.get("sandbox").unwrap().value.value,
            Node::Scalar("off".into())
        );
        assert_eq!(tree.get("env").unwrap().value.value, Node::Map(Vec::new()));
        assert!(tree.get("model").is_none());
        let multi = parse("prompt: |\n  two\n  lines\nname: \"\"\n");
        let prompt = &multi.get("prompt").unwrap().value.value;
        assert_eq!(prompt, &Node::Scalar("two\nlines\n".into()));
        assert_eq!(
            multi.get("name").unwrap().value.value,
            Node::Scalar("\"\"".into())
        );
    }
}
