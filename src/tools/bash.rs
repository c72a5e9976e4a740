//! Bash: run a shell command in the workspace, unattended and time-limited.

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;

use super::shell_state::{CwdChange, CwdProbe};
use super::text::cut_middle;
use super::{About, ToolContext, ToolError, ToolInput, TypedTool};
use crate::policy::Subject;
use crate::record::network::NetworkOrigin;
use crate::sandbox::exec::{ShellOutcome, run_shell_with_env};

/// Default timeout in milliseconds.
pub(crate) const DEFAULT_TIMEOUT_MS: u64 = 120_000;
/// Largest timeout a call may ask for, in milliseconds.
pub(crate) const MAX_TIMEOUT_MS: u64 = 600_000;
/// Output beyond this many characters is cut in the middle.
pub(crate) const MAX_OUTPUT_CHARS: usize = 30_000;

#[derive(Clone, Copy)]
pub(crate) struct BashTool;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Input {
    /// The command line to run with bash.
    command: String,
    /// Timeout in milliseconds (default 120000, max 600000).
    #[schemars(range(min = 1))]
    timeout: Option<u64>,
    /// A short description of what the command does, in 5-10 words.
    #[allow(dead_code)] // for the transcript and the policy; not needed to run
    description: Option<String>,
    /// Start the command in the background and return its id at once; read it with BashOutput, stop it with KillShell.
    #[serde(default)]
    run_in_background: bool,
}

impl ToolInput for Input {
    fn subject(&self) -> Subject {
        Subject::Command(self.command.clone())
    }
}

const DESCRIPTION: &str = "Runs a bash command in the workspace and returns its output (stdout and stderr merged).

Usage:
- The working directory persists between calls: after `cd sub`, the next command starts in sub. It must stay inside the workspace: a command that ends outside it (e.g. `cd /`) is followed by a reset to the workspace root, and the result says so. Environment variables, shell functions and aliases do NOT persist: each call is a fresh `bash -c`. Chain dependent steps with && in one command.
- Nothing is interactive: standard input is closed, and CI=true, GIT_TERMINAL_PROMPT=0, PAGER=cat, GIT_PAGER=cat, EDITOR=true, GIT_EDITOR=true, DEBIAN_FRONTEND=noninteractive and DROVER=1 are set. Commands that prompt (`git rebase -i`, `npm init` without -y) fail or take defaults instead of waiting. Pass non-interactive flags.
- timeout is in milliseconds: default 120000 (2 minutes), maximum 600000 (10 minutes). On timeout the command and every process it started are killed.
- Processes a foreground command leaves running (`server &`) are killed when it exits. For servers, watchers or long builds, set run_in_background: true instead: the call returns at once with an id (bash_1, bash_2, ...); read new output and the status with BashOutput {bash_id}, stop it with KillShell {shell_id}. Background commands have no timeout, start in the current working directory, do not change it, and are killed when the run ends.
- Output longer than 30000 characters is cut in the middle; filter it (grep, head, tail) when you expect a lot.
- A non-zero exit status is reported as an error with the exit code.
- Prefer the Read, Grep, Glob, LS, Edit and Write tools over cat, grep, find, ls, sed and echo redirection for files.
- Quote paths containing spaces. Give a short description of what the command does.";

impl TypedTool for BashTool {
    type Input = Input;
    const ABOUT: About = About::writes("Bash", DESCRIPTION);

    async fn run(&self, input: Input, ctx: &ToolContext) -> Result<String, ToolError> {
        if input.command.trim().is_empty() {
            return Err(ToolError::Failed("command is empty.".to_string()));
        }
        let (cwd, moved_note) = ctx.shell.cwd();
        if input.run_in_background {
            return start_background(ctx, &input.command, &cwd, moved_note);
        }
        let timeout_ms = input.timeout.unwrap_or(DEFAULT_TIMEOUT_MS);
        if timeout_ms > MAX_TIMEOUT_MS {
            return Err(ToolError::Failed(format!(
                "timeout {timeout_ms} ms is larger than the maximum of {MAX_TIMEOUT_MS} ms (10 minutes)."
            )));
        }
        let probe = CwdProbe::new_in(ctx.env.tmpdir())
            .map_err(|e| ToolError::Failed(format!("Could not run the command: {e}")))?;
        let (key, value) = probe.env();
        let env = ctx.env.for_origin(bash_origin(ctx));
        let outcome = run_shell_with_env(
            &input.command,
            &cwd,
            Duration::from_millis(timeout_ms.max(1)),
            &[(key, value.as_os_str())],
            &env,
        )
        .await
        .map_err(|e| ToolError::Failed(format!("Could not run the command: {e}")))?;
        let mut notes: Vec<String> = moved_note.into_iter().collect();
        notes.extend(outcome.network.note());
        if let Some(CwdChange::Reset { outside }) =
            probe.final_dir().map(|dir| ctx.shell.update(&dir))
        {
            notes.push(format!(
                "The command ended in {}, outside the workspace, so the working directory was reset to the workspace root {}.",
                outside.display(),
                ctx.workspace.display()
            ));
        }
        with_notes(result(outcome, timeout_ms), &notes)
    }
}

/// What the command's network attempts name as their origin: this Bash call.
pub(crate) fn bash_origin(ctx: &ToolContext) -> NetworkOrigin {
    NetworkOrigin {
        source: "bash".to_string(),
        tool_use_id: ctx.call_id.clone(),
        name: None,
    }
}

