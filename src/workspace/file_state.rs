//! What this run has read, so Edit and Write never act blind or on a stale picture.
//!
//! A model that edits a file it has not read guesses at its content; a model that edits a
//! file changed since it read it (by a person, a formatter, a build step) overwrites work it
//! has never seen. Both are refused with a message telling the model to Read the file.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use sha2::{Digest, Sha256};

use super::Roots;
use super::paths::canonicalize_for_write;

/// The state of a file when this run last read or wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileState {
    /// sha256 of the bytes on disk.
    pub sha256: [u8; 32],
    /// Modification time on disk, when the platform reports one.
    pub mtime: Option<SystemTime>,
    /// Whether the read covered the whole file (not just an offset/limit window).
    pub whole: bool,
}

/// Per-path record of what the run has seen, shared by all tool calls of one run.
#[derive(Debug, Default)]
pub(crate) struct FileStateCache {
    states: Mutex<HashMap<PathBuf, FileState>>,
}

/// sha256 of everything `reader` yields, read in chunks (memory stays flat for a file
/// of any size).
fn sha256_of(mut reader: impl std::io::Read) -> std::io::Result<[u8; 32]> {
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        match reader.read(&mut buffer) {
            Ok(0) => return Ok(hasher.finalize().into()),
            Ok(read) => hasher.update(&buffer[..read]),
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
}

/// sha256 of `bytes`, as stored in [`FileState`].
pub(crate) fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// The key a path is stored under: canonical where it exists, so `a/../b` and symlinks
/// to the same file share one entry.
fn key(path: &Path) -> PathBuf {
    canonicalize_for_write(path).unwrap_or_else(|_| path.to_path_buf())
}

impl FileStateCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, FileState>> {
        // A panic while holding the lock cannot leave the map inconsistent (every
        // mutation is a single insert/remove), so a poisoned lock is still usable.
        self.states.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Remember that `content` is what `path` holds now (after a Read or a write by a
    /// tool), and its modification time as the file's own handle reported it.
    pub(crate) fn record(
        &self,
        path: &Path,
        content: &[u8],
        whole: bool,
        mtime: Option<SystemTime>,
    ) {
        self.record_digest(path, sha256(content), whole, mtime);
    }

    /// [`FileStateCache::record`] with the content's sha256 already computed (a file
    /// streamed rather than held).
    pub(crate) fn record_digest(
        &self,
        path: &Path,
        sha256: [u8; 32],
        whole: bool,
        mtime: Option<SystemTime>,
    ) {
        let state = FileState {
            sha256,
            mtime,
            whole,
        };
        self.lock().insert(key(path), state);
    }

    /// The recorded state of `path`, if the run has read or written it.
    #[cfg(test)]
    pub(crate) fn get(&self, path: &Path) -> Option<FileState> {
        self.lock().get(&key(path)).cloned()
    }

    /// Whether the run has read (or itself written) `path`.
    #[cfg(test)]
    pub(crate) fn has_read(&self, path: &Path) -> bool {
        self.get(path).is_some()
    }

    /// Forget `path` (e.g. after it was deleted).
    #[cfg(test)]
    pub(crate) fn forget(&self, path: &Path) {
        self.lock().remove(&key(path));
    }

    /// May a tool overwrite `path` now? Errors are written for the model.
    ///
    /// A file that does not exist is always writable. An existing file must have been
    /// read (or written) in this run, and must not have changed since: a changed mtime
    /// alone is fine when the content is the same (e.g. `touch`).
    ///
    /// `path` is judged (symlinks resolved); it is looked at only beneath `roots`.
    pub(crate) fn check_writable(&self, path: &Path, roots: &Roots) -> Result<(), WriteRefused> {
        let meta = match roots.metadata(path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(source) => {
                return Err(WriteRefused::Unreachable {
                    path: path.to_path_buf(),
                    source,
                });
            }
        };
        let k = key(path);
        let Some(state) = self.lock().get(&k).cloned() else {
            return Err(WriteRefused::NotRead {
                path: path.to_path_buf(),
            });
        };
        let mtime = meta.modified().ok();
        if mtime == state.mtime && mtime.is_some() {
            return Ok(());
        }
        let digest = roots
            .open_file(path)
            .and_then(sha256_of)
            .map_err(|source| WriteRefused::Unverifiable {
                path: path.to_path_buf(),
                source,
            })?;
        if digest == state.sha256 {
            // Same content, new mtime: remember the new mtime to skip hashing next time.
            let mut states = self.lock();
            if let Some(entry) = states.get_mut(&k) {
                entry.mtime = mtime;
            }
            return Ok(());
        }
        Err(WriteRefused::Changed {
            path: path.to_path_buf(),
        })
    }
}

/// Why a tool may not overwrite a file now; the text is written for the model.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WriteRefused {
    #[error("Cannot write {}: {source}", path.display())]
    Unreachable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("File has not been read yet. Read it first before writing to it: {}", path.display())]
    NotRead { path: PathBuf },
    #[error("Could not read {} to check it is unchanged: {source}", path.display())]
    Unverifiable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "File has been modified since it was read, either by the user or by a linter or formatter: {}. Read it again before attempting to write it.",
        path.display()
    )]
    Changed { path: PathBuf },
}

