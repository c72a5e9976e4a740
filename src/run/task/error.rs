//! Why drover could not finish a task (the task then ends as `internal_error`), and how
//! the task's steps stop early.

use std::io;
use std::path::PathBuf;

use crate::record::EndReason;
use crate::record::transcript::TranscriptError;
use crate::sandbox::SandboxError;
use crate::tools::RegistryError;

/// drover could not do its job for this task; each names what it was doing and where.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TaskError {
    #[error("cannot create artifact directory {path}: {source}")]
    ArtifactDir {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot publish the task's artifacts in {path}: {source}")]
    Publish {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(transparent)]
    Transcript(#[from] TranscriptError),
    #[error("cannot prepare the workspace {workspace}: {source}")]
    Prepare {
        workspace: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot take the workspace's starting state after setup: {0}")]
    Restart(#[source] io::Error),
    #[error("cannot create the task's temporary directory: {0}")]
    TempDir(#[source] io::Error),
    #[error(
        "the hooks' input directory {0} lies under a path the sandbox lets the agent write (sandbox.writable or permissions.additional_directories), so the agent could change what a hook is shown; the hooks were not run. Narrow that path, or set TMPDIR for drover to a directory outside it"
    )]
    HookDirWritable(PathBuf),
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    #[error(transparent)]
    Tools(#[from] RegistryError),
    #[error(
        "{count} of the agent's commands could not be stopped; the diff and the checks were not run"
    )]
    Unstoppable { count: usize },
    #[error(
        "the worktree's .git file was changed and cannot be restored ({0}); the checks were not run"
    )]
    GitLink(#[source] io::Error),
    #[error("cannot compare the workspace with its start: {0}")]
    Compare(#[source] io::Error),
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// Why a task's steps stopped before their end.
#[derive(Debug)]
pub(super) enum Halt {
    /// The task ended before the agent loop ran (interrupted, setup failed, the sandbox
    /// cannot be enforced, a replay's workspace differs): an empty diff, then `run_end`.
    Early(EndReason, String),
    /// drover could not finish the task.
    Failed(TaskError),
}

impl From<TaskError> for Halt {
    fn from(error: TaskError) -> Self {
        Halt::Failed(error)
    }
}

impl From<TranscriptError> for Halt {
    fn from(error: TranscriptError) -> Self {
        Halt::Failed(error.into())
    }
}

impl From<SandboxError> for Halt {
    fn from(error: SandboxError) -> Self {
        Halt::Failed(error.into())
    }
}
