//! One file as git stores it (mode and bytes): what the baseline keeps, the comparison
//! weighs and the patch writer writes.

/// Git's mode for a regular file without execute permission.
pub(crate) const MODE_FILE: u32 = 0o100644;
/// Git's mode for a regular file with an execute bit set.
pub(crate) const MODE_EXECUTABLE: u32 = 0o100755;
/// Git's mode for a symbolic link (its content is the link target).
pub(crate) const MODE_SYMLINK: u32 = 0o120000;

/// One file as git would store it: the diff and the fingerprint only care about these.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileEntry {
    /// Unix mode bits as git writes them: 0o100644, 0o100755 or 0o120000 (symlink).
    pub mode: u32,
    /// File bytes (for a symlink: its target).
    pub content: Vec<u8>,
}

impl FileEntry {
    /// Symlinks are diffed by their target text and cannot become regular files in place.
    pub(crate) fn is_symlink(&self) -> bool {
        self.mode == MODE_SYMLINK
    }
}
