//! `drover replay --diff-only`: the cheapest check that a recorded fix still holds. No
//! model turn and no tool call is replayed: the recorded `diff.patch` is applied to the
//! restored starting workspace, the diff is taken again and compared with the recorded
//! one, and (with `--checks`) the checks judge the result.

use std::io::Read;
use std::path::Path;
use std::time::{Duration, Instant};

use super::agent_loop::Rounds;
use super::commands::TaskCommands;
use crate::agent::LoopOutcome;
use crate::record::transcript::TranscriptError;
use crate::record::{DriftReport, EndReason, Event, TaskReport, TranscriptWriter};
use crate::run::recording::RecordedPatch;

/// How long `git apply` may take before it is killed.
const APPLY_TIMEOUT: Duration = Duration::from_secs(600);

/// Apply the recorded patch in `workspace` (with `git apply`, which refuses paths
/// outside the directory and writes through no symbolic link): the outcome a judged
/// round would have.
pub(super) fn apply(workspace: &Path, patch: &RecordedPatch, commands: TaskCommands) -> Rounds {
    let patch_path = &patch.path;
    let (reason, message) = match git_apply(workspace, &patch.bytes) {
        Ok(()) => (
            EndReason::EndTurn,
            format!("the recorded diff {} was applied", patch_path.display()),
        ),
        Err(why) => (
            EndReason::ReplayDrift,
            format!(
                "the recorded diff {} no longer applies to the starting workspace: {why}",
                patch_path.display()
            ),
        ),
    };
    Rounds {
        outcome: LoopOutcome {
            reason,
            message,
            turns: 0,
            usage: Default::default(),
            cost_usd: Some(0.0),
            final_text: String::new(),
            denials: Vec::new(),
            calls: Default::default(),
            drift: None,
            context: None,
            wrap_up: None,
        },
        commands,
        settled: None,
    }
}

/// Why the recorded patch was not applied.
#[derive(Debug, thiserror::Error)]
enum ApplyError {
    #[error("cannot run git apply: {0}")]
    Io(#[from] std::io::Error),
    #[error("git apply did not finish within {} s", APPLY_TIMEOUT.as_secs())]
    Timeout,
    /// git's last lines of explanation.
    #[error("{0}")]
    Refused(String),
}

/// `git apply` of `patch` (copied to a private file) in `workspace`, git's own
/// configuration and hooks left out, killed after [`APPLY_TIMEOUT`]. It applies as to
/// plain files, never as in a repository: a worktree (a worktree run's replay) holds a
/// `.git` link, and git in a repository would read its configuration and skip, without
/// a word, the patch's paths that are not under the subdirectory it runs in.
fn git_apply(workspace: &Path, patch: &[u8]) -> Result<(), ApplyError> {
    let mut copy = tempfile::NamedTempFile::new()?;
    std::io::Write::write_all(&mut copy, patch)?;
    let errors = tempfile::tempfile()?;
    // A git directory that does not exist, in a directory only drover made: no
    // repository is found, none the workspace holds is read.
    let no_repository = tempfile::tempdir()?;
    let mut child = std::process::Command::new("git")
        .arg("apply")
        .arg("--whitespace=nowarn")
        .arg(copy.path())
        .current_dir(workspace)
        // No configuration, attributes or repository of the user's: no filter driver
        // or hook can run, whatever the environment says.
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_ATTR_NOSYSTEM", "1")
        .env("GIT_CEILING_DIRECTORIES", workspace)
        .env("GIT_DIR", no_repository.path().join("none"))
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .env_remove("GIT_CONFIG_PARAMETERS")
        .env_remove("GIT_CONFIG_COUNT")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(errors.try_clone()?)
        .spawn()?;
    let deadline = Instant::now() + APPLY_TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(ApplyError::Timeout);
            }
            Err(e) => return Err(ApplyError::Io(e)),
        }
    };
    if status.success() {
        return Ok(());
    }
    let mut stderr = String::new();
    let mut errors = errors;
    let _ = std::io::Seek::rewind(&mut errors);
    let _ = errors.take(64 << 10).read_to_string(&mut stderr);
    let tail: Vec<&str> = stderr.lines().rev().take(5).collect();
    Err(ApplyError::Refused(
        tail.into_iter().rev().collect::<Vec<_>>().join("; "),
    ))
}

/// After the recorded patch applied: compare the diff the task wrote with it. A
/// difference is a `replay_drift` event and the report's drift, and under `--strict`
/// the task's end.
pub(super) fn compare_diffs(
    patch: &RecordedPatch,
    task_dir: &Path,
    strict: bool,
    rounds: &mut Rounds,
    report: &mut TaskReport,
    transcript: &mut TranscriptWriter,
) -> Result<(), TranscriptError> {
    if rounds.outcome.reason != EndReason::EndTurn {
        return Ok(());
    }
    let recorded = &patch.bytes;
    let replayed = std::fs::read(task_dir.join("diff.patch")).unwrap_or_default();
    let Some(drift) = compare(recorded, &replayed) else {
        return Ok(());
    };
    transcript.write(Event::ReplayDrift {
        tool_use_id: String::new(),
        expected: String::from_utf8_lossy(recorded).into_owned(),
        actual: String::from_utf8_lossy(&replayed).into_owned(),
        call: 0,
        tool: drift.tool.clone(),
        diff: drift.diff.clone(),
    })?;
    if strict {
        rounds.outcome.reason = EndReason::ReplayDrift;
        rounds.outcome.message =
            "the replayed diff differs from the recorded diff.patch (--strict)".to_string();
    }
    report.drift = Some(drift);
    Ok(())
}

/// The drift between the recorded patch and the one the replay wrote, if they differ.
fn compare(recorded: &[u8], replayed: &[u8]) -> Option<DriftReport> {
    if recorded == replayed {
        return None;
    }
    let diff = crate::record::drift::short_diff(
        &String::from_utf8_lossy(recorded),
        &String::from_utf8_lossy(replayed),
    );
    Some(DriftReport {
        count: 1,
        call: 0,
        tool: "diff.patch".to_string(),
        tool_use_id: String::new(),
        diff,
    })
}
