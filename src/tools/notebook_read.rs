//! How Read shows a notebook: cell by cell, each with the id NotebookEdit takes, its type
//! and source, then its outputs as text (bounded; images as one line each), instead of
//! the raw JSON a model would have to pick the cells out of.

use std::path::Path;

use super::notebook::{Notebook, cell_type, label, load_bytes, multiline};
use super::notebook_json::{Json, Node};
use super::text::cut_middle;
use super::{ToolContext, ToolError, blocking};

/// One output's text is cut (in the middle) beyond this many characters.
const MAX_OUTPUT_CHARS: usize = 3000;
/// One cell's source is cut (in the middle) beyond this many characters.
const MAX_SOURCE_CHARS: usize = 50_000;
/// A Read shows cells up to about this many characters, then says where to continue.
const MAX_SHOWN_CHARS: usize = 100_000;
/// What a Read of a notebook never exceeds (one cell may pass [`MAX_SHOWN_CHARS`]).
const HARD_LIMIT_CHARS: usize = 4 * MAX_SHOWN_CHARS;

/// What Read does with a `.ipynb` file.
pub(super) enum NotebookView {
    /// The notebook, shown as cells.
    Cells(String),
    /// Show the file as text instead, with this note (none: the text path reports it,
    /// e.g. a missing file).
    AsText(Option<String>),
}

/// Read the notebook at `path` and show cells `first..first+limit` (1-based positions),
/// recording what was read for NotebookEdit's read-before-edit check.
pub(super) async fn read_notebook(
    ctx: &ToolContext,
    path: &Path,
    shown: &str,
    first: usize,
    limit: usize,
) -> Result<NotebookView, ToolError> {
    let roots = std::sync::Arc::clone(&ctx.roots);
    let at = path.to_path_buf();
    let name = shown.to_string();
    let loaded = blocking(move || {
        let (bytes, mtime) = load_bytes(&roots, &at)?;
        let digest = crate::workspace::file_state::sha256(&bytes);
        let view = match Notebook::parse(bytes) {
            Ok(notebook) => Ok(render(&notebook, &name, first, limit)),
            Err(e) => Err(format!(
                "(Note: {name} {e}, so it is shown as plain text rather than as cells.)"
            )),
        };
        Ok::<_, std::io::Error>((view, digest, mtime))
    })
    .await?;
    match loaded {
        Ok((Ok((text, whole)), digest, mtime)) => {
            ctx.files.record_digest(path, digest, whole, mtime);
            Ok(NotebookView::Cells(text))
        }
        Ok((Err(note), _, _)) => Ok(NotebookView::AsText(Some(note))),
        Err(e) if e.kind() == std::io::ErrorKind::FileTooLarge => {
            Ok(NotebookView::AsText(Some(format!(
                "(Note: {shown} is {e}, too large to show as cells, so it is shown as plain text.)"
            ))))
        }
        Err(_) => Ok(NotebookView::AsText(None)),
    }
}

/// The notebook as Read shows it, and whether every cell was shown.
pub(super) fn render(
    notebook: &Notebook,
    shown: &str,
    first: usize,
    limit: usize,
) -> (String, bool) {
    let cells = notebook.cells();
    let total = cells.len();
    let version = notebook.version().map_or(String::new(), |(major, minor)| {
        format!("nbformat {major}.{minor}, ")
    });
    let language = notebook.language().unwrap_or("unknown language");
    let mut out = format!(
        "{shown} is a Jupyter notebook ({version}{language}) with {total} cells. Each cell is shown as <cell id=\"…\" type=\"…\"> followed by its outputs; give that id as cell_id to NotebookEdit.\n"
    );
    if total == 0 {
        out.push_str("(The notebook has no cells.)");
        return (out, true);
    }
    let start = first.max(1) - 1;
    if start >= total {
        out.push_str(&format!(
            "(The notebook has only {total} cells, fewer than offset {first}; for a notebook, offset and limit count cells. Read it with a smaller offset.)"
        ));
        return (out, false);
    }
    let mut last = start;
    for (index, cell) in cells.iter().enumerate().skip(start).take(limit) {
        let text = render_cell(cell, index);
        if index > start && out.len() + text.len() > MAX_SHOWN_CHARS {
            break;
        }
        out.push_str(&text);
        last = index + 1;
    }
    let whole = start == 0 && last == total;
    out.truncate(out.trim_end_matches('\n').len());
    // Only a hostile file gets here (a huge cell id, say): the output stays bounded.
    let mut out = cut_middle(&out, HARD_LIMIT_CHARS);
    if last < total {
        out.push_str(&format!(
            "\n\n(Showing cells {}-{last} of {total}. For a notebook, offset and limit count cells: call Read with offset={} to see the rest.)",
            start + 1,
            last + 1
        ));
    }
    (out, whole)
}

