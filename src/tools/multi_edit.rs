//! MultiEdit: several Edit replacements in one file, all or nothing.

use schemars::JsonSchema;
use serde::Deserialize;
use similar::TextDiff;

use super::edit_apply::{Loaded, Replacement, apply, load, missing_file, write};
use super::text::{Encoding, numbered_snippet};
use super::{About, ToolContext, ToolError, ToolInput, TypedTool, file_target};
use crate::policy::Subject;

/// Lines of context shown around each changed region in the success message.
const SNIPPET_CONTEXT: usize = 3;
/// At most this many changed regions are shown in the success message.
const MAX_REGIONS: usize = 10;

#[derive(Clone, Copy)]
pub(crate) struct MultiEditTool;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Input {
    /// The file to edit, absolute or relative to the workspace root.
    file_path: String,
    /// Replacements applied in order; all succeed or none is written.
    #[schemars(length(min = 1))]
    edits: Vec<EditInput>,
}

impl ToolInput for Input {
    fn subject(&self) -> Subject {
        Subject::Path(self.file_path.clone())
    }
}

/// One replacement of a MultiEdit.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct EditInput {
    /// The exact text to replace.
    old_string: String,
    /// The text to replace it with.
    new_string: String,
    /// Replace every occurrence (default false).
    #[serde(default)]
    replace_all: bool,
}

const DESCRIPTION: &str = "Makes several replacements in one file in a single call: all of them or none.

Usage:
- Each edit has Edit's rules: old_string must match the file exactly (copy it from Read's output WITHOUT the line-number prefix), must occur once unless replace_all is true, and must differ from new_string; new_string is inserted literally.
- Edits apply in order, each to the result of the ones before it: an edit must match the text as earlier edits left it, and must not rely on text an earlier edit removed.
- If any edit fails, nothing is written: the error names the edit (1-based) and why. Fix it and send all the edits again.
- You must Read the file in this conversation before editing it; if it changed on disk since, Read it again.
- The file's line endings (LF or CRLF), byte-order mark and final newline are kept.
- To create a file, make the first edit's old_string empty (the file must not exist or be empty).
- Prefer MultiEdit over several Edit calls for the same file; use Edit for a single change.";

impl TypedTool for MultiEditTool {
    type Input = Input;
    const ABOUT: About = About::writes("MultiEdit", DESCRIPTION).paths_governed_by("Edit");

    async fn run(&self, input: Input, ctx: &ToolContext) -> Result<String, ToolError> {
        let (path, shown) = file_target(ctx, &input.file_path)?;
        let Some(first) = input.edits.first() else {
            return Err(ToolError::Failed(
                "edits is empty; give at least one edit.".to_string(),
            ));
        };
        let (original, encoding, created) = match load(ctx, &path, &shown, "MultiEdit").await? {
            Some(Loaded { decoded }) => (decoded.text, decoded.encoding, false),
            None if first.old_string.is_empty() => {
                (String::new(), Encoding::Utf8 { bom: false }, true)
            }
            None => return Err(missing_file(ctx, &shown)),
        };
        let total = input.edits.len();
        let mut content = original.clone();
        let mut replaced = 0;
        for (index, edit) in input.edits.iter().enumerate() {
            let replacement = Replacement {
                old: &edit.old_string,
                new: &edit.new_string,
                replace_all: edit.replace_all,
            };
            match apply(&content, replacement) {
                Ok(applied) => {
                    content = applied.text;
                    replaced += applied.count;
                }
                Err(message) => {
                    let order = if index > 0 {
                        format!(
                            " Edits apply in order: edit {} was matched against the file as edits 1-{index} left it.",
                            index + 1
                        )
                    } else {
                        String::new()
                    };
                    return Err(ToolError::Failed(format!(
                        "Edit {} of {total} failed; no edit was applied and {shown} is unchanged.{order}\n{message}",
                        index + 1
                    )));
                }
            }
        }
        write(ctx, &path, &shown, &content, encoding).await?;
        if created {
            return Ok(format!(
                "File created successfully at: {shown} (applied {total} edits)."
            ));
        }
        Ok(format!(
            "The file {shown} has been updated: {total} edits, {replaced} replacements. The changed regions as Read would show them:\n{}",
            changed_regions(&original, &content)
        ))
    }
}

/// The changed regions of `after`, numbered as Read shows them, separated by `...`.
fn changed_regions(before: &str, after: &str) -> String {
    let diff = TextDiff::from_lines(before, after);
    let groups = diff.grouped_ops(SNIPPET_CONTEXT);
    let mut parts: Vec<String> = groups
        .iter()
        .take(MAX_REGIONS)
        .filter_map(|ops| {
            let first = ops.first()?.new_range().start;
            let last = ops.last()?.new_range().end;
            // Lines are 1-based; a pure deletion still shows its surrounding context.
            Some(numbered_snippet(after, first + 1, last.max(first + 1)))
        })
        .collect();
    if groups.len() > MAX_REGIONS {
        parts.push(format!(
            "[... {} more changed regions not shown ...]",
            groups.len() - MAX_REGIONS
        ));
    }
    parts.join("\n...\n")
}

#[cfg(test)]
#[path = "multi_edit_tests.rs"]
mod tests;
