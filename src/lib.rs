//! drover: a headless runner for coding agents.
//!
//! The modules follow the data: a task spec drives the agent loop, which asks a model for
//! turns, runs tools under a policy against a workspace, and leaves a record behind; run
//! schedules tasks and writes the artifacts. docs/architecture.md maps the layers.
//!
//! The library serves the `drover` binary (and the fuzz targets); it is not a public API.

mod agent;
mod bench;
pub mod cli;
mod commands;
mod digest;
pub mod exit;
mod hooks;
mod http_client;
mod mcp;
mod model;
mod network;
mod publish;
mod run;
mod sandbox;
mod tools;
mod workspace;

// Lower layers that are crates of their own (docs/architecture.md), under their module
// names so `crate::message::…` reads as before.
use drover_message as message;
use drover_output as output;
use drover_policy as policy;
use drover_record as record;
use drover_spec as spec;
// The printing macros, as `crate::say!` and `crate::esay!` everywhere in the binary.
use drover_output::{esay, say};

// What the binary and the fuzz targets use; everything else is the crate's own.
pub use commands::dispatch;
pub use drover_shell::{Analysis, analyse};
pub use policy::Rule;
pub use sandbox::launcher::{LaunchRequest, sandbox_exec_main};
pub use sandbox::own_environ::hide_own_environment;

/// The version recorded in every transcript's `run_start` event.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

#[cfg(test)]
mod architecture_tests;
#[cfg(test)]
mod layers_tests;
