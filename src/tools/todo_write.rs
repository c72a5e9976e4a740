//! TodoWrite: the model keeps its plan as a todo list, replaced whole by each call.

use schemars::JsonSchema;
use serde::Deserialize;

use super::todo::{Todo, TodoStatus};
use super::{About, ToolContext, ToolError, ToolInput, TypedTool};

#[derive(Clone, Copy)]
pub(crate) struct TodoWriteTool;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Input {
    /// The complete, updated todo list.
    todos: Vec<Todo>,
}

impl ToolInput for Input {}

const DESCRIPTION: &str = "Creates or replaces your todo list for this task: a plan you keep up to date as you work.

Usage:
- Use it for tasks with three or more distinct steps, or when the prompt lists several things to do. Skip it for a single, simple change.
- Each call replaces the whole list: send every item each time, not only the changed ones.
- Each item has content (imperative: \"Run the tests\"), activeForm (present continuous: \"Running the tests\") and status: pending, in_progress or completed.
- At most one item may be in_progress at a time. Mark an item in_progress before starting it and completed as soon as it is done (not in batches later).
- Mark an item completed only when it is fully done: not when tests fail, the work is partial or you hit an error you could not resolve; keep it in_progress and add an item for the blocker instead.
- The list is recorded in the run's transcript; it changes no files.";

impl TypedTool for TodoWriteTool {
    type Input = Input;
    // Harmless, but it changes the run's state, so it is not read-only: it runs in order
    // with other calls. It acts only on the run's own state: allowed by default.
    const ABOUT: About = About::writes("TodoWrite", DESCRIPTION).on_run_state_of("TodoWrite");

    async fn run(&self, input: Input, ctx: &ToolContext) -> Result<String, ToolError> {
        let in_progress: Vec<&str> = input
            .todos
            .iter()
            .filter(|t| t.status == TodoStatus::InProgress)
            .map(|t| t.content.as_str())
            .collect();
        if in_progress.len() > 1 {
            return Err(ToolError::Failed(format!(
                "{} items are in_progress ({}); at most one may be. Keep the one you are working on in_progress, set the others to pending or completed, and send the whole list again. The list was not changed.",
                in_progress.len(),
                in_progress.join("; ")
            )));
        }
        let mut text = if input.todos.is_empty() {
            "The todo list is now empty.".to_string()
        } else {
            format!("Todo list updated ({} items):", input.todos.len())
        };
        for todo in &input.todos {
            let mark = match todo.status {
                TodoStatus::Pending => "[ ]",
                TodoStatus::InProgress => "[>]",
                TodoStatus::Completed => "[x]",
            };
            text.push_str(&format!("\n{mark} {}", todo.content));
        }
        ctx.todo_list.set(input.todos);
        Ok(text)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::tools::{CallJson, ToolOutput};

    fn item(content: &str, status: &str) -> Value {
        json!({"content": content, "status": status, "activeForm": format!("{content}ing")})
    }

    #[tokio::test]
    async fn replaces_the_list_readable_from_the_context() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path().to_path_buf());
        assert!(ctx.todos().is_empty());
        let out = TodoWriteTool
            .call(
                json!({"todos": [item("Read", "completed"), item("Fix", "in_progress"), item("Test", "pending")]}),
                &ctx,
            )
            .await;
        assert_eq!(
            out,
            ToolOutput::ok("Todo list updated (3 items):\n[x] Read\n[>] Fix\n[ ] Test")
        );
        let todos = ctx.todos();
        assert_eq!(todos.len(), 3);
        assert_eq!(todos[1].status, TodoStatus::InProgress);
        assert_eq!(todos[1].active_form, "Fixing");
        assert_eq!(
            serde_json::to_value(&todos[1]).unwrap(),
            json!({"content": "Fix", "status": "in_progress", "activeForm": "Fixing"})
        );
    }

    #[tokio::test]
    async fn two_in_progress_items_are_refused_and_change_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path().to_path_buf());
        TodoWriteTool
            .call(json!({"todos": [item("Read", "pending")]}), &ctx)
            .await;
        let out = TodoWriteTool
            .call(
                json!({"todos": [item("Read", "in_progress"), item("Fix", "in_progress")]}),
                &ctx,
            )
            .await;
        assert!(out.is_error);
        assert!(out.content.contains("at most one"), "{}", out.content);
        assert_eq!(ctx.todos().len(), 1);
        assert_eq!(ctx.todos()[0].status, TodoStatus::Pending);
    }
}
