//! What a tool call sees of the world: the workspace, the run's shared state, and how
//! commands start.

use std::path::PathBuf;
use std::sync::Arc;

use super::{BackgroundShells, ShellState, Todo, TodoList, WebAccess};
use crate::policy::{HiddenFilter, SearchFilter};
use crate::sandbox::exec::CommandEnv;
use crate::workspace::{FileStateCache, Roots};

/// What a tool call sees of the world. Cloning shares the state: every call of one run
/// sees the same files read, working directory, background shells and todo list.
#[derive(Clone)]
pub(crate) struct ToolContext {
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
    /// Files the policy denies a search tool: searches and listings (Grep, Glob, LS)
    /// skip them, so a search of a directory cannot read around a `Read(.env)` or
    /// `Grep(secrets/**)` deny rule. See [`ToolContext::hidden_for`].
    pub hidden: Arc<SearchFilter>,
    /// Handles on the workspace and the additional directories, opened when the task
    /// starts: every file operation of a tool resolves beneath one of them.
    pub roots: Arc<Roots>,
    /// The path the policy judged for this call (symlinks resolved), set per call by the
    /// dispatcher: the tool acts on exactly this path, so nothing that changes on disk
    /// between the decision and the action can redirect it.
    pub target: Option<PathBuf>,
    /// The model's id of this call (`tool_use` id), set per call by the dispatcher: a
    /// replayed tool answers with what was recorded for it.
    pub call_id: Option<String>,
    /// What WebFetch may reach (the rules' grants, filled by the run from its policy),
    /// the model answering over pages, and the run's page cache. By default nothing.
    pub web: Arc<WebAccess>,
}

impl ToolContext {
    /// A context whose commands run unsandboxed with a scrubbed environment (tests,
    /// `sandbox: off`); see [`ToolContext::with_env`].
    pub(crate) fn new(workspace: PathBuf) -> Self {
        Self::with_env(workspace, CommandEnv::default())
    }

    /// A context for a test's temporary workspace (canonical, as the task's is).
    #[cfg(test)]
    pub(crate) fn in_temp(dir: &tempfile::TempDir) -> Self {
        // invariant (tests): a fresh temporary directory canonicalizes.
        Self::new(
            dir.path()
                .canonicalize()
                .unwrap_or_else(|_| dir.path().to_path_buf()),
        )
    }

    /// A context whose shell commands start as `env` says.
    pub(crate) fn with_env(workspace: PathBuf, env: CommandEnv) -> Self {
        ToolContext {
            env: Arc::new(env),
            shell: Arc::new(ShellState::new(workspace.clone())),
            workspace: workspace.clone(),
            files: Arc::new(FileStateCache::default()),
            background: Arc::new(BackgroundShells::default()),
            todo_list: Arc::new(TodoList::default()),
            hidden: Arc::new(|_: &str, _: &std::path::Path| false),
            roots: Arc::new(Roots::new(std::slice::from_ref(&workspace))),
            target: None,
            call_id: None,
            web: Arc::new(WebAccess::default()),
        }
    }

    /// The same context with `web` deciding what WebFetch may reach and how it answers.
    pub(crate) fn with_web(mut self, web: WebAccess) -> Self {
        self.web = Arc::new(web);
        self
    }

    /// The same context with handles on the additional directories too (canonical).
    pub(crate) fn with_additional(mut self, additional: &[PathBuf]) -> Self {
        let mut dirs = vec![self.workspace.clone()];
        dirs.extend(additional.iter().cloned());
        self.roots = Arc::new(Roots::new(&dirs));
        self
    }

    /// The same context with every file operation of the tools run on `thread`, which is
    /// under the task's OS confinement (see [`crate::workspace::confined`]).
    pub(crate) fn confined_to(
        mut self,
        thread: crate::workspace::confined::ConfinedThread,
    ) -> Self {
        self.roots = Arc::new(self.roots.confined_to(thread));
        self
    }

    /// This context for the call `call_id` whose path the policy judged as `target`.
    pub(crate) fn for_call(&self, call_id: &str, target: Option<PathBuf>) -> Self {
        ToolContext {
            target,
            call_id: Some(call_id.to_string()),
            ..self.clone()
        }
    }

    /// The context of a sub-agent started from this one: the same workspace, roots,
    /// sandbox, filters and background shells (stopped with the task's), but its own
    /// record of files read (it must Read before it edits, whatever its parent read), its
    /// own working directory and its own to-do list.
    pub(crate) fn for_subagent(&self) -> Self {
        ToolContext {
            files: Arc::new(FileStateCache::default()),
            shell: Arc::new(ShellState::new(self.workspace.clone())),
            todo_list: Arc::new(TodoList::default()),
            target: None,
            call_id: None,
            ..self.clone()
        }
    }

    /// The same context with `hidden` deciding which files searches and listings skip.
    pub(crate) fn with_hidden(mut self, hidden: Arc<SearchFilter>) -> Self {
        self.hidden = hidden;
        self
    }

    /// Which files the search tool `tool` skips.
    pub(crate) fn hidden_for(&self, tool: &'static str) -> Arc<HiddenFilter> {
        let hidden = Arc::clone(&self.hidden);
        Arc::new(move |path: &std::path::Path| hidden(tool, path))
    }

    /// The todo list as the model last wrote it (empty if it never used TodoWrite).
    pub(crate) fn todos(&self) -> Vec<Todo> {
        self.todo_list.get()
    }

    /// Kill every background shell still running and refuse new ones; the run calls it
    /// when the agent loop ends so nothing outlives the loop.
    pub(crate) fn shutdown(&self) {
        self.background.shutdown();
    }

    /// Kill every background shell still running, but keep taking new ones (between
    /// two rounds of the loop).
    pub(crate) fn stop_background(&self) {
        self.background.stop_running();
    }
}
