//! A file's identity by metadata: when none of it has changed, neither has the content
//! (the same rule git's index relies on). `ctime` cannot be set from user space, so a
//! file rewritten and then given its old `mtime` back still counts as changed.

use std::fs::Metadata;
#[cfg(unix)]
use std::os::unix::fs::MetadataExt as _;

/// Seconds and nanoseconds since the epoch, as the file system reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Timestamp {
    pub seconds: i64,
    pub nanos: u32,
}

impl Timestamp {
    /// The modification time of `metadata`.
    #[cfg(unix)]
    pub(super) fn modified(metadata: &Metadata) -> Timestamp {
        Timestamp {
            seconds: metadata.mtime(),
            nanos: u32::try_from(metadata.mtime_nsec()).unwrap_or(0),
        }
    }

    #[cfg(not(unix))]
    pub fn modified(metadata: &Metadata) -> Timestamp {
        let since = metadata
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .unwrap_or_default();
        Timestamp {
            seconds: i64::try_from(since.as_secs()).unwrap_or(i64::MAX),
            nanos: since.subsec_nanos(),
        }
    }
}

/// The metadata that changes whenever a file's content or mode does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct StatKey {
    pub size: u64,
    pub mtime: Timestamp,
    pub ctime: Timestamp,
    pub ino: u64,
    pub dev: u64,
    pub mode: u32,
}

impl StatKey {
    /// The key of a `stat` result (taken without following symlinks).
    #[allow(clippy::useless_conversion)] // the field types differ between architectures
    pub(crate) fn from_stat(stat: &rustix::fs::Stat) -> StatKey {
        let time = |seconds, nanos| Timestamp {
            seconds: i64::try_from(seconds).unwrap_or(i64::MAX),
            nanos: u32::try_from(nanos).unwrap_or(0),
        };
        StatKey {
            size: u64::try_from(stat.st_size).unwrap_or(0),
            mtime: time(stat.st_mtime, stat.st_mtime_nsec),
            ctime: time(stat.st_ctime, stat.st_ctime_nsec),
            ino: u64::from(stat.st_ino),
            dev: u64::from(stat.st_dev),
            mode: u32::from(stat.st_mode),
        }
    }
}
