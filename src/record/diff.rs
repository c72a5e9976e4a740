//! PLACEHOLDER — to be implemented.
use crate::workspace::Snapshot;
/// A `git apply`-able diff from `before` to `after`.
pub fn unified_diff(_before: &Snapshot, _after: &Snapshot) -> String {
    todo!()
}
