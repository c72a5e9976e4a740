//! What the registry holds and the dispatcher runs: a [`Tool`] (built in, or found at run
//! time, as MCP tools will be) turns a schema-valid input into one [`ToolCall`], the value
//! the policy judges and the tool then runs. The input is parsed once, so what was judged
//! is what runs.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use super::ToolContext;
use crate::message::Image;
use crate::policy::{CallFacts, ToolFacts};

/// A tool as the registry holds it. Built-in tools implement [`super::TypedTool`] and get
/// this trait from it; a tool whose schema arrives at run time implements it directly.
#[async_trait]
pub(crate) trait Tool: Send + Sync {
    /// The name the model calls the tool by.
    fn name(&self) -> &str;
    /// Instructions for the model: what the tool does, its limits, mistakes to avoid.
    fn description(&self) -> &str;
    /// JSON Schema of the input; the registry validates every call against it.
    fn input_schema(&self) -> Value;
    /// What the policy must know of this tool whatever the call. drover states these
    /// facts itself: a tool server is never asked whether its tool is read-only.
    fn facts(&self) -> ToolFacts;
    /// Turn an input that passed the schema into the call to judge and run.
    fn prepare(self: Arc<Self>, input: Value) -> Result<Box<dyn ToolCall>, ToolError>;
}

/// One call, parsed: the policy judges [`ToolCall::facts`], then the dispatcher runs it.
#[async_trait]
pub(crate) trait ToolCall: Send {
    /// What the policy judges for this call.
    fn facts(&self) -> CallFacts;
    /// Run the call. What it returns (or why it failed) goes back to the model; an
    /// output may be an error result the tool itself reported (an MCP `isError`).
    async fn run(self: Box<Self>, ctx: &ToolContext) -> Result<ToolOutput, ToolError>;
}

/// Why a call did not succeed. The two kinds end differently: a failure is the model's to
/// handle (it reads the message and tries another way); an internal fault is drover's, and
/// the task ends with `internal_error` rather than let the model work around a broken runner.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ToolError {
    /// The call failed (no such file, old_string not found, the command exited 1): the
    /// model receives this text as an error result.
    #[error("{0}")]
    Failed(String),
    /// drover itself failed while running the call (a worker panicked, the confined file
    /// thread is gone): the task ends as an internal error.
    #[error("internal error: {0}")]
    Internal(String),
    /// Something the task cannot go on without is gone (a required MCP server died): the
    /// task ends as `mcp_unavailable`.
    #[error("{0}")]
    Unavailable(String),
}

impl ToolError {
    /// An I/O error while `doing` something: a failure the model can act on, unless it
    /// says drover's confined file thread is gone, which is drover's fault.
    pub(crate) fn io(doing: impl std::fmt::Display, error: std::io::Error) -> Self {
        if crate::workspace::confined::is_thread_gone(&error) {
            ToolError::Internal(format!("{doing}: {error}"))
        } else {
            ToolError::Failed(format!("{doing}: {error}"))
        }
    }
}

impl From<crate::workspace::WriteRefused> for ToolError {
    fn from(refused: crate::workspace::WriteRefused) -> Self {
        let thread_gone = refused
            .io_error()
            .is_some_and(crate::workspace::confined::is_thread_gone);
        if thread_gone {
            ToolError::Internal(refused.to_string())
        } else {
            ToolError::Failed(refused.to_string())
        }
    }
}

/// The result of a call, exactly as the model will receive it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ToolOutput {
    pub content: String,
    pub is_error: bool,
    /// Images after the text (only MCP tools return any).
    pub images: Vec<Image>,
}

impl ToolOutput {
    pub(crate) fn ok(content: impl Into<String>) -> Self {
        ToolOutput {
            content: content.into(),
            is_error: false,
            images: Vec::new(),
        }
    }

    pub(crate) fn error(content: impl Into<String>) -> Self {
        ToolOutput {
            content: content.into(),
            is_error: true,
            images: Vec::new(),
        }
    }
}

/// A call that ends the task instead of returning a result to the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum InternalFault {
    /// drover failed while running the call; the message says how.
    #[error("internal error in {tool}: {message}")]
    Drover { tool: String, message: String },
    /// What the task needs is gone ([`ToolError::Unavailable`]).
    #[error("{message}")]
    Unavailable { message: String },
}

/// Run a prepared call: what the model receives, or drover's own fault.
pub(crate) async fn run_call(
    tool: &str,
    call: Box<dyn ToolCall>,
    ctx: &ToolContext,
) -> Result<ToolOutput, InternalFault> {
    match call.run(ctx).await {
        Ok(output) => Ok(output),
        Err(ToolError::Failed(message)) => Ok(ToolOutput::error(message)),
        Err(ToolError::Internal(message)) => Err(InternalFault::Drover {
            tool: tool.to_string(),
            message,
        }),
        Err(ToolError::Unavailable(message)) => Err(InternalFault::Unavailable { message }),
    }
}

/// Run `work` on tokio's blocking pool. A panic there is drover's fault, not the model's.
pub(crate) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ToolError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ToolError::Internal(format!("a file worker failed: {e}")))
}
