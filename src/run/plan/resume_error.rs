//! Why a recorded task cannot be resumed (bad input, exit 2): each error names the
//! transcript and says what to do.

use std::path::PathBuf;

use crate::record::EndReason;
use crate::record::chain::ChainError;
use crate::spec::SpecError;

#[derive(Debug, thiserror::Error)]
pub(crate) enum ResumeError {
    #[error(
        "{} is not a task's artifacts folder (or its transcript.jsonl): there is no transcript.jsonl in it",
        path.display()
    )]
    NoTranscript { path: PathBuf },
    #[error(
        "{}; it is not resumed (`drover transcript verify` checks a transcript)",
        source.at(transcript)
    )]
    Forged {
        transcript: PathBuf,
        source: ChainError,
    },
    #[error("{}:{line}: not a transcript event: {message}", transcript.display())]
    Unparsable {
        transcript: PathBuf,
        line: usize,
        message: String,
    },
    #[error(
        "{}: the transcript does not start with a run_start event; it cannot be resumed",
        transcript.display()
    )]
    NoRunStart { transcript: PathBuf },
    #[error(
        "{}: the task ended with `{}` ({message}); only a task stopped by a signal, a kill, a limit or a provider or internal error is resumed; start a new run instead",
        transcript.display(),
        reason.as_str()
    )]
    Finished {
        transcript: PathBuf,
        reason: EndReason,
        message: String,
    },
    #[error(
        "{}: the task stopped at its turn limit ({turns} turns); pass --max-turns with more than {turns} to resume it",
        transcript.display()
    )]
    TurnLimit { transcript: PathBuf, turns: u32 },
    #[error(
        "{}: the task stopped at its budget (${spent:.4} spent of ${limit:.4}); pass --max-cost-usd with more than {spent:.4} to resume it",
        transcript.display()
    )]
    CostLimit {
        transcript: PathBuf,
        spent: f64,
        limit: f64,
    },
    #[error(
        "{}: the task stopped at its token budget ({spent} tokens spent of {limit}); pass --max-tokens with more than {spent} to resume it",
        transcript.display()
    )]
    TokenLimit {
        transcript: PathBuf,
        spent: u64,
        limit: u64,
    },
    #[error(
        "{}: the recording is of a replay (provider {provider}), not of a run; resume the run it replayed",
        transcript.display()
    )]
    NotARun {
        transcript: PathBuf,
        provider: String,
    },
    #[error(
        "{} is not in its task's folder (DIR/{task}/transcript.jsonl); give the folder drover wrote",
        transcript.display()
    )]
    NotInTaskFolder { transcript: PathBuf, task: String },
    #[error(
        "{}: the recorded run worked in {}, not in the spec's workspace {}; pass --workspace {} to resume it there",
        transcript.display(),
        recorded.display(),
        spec.display(),
        recorded.display()
    )]
    OtherWorkspace {
        transcript: PathBuf,
        recorded: PathBuf,
        spec: PathBuf,
    },
    #[error(
        "{}: the run used {recorded}, not the spec's {spec}; a recording does not choose which model a resumed run asks: pass {flag} to resume it as it ran",
        transcript.display()
    )]
    OtherModel {
        transcript: PathBuf,
        flag: String,
        recorded: String,
        spec: String,
    },
    #[error(
        "{}: the recorded spec {} is not in the current directory {}, and a recording does not choose which spec file runs; name it with --spec SPEC (or `drover run SPEC --resume`), or resume from a directory holding it{}",
        transcript.display(),
        spec.display(),
        current.display(),
        if spec.as_os_str() == crate::spec::EXEC_SPEC_PATH { " (a `drover exec` task: write its spec there with the same flags and --print-spec, `drover exec … --print-spec > drover-exec.yaml`, in the directory it ran in)" } else { "" }
    )]
    SpecNotHere {
        transcript: PathBuf,
        spec: PathBuf,
        current: PathBuf,
    },
    #[error("cannot read the spec {}: {source}", spec.display())]
    SpecUnreadable {
        spec: PathBuf,
        #[source]
        source: SpecError,
    },
    #[error(
        "the spec {} changed since the recorded run (sha256 {} recorded, {} now); a run resumes only the task it recorded: restore the spec, or start a new run",
        spec.display(),
        short(recorded),
        short(now)
    )]
    SpecChanged {
        spec: PathBuf,
        recorded: String,
        now: String,
    },
    #[error(
        "the defaults of the spec {} changed since the recorded run: {change}; a run resumes only the task it recorded, and a recording does not choose what a live run may do: restore the defaults file (its text is run_start's `defaults.yaml`), or start a new run",
        spec.display()
    )]
    DefaultsChanged { spec: PathBuf, change: String },
    #[error(
        "{} records task {recorded:?}, but the spec {} is task {given:?}",
        transcript.display(),
        spec.display()
    )]
    OtherTask {
        transcript: PathBuf,
        spec: PathBuf,
        recorded: String,
        given: String,
    },
    #[error(
        "cannot resume {}: the workspace {} is not in the state the recorded run started from (fingerprint {} instead of {}). {advice}",
        transcript.display(),
        workspace.display(),
        short(now),
        short(recorded)
    )]
    WorkspaceChanged {
        transcript: PathBuf,
        workspace: PathBuf,
        recorded: String,
        now: String,
        advice: String,
    },
    #[error("cannot resume {}: the starting workspace could not be prepared: {message}", transcript.display())]
    WorkspaceUnusable {
        transcript: PathBuf,
        message: String,
    },
    #[error(
        "cannot resume {} under --strict: {source}; nothing was run (without --strict the worktree is made at HEAD, if its files are the recorded ones)",
        transcript.display()
    )]
    StartCommit {
        transcript: PathBuf,
        source: crate::workspace::start_commit::CommitUnusable,
    },
}

fn short(fingerprint: &str) -> &str {
    fingerprint.get(..12).unwrap_or(fingerprint)
}
