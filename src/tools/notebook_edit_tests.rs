// Test-only module: its parent includes it under #[cfg(test)].
//! NotebookEdit through the tool, as the model calls it, and Read of notebooks.

use serde_json::{Value, json};

use super::*;
use crate::tools::read::ReadTool;
use crate::tools::{CallJson, Tool, ToolOutput};

const FIXTURE: &str = include_str!("../../fixtures/notebooks/sales.ipynb");

fn workspace(files: &[(&str, &str)]) -> (tempfile::TempDir, ToolContext) {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let ctx = ToolContext::in_temp(&dir);
    (dir, ctx)
}

async fn read(ctx: &ToolContext, path: &str) -> ToolOutput {
    ReadTool.call(json!({ "file_path": path }), ctx).await
}

async fn edit(ctx: &ToolContext, input: Value) -> ToolOutput {
    NotebookEditTool.call(input, ctx).await
}

/// The 1-based lines of `before` that `after` no longer has as they were.
fn changed_lines(before: &str, after: &str) -> Vec<usize> {
    let diff = similar::TextDiff::from_lines(before, after);
    diff.ops()
        .iter()
        .filter(|op| op.tag() != similar::DiffTag::Equal)
        .flat_map(|op| op.old_range())
        .map(|i| i + 1)
        .collect()
}

/// The 1-based line range of the cell whose id line is `id_line` in `text`.
fn cell_lines(text: &str, id: &str) -> std::ops::RangeInclusive<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.trim() == format!("\"id\": \"{id}\","))
        .unwrap();
    let start = (0..at).rev().find(|&i| lines[i] == "  {").unwrap();
    let end = (at..lines.len())
        .find(|&i| lines[i].starts_with("  }"))
        .unwrap();
    start + 1..=end + 1
}

#[tokio::test]
async fn read_shows_cells_with_ids_and_outputs_then_replace_changes_only_that_cell() {
    let (dir, ctx) = workspace(&[("sales.ipynb", FIXTURE)]);
    let input = json!({"notebook_path": "sales.ipynb", "cell_id": "c9e1f3d0", "new_source": "print(max(sales))"});
    let out = edit(&ctx, input.clone()).await;
    assert!(
        out.is_error && out.content.contains("has not been read yet"),
        "{}",
        out.content
    );

    let shown = read(&ctx, "sales.ipynb").await;
    assert!(!shown.is_error, "{}", shown.content);
    for expected in [
        "sales.ipynb is a Jupyter notebook (nbformat 4.5, python) with 6 cells",
        "<cell id=\"3f1c2a9e\" type=\"markdown\">\n# Sales analysis\n\nLoads",
        "<cell id=\"c9e1f3d0\" type=\"code\" execution_count=\"2\">\nprint(f\"mean: {statistics.mean(sales)}\")\n",
        "<output cell=\"c9e1f3d0\" type=\"stream\" name=\"stdout\">\nmean: 128.375\nstdev: 23.41\n</output>",
        "<output cell=\"5b8e7c44\" type=\"execute_result\">\n('Q4', 151.75)\n</output>",
        "<Figure size 640x480 with 1 Axes>\n[image/png image, 1 KB of base64, not shown]",
    ] {
        assert!(
            shown.content.contains(expected),
            "{expected}\n---\n{}",
            shown.content
        );
    }
    assert!(
        !shown.content.contains("iVBORw0"),
        "the image's base64 is not shown"
    );

    let out = edit(&ctx, input).await;
    assert_eq!(
        out,
        ToolOutput::ok(
            "Updated cell c9e1f3d0 (code) of sales.ipynb. Its outputs and execution count were cleared (nothing was run)."
        )
    );
    let after = std::fs::read_to_string(dir.path().join("sales.ipynb")).unwrap();
    let cell = cell_lines(FIXTURE, "c9e1f3d0");
    let changed = changed_lines(FIXTURE, &after);
    assert!(!changed.is_empty());
    assert!(
        changed.iter().all(|l| cell.contains(l)),
        "{changed:?} outside {cell:?}"
    );
    let mut expected: Value = serde_json::from_str(FIXTURE).unwrap();
    expected["cells"][2]["source"] = json!(["print(max(sales))"]);
    expected["cells"][2]["outputs"] = json!([]);
    expected["cells"][2]["execution_count"] = Value::Null;
    assert_eq!(serde_json::from_str::<Value>(&after).unwrap(), expected);
    assert!(after.ends_with("}\n"));

    // The run wrote it, so it may be edited again without another Read.
    let out = edit(&ctx, json!({"notebook_path": "sales.ipynb", "cell_id": "cell-0", "new_source": "# Sales", "cell_type": "markdown"})).await;
    assert!(!out.is_error, "{}", out.content);
}

