//! PLACEHOLDER — to be implemented.
use std::collections::BTreeMap;
use std::path::Path;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEntry {
    /// Unix mode bits as git writes them: 0o100644, 0o100755 or 0o120000 (symlink).
    pub mode: u32,
    /// File bytes (for a symlink: its target).
    pub content: Vec<u8>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// Relative, `/`-separated path → entry.
    pub files: BTreeMap<String, FileEntry>,
}

impl Snapshot {
    pub fn take(_root: &Path) -> std::io::Result<Snapshot> {
        todo!()
    }
    /// sha256 over paths, modes and contents.
    pub fn fingerprint(&self) -> String {
        todo!()
    }
    /// Paths added, changed or deleted between `self` (before) and `after`, sorted.
    pub fn changed_paths(&self, _after: &Snapshot) -> Vec<String> {
        todo!()
    }
}
