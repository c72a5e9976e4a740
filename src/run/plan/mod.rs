//! Planning: a spec (with the command line's overrides) or a recording becomes a
//! [`TaskPlan`] before any task starts, so bad input fails fast and nothing half-runs.
//! Planning may read recordings (`run::recording`) and knows the artifacts directory's
//! file names; it never runs a task.

mod conflicts;
mod live;
mod plan_error;
mod referenced_file;
mod replay;
mod replay_inputs;
mod replay_spec;
mod replay_start;
mod repo_plan;
mod resume;
mod resume_error;
mod resume_recorded;
mod settle;
mod spec_agents;
pub(crate) mod spec_checks;
mod spec_rules;
mod spec_skills;
mod task_plan;

pub(crate) use live::{Overrides, plan_tasks};
pub(crate) use plan_error::PlanError;
pub(crate) use referenced_file::{ReferencedFileError, beside_spec_unlinked, read_referenced};
pub(crate) use replay::plan_replay;
pub(crate) use replay_inputs::ReplayOptions;
pub(crate) use resume::{ResumeOptions, plan_resume};
pub(crate) use resume_error::ResumeError;
pub(crate) use settle::{save_indexes, settle_outputs};
pub(crate) use task_plan::{
    InstructionsPlan, Mode, ModelSource, ResumePlan, TaskPlan, WorkspacePlan,
};
