//! Bash: run a shell command in the workspace, unattended and time-limited.

use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::text::{cut_middle, parse_input};
use super::{Subject, Tool, ToolContext, ToolOutput, str_field};
use crate::exec::run_shell;

/// Default timeout in milliseconds.
pub const DEFAULT_TIMEOUT_MS: u64 = 120_000;
/// Largest timeout a call may ask for, in milliseconds.
pub const MAX_TIMEOUT_MS: u64 = 600_000;
/// Output beyond this many characters is cut in the middle.
pub const MAX_OUTPUT_CHARS: usize = 30_000;

pub struct BashTool;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    command: String,
    timeout: Option<u64>,
    #[allow(dead_code)] // for the transcript and the policy; not needed to run
    description: Option<String>,
    #[serde(default)]
    run_in_background: bool,
}

const DESCRIPTION: &str = "Runs a bash command in the workspace root and returns its output (stdout and stderr merged).

Usage:
- Each call starts a fresh `bash -c` in the workspace root: `cd` and environment variables do not carry over to the next call. Chain dependent steps with && in one command, or use paths relative to the workspace.
- Nothing is interactive: standard input is closed, so commands that prompt (editors, pagers, `git rebase -i`, `npm init` without -y) fail instead of waiting. Pass non-interactive flags.
- timeout is in milliseconds: default 120000 (2 minutes), maximum 600000 (10 minutes). On timeout the command and every process it started are killed.
- Background processes do not survive the call: anything still running when the command exits is killed. run_in_background is not supported yet.
- Output longer than 30000 characters is cut in the middle; filter it (grep, head, tail) when you expect a lot.
- A non-zero exit status is reported as an error with the exit code.
- Prefer the Read, Grep, Glob, Edit and Write tools over cat, grep, find, sed and echo redirection for files.
- Quote paths containing spaces. Give a short description of what the command does.";

#[async_trait]
impl Tool for BashTool {
    fn name(&self) -> &'static str {
        "Bash"
    }

    fn description(&self) -> &'static str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "command": {
                    "type": "string",
                    "description": "The command line to run with bash."
                },
                "timeout": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "Timeout in milliseconds (default 120000, max 600000)."
                },
                "description": {
                    "type": "string",
                    "description": "A short description of what the command does, in 5-10 words."
                },
                "run_in_background": {
                    "type": "boolean",
                    "description": "Run the command in the background (not supported yet)."
                }
            },
            "required": ["command"],
            "additionalProperties": false
        })
    }

    fn is_read_only(&self) -> bool {
        false
    }

    fn subject(&self, input: &Value) -> Subject {
        match str_field(input, "command") {
            Some(command) => Subject::Command(command.to_string()),
            None => Subject::None,
        }
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let input: Input = match parse_input("Bash", input) {
            Ok(input) => input,
            Err(error) => return error,
        };
        if input.run_in_background {
            return ToolOutput::error(
                "run_in_background is not supported yet (background shells with BashOutput and KillShell are planned). Run the command in the foreground with a suitable timeout instead, or make it finish on its own.",
            );
        }
        let timeout_ms = input.timeout.unwrap_or(DEFAULT_TIMEOUT_MS);
        if timeout_ms > MAX_TIMEOUT_MS {
            return ToolOutput::error(format!(
                "timeout {timeout_ms} ms is larger than the maximum of {MAX_TIMEOUT_MS} ms (10 minutes)."
            ));
        }
        if input.command.trim().is_empty() {
            return ToolOutput::error("command is empty.");
        }
        let outcome = match run_shell(
            &input.command,
            &ctx.workspace,
            Duration::from_millis(timeout_ms.max(1)),
        )
        .await
        {
            Ok(outcome) => outcome,
            Err(e) => return ToolOutput::error(format!("Could not run the command: {e}")),
        };
        let output = cut_middle(outcome.output.trim_end_matches('\n'), MAX_OUTPUT_CHARS);
        if outcome.timed_out {
            let mut text = format!(
                "Command timed out after {timeout_ms} ms and was killed, together with every process it started."
            );
            if !output.is_empty() {
                text.push_str(&format!(" Output before it was killed:\n{output}"));
            }
            return ToolOutput::error(text);
        }
        match outcome.exit_code {
            Some(0) if output.is_empty() => {
                ToolOutput::ok("(the command succeeded with no output)")
            }
            Some(0) => ToolOutput::ok(output),
            Some(code) => ToolOutput::error(format!("Exit code {code}\n{output}")),
            None => ToolOutput::error(format!("The command was killed by a signal.\n{output}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(dir: &tempfile::TempDir) -> ToolContext {
        ToolContext::new(dir.path().canonicalize().unwrap())
    }

    async fn bash(ctx: &ToolContext, input: Value) -> ToolOutput {
        BashTool.call(input, ctx).await
    }

    #[tokio::test]
    async fn runs_in_the_workspace_with_drover_set() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("here.txt"), "").unwrap();
        let ctx = ctx(&dir);
        let out = bash(
            &ctx,
            json!({"command": "ls; echo $DROVER", "description": "list"}),
        )
        .await;
        assert_eq!(out, ToolOutput::ok("here.txt\n1"));
        let out = bash(&ctx, json!({"command": "true"})).await;
        assert!(!out.is_error && out.content.contains("no output"));
    }

    #[tokio::test]
    async fn non_zero_exit_is_an_error_with_the_code() {
        let dir = tempfile::tempdir().unwrap();
        let out = bash(&ctx(&dir), json!({"command": "echo oops >&2; exit 4"})).await;
        assert_eq!(out, ToolOutput::error("Exit code 4\noops"));
    }

    #[tokio::test]
    async fn timeouts_kill_and_are_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ctx(&dir);
        let out = bash(&ctx, json!({"command": "sleep 30", "timeout": 200})).await;
        assert!(out.is_error && out.content.contains("timed out after 200 ms"));
        let out = bash(&ctx, json!({"command": "true", "timeout": 600_001})).await;
        assert!(out.is_error && out.content.contains("maximum"));
    }

    #[tokio::test]
    async fn background_is_refused_not_run() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ctx(&dir);
        let out = bash(
            &ctx,
            json!({"command": "touch ran", "run_in_background": true}),
        )
        .await;
        assert!(out.is_error && out.content.contains("not supported"));
        assert!(!dir.path().join("ran").exists());
    }

    #[tokio::test]
    async fn long_output_is_cut_keeping_head_and_tail() {
        let dir = tempfile::tempdir().unwrap();
        let out = bash(
            &ctx(&dir),
            json!({"command": "echo START; seq 1 20000; echo END"}),
        )
        .await;
        assert!(out.content.starts_with("START\n"));
        assert!(out.content.ends_with("\nEND"));
        assert!(out.content.contains("characters omitted"));
        assert!(out.content.chars().count() < MAX_OUTPUT_CHARS + 200);
    }

    #[test]
    fn subject_is_the_command() {
        assert_eq!(
            BashTool.subject(&json!({"command": "cargo test"})),
            Subject::Command("cargo test".into())
        );
        assert!(!BashTool.is_read_only());
    }
}
