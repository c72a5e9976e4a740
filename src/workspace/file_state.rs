//! PLACEHOLDER — to be implemented.
#[derive(Debug, Default)]
pub struct FileStateCache {}
