//! Task specs: YAML files loaded into typed structs, with every error naming
//! `file:line:column` and saying what to write instead.

mod connection;
mod expect;
mod limits;
mod load;
mod pricing;
mod types;

pub use connection::{RetrySpec, TimeoutsSpec};
pub use expect::{Expectations, FilesChangedExpectation, PathGlob};
pub use limits::{LimitValue, LimitsSpec};
pub use load::{LoadedSpec, Position, SpecError, collect_spec_files, load, load_all, parse};
pub use pricing::Pricing;
pub use types::{
    CheckSpec, DEFAULT_TASK_TIMEOUT, EnvSpec, Isolation, Limits, ModelSpec, PermissionMode,
    Permissions, Provider, SandboxSettings, SandboxSpec, ScriptToolCall, ScriptTurn, ScriptUsage,
    SpecDuration, SpecVersion, Switch, TaskName, TaskSpec, TimeoutLimit,
};
