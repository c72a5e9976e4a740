//! Running tasks, in wings whose arrows point one way (see docs/architecture.md):
//! `recording` reads recordings; `artifacts` owns the artifacts directory; `plan` turns a
//! spec or a recording into a plan (it may read recordings, never run a task); `task`
//! runs one plan from start to report; `batch` runs them all.

pub(crate) mod artifacts;
pub(crate) mod batch;
pub(crate) mod plan;
pub(crate) mod recording;
pub(crate) mod task;

#[cfg(test)]
#[path = "run_tests.rs"]
mod tests;
