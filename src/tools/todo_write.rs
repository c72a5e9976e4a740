//! TodoWrite: the model keeps its plan as a todo list, replaced whole by each call.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::text::parse_input;
use super::todo::{Todo, TodoStatus};
use super::{Tool, ToolContext, ToolOutput};
use crate::policy::Subject;

pub struct TodoWriteTool;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    todos: Vec<Todo>,
}

const DESCRIPTION: &str = "Creates or replaces your todo list for this task: a plan you keep up to date as you work.

Usage:
- Use it for tasks with three or more distinct steps, or when the prompt lists several things to do. Skip it for a single, simple change.
- Each call replaces the whole list: send every item each time, not only the changed ones.
- Each item has content (imperative: \"Run the tests\"), activeForm (present continuous: \"Running the tests\") and status: pending, in_progress or completed.
- At most one item may be in_progress at a time. Mark an item in_progress before starting it and completed as soon as it is done (not in batches later).
- Mark an item completed only when it is fully done: not when tests fail, the work is partial or you hit an error you could not resolve; keep it in_progress and add an item for the blocker instead.
- The list is recorded in the run's transcript; it changes no files.";

#[async_trait]
impl Tool for TodoWriteTool {
    fn name(&self) -> &'static str {
        "TodoWrite"
    }

    fn description(&self) -> &'static str {
        DESCRIPTION
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "todos": {
                    "type": "array",
                    "description": "The complete, updated todo list.",
                    "items": {
                        "type": "object",
                        "properties": {
                            "content": {"type": "string", "minLength": 1, "description": "What to do, imperative (\"Run the tests\")."},
                            "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]},
                            "activeForm": {"type": "string", "minLength": 1, "description": "The same in the present continuous (\"Running the tests\")."}
                        },
                        "required": ["content", "status", "activeForm"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["todos"],
            "additionalProperties": false
        })
    }

    /// Harmless, but it changes the run's state, so it runs in order with other calls.
    fn is_read_only(&self) -> bool {
        false
    }

    fn subject(&self, _input: &Value) -> Subject {
        Subject::None
    }

    /// Acts only on this run's own state: allowed by default.
    fn acts_on_run_state(&self) -> bool {
        true
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let input: Input = match parse_input("TodoWrite", input) {
            Ok(input) => input,
            Err(error) => return error,
        };
        let in_progress: Vec<&str> = input
            .todos
            .iter()
            .filter(|t| t.status == TodoStatus::InProgress)
            .map(|t| t.content.as_str())
            .collect();
        if in_progress.len() > 1 {
            return ToolOutput::error(format!(
                "{} items are in_progress ({}); at most one may be. Keep the one you are working on in_progress, set the others to pending or completed, and send the whole list again. The list was not changed.",
                in_progress.len(),
                in_progress.join("; ")
            ));
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
        ToolOutput::ok(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
