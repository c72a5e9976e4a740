//! Claude Code's flags in a `drover exec` command line: what drover does with each, so a
//! workflow calling `claude -p` is a one-line change, and for those drover cannot honour
//! a refusal that says what to write instead. None is accepted silently while it would
//! mean something drover does not do.

use crate::cli::ClaudeFlags;

/// A Claude Code flag drover does not honour: which, and what to write instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(super) struct Refused(String);

/// What to write instead of `--dangerously-skip-permissions` and its kin.
const NAME_THE_RULES: &str = "drover decides every tool call by its rules and skips none: name what the task may do with --allow (e.g. --allow Read,Edit,\"Bash(cargo test *)\"); commands still run in the OS sandbox";

/// What `--continue` and its kin are refused with.
const A_NEW_TASK: &str = "drover exec starts a new task; a task stopped by a limit, a signal or a provider failure continues with `drover resume DIR/TASK` (its artifacts folder)";

/// The first of `flags` drover refuses, and why, with what to write instead.
pub(super) fn refusal(flags: &ClaudeFlags) -> Option<Refused> {
    let refused =
        |flag: &str, instead: &str| Some(Refused(format!("{flag} is refused: {instead}")));
    if flags.dangerously_skip_permissions {
        return refused("--dangerously-skip-permissions", NAME_THE_RULES);
    }
    if flags.allow_dangerously_skip_permissions {
        return refused("--allow-dangerously-skip-permissions", NAME_THE_RULES);
    }
    if flags.continue_session {
        return refused("--continue", A_NEW_TASK);
    }
    if flags.resume.is_some() {
        return refused("--resume", A_NEW_TASK);
    }
    if flags.session_id.is_some() {
        return refused("--session-id", A_NEW_TASK);
    }
    if flags.input_format.is_some() {
        return refused(
            "--input-format",
            "drover never reads stdin; give the prompt as the argument or with --prompt-file FILE",
        );
    }
    if !flags.mcp_config.is_empty() || flags.strict_mcp_config {
        return refused(
            "--mcp-config",
            "MCP servers are given in a task spec's mcp: (docs/mcp.md) and run with `drover run SPEC`; `drover exec … --print-spec` writes this task as a spec to start from",
        );
    }
    refusal_of_settings(flags)
}

/// The refusals of flags that change what the model is told or which model answers.
fn refusal_of_settings(flags: &ClaudeFlags) -> Option<Refused> {
    let refused =
        |flag: &str, instead: &str| Some(Refused(format!("{flag} is refused: {instead}")));
    if flags.system_prompt.is_some() || flags.system_prompt_file.is_some() {
        return refused(
            "--system-prompt",
            "drover keeps its own system prompt (the tools, the policy, the workspace); add to it with --append-system-prompt TEXT",
        );
    }
    if flags.permission_prompt_tool.is_some() {
        return refused(
            "--permission-prompt-tool",
            "nobody is asked in drover: --allow and --deny rules decide every call, and what no rule allows is denied",
        );
    }
    if flags.fallback_model.is_some() {
        return refused(
            "--fallback-model",
            "a drover task uses one model (--model); an overloaded provider is retried, and a run stopped by it continues with `drover resume DIR/TASK`",
        );
    }
    if flags.settings.is_some() {
        return refused(
            "--settings",
            "write the rules with --allow and --deny, or run a task spec with permissions_from: FILE, which reads a Claude Code settings file's permissions (README, Permissions)",
        );
    }
    if flags.agents.is_some() {
        return refused(
            "--agents",
            "sub-agents are given in a task spec's agents: (docs/agents.md) and run with `drover run SPEC`",
        );
    }
    if flags.include_partial_messages {
        return refused(
            "--include-partial-messages",
            "--output-format stream-json writes whole transcript events as they are recorded; drop the flag",
        );
    }
    None
}

/// Whether `--permission-mode MODE` asks for plan mode (only read-only tools offered),
/// or the refusal of a mode drover cannot honour.
pub(super) fn plan_mode(mode: Option<&str>) -> Result<bool, Refused> {
    match mode {
        None | Some("default" | "dontAsk") => Ok(false),
        Some("plan") => Ok(true),
        Some("acceptEdits") => Err(Refused(
            "--permission-mode acceptEdits is refused: write --allow Edit (Edit rules govern Write, MultiEdit and NotebookEdit too), or Edit(src/**) for some files".to_string(),
        )),
        Some("bypassPermissions") => Err(Refused(format!(
            "--permission-mode bypassPermissions is refused: {NAME_THE_RULES}"
        ))),
        Some(other) => Err(Refused(format!(
            "--permission-mode {other:?} is not a mode drover knows: default, dontAsk (no effect: nobody is asked) or plan (only read-only tools)"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_modes_that_mean_what_drover_does_are_taken_and_the_others_refused() {
        assert_eq!(plan_mode(None), Ok(false));
        assert_eq!(plan_mode(Some("dontAsk")), Ok(false));
        assert_eq!(plan_mode(Some("plan")), Ok(true));
        let accept = plan_mode(Some("acceptEdits")).unwrap_err().to_string();
        assert!(accept.contains("--allow Edit"), "{accept}");
        let bypass = plan_mode(Some("bypassPermissions"))
            .unwrap_err()
            .to_string();
        assert!(bypass.contains("--allow"), "{bypass}");
        assert!(plan_mode(Some("yolo")).is_err());
    }
}
