//! `drover replay --diff-only`: the cheapest check that a recorded fix still holds. No
//! model turn and no tool call is replayed: the recorded `diff.patch` is applied to the
//! restored starting workspace, the diff is taken again and compared with the recorded
//! one, and (with `--checks`) the checks judge the result.

use std::path::Path;

use super::sandbox::TaskCommands;
use super::task_end::Rounds;
use crate::agent::LoopOutcome;
use crate::record::transcript::TranscriptError;
use crate::record::{DriftReport, EndReason, Event, TaskReport, TranscriptWriter};

/// Apply the recorded patch `patch` in `workspace` (with `git apply`, which refuses
/// paths outside the directory and writes through no symbolic link): the outcome a
/// judged round would have.
pub(super) fn apply(workspace: &Path, patch: &Path, commands: TaskCommands) -> Rounds {
    let (reason, message) = match git_apply(workspace, patch) {
        Ok(()) => (
            EndReason::EndTurn,
            format!("the recorded diff {} was applied", patch.display()),
        ),
        Err(why) => (
            EndReason::ReplayDrift,
            format!(
                "the recorded diff {} no longer applies to the starting workspace: {why}",
                patch.display()
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
        },
        commands,
        settled: None,
    }
}

/// `git apply PATCH` in `workspace`, git's own configuration and hooks left out.
fn git_apply(workspace: &Path, patch: &Path) -> Result<(), String> {
    let patch = std::path::absolute(patch).map_err(|e| e.to_string())?;
    let output = std::process::Command::new("git")
        .arg("apply")
        .arg("--whitespace=nowarn")
        .arg(&patch)
        .current_dir(workspace)
        // No configuration, attributes or repository of the user's: no filter driver
        // or hook can run, whatever the environment says.
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_ATTR_NOSYSTEM", "1")
        .env("GIT_CEILING_DIRECTORIES", workspace)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .env_remove("GIT_CONFIG_PARAMETERS")
        .env_remove("GIT_CONFIG_COUNT")
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("cannot run git apply: {e}"))?;
    if output.status.success() {
        Ok(())
    } else {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(5).collect();
        Err(tail.into_iter().rev().collect::<Vec<_>>().join("; "))
    }
}

/// After the recorded patch applied: compare the diff the task wrote with it. A
/// difference is a `replay_drift` event and the report's drift, and under `--strict`
/// the task's end.
pub(super) fn compare_diffs(
    patch: &Path,
    task_dir: &Path,
    strict: bool,
    rounds: &mut Rounds,
    report: &mut TaskReport,
    transcript: &mut TranscriptWriter,
) -> Result<(), TranscriptError> {
    if rounds.outcome.reason != EndReason::EndTurn {
        return Ok(());
    }
    let recorded = std::fs::read(patch).unwrap_or_default();
    let replayed = std::fs::read(task_dir.join("diff.patch")).unwrap_or_default();
    let Some(drift) = compare(&recorded, &replayed) else {
        return Ok(());
    };
    transcript.write(Event::ReplayDrift {
        tool_use_id: String::new(),
        expected: String::from_utf8_lossy(&recorded).into_owned(),
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