#[tokio::test]
async fn insert_after_a_cell_or_first_and_delete() {
    let (dir, ctx) = workspace(&[("sales.ipynb", FIXTURE)]);
    read(&ctx, "sales.ipynb").await;
    let out = edit(&ctx, json!({"notebook_path": "sales.ipynb", "cell_id": "a7d04b12", "new_source": "sales.sort()\n", "cell_type": "code", "edit_mode": "insert"})).await;
    assert!(
        out.content.starts_with("Inserted a new code cell "),
        "{}",
        out.content
    );
    assert!(
        out.content
            .ends_with(" into sales.ipynb after cell a7d04b12.")
    );
    let out = edit(&ctx, json!({"notebook_path": "sales.ipynb", "new_source": "Notes", "cell_type": "markdown", "edit_mode": "insert"})).await;
    assert!(out.content.ends_with("at the start."), "{}", out.content);
    let out = edit(&ctx, json!({"notebook_path": "sales.ipynb", "cell_id": "0d4f6a83", "new_source": "", "edit_mode": "delete"})).await;
    assert_eq!(
        out.content,
        "Deleted cell 0d4f6a83 (markdown) from sales.ipynb; 7 cells remain."
    );
    let after = std::fs::read_to_string(dir.path().join("sales.ipynb")).unwrap();
    let json: Value = serde_json::from_str(&after).unwrap();
    let cells = json["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 7);
    assert_eq!(cells[0]["source"], json!(["Notes"]));
    assert_eq!(cells[3]["source"], json!(["sales.sort()\n"]));
    assert_eq!(cells[3]["outputs"], json!([]));
    assert!(cells[3]["id"].as_str().unwrap().len() == 8);
    // Untouched cells are byte for byte as they were.
    let untouched = &FIXTURE[FIXTURE
        .find("  {\n   \"cell_type\": \"code\",\n   \"execution_count\": 2")
        .unwrap()
        ..FIXTURE
            .find("  {\n   \"cell_type\": \"markdown\",\n   \"id\": \"0d4f6a83\"")
            .unwrap()];
    assert!(after.contains(untouched.trim_end().trim_end_matches(',')));
}

/// A notebook another tool wrote: indent 2, keys unsorted, string sources, ids by
/// position only (nbformat 4.4), no final newline.
const OTHER: &str = "{\n  \"nbformat\": 4,\n  \"nbformat_minor\": 4,\n  \"metadata\": {\"x\": 1e-05},\n  \"cells\": [\n    {\n      \"cell_type\": \"code\",\n      \"source\": \"a = 1\",\n      \"metadata\": {},\n      \"outputs\": [\n        {\n          \"output_type\": \"error\",\n          \"ename\": \"NameError\",\n          \"evalue\": \"name 'b' is not defined\",\n          \"traceback\": [\"\\u001b[0;31mNameError\\u001b[0m: name 'b'\"]\n        }\n      ],\n      \"execution_count\": 3\n    },\n    {\n      \"cell_type\": \"markdown\",\n      \"source\": \"text\",\n      \"metadata\": {}\n    }\n  ]\n}";

#[tokio::test]
async fn another_layout_is_kept_indent_key_order_and_no_final_newline() {
    let (dir, ctx) = workspace(&[("o.ipynb", OTHER)]);
    let shown = read(&ctx, "o.ipynb").await;
    assert!(
        shown.content.contains("<cell id=\"cell-0\" type=\"code\" execution_count=\"3\">\na = 1\n</cell>\n<output cell=\"cell-0\" type=\"error\">\nNameError: name 'b'\nNameError: name 'b' is not defined\n</output>"),
        "{}",
        shown.content
    );
    let out = edit(
        &ctx,
        json!({"notebook_path": "o.ipynb", "cell_id": "cell-0", "new_source": "a = 2\nb = a"}),
    )
    .await;
    assert_eq!(
        out.content,
        "Updated cell cell-0 (code) of o.ipynb. Its outputs and execution count were cleared (nothing was run)."
    );
    let after = std::fs::read_to_string(dir.path().join("o.ipynb")).unwrap();
    let expected = "{\n  \"nbformat\": 4,\n  \"nbformat_minor\": 4,\n  \"metadata\": {\"x\": 1e-05},\n  \"cells\": [\n    {\n      \"cell_type\": \"code\",\n      \"source\": \"a = 2\\nb = a\",\n      \"metadata\": {},\n      \"outputs\": [],\n      \"execution_count\": null\n    },\n    {\n      \"cell_type\": \"markdown\",\n      \"source\": \"text\",\n      \"metadata\": {}\n    }\n  ]\n}";
    assert_eq!(after, expected);
    let out = edit(&ctx, json!({"notebook_path": "o.ipynb", "cell_id": "cell-1", "new_source": "x", "cell_type": "code", "edit_mode": "insert"})).await;
    assert_eq!(
        out.content,
        "Inserted a new code cell cell-2 into o.ipynb after cell cell-1."
    );
    let after = std::fs::read_to_string(dir.path().join("o.ipynb")).unwrap();
    assert!(after.ends_with("    {\n      \"cell_type\": \"code\",\n      \"source\": \"x\",\n      \"metadata\": {},\n      \"outputs\": [],\n      \"execution_count\": null\n    }\n  ]\n}"), "{after}");
}

#[tokio::test]
async fn errors_tell_the_model_what_to_do() {
    let bad = "{\"cells\": [}";
    let deep = format!(
        "{{\"cells\": {}{}}}",
        "[".repeat(20_000),
        "]".repeat(20_000)
    );
    let (dir, ctx) = workspace(&[
        ("n.ipynb", OTHER),
        ("notes.txt", "x"),
        ("bad.ipynb", bad),
        ("deep.ipynb", &deep),
        ("plain.ipynb", "{\"a\": 1}"),
    ]);
    for name in [
        "n.ipynb",
        "notes.txt",
        "bad.ipynb",
        "deep.ipynb",
        "plain.ipynb",
    ] {
        read(&ctx, name).await;
    }
    let cases = [
        (
            json!({"notebook_path": "notes.txt", "cell_id": "x", "new_source": ""}),
            "notes.txt is not a Jupyter notebook: NotebookEdit only edits .ipynb files",
        ),
        (
            json!({"notebook_path": "gone.ipynb", "cell_id": "x", "new_source": ""}),
            "Notebook file does not exist. (path: gone.ipynb",
        ),
        (
            json!({"notebook_path": "bad.ipynb", "cell_id": "x", "new_source": ""}),
            "bad.ipynb is not valid JSON (expected a JSON value at line 1, column 12), so NotebookEdit cannot edit it",
        ),
        (
            json!({"notebook_path": "deep.ipynb", "cell_id": "x", "new_source": ""}),
            "nested deeper than 256 levels",
        ),
        (
            json!({"notebook_path": "plain.ipynb", "cell_id": "x", "new_source": ""}),
            "plain.ipynb is JSON but not a Jupyter notebook: it has no \"cells\" list",
        ),
        (
            json!({"notebook_path": "n.ipynb", "new_source": "x", "edit_mode": "insert"}),
            "cell_type is required when edit_mode is insert",
        ),
        (
            json!({"notebook_path": "n.ipynb", "new_source": "x"}),
            "cell_id is required to replace a cell",
        ),
        (
            json!({"notebook_path": "n.ipynb", "new_source": "", "edit_mode": "delete"}),
            "cell_id is required to delete a cell",
        ),
        (
            json!({"notebook_path": "n.ipynb", "cell_id": "abc", "new_source": ""}),
            "Cell \"abc\" not found in n.ipynb. Its 2 cells are: cell-0, cell-1.",
        ),
        (
            json!({"notebook_path": "n.ipynb", "cell_id": "cell-2", "new_source": ""}),
            "(cell-N counts from 0: the last cell is cell-1)",
        ),
        (
            json!({"notebook_path": ".", "cell_id": "x", "new_source": ""}),
            "not a Jupyter notebook",
        ),
    ];
    for (input, expected) in cases {
        let out = edit(&ctx, input.clone()).await;
        assert!(out.is_error, "{input}");
        assert!(out.content.contains(expected), "{input}: {}", out.content);
    }
    assert_eq!(
        std::fs::read_to_string(dir.path().join("n.ipynb")).unwrap(),
        OTHER
    );

    // Changed on disk since it was read: read it again.
    let file = dir.path().join("n.ipynb");
    std::fs::write(&file, OTHER.replace("a = 1", "a = 9")).unwrap();
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
    std::fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_modified(later)
        .unwrap();
    let out = edit(
        &ctx,
        json!({"notebook_path": "n.ipynb", "cell_id": "cell-0", "new_source": "a = 2"}),
    )
    .await;
    assert!(
        out.is_error && out.content.contains("modified since it was read"),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn read_pages_through_cells_and_shows_broken_notebooks_as_text() {
    let many = format!(
        "{{\"cells\": [{}], \"nbformat\": 4, \"nbformat_minor\": 5}}",
        (0..5)
            .map(|i| format!("{{\"cell_type\": \"code\", \"id\": \"c{i}\", \"metadata\": {{}}, \"outputs\": [], \"execution_count\": null, \"source\": \"x = {i}\"}}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let (_dir, ctx) = workspace(&[
        ("m.ipynb", &many),
        ("bad.ipynb", "{\"cells\": [}"),
        ("e.ipynb", "{\"cells\": []}"),
    ]);
    let out = ReadTool
        .call(
            json!({"file_path": "m.ipynb", "offset": 2, "limit": 2}),
            &ctx,
        )
        .await;
    assert!(out.content.contains("<cell id=\"c1\""), "{}", out.content);
    assert!(out.content.contains("<cell id=\"c2\""));
    assert!(!out.content.contains("<cell id=\"c3\"") && !out.content.contains("<cell id=\"c0\""));
    assert!(out.content.contains("(Showing cells 2-3 of 5. For a notebook, offset and limit count cells: call Read with offset=4"), "{}", out.content);
    let out = ReadTool
        .call(json!({"file_path": "m.ipynb", "offset": 9}), &ctx)
        .await;
    assert!(
        !out.is_error && out.content.contains("only 5 cells"),
        "{}",
        out.content
    );
    let out = read(&ctx, "bad.ipynb").await;
    assert!(!out.is_error);
    assert!(
        out.content.starts_with("1\t{\"cells\": [}"),
        "{}",
        out.content
    );
    assert!(
        out.content.contains("bad.ipynb is not valid JSON"),
        "{}",
        out.content
    );
    let out = read(&ctx, "e.ipynb").await;
    assert!(
        out.content.contains("with 0 cells") && out.content.contains("no cells"),
        "{}",
        out.content
    );
    let out = read(&ctx, "missing.ipynb").await;
    assert!(out.is_error && out.content.starts_with("File does not exist."));
}

#[tokio::test]
async fn read_of_a_hostile_notebook_stays_bounded() {
    let output = "{\"output_type\": \"stream\", \"name\": \"stdout\", \"text\": \"xxxxxxxxxx\"}";
    let outputs = vec![output; 50_000].join(", ");
    let long_id = "i".repeat(1_000_000);
    let text = format!(
        "{{\"cells\": [{{\"cell_type\": \"code\", \"id\": \"{long_id}\", \"source\": \"\"}}, {{\"cell_type\": \"code\", \"id\": \"a\", \"source\": \"{}\", \"outputs\": [{outputs}]}}]}}",
        "y".repeat(200_000)
    );
    let (_dir, ctx) = workspace(&[("h.ipynb", &text)]);
    let out = read(&ctx, "h.ipynb").await;
    assert!(!out.is_error);
    assert!(out.content.len() < 450_000, "{}", out.content.len());
    assert!(out.content.contains("characters omitted"));
    let out = ReadTool
        .call(json!({"file_path": "h.ipynb", "offset": 2}), &ctx)
        .await;
    assert!(out.content.len() < 450_000, "{}", out.content.len());
    assert!(out.content.contains("<cell id=\"a\" type=\"code\">\nyyy"));
    assert!(out.content.contains("characters omitted"));
    assert!(
        out.content.contains("more outputs of cell a not shown]"),
        "{}",
        &out.content[out.content.len() - 300..]
    );
}

#[test]
fn governed_by_edit_rules_and_not_read_only() {
    let facts = NotebookEditTool.facts();
    assert!(!facts.read_only);
    assert_eq!(facts.path_family.as_deref(), Some("Edit"));
    let judged = NotebookEditTool.judged(json!({"notebook_path": "nb/a.ipynb", "new_source": ""}));
    assert_eq!(judged.subject, Subject::Path("nb/a.ipynb".into()));
}
