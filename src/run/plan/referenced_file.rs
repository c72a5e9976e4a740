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
    #[error("{} is a symbolic link{}: a file the spec loads by reference is read where the spec names it, never through a link the repository may have planted; name the real path", link.display(), if link == path { String::new() } else { format!(" on the way to {}", path.display()) })]
    ThroughLink { link: PathBuf, path: PathBuf },
}

/// `name` (relative to the spec file, as written) beside the spec, refused when any part
/// of it below the spec's directory is a symbolic link (`.claude` linked to a home
/// directory's, a skills directory linked to `/root`). An absolute `name` is the spec
/// author's own choice and is taken as written, but for its last part (see
/// [`read_referenced`]).
pub(crate) fn unlinked_beside(
    loaded: &crate::spec::LoadedSpec,
    name: &str,
) -> Result<PathBuf, ReferencedFileError> {
    beside_spec_unlinked(loaded.path.parent().unwrap_or(Path::new(".")), name)
}

/// [`unlinked_beside`] for the spec in `spec_dir`.
pub(crate) fn beside_spec_unlinked(
    spec_dir: &Path,
    name: &str,
) -> Result<PathBuf, ReferencedFileError> {
    let path = spec_dir.join(name);
    if Path::new(name).is_absolute() {
        return Ok(path);
    }
    let mut walked = spec_dir.to_path_buf();
    for part in Path::new(name).components() {
        walked.push(part);
        if matches!(
            part,
            std::path::Component::ParentDir | std::path::Component::CurDir
        ) {
            continue;
        }
        if std::fs::symlink_metadata(&walked).is_ok_and(|meta| meta.file_type().is_symlink()) {
            return Err(ReferencedFileError::ThroughLink { link: walked, path });
        }
    }
    Ok(path)
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
    fn a_path_through_a_link_below_the_spec_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(outside.path().join("skills")).unwrap();
        std::fs::create_dir_all(dir.path().join("ws")).unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("ws/.claude")).unwrap();
        let error = beside_spec_unlinked(dir.path(), "ws/.claude/skills").unwrap_err();
        assert!(
            matches!(error, ReferencedFileError::ThroughLink { .. }),
            "{error}"
        );
        assert!(
            error.to_string().contains("ws/.claude is a symbolic link"),
            "{error}"
        );
        std::fs::create_dir_all(dir.path().join("ws/real")).unwrap();
        assert_eq!(
            beside_spec_unlinked(dir.path(), "ws/real/x.json").unwrap(),
            dir.path().join("ws/real/x.json")
        );
        let absolute = outside.path().join("skills");
        let absolute = absolute.to_str().unwrap();
        assert!(beside_spec_unlinked(dir.path(), absolute).is_ok());
    }

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
