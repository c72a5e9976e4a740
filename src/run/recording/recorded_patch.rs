//! The diff.patch recorded beside a transcript, read once when a `--diff-only` replay
//! is planned.

use std::path::{Path, PathBuf};

/// The most a recorded diff.patch may hold.
const MAX_PATCH_BYTES: u64 = 256 << 20;

/// The diff.patch recorded beside a transcript, read once when the replay is planned.
/// It lies in a folder that may come from anyone (a fork's CI artifacts): it is read
/// without following a symbolic link, only as a regular file of bounded size and without
/// blocking, so a `diff.patch` planted as a link to a device, a FIFO or `/proc/kmsg`
/// neither hangs the replay nor feeds it another file.
pub(crate) struct RecordedPatch {
    pub path: PathBuf,
    pub bytes: Vec<u8>,
}

impl RecordedPatch {
    pub(crate) fn read(path: &Path) -> std::io::Result<Self> {
        Ok(RecordedPatch {
            path: path.to_path_buf(),
            bytes: crate::workspace::plain_file::read_plain_file(path, MAX_PATCH_BYTES)?,
        })
    }
}
