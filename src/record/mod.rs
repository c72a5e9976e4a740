//! What a run leaves behind: the transcript, the workspace diff, JUnit XML and summaries.

pub mod chain;
pub mod github;
pub mod junit;
pub mod merge;
pub mod redact;
pub mod redact_safety;
pub mod report;
pub mod summary;
pub mod transcript;

pub use redact::Redactor;
pub use report::{
    CheckReport, Denial, EndReason, RunReport, ShardId, Status, TaskReport, Todo, TodoStatus,
};
pub use transcript::{Event, TranscriptReader, TranscriptWriter};