impl WriteRefused {
    /// The I/O error behind the refusal, if there is one.
    pub(crate) fn io_error(&self) -> Option<&std::io::Error> {
        match self {
            WriteRefused::Unreachable { source, .. }
            | WriteRefused::Unverifiable { source, .. } => Some(source),
            WriteRefused::NotRead { .. } | WriteRefused::Changed { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mtime(path: &Path) -> Option<SystemTime> {
        std::fs::metadata(path).and_then(|m| m.modified()).ok()
    }

    #[test]
    fn unread_existing_file_is_refused_and_missing_file_is_allowed() {
        let dir = tempfile::tempdir().unwrap();
        let roots = Roots::new(&[dir.path().canonicalize().unwrap()]);
        let file = dir.path().canonicalize().unwrap().join("a.txt");
        let cache = FileStateCache::default();
        assert!(cache.check_writable(&file, &roots).is_ok());
        std::fs::write(&file, "x").unwrap();
        let err = cache.check_writable(&file, &roots).unwrap_err().to_string();
        assert!(err.contains("has not been read yet"), "{err}");
        cache.record(&file, b"x", true, mtime(&file));
        assert!(cache.check_writable(&file, &roots).is_ok());
        assert!(cache.get(&file).unwrap().whole);
    }

    #[test]
    fn changed_content_is_stale_but_touch_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let roots = Roots::new(&[dir.path().canonicalize().unwrap()]);
        let file = dir.path().canonicalize().unwrap().join("a.txt");
        std::fs::write(&file, "one").unwrap();
        let cache = FileStateCache::default();
        cache.record(&file, b"one", true, mtime(&file));

        // Same content, different mtime: fine.
        let later = SystemTime::now() + std::time::Duration::from_secs(10);
        std::fs::File::options()
            .write(true)
            .open(&file)
            .unwrap()
            .set_modified(later)
            .unwrap();
        assert!(cache.check_writable(&file, &roots).is_ok());

        // Different content and mtime: stale.
        std::fs::write(&file, "two").unwrap();
        let future = SystemTime::now() + std::time::Duration::from_secs(20);
        std::fs::File::options()
            .write(true)
            .open(&file)
            .unwrap()
            .set_modified(future)
            .unwrap();
        let err = cache.check_writable(&file, &roots).unwrap_err().to_string();
        assert!(err.contains("modified since it was read"), "{err}");
        assert!(err.contains("Read it again"), "{err}");
    }

    #[test]
    fn equivalent_paths_share_an_entry() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let file = dir.path().canonicalize().unwrap().join("a.txt");
        std::fs::write(&file, "x").unwrap();
        let cache = FileStateCache::default();
        cache.record(&dir.path().join("sub/../a.txt"), b"x", false, None);
        assert!(cache.has_read(&file));
        cache.forget(&file);
        assert!(!cache.has_read(&file));
    }
}
