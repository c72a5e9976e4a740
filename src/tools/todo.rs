//! The run's todo list: the plan the model keeps with TodoWrite. It lives in the tool
//! context so the run can report the final list after the loop.

use std::sync::Mutex;

pub(crate) use crate::record::{Todo, TodoStatus};

/// The current list; each TodoWrite replaces it whole.
#[derive(Debug, Default)]
pub(crate) struct TodoList {
    todos: Mutex<Vec<Todo>>,
}

impl TodoList {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Todo>> {
        // Every mutation is a single assignment, so a poisoned lock is still consistent.
        self.todos.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A copy of the current list.
    pub(crate) fn get(&self) -> Vec<Todo> {
        self.lock().clone()
    }

    /// Replace the list.
    pub(crate) fn set(&self, todos: Vec<Todo>) {
        *self.lock() = todos;
    }
}