/// Start a background shell and tell the model how to follow it.
fn start_background(
    ctx: &ToolContext,
    command: &str,
    cwd: &std::path::Path,
    note: Option<String>,
) -> Result<String, ToolError> {
    match ctx
        .background
        .start(command, cwd, &ctx.env.for_origin(bash_origin(ctx)))
    {
        Ok(id) => with_notes(
            Ok(format!(
                "Command running in the background with id {id} (in {}). Read its new output and status with BashOutput {{\"bash_id\": \"{id}\"}}; stop it with KillShell {{\"shell_id\": \"{id}\"}}. It is killed when the run ends.",
                cwd.display()
            )),
            &note.into_iter().collect::<Vec<_>>(),
        ),
        Err(e) => Err(ToolError::Failed(format!(
            "Could not start the background command: {e}"
        ))),
    }
}

/// `result`, success or failure, with each note appended as its own paragraph.
fn with_notes(result: Result<String, ToolError>, notes: &[String]) -> Result<String, ToolError> {
    let noted = |mut text: String| {
        for note in notes {
            text.push_str("\n\n");
            text.push_str(note);
        }
        text
    };
    match result {
        Ok(text) => Ok(noted(text)),
        Err(ToolError::Failed(text)) => Err(ToolError::Failed(noted(text))),
        Err(internal) => Err(internal),
    }
}

/// The result the model sees for a finished (or timed-out) foreground command.
fn result(outcome: ShellOutcome, timeout_ms: u64) -> Result<String, ToolError> {
    let output = cut_middle(outcome.output.trim_end_matches('\n'), MAX_OUTPUT_CHARS);
    if outcome.timed_out {
        let mut text = format!(
            "Command timed out after {timeout_ms} ms and was killed, together with every process it started."
        );
        if !output.is_empty() {
            text.push_str(&format!(" Output before it was killed:\n{output}"));
        }
        return Err(ToolError::Failed(text));
    }
    match outcome.exit_code {
        Some(0) if output.is_empty() => Ok("(the command succeeded with no output)".to_string()),
        Some(0) => Ok(output),
        Some(code) if output.is_empty() => Err(ToolError::Failed(format!("Exit code {code}"))),
        Some(code) => Err(ToolError::Failed(format!("Exit code {code}\n{output}"))),
        None => Err(ToolError::Failed(format!(
            "The command was killed by a signal.\n{output}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::tools::{CallJson, Tool, ToolOutput};

    fn ctx(dir: &tempfile::TempDir) -> ToolContext {
        ToolContext::in_temp(dir)
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
    async fn the_non_interactive_environment_is_set() {
        let dir = tempfile::tempdir().unwrap();
        let out = bash(
            &ctx(&dir),
            json!({"command": "echo $CI $GIT_TERMINAL_PROMPT $GIT_PAGER $EDITOR $DEBIAN_FRONTEND"}),
        )
        .await;
        assert_eq!(out, ToolOutput::ok("true 0 cat true noninteractive"));
    }

    #[tokio::test]
    async fn the_working_directory_persists_inside_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/inner.txt"), "").unwrap();
        let ctx = ctx(&dir);
        let out = bash(&ctx, json!({"command": "cd sub"})).await;
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(
            bash(&ctx, json!({"command": "ls"})).await.content,
            "inner.txt"
        );
        let out = bash(&ctx, json!({"command": "cd / && echo moved"})).await;
        assert!(!out.is_error);
        assert!(out.content.starts_with("moved\n\n"), "{}", out.content);
        assert!(
            out.content.contains("outside the workspace"),
            "{}",
            out.content
        );
        assert!(out.content.contains("reset to the workspace root"));
        let root = ctx.workspace.display().to_string();
        assert_eq!(bash(&ctx, json!({"command": "pwd -P"})).await.content, root);
    }

    #[tokio::test]
    async fn environment_variables_do_not_persist() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ctx(&dir);
        bash(&ctx, json!({"command": "export FOO=bar; cd ."})).await;
        let out = bash(
            &ctx,
            json!({"command": "echo \"[${FOO:-unset}]${BASH_ENV:+ leaked}\""}),
        )
        .await;
        assert_eq!(out, ToolOutput::ok("[unset]"));
    }

    #[tokio::test]
    async fn exit_codes_survive_the_directory_probe() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let ctx = ctx(&dir);
        let out = bash(&ctx, json!({"command": "cd sub; exit 3"})).await;
        assert_eq!(out, ToolOutput::error("Exit code 3"));
        // Even a failing command's directory change is kept.
        assert_eq!(
            bash(&ctx, json!({"command": "basename $PWD"}))
                .await
                .content,
            "sub"
        );
        let out = bash(&ctx, json!({"command": "false"})).await;
        assert_eq!(out, ToolOutput::error("Exit code 1"));
        let out = bash(&ctx, json!({"command": "echo ( oops"})).await;
        assert!(out.is_error && out.content.starts_with("Exit code 2"));
        assert!(!out.content.contains("pwd"), "{}", out.content);
    }

    #[tokio::test]
    async fn background_commands_return_an_id_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ctx(&dir);
        let started = std::time::Instant::now();
        let out = bash(
            &ctx,
            json!({"command": "sleep 30", "run_in_background": true}),
        )
        .await;
        assert!(!out.is_error, "{}", out.content);
        assert!(out.content.contains("id bash_1"), "{}", out.content);
        assert!(out.content.contains("BashOutput"));
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        let out = bash(&ctx, json!({"command": "true", "run_in_background": true})).await;
        assert!(out.content.contains("id bash_2"), "{}", out.content);
        ctx.shutdown();
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
            BashTool.judged(json!({"command": "cargo test"})).subject,
            Subject::Command("cargo test".into())
        );
        assert!(!BashTool.facts().read_only);
    }
}
