//! Checks: shell commands run in the workspace after the loop. Each is a JUnit test case;
//! a failing check fails the task.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::record::{CheckReport, Redactor};
use crate::sandbox::exec::{self, CommandEnv};
use crate::spec::CheckSpec;

/// When a check sets no timeout.
pub(super) const DEFAULT_CHECK_TIMEOUT: Duration = Duration::from_secs(10 * 60);

/// How much of a check's output the reports keep.
const OUTPUT_TAIL_CHARS: usize = 4000;

/// Run one check to completion (or its timeout), unsandboxed but with the environment
/// scrubbed as `env` says (the agent's: secrets only by `env.pass`, never the model key),
/// since a check such as `cargo test` runs code the agent wrote. Its output is redacted
/// before it goes into any report.
pub(super) async fn run_check(
    check: &CheckSpec,
    workspace: &Path,
    env: &CommandEnv,
    redactor: &Redactor,
) -> CheckReport {
    let timeout = check.timeout.map_or(DEFAULT_CHECK_TIMEOUT, |t| t.0);
    let started = Instant::now();
    let outcome = exec::run_shell(&check.run, workspace, timeout, env).await;
    let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    match outcome {
        Ok(outcome) => CheckReport {
            name: check.name.clone(),
            command: check.run.clone(),
            exit_code: outcome.exit_code,
            passed: outcome.exit_code == Some(0) && !outcome.timed_out,
            timed_out: outcome.timed_out,
            duration_ms,
            // Redacted before the tail is cut, so no secret is cut in half and kept.
            output_tail: tail(&redactor.redact(&outcome.output), OUTPUT_TAIL_CHARS),
            expectation: false,
        },
        Err(error) => CheckReport {
            name: check.name.clone(),
            command: check.run.clone(),
            exit_code: None,
            passed: false,
            timed_out: false,
            duration_ms,
            output_tail: format!("drover could not start the check: {error}"),
            expectation: false,
        },
    }
}

/// The last `max` characters of `text`, on a character boundary.
pub(super) fn tail(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        return text.to_string();
    }
    let skip = count - max;
    let start = text.char_indices().nth(skip).map_or(0, |(i, _)| i);
    format!("[… {skip} characters cut …]\n{}", &text[start..])
}

/// One line for people: why the check failed.
pub(super) fn failure_summary(check: &CheckReport) -> String {
    if check.timed_out {
        format!("check {:?} timed out and was killed", check.name)
    } else {
        match check.exit_code {
            Some(code) => format!("check {:?} failed with exit code {code}", check.name),
            None => format!("check {:?} did not run to completion", check.name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn check_output_is_redacted_and_the_key_variable_withheld() {
        let dir = tempfile::tempdir().unwrap();
        let check = CheckSpec {
            name: "leaky".to_string(),
            run: "echo \"home=$HOME\"; echo sk-secret-value-123; exit 1".to_string(),
            timeout: None,
            sandbox: None,
        };
        let env = CommandEnv {
            withheld: vec!["HOME".to_string()],
            ..CommandEnv::default()
        };
        let redactor = Redactor::new(["sk-secret-value-123".to_string()]);
        let report = run_check(&check, dir.path(), &env, &redactor).await;
        assert!(!report.passed);
        assert_eq!(report.exit_code, Some(1));
        assert_eq!(report.output_tail, "home=\n[redacted]\n");
    }
}
