//! What a run leaves behind: the transcript, the workspace diff, JUnit XML and summaries.

pub(crate) mod chain;
pub(crate) mod drift;
pub(crate) mod github;
pub(crate) mod junit;
pub(crate) mod markdown;
pub(crate) mod merge;
pub(crate) mod redact;
pub(crate) mod redact_safety;
pub(crate) mod report;
pub(crate) mod resume_point;
pub(crate) mod secret_names;
pub(crate) mod step_outputs;
pub(crate) mod summary;
pub(crate) mod transcript;
pub(crate) mod volatile;

pub(crate) use drift::DriftReport;
pub(crate) use redact::Redactor;
pub(crate) use report::{
    AgentRun, CheckReport, Denial, EndReason, McpServerReport, RunReport, ShardId, Status,
    TaskReport, Todo, TodoStatus,
};
pub(crate) use transcript::{Event, TranscriptReader, TranscriptWriter};
