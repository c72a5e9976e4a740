//! A Jupyter notebook (nbformat 4) as NotebookEdit changes it and Read shows it: its
//! cells found by id (or by `cell-N`, their position), and edits that change one cell
//! and leave every other byte of the file as it was (see [`super::notebook_json`]).

use std::collections::HashSet;
use std::io::Read as _;
use std::path::Path;
use std::time::SystemTime;

use schemars::JsonSchema;
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::notebook_json::{Document, Json, Node, ParseError};
use crate::workspace::Roots;

/// Notebooks are parsed whole (outputs with images make them large); larger files are
/// refused rather than loaded.
pub(super) const MAX_NOTEBOOK_BYTES: u64 = 64 * 1024 * 1024;

/// The kinds of cell a model may write (Claude Code's two).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum CellType {
    Code,
    Markdown,
}

impl CellType {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            CellType::Code => "code",
            CellType::Markdown => "markdown",
        }
    }
}

/// Why a file is not a notebook this module can work on; the text is for the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum NotebookError {
    #[error("is not UTF-8 text")]
    NotUtf8,
    #[error("is not valid JSON ({0})")]
    Json(#[from] ParseError),
    #[error("is JSON but not a Jupyter notebook: {0}")]
    NotNotebook(&'static str),
}

/// A parsed notebook.
#[derive(Debug, Clone)]
pub(super) struct Notebook {
    doc: Document,
}

/// The bytes of the regular file at `path` (opened beneath `roots`) and its modification
/// time, unless it holds more than [`MAX_NOTEBOOK_BYTES`] (a `FileTooLarge` error).
pub(super) fn load_bytes(
    roots: &Roots,
    path: &Path,
) -> std::io::Result<(Vec<u8>, Option<SystemTime>)> {
    let file = roots.open_file(path)?;
    let meta = file.metadata()?;
    let too_large =
        |size: u64| std::io::Error::new(std::io::ErrorKind::FileTooLarge, format!("{size} bytes"));
    if meta.len() > MAX_NOTEBOOK_BYTES {
        return Err(too_large(meta.len()));
    }
    let mut bytes = Vec::new();
    file.take(MAX_NOTEBOOK_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_NOTEBOOK_BYTES {
        return Err(too_large(bytes.len() as u64));
    }
    Ok((bytes, meta.modified().ok()))
}

/// Whether `path` names a notebook (by its extension, as Jupyter decides).
pub(super) fn is_notebook(path: &Path) -> bool {
    path.extension()
        .is_some_and(|ext| ext.eq_ignore_ascii_case("ipynb"))
}

/// The id (or, without one, the `cell-N` position) by which a model names `cell`.
pub(super) fn label(cell: &Node, index: usize) -> String {
    match cell.get("id").and_then(Node::as_str) {
        Some(id) => id.to_string(),
        None => format!("cell-{index}"),
    }
}

/// A cell's type as written (`code`, `markdown`, `raw`).
pub(super) fn cell_type(cell: &Node) -> &str {
    cell.get("cell_type").and_then(Node::as_str).unwrap_or("?")
}

/// A multiline field (`source`, stream `text`, a MIME bundle's text) as one string:
/// nbformat writes it as a list of lines or as a string.
pub(super) fn multiline(node: Option<&Node>) -> String {
    match node.map(|n| &n.value) {
        Some(Json::String(s)) => s.clone(),
        Some(Json::Array(lines)) => lines.iter().filter_map(Node::as_str).collect(),
        _ => String::new(),
    }
}

/// `text` the way nbformat stores a multiline field: a list of lines, each ending in
/// its `\n` except the last (or one string, when the file stored the field that way).
fn multiline_node(text: &str, as_list: bool) -> Node {
    if !as_list {
        return Node::new(Json::String(text.to_string()));
    }
    let lines = text
        .split_inclusive('\n')
        .map(|line| Node::new(Json::String(line.to_string())))
        .collect();
    Node::new(Json::Array(lines))
}

/// Whether `node` is a list (or missing: nbformat's own choice is a list).
fn stored_as_list(node: Option<&Node>) -> bool {
    !matches!(node.map(|n| &n.value), Some(Json::String(_)))
}

/// Set `key` of `members` to `value`: in place if present; otherwise where sorted order
/// puts it when the keys are sorted (as nbformat writes them), else at the end.
fn set_member(members: &mut Vec<(String, Node)>, key: &str, value: Node) {
    if let Some((_, existing)) = members.iter_mut().find(|(k, _)| k == key) {
        *existing = value;
        return;
    }
    let sorted = members.windows(2).all(|pair| pair[0].0 <= pair[1].0);
    let at = if sorted {
        members.partition_point(|(k, _)| k.as_str() < key)
    } else {
        members.len()
    };
    members.insert(at, (key.to_string(), value));
}

impl Notebook {
    /// Parse a notebook file's bytes.
    pub(super) fn parse(bytes: Vec<u8>) -> Result<Self, NotebookError> {
        let text = String::from_utf8(bytes).map_err(|_| NotebookError::NotUtf8)?;
        let doc = Document::parse(text)?;
        if !matches!(doc.root.value, Json::Object(_)) {
            return Err(NotebookError::NotNotebook("the top level is not an object"));
        }
        match doc.root.get("cells").map(|c| &c.value) {
            Some(Json::Array(cells)) => {
                if !cells.iter().all(|c| matches!(c.value, Json::Object(_))) {
                    return Err(NotebookError::NotNotebook("a cell is not an object"));
                }
            }
            Some(_) => return Err(NotebookError::NotNotebook("\"cells\" is not a list")),
            None if doc.root.get("worksheets").is_some() => {
                return Err(NotebookError::NotNotebook(
                    "it is an nbformat 3 notebook (cells inside \"worksheets\"); convert it with `jupyter nbconvert --to notebook` first",
                ));
            }
            None => return Err(NotebookError::NotNotebook("it has no \"cells\" list")),
        }
        Ok(Notebook { doc })
    }

    /// The notebook as text, changed cells only rewritten.
    pub(super) fn render(&self) -> String {
        self.doc.render()
    }

    pub(super) fn cells(&self) -> &[Node] {
        self.doc
            .root
            .get("cells")
            .and_then(Node::as_array)
            .unwrap_or(&[])
    }

    /// `(nbformat, nbformat_minor)`, when the file states them.
    pub(super) fn version(&self) -> Option<(u64, u64)> {
        let major = self.doc.root.get("nbformat").and_then(Node::as_u64)?;
        let minor = self.doc.root.get("nbformat_minor").and_then(Node::as_u64)?;
        Some((major, minor))
    }

    /// Whether cells carry ids: required from nbformat 4.5 on, and kept if present.
    pub(super) fn uses_ids(&self) -> bool {
        self.version().is_some_and(|v| v >= (4, 5))
            || self.cells().iter().any(|c| c.get("id").is_some())
    }

    /// The kernel's language, as the metadata names it.
    pub(super) fn language(&self) -> Option<&str> {
        let metadata = self.doc.root.get("metadata")?;
        metadata
            .get("kernelspec")
            .and_then(|k| k.get("language"))
            .or_else(|| metadata.get("language_info").and_then(|l| l.get("name")))
            .and_then(Node::as_str)
    }

    /// The position of the cell a model names `cell_id`: a cell's id, or else `cell-N`
    /// (N counting from 0), the form Read shows for cells without an id.
    pub(super) fn find(&self, cell_id: &str) -> Option<usize> {
        let cells = self.cells();
        if let Some(at) = cells
            .iter()
            .position(|c| c.get("id").and_then(Node::as_str) == Some(cell_id))
        {
            return Some(at);
        }
        let digits = cell_id.strip_prefix("cell-")?;
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        digits.parse::<usize>().ok().filter(|&n| n < cells.len())
    }

    /// The cell list to change, the document and the list marked to be written anew
    /// (their untouched cells still byte for byte). `None` only if `parse` let through
    /// something that is not a notebook.
    fn cells_mut(&mut self) -> Option<&mut Vec<Node>> {
        let root = &mut self.doc.root;
        root.raw = None;
        let Json::Object(members) = &mut root.value else {
            return None;
        };
        let (_, cells) = members.iter_mut().find(|(k, _)| k == "cells")?;
        cells.raw = None;
        match &mut cells.value {
            Json::Array(items) => Some(items),
            _ => None,
        }
    }

    /// Replace the source of the cell at `index` (and its type, if `cell_type` differs).
    /// A code cell's outputs and execution count are cleared: they no longer belong to
    /// its source.
    pub(super) fn replace(
        &mut self,
        index: usize,
        source: &str,
        cell_type: Option<CellType>,
    ) -> Result<(), NotebookError> {
        let cell = self
            .cells_mut()
            .and_then(|cells| cells.get_mut(index))
            .ok_or(NotebookError::NotNotebook("the cell is gone"))?;
        let old_type = self::cell_type(cell).to_string();
        let new_type = cell_type.map_or(old_type.clone(), |t| t.as_str().to_string());
        cell.raw = None;
        let Json::Object(members) = &mut cell.value else {
            return Err(NotebookError::NotNotebook("a cell is not an object"));
        };
        let as_list = stored_as_list(members.iter().find(|(k, _)| k == "source").map(|m| &m.1));
        set_member(members, "source", multiline_node(source, as_list));
        if new_type != old_type {
            set_member(
                members,
                "cell_type",
                Node::new(Json::String(new_type.clone())),
            );
        }
        if new_type == "code" {
            set_member(members, "execution_count", Node::new(Json::Null));
            set_member(members, "outputs", Node::new(Json::Array(Vec::new())));
        } else if old_type == "code" {
            // Only code cells have outputs (nbformat's schema refuses them elsewhere).
            members.retain(|(k, _)| k != "execution_count" && k != "outputs");
        }
        Ok(())
    }

    /// Insert a new cell at position `at` (0: first); its label (id or `cell-N`).
    pub(super) fn insert(
        &mut self,
        at: usize,
        source: &str,
        cell_type: CellType,
    ) -> Result<String, NotebookError> {
        let id = self.uses_ids().then(|| self.fresh_id(source, at));
        let cells = self.cells();
        let at = at.min(cells.len());
        // A neighbour shows how this file writes cells (key order, source form): the
        // nearest cell of the same type, or else the cell next to the new one.
        let kind = cell_type.as_str();
        let same_type = |c: &&Node| self::cell_type(c) == kind;
        let neighbour = cells[..at]
            .iter()
            .rev()
            .find(same_type)
            .or_else(|| cells[at..].iter().find(same_type))
            .or_else(|| cells.get(at.wrapping_sub(1)))
            .or_else(|| cells.get(at));
        let as_list = stored_as_list(neighbour.and_then(|n| n.get("source")));
        let template: Vec<String> = match neighbour.map(|n| &n.value) {
            Some(Json::Object(members)) => members.iter().map(|(k, _)| k.clone()).collect(),
            _ => Vec::new(),
        };
        let mut members = vec![(
            "cell_type".to_string(),
            Node::new(Json::String(cell_type.as_str().into())),
        )];
        if cell_type == CellType::Code {
            members.push(("execution_count".into(), Node::new(Json::Null)));
        }
        if let Some(id) = &id {
            members.push(("id".into(), Node::new(Json::String(id.clone()))));
        }
        members.push(("metadata".into(), Node::new(Json::Object(Vec::new()))));
        if cell_type == CellType::Code {
            members.push(("outputs".into(), Node::new(Json::Array(Vec::new()))));
        }
        members.push(("source".into(), multiline_node(source, as_list)));
        // nbformat's order (sorted) unless the neighbour orders its keys otherwise.
        if !template.windows(2).all(|pair| pair[0] <= pair[1]) {
            members
                .sort_by_key(|(k, _)| template.iter().position(|t| t == k).unwrap_or(usize::MAX));
        }
        let cells = self
            .cells_mut()
            .ok_or(NotebookError::NotNotebook("it has no \"cells\" list"))?;
        cells.insert(at, Node::new(Json::Object(members)));
        Ok(id.unwrap_or_else(|| format!("cell-{at}")))
    }

    /// Remove the cell at `index`.
    pub(super) fn delete(&mut self, index: usize) -> Result<(), NotebookError> {
        let cells = self
            .cells_mut()
            .ok_or(NotebookError::NotNotebook("it has no \"cells\" list"))?;
        if index < cells.len() {
            cells.remove(index);
        }
        Ok(())
    }

    /// An id no cell has, made as nbformat makes them (8 hex digits) but derived from the
    /// notebook and the new cell rather than drawn at random: a replayed run writes the
    /// same notebook.
    fn fresh_id(&self, source: &str, at: usize) -> String {
        let taken: HashSet<&str> = self
            .cells()
            .iter()
            .filter_map(|c| c.get("id").and_then(Node::as_str))
            .collect();
        let mut attempt: u64 = 0;
        loop {
            let mut hasher = Sha256::new();
            for id in self
                .cells()
                .iter()
                .filter_map(|c| c.get("id").and_then(Node::as_str))
            {
                hasher.update(id.as_bytes());
                hasher.update([0]);
            }
            hasher.update(source.as_bytes());
            hasher.update(at.to_le_bytes());
            hasher.update(attempt.to_le_bytes());
            let digest = hasher.finalize();
            let id: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
            if !taken.contains(id.as_str()) {
                return id;
            }
            attempt += 1;
        }
    }
}

#[cfg(test)]
#[path = "notebook_tests.rs"]
mod tests;
