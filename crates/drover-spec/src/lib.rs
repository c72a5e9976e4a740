//! Task specs: YAML files loaded into typed structs, with every error naming
//! `file:line:column` and saying what to write instead.
//!
//! Plain data: rules and prices stay as written, for the layers that use them to parse.
//! Its own crate so what a task is compiles apart from what runs it, and the policy can
//! name its permissions without depending on the binary (drover re-exports it as
//! `crate::spec`).

mod agents;
mod claude_permissions;
mod connection;
mod context;
mod defaults;
mod diff;
mod exec_task;
mod expect;
mod front_matter;
mod hooks;
mod instructions;
mod limits;
mod load;
mod matrix;
mod mcp;
mod model_check;
mod network;
mod output;
mod pricing;
mod referenced;
mod replay;
mod repo;
mod sandbox;
mod script;
mod skills;
mod tools;
mod types;
mod values;

pub use agents::{
    AgentModelSpec, AgentSpec, DEFAULT_MAX_AGENT_DEPTH, MAX_AGENT_DEPTH, MAX_AGENT_FILE_BYTES,
    agent_of_claude_file, model_alias,
};
pub use claude_permissions::{
    PermissionsFrom, SettingsPermissions, SettingsSource, permissions_of_claude_settings,
};
pub use connection::{RetrySpec, TimeoutsSpec};
pub use context::{
    ContextSettings, ContextSpec, ContextStrategy, ContextWindow, DEFAULT_MAX_IDENTICAL_CALLS,
    IdenticalCalls, KeepResults, MIN_CONTEXT_WINDOW, Threshold,
};
pub use defaults::{
    DEFAULTS_FILE, Defaults, defaults_for_dir, defaults_for_dir_every, defaults_of_spec,
    is_defaults_file, merged_view, parse_defaults,
};
pub use diff::DiffSpec;
pub use exec_task::{EXEC_SPEC_PATH, ExecInherits, ExecTask};
pub use expect::{Expectations, FilesChangedExpectation, PathGlob};
pub use hooks::{
    DEFAULT_HOOK_TIMEOUT_SECS, HookEvent, HookMatcher, HooksSpec, hooks_of_claude_settings,
    hooks_problem, hooks_problems,
};
pub use instructions::{DEFAULT_INSTRUCTIONS, InstructionsSpec, instruction_path_problem};
pub use limits::LimitsSpec;
pub use load::{
    LoadedSpec, Position, SpecError, SpecFile, collect_spec_files, load, load_every, load_recorded,
    parse, parse_every, parse_every_with_defaults, parse_with_defaults,
};
pub use matrix::{
    Expansion, MAX_MATRIX_ENTRIES, MAX_MATRIX_VALUE_BYTES, MatrixScalar, MatrixSpec, MatrixValues,
    RecordedTask, WrittenEntry, matrix_env, matrix_env_name,
};
pub use mcp::{McpServerSpec, McpSpec, McpTimeouts, server_problem, servers_of_claude_config};
pub use network::{HostError, HostPattern, NetworkRules, NetworkSpec, Registry, UnknownRegistry};
pub use output::{MAX_ATTEMPTS, output_problem};
pub use pricing::Pricing;
pub use referenced::JsonError;
pub use replay::ReplaySpec;
pub use repo::{
    DEFAULT_REPO_TIMEOUT, DEFAULT_TOKEN_USERNAME, GitRef, MAX_REPO_DEPTH, RepoCredentials,
    RepoScheme, RepoSpec, RepoUrl, UrlProblem, ref_problem,
};
pub use sandbox::{SandboxSettings, SandboxSpec};
pub use script::{ScriptToolCall, ScriptTurn, ScriptUsage};
pub use skills::{
    MAX_SKILL_DESCRIPTION, MAX_SKILL_FILE_BYTES, SkillFile, SkillFileError, SkillSpec, SkillsFrom,
    skill_name_problem, skill_of_file,
};
pub use tools::ToolsSpec;
pub use types::{
    CheckSpec, DEFAULT_TASK_TIMEOUT, EnvSpec, Isolation, Limits, ModelSpec, PermissionMode,
    Permissions, Provider, TaskSpec, TimeoutLimit, WrittenSpec,
};
pub use values::{SpecDuration, Switch, TaskName};
