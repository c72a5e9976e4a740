//! The workspace the agent works in: path resolution, what has been read (so writes are
//! never blind or stale), atomic writes, and the baseline snapshot the diff is taken
//! against, and the scratch copy or git worktree a task works in.

pub(crate) mod atomic;
pub(crate) mod baseline;
pub(crate) mod beneath;
pub(crate) mod confined;
pub(crate) mod copy;
pub(crate) mod diff;
pub(crate) mod file_entry;
pub(crate) mod file_state;
mod git;
pub(crate) mod instructions;
pub(crate) mod isolation;
pub(crate) mod leftovers;
#[cfg(test)]
pub(crate) mod permissions_hold;
/// Path resolution is its own crate (the policy judges by it too); here under its old name.
pub(crate) use drover_paths as paths;
pub(crate) mod plain_file;
pub(crate) mod rel_path;
pub(crate) mod repo;
pub(crate) mod start_commit;
#[cfg(test)]
pub(crate) mod tree_in_memory;
pub(crate) mod walk;
pub(crate) mod worktree;

pub(crate) use baseline::Baseline;
pub(crate) use beneath::Roots;
pub(crate) use file_state::{FileStateCache, WriteRefused};
pub(crate) use rel_path::RelPath;
#[cfg(test)]
pub(crate) use tree_in_memory::TreeInMemory;
