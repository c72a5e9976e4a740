//! Task specs: YAML files loaded into typed structs, with every error naming
//! `file:line:column` and saying what to write instead.

mod agents;
mod connection;
mod expect;
mod hooks;
mod limits;
mod load;
mod mcp;
mod output;
mod pricing;
mod referenced;
mod replay;
mod tools;
mod types;

pub(crate) use agents::{
    AgentModelSpec, AgentSpec, DEFAULT_MAX_AGENT_DEPTH, MAX_AGENT_DEPTH, MAX_AGENT_FILE_BYTES,
    agent_of_claude_file, model_alias,
};
pub(crate) use connection::{RetrySpec, TimeoutsSpec};
#[cfg(test)]
pub(crate) use expect::FilesChangedExpectation;
pub(crate) use expect::{Expectations, PathGlob};
pub(crate) use hooks::{
    DEFAULT_HOOK_TIMEOUT_SECS, HookEvent, HookMatcher, HooksSpec, hooks_of_claude_settings,
    hooks_problem,
};
pub(crate) use limits::LimitsSpec;
pub(crate) use load::{LoadedSpec, Position, SpecError, collect_spec_files, load, load_all, parse};
pub(crate) use mcp::{
    McpServerSpec, McpSpec, McpTimeouts, server_problem, servers_of_claude_config,
};
pub(crate) use output::MAX_ATTEMPTS;
pub(crate) use pricing::Pricing;
pub(crate) use replay::ReplaySpec;
pub(crate) use tools::ToolsSpec;
#[cfg(test)]
pub(crate) use types::ScriptToolCall;
pub(crate) use types::{
    CheckSpec, DEFAULT_TASK_TIMEOUT, EnvSpec, Isolation, Limits, ModelSpec, PermissionMode,
    Permissions, Provider, SandboxSpec, ScriptTurn, ScriptUsage, SpecDuration, Switch, TaskSpec,
    TimeoutLimit,
};
