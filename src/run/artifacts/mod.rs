//! The artifacts directory: what drover writes there and nothing else (the ledger of
//! what each task published, swept of the rest when the run is over), a task's folder
//! staged where no agent can reach it, the folders a killed drover left unpublished, an
//! earlier run's leftovers, the run-wide reports, and the lock that keeps a second run
//! out while one writes there. It knows nothing of plans or tasks
//! beyond their names.

mod earlier_run;
mod ledger;
mod lock;
mod orphaned_folders;
mod reports;
mod task_folder;

pub(crate) use earlier_run::clear_earlier_run;
pub(crate) use ledger::{ArtifactsError, Ledger, Sweep};
pub(crate) use lock::{ArtifactsLock, LOCK_FILE};
pub(crate) use orphaned_folders::publish_orphaned_folders;
pub(crate) use reports::{RUN_FILES, write_reports};
pub(crate) use task_folder::TaskFolder;
