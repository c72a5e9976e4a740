//! PLACEHOLDER — to be implemented.
use std::path::Path;
/// Copy the workspace's files (not ignored ones, not `.git/`) from `from` into `to`.
pub fn copy_workspace(_from: &Path, _to: &Path) -> std::io::Result<()> {
    todo!()
}
