//! NotebookEdit: replace, insert or delete one cell of a Jupyter notebook the run has
//! read, writing back a notebook whose `git diff` shows only that cell.

use schemars::JsonSchema;
use serde::Deserialize;

use super::notebook::{
    CellType, MAX_NOTEBOOK_BYTES, Notebook, cell_type, is_notebook, label, load_bytes,
};
use super::{
    About, ToolContext, ToolError, ToolInput, TypedTool, blocking, file_target, write_file,
};
use crate::policy::Subject;

/// At most this many cell ids are listed when a cell_id names none.
const MAX_LISTED_IDS: usize = 30;

#[derive(Clone, Copy)]
pub(crate) struct NotebookEditTool;

/// What to do with the cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum EditMode {
    #[default]
    Replace,
    Insert,
    Delete,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Input {
    /// The notebook (.ipynb file) to edit, absolute or relative to the workspace root.
    notebook_path: String,
    /// The id of the cell, as Read shows it (`cell-N`, N counting from 0, for a cell
    /// without an id). For insert, the new cell goes after this one, or first if omitted.
    cell_id: Option<String>,
    /// The new source of the cell (ignored by delete).
    new_source: String,
    /// The cell's type: required for insert; for replace, the cell keeps its type unless
    /// this changes it.
    cell_type: Option<CellType>,
    /// replace (the default), insert or delete.
    edit_mode: Option<EditMode>,
}

impl ToolInput for Input {
    fn subject(&self) -> Subject {
        Subject::Path(self.notebook_path.clone())
    }
}

const DESCRIPTION: &str = "Replaces, inserts or deletes one cell of a Jupyter notebook (.ipynb file).

Usage:
- You must Read the notebook in this conversation before editing it; if it changed on disk since, Read it again. Read shows each cell with its id and type.
- cell_id names the cell: its id as Read shows it. A cell without an id is shown as `cell-N` (N counting from 0), and that form is accepted too.
- edit_mode `replace` (the default) replaces the whole source of the cell with new_source; give cell_type to change the cell's type.
- edit_mode `insert` adds a new cell after the cell named by cell_id, or at the start of the notebook when cell_id is omitted. cell_type (`code` or `markdown`) is required.
- edit_mode `delete` removes the cell named by cell_id (new_source is ignored; pass an empty string).
- Replacing a code cell clears its outputs and execution count: they belonged to the old source. Nothing is executed.
- Everything else in the file is kept as it was (other cells, metadata, key order, indentation), so a diff shows only the edited cell.
- To edit other files use Edit; to create a new notebook use Write.";

impl TypedTool for NotebookEditTool {
    type Input = Input;
    const ABOUT: About = About::writes("NotebookEdit", DESCRIPTION).paths_governed_by("Edit");

    async fn run(&self, input: Input, ctx: &ToolContext) -> Result<String, ToolError> {
        let (path, shown) = file_target(ctx, &input.notebook_path)?;
        // The name the model gave decides, as for Claude Code (a symlink may resolve to
        // a name without the extension).
        if !is_notebook(std::path::Path::new(&input.notebook_path)) && !is_notebook(&path) {
            return Err(ToolError::Failed(format!(
                "{shown} is not a Jupyter notebook: NotebookEdit only edits .ipynb files. Use Edit (or Write) for other files."
            )));
        }
        let mode = input.edit_mode.unwrap_or_default();
        if mode == EditMode::Insert && input.cell_type.is_none() {
            return Err(ToolError::Failed(
                "cell_type is required when edit_mode is insert: give \"code\" or \"markdown\"."
                    .to_string(),
            ));
        }
        if mode != EditMode::Insert && input.cell_id.is_none() {
            return Err(ToolError::Failed(format!(
                "cell_id is required to {} a cell: Read {shown} to see its cell ids. (To add a cell at the start, use edit_mode insert without a cell_id.)",
                if mode == EditMode::Delete {
                    "delete"
                } else {
                    "replace"
                }
            )));
        }
        let roots = std::sync::Arc::clone(&ctx.roots);
        let at = path.clone();
        let bytes = match blocking(move || load_bytes(&roots, &at)).await? {
            Ok((bytes, _)) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(ToolError::Failed(format!(
                    "Notebook file does not exist. (path: {shown}; the workspace root is {}). To create a notebook, use Write.",
                    ctx.workspace.display()
                )));
            }
            Err(e) if e.kind() == std::io::ErrorKind::IsADirectory => {
                return Err(ToolError::Failed(format!(
                    "{shown} is a directory; give the path of a notebook file."
                )));
            }
            Err(e) if e.kind() == std::io::ErrorKind::FileTooLarge => {
                return Err(ToolError::Failed(format!(
                    "{shown} is {e}, larger than the {} MiB NotebookEdit works on, so it was not loaded. Change it with a command (Bash, e.g. jq or nbformat) instead, if the permissions allow.",
                    MAX_NOTEBOOK_BYTES / (1024 * 1024)
                )));
            }
            Err(e) => return Err(ToolError::io(format!("Cannot read {shown}"), e)),
        };
        ctx.files.check_writable(&path, &ctx.roots)?;
        let edit_shown = shown.clone();
        let (bytes, message) = blocking(move || edit(bytes, &input, mode, &edit_shown)).await??;
        write_file(ctx, &path, &shown, bytes).await?;
        Ok(message)
    }
}

