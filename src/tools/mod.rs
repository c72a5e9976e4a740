//! Built-in tools. Each tool lives in its own file; the [`registry`] offers them to the
//! model, validates every input against the tool's JSON Schema and dispatches the call.
//!
//! A tool never prints and never panics on bad input: everything it has to say, errors
//! included, goes back to the model as a [`ToolOutput`].

pub mod background;
pub mod bash;
pub mod bash_output;
pub mod edit;
mod edit_apply;
mod edit_hints;
pub mod glob;
pub mod grep;
mod grep_search;
pub mod kill_shell;
pub mod ls;
pub mod multi_edit;
pub mod read;
mod read_window;
pub mod registry;
#[cfg(test)]
mod schema_tests;
mod search_walk;
pub mod shell_state;
mod text;
pub mod todo;
pub mod todo_write;
pub mod write;

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use crate::policy::{CallFacts, HiddenFilter, Subject, ToolFacts};
use crate::sandbox::exec::CommandEnv;
use crate::workspace::{FileStateCache, Roots};

pub use background::BackgroundShells;
pub use registry::Registry;
pub use shell_state::ShellState;
pub use todo::{Todo, TodoList, TodoStatus};

/// What a tool call sees of the world. Cloning shares the state: every call of one run
/// sees the same files read, working directory, background shells and todo list.
#[derive(Clone)]
pub struct ToolContext {
    /// The workspace root, canonical (symlinks resolved). Relative paths resolve against it.
    pub workspace: PathBuf,
    /// What this run has read, so Edit and Write can refuse blind or stale writes.
    pub files: Arc<FileStateCache>,
    /// Where the next Bash command starts (persists between calls, inside the workspace).
    pub shell: Arc<ShellState>,
    /// Commands started with `run_in_background`; killed when the run ends.
    pub background: Arc<BackgroundShells>,
    /// The model's todo list (TodoWrite), for the run to report.
    pub todo_list: Arc<TodoList>,
    /// How shell commands start: scrubbed environment, private `TMPDIR`, sandbox.
    pub env: Arc<CommandEnv>,
    /// Files the policy denies reading: searches and listings (Grep, Glob, LS) skip them,
    /// so a search of a directory cannot read around a `Read(.env)` deny rule.
    pub hidden: Arc<HiddenFilter>,
    /// Handles on the workspace and the additional directories, opened when the task
    /// starts: every file operation of a tool resolves beneath one of them.
    pub roots: Arc<Roots>,
    /// The path the policy judged for this call (symlinks resolved), set per call by the
    /// dispatcher: the tool acts on exactly this path, so nothing that changes on disk
    /// between the decision and the action can redirect it.
    pub target: Option<PathBuf>,
}

impl ToolContext {
    /// A context whose commands run unsandboxed with a scrubbed environment (tests,
    /// `sandbox: off`); see [`ToolContext::with_env`].
    pub fn new(workspace: PathBuf) -> Self {
        Self::with_env(workspace, CommandEnv::default())
    }

    /// A context whose shell commands start as `env` says.
    pub fn with_env(workspace: PathBuf, env: CommandEnv) -> Self {
        ToolContext {
            env: Arc::new(env),
            shell: Arc::new(ShellState::new(workspace.clone())),
            workspace: workspace.clone(),
            files: Arc::new(FileStateCache::default()),
            background: Arc::new(BackgroundShells::default()),
            todo_list: Arc::new(TodoList::default()),
            hidden: Arc::new(|_: &std::path::Path| false),
            roots: Arc::new(Roots::new(std::slice::from_ref(&workspace))),
            target: None,
        }
    }

    /// The same context with handles on the additional directories too (canonical).
    pub fn with_additional(mut self, additional: &[PathBuf]) -> Self {
        let mut dirs = vec![self.workspace.clone()];
        dirs.extend(additional.iter().cloned());
        self.roots = Arc::new(Roots::new(&dirs));
        self
    }

    /// The same context with every file operation of the tools run on `thread`, which is
    /// under the task's OS confinement (see [`crate::workspace::confined`]).
    pub fn confined_to(mut self, thread: crate::workspace::confined::ConfinedThread) -> Self {
        self.roots = Arc::new(self.roots.confined_to(thread));
        self
    }

    /// This context for one call whose path the policy judged as `target`.
    pub fn for_call(&self, target: Option<PathBuf>) -> Self {
        ToolContext {
            target,
            ..self.clone()
        }
    }

