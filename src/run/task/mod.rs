//! One task from start to report: its workspace and starting state, arming (policy,
//! tools, sandbox, MCP servers), `run_start`, setup, the agent loop (or a recorded diff),
//! the diff, the checks, `run_end`. It runs a plan; it never makes one.

mod agent_loop;
mod arm;
mod checks;
mod command_network;
mod commands;
mod diff;
mod diff_only;
mod error;
mod evaluation;
mod expect;
mod hooks;
pub(crate) mod interrupt;
mod judge;
mod kept_recording;
mod model;
mod page_model;
mod project;
mod record_start;
mod redaction;
mod repo;
mod resume_check;
mod run_task;
mod runner_hint;
mod setup;
mod start;
pub(crate) mod subagents;
mod tool_listing;
mod web;

pub(crate) use interrupt::Interrupt;
pub(crate) use resume_check::check_workspace;
pub(crate) use run_task::{Followers, run_task, unfinished_report};
pub(crate) use tool_listing::{ListedTool, ToolKind, list_builtin_tools, list_tools};
