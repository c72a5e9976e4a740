//! A task's hooks made ready to run: each with its own command environment (the task's
//! sandbox unless it says otherwise), or a recording's answers given again.

use std::path::Path;

use crate::hooks::{HookCommand, HookEntry, HookSession, Hooks};
use crate::run::plan::TaskPlan;
use crate::spec::{DEFAULT_HOOK_TIMEOUT_SECS, HookMatcher};

use super::commands::TaskCommands;
use super::error::TaskError;

/// The task's hooks, ready to run: each with its own command environment (the task's
/// sandbox unless it says otherwise). A replay gives the recorded answers again and
/// runs nothing.
pub(super) fn task_hooks(
    plan: &TaskPlan,
    commands: &TaskCommands,
    workspace: &Path,
    task_dir: &Path,
    task: &str,
) -> Result<Hooks, TaskError> {
    if let Some(recording) = plan.recording() {
        return Ok(Hooks::recorded(&recording.hook_events));
    }
    if plan.hooks.is_empty() {
        return Ok(Hooks::none());
    }
    let io_dir = commands.hook_dir().to_path_buf();
    let real = io_dir.canonicalize().unwrap_or_else(|_| io_dir.clone());
    if commands
        .policy
        .writable
        .iter()
        .any(|w| real.starts_with(w.canonicalize().unwrap_or_else(|_| w.clone())))
    {
        return Err(TaskError::HookDirWritable(io_dir));
    }
    let mut entries = Vec::new();
    for (event, matchers) in &plan.hooks {
        for entry in matchers {
            let text = entry.matcher.clone().unwrap_or_default();
            // Checked when the spec was loaded; a matcher that fails now matches all.
            let compiled = HookMatcher::new(&text).unwrap_or(HookMatcher::All);
            let mut hooks = Vec::new();
            for hook in &entry.hooks {
                hooks.push(HookCommand {
                    command: hook.command.clone(),
                    timeout: std::time::Duration::from_secs(
                        hook.timeout.unwrap_or(DEFAULT_HOOK_TIMEOUT_SECS),
                    ),
                    env: commands.for_sandbox(hook.sandbox.as_ref())?.for_origin(
                        crate::record::network::NetworkOrigin {
                            source: "hook".to_string(),
                            tool_use_id: None,
                            name: Some(event.as_str().to_string()),
                        },
                    ),
                });
            }
            entries.push(HookEntry {
                event: *event,
                matcher: text,
                compiled,
                hooks,
            });
        }
    }
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let session = HookSession {
        session_id: format!("{task}-{}-{millis}", std::process::id()),
        transcript_path: task_dir.join("transcript.jsonl"),
        cwd: workspace.to_path_buf(),
        task: task.to_string(),
        io_dir,
    };
    Ok(Hooks::live(entries, session))
}
