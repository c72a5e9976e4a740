//! drover: a headless runner for coding agents.
//!
//! The modules follow the data: a task [`spec`] drives the [`agent`] loop, which asks a
//! [`model`] for turns, runs [`tools`] under a [`policy`] against a [`workspace`], and
//! leaves a [`record`] behind. [`run`] schedules tasks and writes the artifacts.

pub mod agent;
pub mod bench;
pub mod cli;
pub mod commands;
pub mod digest;
pub mod exit;
pub mod message;
pub mod model;
pub mod output;
pub mod policy;
pub mod record;
pub mod run;
pub mod sandbox;
pub mod secret_names;
pub mod spec;
pub mod tools;
pub mod workspace;

/// The version recorded in every transcript's `run_start` event.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

#[cfg(test)]
mod layers_tests;
