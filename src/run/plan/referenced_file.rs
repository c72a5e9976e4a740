//! Reading a file a spec loads by reference (`permissions_from:`, `hooks_from:`,
//! `mcp.config:`). Such a file usually comes with the repository under test, which could
//! make it a link to a device (a read without end) or to a secret (whose text an error or
//! a note would then show): only a regular file, not a link, is read, and no more of it
//! than the bound.

use std::io::Read as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

/// The largest file of this kind drover reads.
pub(crate) const MAX_REFERENCED_BYTES: u64 = 1024 * 1024;

/// Why a referenced file was not read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReferencedFileError {
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} is not a regular file (a symbolic link, a device, a directory…); name the file itself", path.display())]
    NotAFile { path: PathBuf },
    #[error("{} is over the {MAX_REFERENCED_BYTES} bytes such a file may have", path.display())]
    TooLarge { path: PathBuf },
}

/// The text of the regular file at `path` (not followed if it is a link).
pub(crate) fn read_referenced(path: &Path) -> Result<String, ReferencedFileError> {
    let io = |source| ReferencedFileError::Io {
        path: path.to_path_buf(),
        source,
    };
    let not_a_file = || ReferencedFileError::NotAFile {
        path: path.to_path_buf(),
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|error| match error.raw_os_error() {
            Some(libc::ELOOP) => not_a_file(),
            _ => io(error),
        })?;
    if !file.metadata().map_err(io)?.is_file() {
        return Err(not_a_file());
    }
    let mut text = String::new();
    file.take(MAX_REFERENCED_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(io)?;
    if text.len() as u64 > MAX_REFERENCED_BYTES {
        return Err(ReferencedFileError::TooLarge {
            path: path.to_path_buf(),
        });
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_regular_file_is_read_and_no_more_than_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("settings.json");
        std::fs::write(&file, "{}").unwrap();
        assert_eq!(read_referenced(&file).unwrap(), "{}");
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert!(matches!(
            read_referenced(&link),
            Err(ReferencedFileError::NotAFile { .. })
        ));
        let fifo = dir.path().join("fifo");
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
        )
        .unwrap();
        assert!(matches!(
            read_referenced(&fifo),
            Err(ReferencedFileError::NotAFile { .. })
        ));
        assert!(matches!(
            read_referenced(Path::new("/dev/zero")),
            Err(ReferencedFileError::NotAFile { .. })
        ));
        let big = dir.path().join("big.json");
        std::fs::write(&big, vec![b' '; MAX_REFERENCED_BYTES as usize + 1]).unwrap();
        assert!(matches!(
            read_referenced(&big),
            Err(ReferencedFileError::TooLarge { .. })
        ));
    }
}
