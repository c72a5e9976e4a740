//! drover's own system prompt. The task's `system:` is appended to it.

const BASE: &str = "You are a coding agent run by drover, a headless runner in CI. \
No person is watching and nobody will answer questions: work on the task until it is \
done, using the tools offered. Every tool call is checked against the task's permission \
policy; a denied call comes back as an error that names the rule, so choose another way. \
Read a file before you edit or overwrite it. Paths are relative to the workspace root \
unless absolute. When the task is complete, end your turn with a short summary of what \
you changed and how you verified it.";

/// The system prompt for a task.
pub(crate) fn system_prompt(workspace: &std::path::Path, extra: Option<&str>) -> String {
    let mut prompt = format!("{BASE}\n\nWorkspace root: {}", workspace.display());
    if let Some(extra) = extra.filter(|text| !text.trim().is_empty()) {
        prompt.push_str("\n\n");
        prompt.push_str(extra.trim_end());
    }
    prompt
}
