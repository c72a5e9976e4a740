//! The batch: every planned task run, `jobs` at a time, with progress (and `--json`'s
//! events), the artifacts directory vouched for before and swept after, and
//! `--shard K/N`'s share of the specs.

mod artifacts_place;
mod console;
pub(crate) mod progress;
mod run_plans;
pub(crate) mod shard;
pub(crate) mod work_item;

pub(crate) use console::Console;
pub(crate) use run_plans::{Finished, announce_orphans, run_plans};
