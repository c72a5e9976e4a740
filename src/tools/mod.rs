//! Built-in tools. Each tool lives in its own file as a [`TypedTool`]; the [`registry`]
//! offers them (and tools found at run time, behind the same [`Tool`] trait) to the
//! model, validates every input against the tool's JSON Schema and parses it once into
//! the [`ToolCall`] the policy judges and the dispatcher runs.
//!
//! A tool never prints and never panics on bad input: what it has to say goes back to the
//! model, and a fault of drover's own is reported apart ([`ToolError`]).

pub(crate) mod agent;
pub(crate) mod background;
pub(crate) mod bash;
pub(crate) mod bash_output;
mod context;
pub(crate) mod edit;
mod edit_apply;
mod edit_hints;
pub(crate) mod glob;
pub(crate) mod grep;
mod grep_output;
mod grep_search;
pub(crate) mod kill_shell;
pub(crate) mod ls;
pub(crate) mod multi_edit;
mod notebook;
pub(crate) mod notebook_edit;
mod notebook_json;
mod notebook_read;
#[cfg(test)]
mod policy_facts_tests;
#[cfg(test)]
mod policy_table_gaps_tests;
#[cfg(test)]
mod policy_table_tests;
pub(crate) mod read;
mod read_window;
pub(crate) mod recorded;
pub(crate) mod registry;
#[cfg(test)]
mod schema_tests;
mod search_walk;
pub(crate) mod shell_state;
pub(crate) mod skill;
mod text;
pub(crate) mod todo;
pub(crate) mod todo_write;
mod tool;
mod typed;
pub(crate) mod web_fetch;
pub(crate) mod write;

use std::path::PathBuf;
use std::sync::Arc;

pub(crate) use background::BackgroundShells;
pub(crate) use context::ToolContext;
pub(crate) use registry::{Registry, RegistryError, schema_validator};
pub(crate) use shell_state::ShellState;
pub(crate) use todo::{Todo, TodoList};
pub(crate) use tool::blocking;
pub(crate) use tool::{InternalFault, Tool, ToolCall, ToolError, ToolOutput, run_call};
#[cfg(test)]
pub(crate) use typed::CallJson;
pub(crate) use typed::{About, ToolInput, TypedTool};
pub(crate) use web_fetch::{NoAnswer, PageAnswerer, WebAccess};

/// Every built-in tool, in the order they are offered to the model.
pub(crate) fn builtin() -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(read::ReadTool),
        Arc::new(write::WriteTool),
        Arc::new(edit::EditTool),
        Arc::new(multi_edit::MultiEditTool),
        Arc::new(notebook_edit::NotebookEditTool),
        Arc::new(glob::GlobTool),
        Arc::new(grep::GrepTool),
        Arc::new(ls::LsTool),
        Arc::new(bash::BashTool),
        Arc::new(bash_output::BashOutputTool),
        Arc::new(kill_shell::KillShellTool),
        Arc::new(todo_write::TodoWriteTool),
        Arc::new(web_fetch::WebFetchTool),
    ]
}

/// The path a `file_path` input names: the one the policy judged for this call, or
/// (a tool called without the policy, as in unit tests and `drover tool`) the input
/// resolved the way the policy resolves it. Either way symlinks are resolved here, once;
/// the tool then acts beneath [`ToolContext::roots`] without following any.
pub(crate) fn resolve_file_path(ctx: &ToolContext, raw: &str) -> Result<PathBuf, ToolError> {
    judged_path(ctx, raw).map_err(|e| ToolError::Failed(format!("Invalid file_path: {e}")))
}

/// The file a `file_path` input names (see [`resolve_file_path`]) and how the model is
/// shown it (relative to the workspace when inside it).
pub(crate) fn file_target(ctx: &ToolContext, raw: &str) -> Result<(PathBuf, String), ToolError> {
    let path = resolve_file_path(ctx, raw)?;
    let shown = text::display_path(&ctx.workspace, &path);
    Ok((path, shown))
}

/// Write `bytes` to the judged `path` the way every file tool writes: atomically, beneath
/// the task's roots, and recorded as this run's own content (so it may be edited next
/// without a Read).
pub(crate) async fn write_file(
    ctx: &ToolContext,
    path: &std::path::Path,
    shown: &str,
    bytes: Vec<u8>,
) -> Result<(), ToolError> {
    let target = path.to_path_buf();
    let roots = Arc::clone(&ctx.roots);
    let (mtime, bytes) = blocking(move || {
        let written = roots.write_atomic(&target, &bytes);
        (written, bytes)
    })
    .await?;
    let mtime = mtime.map_err(|e| ToolError::io(format!("Could not write {shown}"), e))?;
    ctx.files.record(path, &bytes, true, mtime);
    Ok(())
}

/// The judged path of a call naming `raw` (see [`resolve_file_path`]).
pub(crate) fn judged_path(
    ctx: &ToolContext,
    raw: &str,
) -> Result<PathBuf, crate::workspace::paths::PathError> {
    if let Some(target) = &ctx.target {
        return Ok(target.clone());
    }
    let lexical = crate::workspace::paths::resolve(&ctx.workspace, raw)?;
    Ok(crate::workspace::paths::canonicalize_for_write(&lexical).unwrap_or(lexical))
}
