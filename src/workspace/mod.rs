//! The workspace the agent works in: path resolution, what has been read (so writes are
//! never blind or stale), atomic writes, and the baseline snapshot the diff is taken
//! against.

pub mod atomic;
pub mod baseline;
pub mod beneath;
pub mod confined;
pub mod copy;
pub mod diff;
pub mod file_state;
pub mod leftovers;
pub mod paths;
pub mod rel_path;
pub mod snapshot;

pub use baseline::Baseline;
pub use beneath::Roots;
pub use file_state::FileStateCache;
pub use rel_path::RelPath;
#[cfg(test)]
pub use snapshot::Snapshot;
