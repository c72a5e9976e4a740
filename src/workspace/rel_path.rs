//! A workspace-relative path as the bytes the file system holds, so a file name that is
//! not UTF-8 keeps its identity through the snapshot, the diff, the expectations and the
//! reports: a lossy conversion names the wrong file, and two names that convert to the
//! same text would hide each other's changes.

use std::fmt;
#[cfg(unix)]
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};

/// Relative to the workspace root, `/`-separated, no `.` or `..` parts; empty only for
/// the root itself ([`RelPath::root`]).
/// Ordered by bytes, as git orders the paths of a diff.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct RelPath(Vec<u8>);

impl RelPath {
    /// The path of `relative` (already relative to the root, as a walker yields it),
    /// its components joined with `/`.
    pub(crate) fn from_relative(relative: &Path) -> RelPath {
        let mut bytes = Vec::new();
        for component in relative.components() {
            if !bytes.is_empty() {
                bytes.push(b'/');
            }
            bytes.extend_from_slice(&os_bytes(component.as_os_str()));
        }
        RelPath(bytes)
    }

    /// The workspace root itself.
    pub(crate) fn root() -> RelPath {
        RelPath(Vec::new())
    }

    /// A path given as raw bytes (from git's index), trusted to be relative and
    /// `/`-separated.
    pub(crate) fn from_bytes(bytes: Vec<u8>) -> RelPath {
        RelPath(bytes)
    }

    /// The path of `name` (one component) inside this directory.
    pub(crate) fn join(&self, name: &[u8]) -> RelPath {
        let mut bytes = Vec::with_capacity(self.0.len() + 1 + name.len());
        bytes.extend_from_slice(&self.0);
        if !bytes.is_empty() {
            bytes.push(b'/');
        }
        bytes.extend_from_slice(name);
        RelPath(bytes)
    }

    /// Whether `self` is `prefix` or lies below it.
    pub(crate) fn starts_with(&self, prefix: &RelPath) -> bool {
        prefix.0.is_empty()
            || self.0 == prefix.0
            || (self.0.starts_with(&prefix.0) && self.0.get(prefix.0.len()) == Some(&b'/'))
    }

    /// The last component (the whole path at the top).
    pub(crate) fn file_name(&self) -> &[u8] {
        match self.0.iter().rposition(|&b| b == b'/') {
            Some(at) => &self.0[at + 1..],
            None => &self.0,
        }
    }

    /// The directory holding this path (`None` at the top).
    pub(crate) fn parent(&self) -> Option<RelPath> {
        let at = self.0.iter().rposition(|&b| b == b'/')?;
        Some(RelPath(self.0[..at].to_vec()))
    }

    /// The raw bytes: what git's quoting and blob hashing work on.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The path to join onto a root directory to reach the file.
    pub(crate) fn to_path(&self) -> PathBuf {
        path_of_bytes(&self.0)
    }

    /// Whether the name can be shown as it is: valid UTF-8, with no control character,
    /// double quote or backslash (which would make the shown form ambiguous).
    fn shows_verbatim(&self) -> bool {
        std::str::from_utf8(&self.0).is_ok_and(|text| {
            !text
                .chars()
                .any(|c| c.is_control() || c == '"' || c == '\\')
        })
    }
}

/// The form reports show: the name itself when [`RelPath::shows_verbatim`], otherwise git's
/// C-style quoting (`"caf\351.txt"`). Distinct paths always show differently, because a
/// verbatim name never contains the `"` every quoted one starts with.
impl fmt::Display for RelPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.shows_verbatim() {
            f.write_str(&String::from_utf8_lossy(&self.0))
        } else {
            f.write_str(&crate::workspace::diff::quote_path(&self.0))
        }
    }
}

impl From<&str> for RelPath {
    fn from(text: &str) -> RelPath {
        RelPath(text.as_bytes().to_vec())
    }
}

/// Compares with a path written as text (`src/lib.rs`), byte for byte.
impl PartialEq<&str> for RelPath {
    fn eq(&self, other: &&str) -> bool {
        self.0 == other.as_bytes()
    }
}

#[cfg(unix)]
fn os_bytes(part: &std::ffi::OsStr) -> Vec<u8> {
    part.as_bytes().to_vec()
}

#[cfg(not(unix))]
fn os_bytes(part: &std::ffi::OsStr) -> Vec<u8> {
    part.to_string_lossy().into_owned().into_bytes()
}

#[cfg(unix)]
fn path_of_bytes(bytes: &[u8]) -> PathBuf {
    PathBuf::from(std::ffi::OsStr::from_bytes(bytes))
}

#[cfg(not(unix))]
fn path_of_bytes(bytes: &[u8]) -> PathBuf {
    PathBuf::from(String::from_utf8_lossy(bytes).into_owned())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;

    #[test]
    fn keeps_the_bytes_of_a_name_that_is_not_utf8() {
        let relative = Path::new("src").join(OsStr::from_bytes(b"caf\xe9.txt"));
        let path = RelPath::from_relative(&relative);
        assert_eq!(path.as_bytes(), b"src/caf\xe9.txt");
        assert_eq!(path.to_path(), relative);
        assert_eq!(path.to_string(), r#""src/caf\351.txt""#);
    }

    #[test]
    fn shows_plain_and_unicode_names_as_they_are() {
        assert_eq!(RelPath::from("src/lib.rs").to_string(), "src/lib.rs");
        assert_eq!(RelPath::from("docs/café.md").to_string(), "docs/café.md");
        assert_eq!(RelPath::from("a b.txt").to_string(), "a b.txt");
    }

    #[test]
    fn names_that_would_read_ambiguously_are_quoted() {
        assert_eq!(RelPath::from("a\"b").to_string(), r#""a\"b""#);
        assert_eq!(RelPath::from("a\\b").to_string(), r#""a\\b""#);
        assert_eq!(RelPath::from("line\nbreak").to_string(), r#""line\nbreak""#);
    }

    #[test]
    fn names_that_convert_to_the_same_text_stay_distinct() {
        let a = RelPath::from_relative(Path::new(OsStr::from_bytes(b"x\xff")));
        let b = RelPath::from_relative(Path::new(OsStr::from_bytes(b"x\xfe")));
        assert_ne!(a, b);
        assert_ne!(a.to_string(), b.to_string());
        assert_ne!(a.to_string(), RelPath::from("x\u{fffd}").to_string());
    }
}
