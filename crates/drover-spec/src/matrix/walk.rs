//! Finding every `${{ matrix.KEY }}` of a document, with where it is: in a field that
//! takes matrix values it is a reference to fill; anywhere else it is an error, so a
//! value can only go where drover inserts it (never into a permission rule, a sandbox
//! setting or a key).

use std::path::Path;

use serde_saphyr::{Location, Spanned};

use super::fields::{SUBSTITUTED, SUBSTITUTED_IN_WORDS};
use super::template::Template;
use crate::defaults::tree::Node;
use crate::load::error::{Position, SpecError};

/// A string of a substituted field that references matrix values.
#[derive(Debug, Clone)]
pub(crate) struct Found {
    /// As SUBSTITUTED names it.
    pub field: &'static str,
    /// Where it is written (`checks[1].run`).
    pub at: String,
    pub location: Location,
    pub template: Template,
}

/// What a walk of a document found: references to fill, and errors.
#[derive(Debug, Default)]
pub(crate) struct Walked {
    pub found: Vec<Found>,
    pub errors: Vec<SpecError>,
}

/// Which fields of the document may reference values: a spec's (every key but
/// `matrix:` itself, whose values are data), or none (a defaults file's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Document {
    Spec,
    Defaults,
}

/// Every reference of `tree`, the document of the file at `path`.
pub(crate) fn walk(path: &Path, tree: &Node, document: Document) -> Walked {
    let mut walked = Walked::default();
    let mut walker = Walker {
        path,
        document,
        walked: &mut walked,
    };
    if let Node::Map(entries) = tree {
        for entry in entries {
            if document == Document::Spec && entry.key.value == "matrix" {
                continue;
            }
            walker.key(&entry.key, &entry.key.value);
            walker.node(&entry.value, &entry.key.value, &entry.key.value);
        }
    }
    walked
}

struct Walker<'a> {
    path: &'a Path,
    document: Document,
    walked: &'a mut Walked,
}

impl Walker<'_> {
    /// `node`, at `at` (`checks[1].run`), named in SUBSTITUTED's way as `field`.
    fn node(&mut self, node: &Spanned<Node>, at: &str, field: &str) {
        match &node.value {
            Node::Scalar(text) => self.scalar(text, node.referenced, at, field),
            Node::Seq(items) => {
                for (index, item) in items.iter().enumerate() {
                    self.node(item, &format!("{at}[{index}]"), &format!("{field}[]"));
                }
            }
            Node::Map(entries) => {
                for entry in entries {
                    let key = &entry.key.value;
                    self.key(&entry.key, &format!("{at}.{key}"));
                    self.node(
                        &entry.value,
                        &format!("{at}.{key}"),
                        &format!("{field}.{key}"),
                    );
                }
            }
        }
    }

    fn key(&mut self, key: &Spanned<String>, at: &str) {
        match Template::parse(&key.value) {
            Ok(template) if template.is_plain() => {}
            Ok(_) => self.error(
                key.referenced,
                format!(
                    "{at}: a key cannot hold ${{{{ matrix.KEY }}}}; {}",
                    self.where_it_goes()
                ),
            ),
            Err(error) => self.error(key.referenced, format!("{at}: {error}")),
        }
    }

    fn scalar(&mut self, text: &str, location: Location, at: &str, field: &str) {
        let template = match Template::parse(text) {
            Ok(template) => template,
            Err(error) => return self.error(location, format!("{at}: {error}")),
        };
        if template.is_plain() {
            return;
        }
        let substituted = SUBSTITUTED.iter().find(|name| **name == field);
        match substituted {
            Some(field) if self.document == Document::Spec => self.walked.found.push(Found {
                field,
                at: at.to_string(),
                location,
                template,
            }),
            _ => self.error(
                location,
                format!(
                    "{at}: ${{{{ matrix.{} }}}} is not substituted here; {}",
                    template.keys().join(" }}, ${{ matrix."),
                    self.where_it_goes()
                ),
            ),
        }
    }

    fn where_it_goes(&self) -> String {
        match self.document {
            Document::Spec => format!(
                "a matrix value goes only into {SUBSTITUTED_IN_WORDS}: write the value itself here"
            ),
            Document::Defaults => format!(
                "a defaults file applies to every spec beside it: a matrix value goes only into a spec's {SUBSTITUTED_IN_WORDS}"
            ),
        }
    }

    fn error(&mut self, location: Location, message: String) {
        self.walked.errors.push(SpecError::Invalid {
            position: Position::at(self.path, Some(location)),
            message,
        });
    }
}
