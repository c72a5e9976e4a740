//! Glob: find files by name pattern, newest first, respecting .gitignore.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use ignore::WalkState;

use schemars::JsonSchema;
use serde::Deserialize;

use super::search_walk::{Batch, collected, regular_file, search_root, walker};
use super::{About, ToolContext, ToolError, ToolInput, TypedTool, blocking};
use crate::policy::Subject;
use crate::workspace::Roots;
use crate::workspace::paths::relative_to;

/// Most paths returned by one call.
pub(crate) const MAX_RESULTS: usize = 100;

#[derive(Clone, Copy)]
pub(crate) struct GlobTool;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Input {
    /// The glob pattern to match file paths against, e.g. "**/*.rs".
    pattern: String,
    /// The directory to search in (default: the workspace root).
    path: Option<String>,
}

impl ToolInput for Input {
    fn subject(&self) -> Subject {
        Subject::Path(self.path.clone().unwrap_or_else(|| ".".to_string()))
    }
}

const DESCRIPTION: &str = "Finds files whose path matches a glob pattern, fast, in any size of codebase.

Usage:
- pattern is matched against each file's path relative to the search directory: `**/*.rs` finds Rust files at any depth, `src/*.ts` only directly in src/, `*.md` only at the top level. Brace sets work: `**/*.{ts,tsx}`.
- path is the directory to search (default: the workspace root). Omit it rather than passing \"undefined\" or \"null\".
- Results are paths relative to the search directory, most recently modified first, at most 100 (a note says when there are more: narrow the pattern).
- Files ignored by .gitignore and the .git directory are skipped; hidden files are included.
- To search file contents, use Grep. For open-ended searches needing several rounds, combine Glob and Grep calls.";

impl TypedTool for GlobTool {
    type Input = Input;
    const ABOUT: About = About::reads("Glob", DESCRIPTION).paths_governed_by("Read");

    async fn run(&self, input: Input, ctx: &ToolContext) -> Result<String, ToolError> {
        let root = search_root(ctx, input.path.as_deref())?;
        if !root.is_dir {
            return Err(ToolError::Failed(format!(
                "{} is a file, not a directory. Give a directory as path (or Read the file).",
                root.shown
            )));
        }
        let root = root.path;
        // An absolute pattern under the root is taken relative to it.
        let pattern = match relative_to(&root, Path::new(&input.pattern)) {
            Some(rel) if Path::new(&input.pattern).is_absolute() && !rel.is_empty() => rel,
            _ => input.pattern.clone(),
        };
        let glob = match GlobBuilder::new(&pattern)
            .literal_separator(true)
            .empty_alternates(true)
            .build()
        {
            Ok(glob) => glob,
            Err(e) => return Err(ToolError::Failed(format!("Invalid glob pattern: {e}"))),
        };
        // A set, not a single matcher: a set picks a fast strategy (extension, suffix,
        // literal) where the pattern allows, instead of always running a regex.
        let matcher = match GlobSetBuilder::new().add(glob).build() {
            Ok(set) => set,
            Err(e) => return Err(ToolError::Failed(format!("Invalid glob pattern: {e}"))),
        };
        let walk_root = root.clone();
        let hidden = ctx.hidden_for(Self::ABOUT.name);
        let roots = std::sync::Arc::clone(&ctx.roots);
        let mut found = blocking(move || find(&walk_root, &matcher, hidden, &roots)).await?;
        if found.is_empty() {
            return Ok("No files found".to_string());
        }
        let total = found.len();
        let newest_first = |a: &Found, b: &Found| {
            b.1.cmp(&a.1).then_with(|| {
                a.0.as_os_str()
                    .as_encoded_bytes()
                    .cmp(b.0.as_os_str().as_encoded_bytes())
            })
        };
        // Only the first MAX_RESULTS are shown: partition around them, sort just those.
        if total > MAX_RESULTS {
            found.select_nth_unstable_by(MAX_RESULTS, newest_first);
            found.truncate(MAX_RESULTS);
        }
        found.sort_unstable_by(newest_first);
        let mut lines: Vec<String> = found
            .iter()
            .map(|(path, _)| {
                let rel = path.strip_prefix(&root).unwrap_or(path);
                rel.to_string_lossy().into_owned()
            })
            .collect();
        if total > MAX_RESULTS {
            lines.push(format!(
                "(Results are truncated: showing the first {MAX_RESULTS} of {total} files. Use a more specific pattern or path.)"
            ));
        }
        Ok(lines.join("\n"))
    }
}

/// A matching file and its modification time.
type Found = (PathBuf, SystemTime);

