//! Judging one round of the agent's work (checks, then expectations) and, under
//! `retry.max_attempts`, sending what failed back to the agent as its next message.

use super::checks::{failure_summary, run_check, tail};
use super::commands::TaskCommands;
use super::diff::Changes;
use super::error::TaskError;
use super::expect;
use super::interrupt::Interrupt;
use super::start::Started;
use crate::record::{CheckReport, Event, Redactor, TranscriptWriter};
use crate::spec::TaskSpec;

/// How one round's checks and expectations went.
pub(super) struct Evaluation {
    /// In order: the checks, then the expectations.
    pub checks: Vec<CheckReport>,
    /// One line per failure, for the task's message.
    pub failed: Vec<String>,
    /// A signal stopped a check: why, for the task's message.
    pub interrupted: Option<String>,
}

impl Evaluation {
    /// Every check and expectation passed (and nothing was interrupted).
    pub(super) fn passed(&self) -> bool {
        self.failed.is_empty() && self.interrupted.is_none()
    }
}

/// Run the checks, then evaluate the expectations against `changes`, each recorded as a
/// `check` event. A signal stops the check at once (dropping it kills its processes)
/// and skips the rest: a cancelled job never reports a pass.
pub(super) async fn evaluate(
    task: &TaskSpec,
    started: &Started,
    commands: &TaskCommands,
    changes: &Changes,
    interrupt: &Interrupt,
    redactor: &Redactor,
    transcript: &mut TranscriptWriter,
) -> Result<Evaluation, TaskError> {
    let mut evaluation = Evaluation {
        checks: Vec::new(),
        failed: Vec::new(),
        interrupted: None,
    };
    // Checks get the agent's scrubbed environment and, unless a check says otherwise,
    // its sandbox: they run code the agent wrote.
    let of = u32::try_from(task.checks.len()).unwrap_or(u32::MAX);
    for (index, check) in task.checks.iter().enumerate() {
        transcript.write(Event::CheckStart {
            name: check.name.clone(),
            command: check.run.clone(),
            number: u32::try_from(index + 1).unwrap_or(u32::MAX),
            of,
        })?;
        let check_env = commands.for_check(check)?;
        let result = tokio::select! {
            result = run_check(check, &started.workspace.dir, &check_env, redactor) => result,
            () = interrupt.cancelled() => {
                evaluation.interrupted = Some(format!(
                    "interrupted while check \"{}\" ran; it was stopped and the checks after it did not run",
                    check.name
                ));
                break;
            }
        };
        transcript.write(Event::check(&result))?;
        if !result.passed {
            evaluation.failed.push(failure_summary(&result));
        }
        evaluation.checks.push(result);
    }
    if evaluation.interrupted.is_some() {
        // The stopped check's processes are gone before the reports say so.
        commands
            .env
            .tracker
            .stop_all_and_wait(crate::sandbox::exec::STOP_GRACE * 2)
            .await;
        return Ok(evaluation);
    }
    // Expectations are reported like checks and fail the task like them.
    if let Some(expectations) = &task.expect {
        for result in expect::evaluate(expectations, &changes.paths) {
            transcript.write(Event::check(&result))?;
            if !result.passed {
                evaluation.failed.push(expect::failure_summary(&result));
            }
            evaluation.checks.push(result);
        }
    }
    Ok(evaluation)
}

/// How much of one failure's output goes back to the model.
const FEEDBACK_TAIL_CHARS: usize = 3000;
/// How many failures are described in full (the rest are named).
const FEEDBACK_MAX_FAILURES: usize = 5;

/// The message that sends the agent back to work: what failed, with the end of its
/// output (already redacted), bounded.
pub(super) fn feedback(evaluation: &Evaluation, next_attempt: u32, max_attempts: u32) -> String {
    let failed: Vec<&CheckReport> = evaluation.checks.iter().filter(|c| !c.passed).collect();
    let mut text = format!(
        "Your work is not done yet: {} of the task's checks failed after you ended your turn.\n",
        failed.len()
    );
    for check in failed.iter().take(FEEDBACK_MAX_FAILURES) {
        if check.expectation {
            // No command ran: what was expected, and what changed.
            text.push_str(&format!(
                "\n## {} (not met)\nexpected {}, but {}\n",
                check.name, check.command, check.output_tail
            ));
            continue;
        }
        let how = if check.timed_out {
            "timed out".to_string()
        } else {
            match check.exit_code {
                Some(code) => format!("exit code {code}"),
                None => "did not finish".to_string(),
            }
        };
        text.push_str(&format!(
            "\n## {} ({how})\n$ {}\n{}\n",
            check.name,
            check.command,
            tail(check.output_tail.trim_end(), FEEDBACK_TAIL_CHARS)
        ));
    }
    if failed.len() > FEEDBACK_MAX_FAILURES {
        let rest: Vec<&str> = failed[FEEDBACK_MAX_FAILURES..]
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        text.push_str(&format!("\nAlso failed: {}\n", rest.join(", ")));
    }
    text.push_str(&format!(
        "\nFix the problems, then end your turn: the checks run again. This is attempt {next_attempt} of {max_attempts}."
    ));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(name: &str, passed: bool, output: &str) -> CheckReport {
        CheckReport {
            name: name.into(),
            command: format!("./{name}.sh"),
            exit_code: Some(if passed { 0 } else { 1 }),
            passed,
            timed_out: false,
            duration_ms: 5,
            output_tail: output.into(),
            expectation: false,
        }
    }

    #[test]
    fn feedback_names_the_failed_checks_with_their_output_and_the_attempt() {
        let evaluation = Evaluation {
            checks: vec![
                check("fmt", true, "ok"),
                check("test", false, "assertion failed: add(2, 2) == 4\n"),
            ],
            failed: vec!["check \"test\" failed with exit code 1".into()],
            interrupted: None,
        };
        let text = feedback(&evaluation, 2, 3);
        assert!(text.contains("1 of the task's checks failed"), "{text}");
        assert!(text.contains("## test (exit code 1)\n$ ./test.sh\nassertion failed"));
        assert!(!text.contains("## fmt"));
        assert!(text.ends_with("This is attempt 2 of 3."));
    }

    #[test]
    fn feedback_is_bounded_however_much_failed() {
        let long = "x".repeat(50_000);
        let checks: Vec<CheckReport> = (0..9)
            .map(|i| check(&format!("c{i}"), false, &long))
            .collect();
        let evaluation = Evaluation {
            failed: vec![String::new(); 9],
            checks,
            interrupted: None,
        };
        let text = feedback(&evaluation, 2, 2);
        assert!(text.len() < 20_000, "{}", text.len());
        assert!(text.contains("Also failed: c5, c6, c7, c8"));
    }
}
