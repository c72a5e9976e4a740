//! What a run leaves behind: the transcript, the workspace diff, JUnit XML and summaries.
//!
//! Plain data and the files made of it: its own crate so the compiler keeps it from
//! learning of the loop or the run above it (drover re-exports it as `crate::record`).
//! It uses the conversation types (`drover-message`) and prints its few warnings through
//! `drover-output`.

pub mod chain;
pub mod context;
pub mod drift;
pub mod github;
pub mod junit;
mod markdown;
pub mod merge;
pub mod network;
pub mod redact;
mod redact_safety;
mod replay_outcome;
mod report;
pub mod resume_point;
pub mod secret_names;
pub mod step_outputs;
pub mod stream;
pub mod summary;
pub mod task_result;
pub mod transcript;
pub mod volatile;

pub use drift::DriftReport;
pub use redact::Redactor;
pub use replay_outcome::{ChecksRun, OutcomeFrom, RecordedOutcome, ReplayJudgement};
pub use report::{
    AgentRun, CheckReport, Denial, EXCLUDED_LISTED, EarlierRun, EndReason, ExcludedFromDiff,
    McpServerReport, RunReport, ShardId, Status, TaskReport, Todo, TodoStatus, is_plain_task_name,
};
pub use transcript::{Event, StartCommit, StartRepository, TranscriptReader, TranscriptWriter};