/// Every file under `root` (ignore rules applied) whose path relative to `root` matches,
/// with its modification time. The walk runs on every core; only matches are stat'ed,
/// beneath the task's roots: a match whose path no longer resolves there without a
/// symlink (a directory swapped for a link mid-walk) is left out.
fn find(
    root: &Path,
    matcher: &GlobSet,
    hidden: Arc<crate::policy::HiddenFilter>,
    roots: &Roots,
) -> Vec<Found> {
    let shared: Arc<Mutex<Vec<Found>>> = Arc::default();
    walker(root, hidden).build_parallel().run(|| {
        let mut batch = Batch::new(&shared);
        Box::new(move |entry| {
            let Some(entry) = regular_file(entry) else {
                return WalkState::Continue;
            };
            let Ok(rel) = entry.path().strip_prefix(root) else {
                return WalkState::Continue;
            };
            if matcher.is_match(rel) {
                let Ok(meta) = roots.metadata(entry.path()) else {
                    return WalkState::Continue;
                };
                let mtime = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                batch.found.push((entry.into_path(), mtime));
            }
            WalkState::Continue
        })
    });
    collected(shared)
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::tools::{CallJson, ToolOutput};
    use std::time::Duration;

    fn touch(root: &Path, rel: &str, age_secs: u64) {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, rel).unwrap();
        let when = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000 - age_secs);
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(when)
            .unwrap();
    }

    async fn glob(ctx: &ToolContext, input: Value) -> ToolOutput {
        GlobTool.call(input, ctx).await
    }

    #[tokio::test]
    async fn newest_first_relative_to_root_and_gitignore_respected() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        touch(root, "src/old.rs", 300);
        touch(root, "src/new.rs", 10);
        touch(root, "src/b/mid.rs", 100);
        touch(root, "target/gen.rs", 1);
        touch(root, ".git/hook.rs", 1);
        touch(root, ".hidden/h.rs", 200);
        std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
        let ctx = ToolContext::new(root.canonicalize().unwrap());
        let out = glob(&ctx, json!({"pattern": "**/*.rs"})).await;
        assert_eq!(
            out.content,
            "src/new.rs\nsrc/b/mid.rs\n.hidden/h.rs\nsrc/old.rs"
        );
        let out = glob(&ctx, json!({"pattern": "*.rs", "path": "src"})).await;
        assert_eq!(out.content, "new.rs\nold.rs");
        let out = glob(&ctx, json!({"pattern": "src/{new,old}.rs"})).await;
        assert_eq!(out.content, "src/new.rs\nsrc/old.rs");
    }

    #[tokio::test]
    async fn empty_missing_and_capped() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..105 {
            touch(dir.path(), &format!("f{i:03}.txt"), 1000);
        }
        let ctx = ToolContext::new(dir.path().canonicalize().unwrap());
        let out = glob(&ctx, json!({"pattern": "*.txt"})).await;
        assert_eq!(out.content.lines().count(), 101);
        assert!(out.content.starts_with("f000.txt\n"));
        assert!(out.content.contains("showing the first 100 of 105"));
        let out = glob(&ctx, json!({"pattern": "*.none"})).await;
        assert_eq!(out, ToolOutput::ok("No files found"));
        let out = glob(&ctx, json!({"pattern": "*", "path": "missing"})).await;
        assert!(out.is_error && out.content.contains("does not exist"));
        let out = glob(&ctx, json!({"pattern": "a[", "path": "."})).await;
        assert!(out.is_error && out.content.contains("Invalid glob"));
    }

    #[tokio::test]
    async fn the_newest_hundred_of_many_in_order() {
        let dir = tempfile::tempdir().unwrap();
        // Names run against ages, so path order and mtime order disagree; two share an
        // age, so the tie is broken by path.
        for i in 0..150u64 {
            touch(dir.path(), &format!("d{}/f{i:03}.rs", i % 7), 10 * i);
        }
        touch(dir.path(), "d0/tie.rs", 10 * 50);
        let ctx = ToolContext::new(dir.path().canonicalize().unwrap());
        let out = glob(&ctx, json!({"pattern": "**/*.rs"})).await;
        let lines: Vec<&str> = out.content.lines().collect();
        let mut expected: Vec<String> = (0..50).map(|i| format!("d{}/f{i:03}.rs", i % 7)).collect();
        expected.push("d0/tie.rs".to_string());
        expected.push("d1/f050.rs".to_string());
        expected.extend((51..99).map(|i| format!("d{}/f{i:03}.rs", i % 7)));
        assert_eq!(lines[..100], expected[..100]);
        assert!(
            lines[100].contains("showing the first 100 of 151"),
            "{}",
            lines[100]
        );
    }

    #[test]
    fn subject_defaults_to_the_workspace_root() {
        assert_eq!(
            GlobTool.judged(json!({"pattern": "*"})).subject,
            Subject::Path(".".into())
        );
        assert_eq!(
            GlobTool
                .judged(json!({"pattern": "*", "path": "src"}))
                .subject,
            Subject::Path("src".into())
        );
    }
}
