//! The workspace the agent works in: path resolution, what has been read (so writes are
//! never blind or stale), atomic writes, and the baseline snapshot the diff is taken
//! against.

pub(crate) mod atomic;
pub(crate) mod baseline;
pub(crate) mod beneath;
pub(crate) mod confined;
pub(crate) mod copy;
pub(crate) mod diff;
pub(crate) mod file_entry;
pub(crate) mod file_state;
pub(crate) mod leftovers;
pub(crate) mod paths;
pub(crate) mod plain_file;
pub(crate) mod rel_path;
#[cfg(test)]
pub(crate) mod tree_in_memory;
pub(crate) mod walk;

pub(crate) use baseline::Baseline;
pub(crate) use beneath::Roots;
pub(crate) use file_state::{FileStateCache, WriteRefused};
pub(crate) use rel_path::RelPath;
#[cfg(test)]
pub(crate) use tree_in_memory::TreeInMemory;

/// [`Stop`](walk::Stop) where src/run/prepare.rs still looks for it (the walk was in
/// `snapshot` before the in-memory tree became test support). It goes with src/run's
/// rewrite.
pub(crate) mod snapshot {
    pub(crate) use super::walk::Stop;
}