/// Apply the edit to the notebook's bytes: the new bytes and the message for the model.
fn edit(
    bytes: Vec<u8>,
    input: &Input,
    mode: EditMode,
    shown: &str,
) -> Result<(Vec<u8>, String), ToolError> {
    let mut notebook = Notebook::parse(bytes).map_err(|e| {
        ToolError::Failed(format!(
            "{shown} {e}, so NotebookEdit cannot edit it. Read it to see what is wrong; repair it with Edit or Write."
        ))
    })?;
    let failed = |e: super::notebook::NotebookError| ToolError::Failed(format!("{shown} {e}."));
    let target = match &input.cell_id {
        Some(id) => Some(
            notebook
                .find(id)
                .ok_or_else(|| no_such_cell(&notebook, id, shown))?,
        ),
        None => None,
    };
    let message = match (mode, target) {
        (EditMode::Insert, _) => {
            let cell_type = input.cell_type.unwrap_or(CellType::Code);
            let at = target.map_or(0, |t| t + 1);
            let new = notebook
                .insert(at, &input.new_source, cell_type)
                .map_err(failed)?;
            let place = match (&input.cell_id, target) {
                (Some(id), Some(_)) => format!("after cell {id}"),
                _ => "at the start".to_string(),
            };
            format!(
                "Inserted a new {} cell {new} into {shown} {place}.",
                cell_type.as_str()
            )
        }
        (EditMode::Replace, Some(index)) => {
            let name = label(&notebook.cells()[index], index);
            notebook
                .replace(index, &input.new_source, input.cell_type)
                .map_err(failed)?;
            let now = cell_type(&notebook.cells()[index]).to_string();
            let cleared = if now == "code" {
                " Its outputs and execution count were cleared (nothing was run)."
            } else {
                ""
            };
            format!("Updated cell {name} ({now}) of {shown}.{cleared}")
        }
        (EditMode::Delete, Some(index)) => {
            let cell = &notebook.cells()[index];
            let (name, kind) = (label(cell, index), cell_type(cell).to_string());
            notebook.delete(index).map_err(failed)?;
            let left = notebook.cells().len();
            format!("Deleted cell {name} ({kind}) from {shown}; {left} cells remain.")
        }
        (EditMode::Replace | EditMode::Delete, None) => {
            return Err(ToolError::Failed(format!(
                "cell_id is required: Read {shown} to see its cell ids."
            )));
        }
    };
    Ok((notebook.render().into_bytes(), message))
}

/// The error for a cell_id that names no cell, listing the ones there are.
fn no_such_cell(notebook: &Notebook, cell_id: &str, shown: &str) -> ToolError {
    let count = notebook.cells().len();
    if count == 0 {
        return ToolError::Failed(format!(
            "Cell {cell_id} does not exist: {shown} has no cells. Use edit_mode insert without a cell_id to add the first one."
        ));
    }
    let labels: Vec<String> = notebook
        .cells()
        .iter()
        .enumerate()
        .take(MAX_LISTED_IDS)
        .map(|(i, c)| label(c, i))
        .collect();
    let more = if count > MAX_LISTED_IDS {
        format!(" and {} more", count - MAX_LISTED_IDS)
    } else {
        String::new()
    };
    let position = if cell_id.starts_with("cell-") {
        format!(
            " (cell-N counts from 0: the last cell is cell-{})",
            count - 1
        )
    } else {
        String::new()
    };
    ToolError::Failed(format!(
        "Cell {cell_id:?} not found in {shown}{position}. Its {count} cells are: {}{more}. Read the notebook again to see them.",
        labels.join(", ")
    ))
}

#[cfg(test)]
#[path = "notebook_edit_tests.rs"]
mod tests;