    /// The same context with `hidden` deciding which files searches and listings skip.
    pub fn with_hidden(mut self, hidden: Arc<HiddenFilter>) -> Self {
        self.hidden = hidden;
        self
    }

    /// Is this absolute path hidden by the policy's read deny rules?
    pub fn is_hidden(&self, path: &std::path::Path) -> bool {
        (self.hidden)(path)
    }

    /// The todo list as the model last wrote it (empty if it never used TodoWrite).
    pub fn todos(&self) -> Vec<Todo> {
        self.todo_list.get()
    }

    /// Kill every background shell still running and refuse new ones; the run calls it
    /// when the agent loop ends so nothing outlives the loop.
    pub fn shutdown(&self) {
        self.background.shutdown();
    }
}

/// The result of a call, exactly as the model will receive it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    pub content: String,
    pub is_error: bool,
}

impl ToolOutput {
    pub fn ok(content: impl Into<String>) -> Self {
        ToolOutput {
            content: content.into(),
            is_error: false,
        }
    }

    pub fn error(content: impl Into<String>) -> Self {
        ToolOutput {
            content: content.into(),
            is_error: true,
        }
    }
}

#[async_trait]
pub trait Tool: Send + Sync {
    /// The name the model calls the tool by (Claude Code's names).
    fn name(&self) -> &'static str;
    /// Instructions for the model: what the tool does, its limits, mistakes to avoid.
    fn description(&self) -> &'static str;
    /// JSON Schema of the input; unknown fields are rejected.
    fn input_schema(&self) -> Value;
    /// Read-only calls may run concurrently with each other and are allowed by default
    /// inside the workspace; anything else runs alone and needs an allow rule.
    fn is_read_only(&self) -> bool;
    /// What the policy must judge for this input (already schema-valid).
    fn subject(&self, input: &Value) -> Subject;
    /// The tool whose permission rules govern this one (itself by default).
    fn governed_by(&self) -> &'static str {
        self.name()
    }
    /// Whether the tool acts only on the run's own state (its to-do list, its
    /// background shells), which the policy allows by default.
    fn acts_on_run_state(&self) -> bool {
        false
    }
    /// What the policy needs to know of this tool, whatever the call.
    fn tool_facts(&self) -> ToolFacts {
        ToolFacts {
            name: self.name().to_string(),
            read_only: self.is_read_only(),
            governed_by: self.governed_by().to_string(),
            run_state: self.acts_on_run_state(),
        }
    }
    /// What the policy judges for this input (already schema-valid).
    fn facts(&self, input: &Value) -> CallFacts {
        CallFacts {
            tool: self.tool_facts(),
            subject: self.subject(input),
        }
    }
    /// Run the call. The input has already passed schema validation and the policy.
    async fn call(&self, input: Value, ctx: &ToolContext) -> ToolOutput;
}

/// Every built-in tool, in the order they are offered to the model.
pub fn builtin() -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(read::ReadTool),
        Arc::new(write::WriteTool),
        Arc::new(edit::EditTool),
        Arc::new(multi_edit::MultiEditTool),
        Arc::new(glob::GlobTool),
        Arc::new(grep::GrepTool),
        Arc::new(ls::LsTool),
        Arc::new(bash::BashTool),
        Arc::new(bash_output::BashOutputTool),
        Arc::new(kill_shell::KillShellTool),
        Arc::new(todo_write::TodoWriteTool),
    ]
}

/// The policy subject of a tool whose input names one file in `file_path`.
pub(crate) fn file_path_subject(input: &Value) -> Subject {
    match str_field(input, "file_path") {
        Some(path) => Subject::Path(path.to_string()),
        None => Subject::None,
    }
}

/// The path a `file_path` input names: the one the policy judged for this call, or
/// (a tool called without the policy, as in unit tests and `drover tool`) the input
/// resolved the way the policy resolves it. Either way symlinks are resolved here, once;
/// the tool then acts beneath [`ToolContext::roots`] without following any.
pub(crate) fn resolve_file_path(ctx: &ToolContext, raw: &str) -> Result<PathBuf, ToolOutput> {
    judged_path(ctx, raw).map_err(|e| ToolOutput::error(format!("Invalid file_path: {e}")))
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

/// The string field `key` of an input object, if present.
pub(crate) fn str_field<'a>(input: &'a Value, key: &str) -> Option<&'a str> {
    input.get(key).and_then(Value::as_str)
}
