//! Why a task cannot run, found before any task starts (bad input, exit 2): each error
//! names the spec or transcript and says what to do.

use std::path::PathBuf;

use crate::record::chain::ChainError;
use crate::record::transcript::{RunDefaults, TranscriptError};
use crate::spec::{Defaults, SpecError};

/// A task that cannot be planned.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PlanError {
    /// Every problem of one spec that keeps it from being planned (all of them, not only
    /// the first), one per line, each at its line and column.
    #[error("{}", lines(problems))]
    Spec { problems: Vec<SpecError> },
    /// A problem of a spec, at its line and column (a permission rule that does not
    /// parse, an instruction file that is missing).
    #[error(transparent)]
    Rules(#[from] SpecError),
    /// Tasks that cannot run together in one run (a reserved name, a shared workspace).
    #[error("{0}")]
    Conflict(String),
    /// A recorded run that cannot be replayed.
    #[error(transparent)]
    Replay(Box<ReplayError>),
    /// A recorded task that cannot be resumed.
    #[error(transparent)]
    Resume(Box<super::resume_error::ResumeError>),
}

impl From<ReplayError> for PlanError {
    fn from(error: ReplayError) -> Self {
        PlanError::Replay(Box::new(error))
    }
}

fn lines(problems: &[SpecError]) -> String {
    let lines: Vec<String> = problems.iter().map(ToString::to_string).collect();
    lines.join("\n")
}

/// Why a recorded transcript cannot be replayed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReplayError {
    #[error(
        "{}; it is not replayed (`drover transcript verify` checks a transcript)",
        source.at(transcript)
    )]
    Forged {
        transcript: PathBuf,
        source: ChainError,
    },
    #[error(transparent)]
    Unreadable(#[from] TranscriptError),
    #[error(
        "{}: the transcript does not start with a run_start event; it cannot be replayed",
        transcript.display()
    )]
    NoRunStart { transcript: PathBuf },
    #[error("{}: {source}; it is not replayed", transcript.display())]
    RecordedRule {
        transcript: PathBuf,
        source: super::spec_rules::RecordedRuleError,
    },
    #[error(
        "--diff-only needs the diff.patch recorded beside the transcript, and {} cannot be read as one ({source}): it must be a regular file, not a link",
        patch.display()
    )]
    NoRecordedDiff {
        patch: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: the run_start event's agents cannot be read: {message}", transcript.display())]
    AgentsUnreadable {
        transcript: PathBuf,
        message: String,
    },
    #[error("{}: the run_start event's skills cannot be read: {message}", transcript.display())]
    SkillsUnreadable {
        transcript: PathBuf,
        message: String,
    },
    #[error(
        "replaying {} into {} would overwrite the transcript being replayed; pass --artifacts with another directory",
        transcript.display(),
        artifacts.display()
    )]
    WouldOverwrite {
        transcript: PathBuf,
        artifacts: PathBuf,
    },
    #[error("the spec recorded in {} no longer loads: {source}", transcript.display())]
    SpecNoLongerLoads {
        transcript: PathBuf,
        #[source]
        source: SpecError,
    },
    #[error(
        "the recorded workspace {} is not a directory here; pass --workspace DIR with a checkout of the run's starting state",
        workspace.display()
    )]
    NoWorkspace { workspace: PathBuf },
    #[error(
        "the recorded workspace {} lies outside the current directory {}, and a recording does not choose what a replay copies and reads; run the replay from a directory holding it, or pass --workspace DIR with a checkout of the run's starting state",
        workspace.display(),
        current.display()
    )]
    WorkspaceNotHere {
        workspace: PathBuf,
        current: PathBuf,
    },
    #[error("--spec {}: {source}", spec.display())]
    SpecUnreadable {
        spec: PathBuf,
        #[source]
        source: SpecError,
    },
    #[error(
        "--spec {} is not the spec {} was recorded with (SHA-256 {} instead of {}); name the spec file the run used, unchanged",
        spec.display(),
        transcript.display(),
        short(now),
        short(recorded)
    )]
    SpecDiffers {
        spec: PathBuf,
        transcript: PathBuf,
        recorded: String,
        now: String,
    },
    #[error(
        "--spec {}: the defaults merged into it are not those {} was recorded with: {change}; restore the defaults file, or replay without --spec (the recorded spec and defaults are then data)",
        spec.display(),
        transcript.display()
    )]
    DefaultsDiffer {
        spec: PathBuf,
        transcript: PathBuf,
        change: String,
    },
}

/// How the defaults file merged into a spec now differs from the one a run recorded
/// (`run_start`'s `defaults`); None when it is the same file, or there was none and is
/// none.
pub(crate) fn defaults_change(
    recorded: Option<&RunDefaults>,
    now: Option<&Defaults>,
) -> Option<String> {
    match (recorded, now) {
        (None, None) => None,
        (Some(then), Some(now)) if then.sha256 == now.sha256 => None,
        (Some(then), None) => Some(format!(
            "the run used the defaults file {} (SHA-256 {}), and there is none beside the spec now",
            then.path,
            short(&then.sha256)
        )),
        (None, Some(now)) => Some(format!(
            "the run used no defaults file, and {} is there now",
            now.path.display()
        )),
        (Some(then), Some(now)) => Some(format!(
            "the run used the defaults file {} with SHA-256 {}, and {} has {} now",
            then.path,
            short(&then.sha256),
            now.path.display(),
            short(&now.sha256)
        )),
    }
}

fn short(sha256: &str) -> &str {
    sha256.get(..12).unwrap_or(sha256)
}
