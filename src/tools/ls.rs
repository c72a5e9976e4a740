//! LS: list one directory, the way a model needs it: sorted, kinds marked, ignored
//! entries left out.

use std::path::{Path, PathBuf};

use globset::{Glob, GlobSet, GlobSetBuilder};
use schemars::JsonSchema;
use serde::Deserialize;

use super::search_walk::search_root;
use super::{About, ToolContext, ToolError, ToolInput, TypedTool, blocking};
use crate::policy::Subject;

/// At most this many entries are listed.
pub(crate) const MAX_ENTRIES: usize = 1000;

#[derive(Clone, Copy)]
pub(crate) struct LsTool;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Input {
    /// The directory to list, absolute or relative to the workspace root.
    path: String,
    /// Glob patterns of entry names to leave out.
    #[serde(default)]
    ignore: Vec<String>,
}

impl ToolInput for Input {
    fn subject(&self) -> Subject {
        Subject::Path(self.path.clone())
    }
}

const DESCRIPTION: &str = "Lists the entries of one directory (not recursive).

Usage:
- path is required: a directory, absolute or relative to the workspace root (use \".\" for the root).
- Entries are sorted by name. Directories end with /, symbolic links are shown as `name -> target`.
- Entries ignored by .gitignore (and .ignore) files, and the .git directory, are left out; other hidden files are listed.
- ignore is an optional list of glob patterns matched against entry names (e.g. [\"*.log\", \"node_modules\"]) to leave out more.
- At most 1000 entries are listed; a note says when there are more. To find files by name across directories use Glob; to search contents use Grep.
- A path that does not exist, or is a file, is an error.";

impl TypedTool for LsTool {
    type Input = Input;
    const ABOUT: About = About::reads("LS", DESCRIPTION).paths_governed_by("Read");

    async fn run(&self, input: Input, ctx: &ToolContext) -> Result<String, ToolError> {
        let ignore = ignore_set(&input.ignore)?;
        let root = search_root(ctx, Some(&input.path))?;
        if !root.is_dir {
            return Err(ToolError::Failed(format!(
                "{} is a file, not a directory. Use Read to see its content.",
                root.shown
            )));
        }
        let (path, shown) = (root.path, root.shown);
        let dir = path.clone();
        let hidden = ctx.hidden_for(Self::ABOUT.name);
        let roots = std::sync::Arc::clone(&ctx.roots);
        let (entries, total) = blocking(move || list(&dir, &ignore, hidden, &roots))
            .await?
            .map_err(|e| ToolError::io(format!("Cannot list {shown}"), e))?;
        let heading = match crate::workspace::paths::relative_to(&ctx.workspace, &path) {
            Some(rel) if rel.is_empty() => "./".to_string(),
            Some(rel) => format!("{rel}/"),
            None => format!("{}/", path.display()),
        };
        if entries.is_empty() {
            return Ok(format!("{heading} is empty (or every entry is ignored)."));
        }
        let mut text = format!("{heading}\n{}", entries.join("\n"));
        if total > entries.len() {
            text.push_str(&format!(
                "\n[{total} entries in total; only the first {MAX_ENTRIES} are listed. Use Glob with a pattern, or the ignore parameter, to narrow it down.]"
            ));
        }
        Ok(text)
    }
}

/// The globs of `patterns`, or the error for the model.
fn ignore_set(patterns: &[String]) -> Result<GlobSet, ToolError> {
    let mut builder = GlobSetBuilder::new();
    for pattern in patterns {
        let glob = Glob::new(pattern)
            .map_err(|e| ToolError::Failed(format!("Invalid ignore pattern {pattern:?}: {e}")))?;
        builder.add(glob);
    }
    builder
        .build()
        .map_err(|e| ToolError::Failed(format!("Invalid ignore patterns: {e}")))
}

/// The first [`MAX_ENTRIES`] entries of `dir` (judged: symlinks resolved), rendered and
/// sorted, and how many there were in all. Each entry is looked at again beneath the
/// task's roots; one whose path no longer resolves there without a symlink (its directory
/// swapped for a link mid-listing) is left out.
fn list(
    dir: &Path,
    ignore: &GlobSet,
    hidden: std::sync::Arc<crate::policy::HiddenFilter>,
    roots: &crate::workspace::Roots,
) -> std::io::Result<(Vec<String>, usize)> {
    let root: PathBuf = dir.to_path_buf();
    let walker = super::search_walk::walker(&root, hidden)
        .max_depth(Some(1))
        .build();
    let mut entries: Vec<(String, String)> = Vec::new();
    for entry in walker.flatten() {
        if entry.depth() == 0 {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        if ignore.is_match(&name) {
            continue;
        }
        let Ok(meta) = roots.symlink_metadata(entry.path()) else {
            continue;
        };
        let kind = Some(meta.file_type());
        let rendered = if kind.is_some_and(|k| k.is_symlink()) {
            match roots.read_link(entry.path()) {
                Ok(target) => format!("{name} -> {}", target.display()),
                Err(_) => format!("{name} -> ?"),
            }
        } else if kind.is_some_and(|k| k.is_dir()) {
            format!("{name}/")
        } else {
            name.clone()
        };
        entries.push((name, rendered));
    }
    entries.sort();
    let total = entries.len();
    Ok((
        entries
            .into_iter()
            .take(MAX_ENTRIES)
            .map(|(_, rendered)| rendered)
            .collect(),
        total,
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::tools::{CallJson, Tool, ToolOutput};

    fn ctx(dir: &tempfile::TempDir) -> ToolContext {
        ToolContext::in_temp(dir)
    }

    async fn ls(ctx: &ToolContext, input: Value) -> ToolOutput {
        LsTool.call(input, ctx).await
    }

    #[tokio::test]
    async fn marks_directories_and_links_and_skips_ignored_entries() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src/deep")).unwrap();
        std::fs::create_dir(root.join(".git")).unwrap();
        std::fs::create_dir(root.join("target")).unwrap();
        std::fs::write(root.join(".gitignore"), "target/\n*.log\n").unwrap();
        std::fs::write(root.join("b.txt"), "").unwrap();
        std::fs::write(root.join("debug.log"), "").unwrap();
        std::fs::write(root.join("notes.md"), "").unwrap();
        std::os::unix::fs::symlink("b.txt", root.join("a-link")).unwrap();
        let ctx = ctx(&dir);
        let out = ls(&ctx, json!({"path": "."})).await;
        assert_eq!(
            out,
            ToolOutput::ok("./\n.gitignore\na-link -> b.txt\nb.txt\nnotes.md\nsrc/")
        );
        let out = ls(&ctx, json!({"path": ".", "ignore": ["*.md", "src"]})).await;
        assert_eq!(
            out,
            ToolOutput::ok("./\n.gitignore\na-link -> b.txt\nb.txt")
        );
        let out = ls(&ctx, json!({"path": "src"})).await;
        assert_eq!(out, ToolOutput::ok("src/\ndeep/"));
        let absolute = ctx.workspace.join("src/deep");
        let out = ls(&ctx, json!({"path": absolute.to_str().unwrap()})).await;
        assert!(out.content.contains("is empty"), "{}", out.content);
    }

    #[tokio::test]
    async fn missing_paths_files_and_bad_globs_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f.txt"), "").unwrap();
        let ctx = ctx(&dir);
        let out = ls(&ctx, json!({"path": "nope"})).await;
        assert!(out.is_error && out.content.contains("does not exist"));
        let out = ls(&ctx, json!({"path": "f.txt"})).await;
        assert!(out.is_error && out.content.contains("is a file"));
        let out = ls(&ctx, json!({"path": ".", "ignore": ["a{"]})).await;
        assert!(out.is_error && out.content.contains("Invalid ignore pattern"));
    }

    #[tokio::test]
    async fn long_listings_are_capped_with_a_note() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..MAX_ENTRIES + 5 {
            std::fs::write(dir.path().join(format!("f{i:05}")), "").unwrap();
        }
        let out = ls(&ctx(&dir), json!({"path": "."})).await;
        assert!(!out.is_error);
        assert_eq!(out.content.lines().count(), 1 + MAX_ENTRIES + 1);
        assert!(
            out.content.contains("1005 entries in total"),
            "{}",
            out.content
        );
        assert!(out.content.contains("f00999") && !out.content.contains("f01000"));
    }

    #[test]
    fn read_only_with_the_path_as_subject() {
        assert!(LsTool.facts().read_only);
        assert_eq!(
            LsTool.judged(json!({"path": "src"})).subject,
            Subject::Path("src".into())
        );
    }
}
