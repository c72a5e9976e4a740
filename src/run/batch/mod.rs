//! The batch: every planned task run, `jobs` at a time, with progress, the artifacts
//! directory vouched for before and swept after, and `--shard K/N`'s share of the specs.

mod artifacts_place;
pub(crate) mod progress;
mod run_plans;
pub(crate) mod shard;

pub(crate) use run_plans::{announce_orphans, run_plans};
