//! The run's todo list: the plan the model keeps with TodoWrite. It lives in the tool
//! context so the run can report the final list after the loop.

use std::sync::Mutex;

use serde::{Deserialize, Serialize};

/// Where one todo stands.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    Pending,
    InProgress,
    Completed,
}

/// One item of the list, with Claude Code's field names so transcripts and summaries
/// read the same as the model's input.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Todo {
    /// What is to be done, imperative ("Run the tests").
    pub content: String,
    pub status: TodoStatus,
    /// The same in the present continuous ("Running the tests"), shown while in progress.
    #[serde(rename = "activeForm")]
    pub active_form: String,
}

/// The current list; each TodoWrite replaces it whole.
#[derive(Debug, Default)]
pub struct TodoList {
    todos: Mutex<Vec<Todo>>,
}

impl TodoList {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Todo>> {
        // Every mutation is a single assignment, so a poisoned lock is still consistent.
        self.todos.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A copy of the current list.
    pub fn get(&self) -> Vec<Todo> {
        self.lock().clone()
    }

    /// Replace the list.
    pub fn set(&self, todos: Vec<Todo>) {
        *self.lock() = todos;
    }
}