/// One cell and its outputs.
fn render_cell(cell: &Node, index: usize) -> String {
    let id = attribute(&label(cell, index));
    let kind = attribute(cell_type(cell));
    let count = match cell.get("execution_count").map(|n| &n.value) {
        Some(Json::Number(n)) => format!(" execution_count=\"{n}\""),
        _ => String::new(),
    };
    let source = body(&strip_ansi(&multiline(cell.get("source"))));
    let mut out = format!("<cell id=\"{id}\" type=\"{kind}\"{count}>\n");
    if !source.is_empty() {
        out.push_str(&cut_middle(&source, MAX_SOURCE_CHARS));
        if !source.ends_with('\n') {
            out.push('\n');
        }
    }
    out.push_str("</cell>\n");
    let outputs = cell
        .get("outputs")
        .and_then(Node::as_array)
        .unwrap_or_default();
    for (shown, output) in outputs.iter().enumerate() {
        if out.len() > MAX_SHOWN_CHARS {
            out.push_str(&format!(
                "[{} more outputs of cell {id} not shown]\n",
                outputs.len() - shown
            ));
            break;
        }
        out.push_str(&render_output(output, &id));
    }
    out
}

/// One output: its text, or a line saying what it holds.
fn render_output(output: &Node, cell: &str) -> String {
    let kind = output
        .get("output_type")
        .and_then(Node::as_str)
        .unwrap_or("unknown");
    let mut attributes = format!("cell=\"{cell}\" type=\"{}\"", attribute(kind));
    let mut text = String::new();
    match kind {
        "stream" => {
            if let Some(name) = output.get("name").and_then(Node::as_str) {
                attributes.push_str(&format!(" name=\"{}\"", attribute(name)));
            }
            text = multiline(output.get("text"));
        }
        "execute_result" | "display_data" => {
            text = bundle_text(output.get("data"));
        }
        "error" => {
            let name = output
                .get("ename")
                .and_then(Node::as_str)
                .unwrap_or("Error");
            let value = output.get("evalue").and_then(Node::as_str).unwrap_or("");
            text = format!("{name}: {value}");
            let traceback: Vec<&str> = output
                .get("traceback")
                .and_then(Node::as_array)
                .unwrap_or_default()
                .iter()
                .filter_map(Node::as_str)
                .collect();
            if !traceback.is_empty() {
                text = format!("{}\n{text}", traceback.join("\n"));
            }
        }
        _ => {}
    }
    let text = cut_middle(
        body(&strip_ansi(&text)).trim_end_matches('\n'),
        MAX_OUTPUT_CHARS,
    );
    format!("<output {attributes}>\n{text}\n</output>\n")
}

/// What a MIME bundle shows as text: its plain text (or else markdown, HTML, LaTeX), and
/// a line for each image or other representation not shown.
fn bundle_text(data: Option<&Node>) -> String {
    let Some(Json::Object(members)) = data.map(|d| &d.value) else {
        return String::new();
    };
    let shown = ["text/plain", "text/markdown", "text/html", "text/latex"]
        .into_iter()
        .find(|mime| members.iter().any(|(k, _)| k == mime));
    let mut lines = Vec::new();
    if let Some(mime) = shown {
        lines.push(multiline(data.and_then(|d| d.get(mime))));
    }
    for (mime, value) in members {
        if Some(mime.as_str()) == shown || mime.starts_with("text/") {
            continue;
        }
        if mime.starts_with("image/") {
            let size = multiline(Some(value)).len();
            lines.push(format!(
                "[{mime} image, {} KB of base64, not shown]",
                size.div_ceil(1024)
            ));
        } else {
            lines.push(format!("[{mime} output, not shown]"));
        }
    }
    lines.join("\n")
}

/// `text` without terminal escape sequences (colour codes fill tracebacks and progress
/// output; title, clipboard and hyperlink sequences have no business in a tool result)
/// and without any other control character but newline and tab.
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            match chars.next() {
                // CSI: parameters up to a final byte.
                Some('[') => {
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
                // OSC, DCS, APC, PM, SOS: up to BEL or ESC \.
                Some(']' | 'P' | '_' | '^' | 'X') => {
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' {
                            break;
                        }
                        if c == '\u{1b}' && chars.peek() == Some(&'\\') {
                            chars.next();
                            break;
                        }
                    }
                }
                // Any other escape: the one character after it.
                _ => {}
            }
            continue;
        }
        if c.is_control() && c != '\n' && c != '\t' {
            continue;
        }
        out.push(c);
    }
    out
}

/// `value` as it may stand inside `attr="…"`: no quote, angle bracket or control
/// character, so a notebook cannot forge the structure Read shows.
fn attribute(value: &str) -> String {
    strip_ansi(value)
        .chars()
        .map(|c| match c {
            '"' | '<' | '>' | '\n' | '\t' => '_',
            c => c,
        })
        .collect()
}

/// Text shown between the tags: a line closing a cell or an output is defused, so a
/// source cannot end its cell early and forge the next.
fn body(text: &str) -> String {
    text.replace("</cell>", "<\\/cell>")
        .replace("</output>", "<\\/output>")
        .replace("<cell ", "<\\cell ")
        .replace("<output ", "<\\output ")
}
