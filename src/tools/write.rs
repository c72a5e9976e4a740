//! Write: create a file or replace one the run has read, atomically.

use schemars::JsonSchema;
use serde::Deserialize;

use super::{About, ToolContext, ToolError, ToolInput, TypedTool, file_target, write_file};
use crate::policy::Subject;

#[derive(Clone, Copy)]
pub(crate) struct WriteTool;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Input {
    /// The file to write, absolute or relative to the workspace root.
    file_path: String,
    /// The complete new content of the file.
    content: String,
}

impl ToolInput for Input {
    fn subject(&self) -> Subject {
        Subject::Path(self.file_path.clone())
    }
}

const DESCRIPTION: &str = "Writes a whole file to the workspace, creating it (and any missing parent directories) or replacing it.

Usage:
- file_path may be absolute or relative to the workspace root.
- Overwriting an existing file requires that you Read it first in this conversation; otherwise the call fails. If the file changed on disk since you read it, Read it again.
- The content replaces the entire file, exactly as given. Prefer Edit for changing part of an existing file: it is safer and shows what changed.
- Do not create documentation or README files unless asked to.
- The write is atomic and keeps the file's permission bits.";

impl TypedTool for WriteTool {
    type Input = Input;
    const ABOUT: About = About::writes("Write", DESCRIPTION).paths_governed_by("Edit");

    async fn run(&self, input: Input, ctx: &ToolContext) -> Result<String, ToolError> {
        let (path, shown) = file_target(ctx, &input.file_path)?;
        let existed = match ctx.roots.symlink_metadata(&path) {
            Ok(meta) if meta.is_dir() => {
                return Err(ToolError::Failed(format!(
                    "{shown} is a directory; give the path of a file to write."
                )));
            }
            Ok(_) => true,
            Err(_) => false,
        };
        if existed {
            ctx.files.check_writable(&path, &ctx.roots)?;
        }
        write_file(ctx, &path, &shown, input.content.into_bytes()).await?;
        if existed {
            Ok(format!("The file {shown} has been updated."))
        } else {
            Ok(format!("File created successfully at: {shown}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::read::ReadTool;
    use crate::tools::{CallJson, Tool, ToolOutput};

    fn ctx(dir: &tempfile::TempDir) -> ToolContext {
        ToolContext::in_temp(dir)
    }

    #[tokio::test]
    async fn creates_files_with_parents_and_counts_them_as_read() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ctx(&dir);
        let input = json!({"file_path": "a/b/new.txt", "content": "hello\n"});
        let out = WriteTool.call(input, &ctx).await;
        assert_eq!(
            out,
            ToolOutput::ok("File created successfully at: a/b/new.txt")
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a/b/new.txt")).unwrap(),
            "hello\n"
        );
        // Written by this run, so it may be overwritten without a Read.
        let input = json!({"file_path": "a/b/new.txt", "content": "again"});
        let out = WriteTool.call(input, &ctx).await;
        assert_eq!(
            out,
            ToolOutput::ok("The file a/b/new.txt has been updated.")
        );
    }

    #[tokio::test]
    async fn refuses_to_overwrite_an_unread_file_until_read() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("x.txt"), "precious").unwrap();
        let ctx = ctx(&dir);
        let input = json!({"file_path": "x.txt", "content": "new"});
        let out = WriteTool.call(input.clone(), &ctx).await;
        assert!(out.is_error);
        assert!(
            out.content.contains("has not been read yet"),
            "{}",
            out.content
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("x.txt")).unwrap(),
            "precious"
        );

        ReadTool.call(json!({"file_path": "x.txt"}), &ctx).await;
        let out = WriteTool.call(input, &ctx).await;
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(
            std::fs::read_to_string(dir.path().join("x.txt")).unwrap(),
            "new"
        );
    }

    #[tokio::test]
    async fn refuses_a_file_changed_since_it_was_read() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("x.txt");
        std::fs::write(&file, "one").unwrap();
        let ctx = ctx(&dir);
        ReadTool.call(json!({"file_path": "x.txt"}), &ctx).await;
        std::fs::write(&file, "changed by a person").unwrap();
        let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
        std::fs::File::options()
            .write(true)
            .open(&file)
            .unwrap()
            .set_modified(later)
            .unwrap();
        let out = WriteTool
            .call(json!({"file_path": "x.txt", "content": "mine"}), &ctx)
            .await;
        assert!(out.is_error);
        assert!(out.content.contains("modified since it was read"));
    }

    #[tokio::test]
    async fn a_directory_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ctx(&dir);
        let out = WriteTool
            .call(json!({"file_path": ".", "content": "x"}), &ctx)
            .await;
        assert!(out.is_error);
        assert!(!WriteTool.facts().read_only);
    }
}
