//! PLACEHOLDER — to be implemented.
