//! Task specs: YAML files loaded into typed structs, with every error naming
//! `file:line:column` and saying what to write instead.

mod connection;
mod expect;
mod limits;
mod load;
mod pricing;
mod types;

pub use connection::{RetrySpec, TimeoutsSpec};
#[cfg(test)]
pub use expect::FilesChangedExpectation;
pub use expect::{Expectations, PathGlob};
pub use limits::LimitsSpec;
pub use load::{LoadedSpec, Position, SpecError, collect_spec_files, load, load_all, parse};
pub use pricing::Pricing;
pub use types::{
    CheckSpec, Isolation, ModelSpec, PermissionMode, Permissions, Provider, SandboxSpec,
    ScriptTurn, ScriptUsage, SpecDuration, Switch, TimeoutLimit,
};
#[cfg(test)]
pub use types::{DEFAULT_TASK_TIMEOUT, ScriptToolCall};
