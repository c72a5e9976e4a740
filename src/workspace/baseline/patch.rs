//! diff.patch from a [`Comparison`]: each changed file's two sides are loaded (the start
//! from the store or the repository, the end from the workspace), diffed, and dropped
//! before the next, so memory holds one changed file at a time.

use std::io::{self, Read};

use super::git_objects::GitObjects;
use super::{Baseline, BlobId, Comparison, Content, Entry, MAX_DIFFED_FILE, Source};
use crate::workspace::diff::path_patch;
use crate::workspace::file_entry::{FileEntry, MODE_SYMLINK};
use crate::workspace::{RelPath, Roots};

/// The diff and what it had to leave out.
#[derive(Debug, Default)]
pub(crate) struct Patch {
    /// `git apply`-able; empty when nothing changed.
    pub text: String,
    /// Lines saying which changed files are not in `text`, and why.
    pub notes: Vec<String>,
}

impl Baseline {
    /// The patch from the starting state to the workspace as `comparison` found it.
    pub(crate) fn patch(&self, comparison: &Comparison) -> Patch {
        let roots = Roots::new(std::slice::from_ref(&self.root));
        let mut objects: Option<io::Result<GitObjects>> = None;
        let mut patch = Patch::default();
        for change in &comparison.changes {
            let before = self.entries.get(&change.path);
            let old = match before {
                Some(entry) => self.load_start(&change.path, entry, &mut objects).map(Some),
                None => Ok(None),
            };
            let new = match &change.now {
                Some(now) => {
                    load_now(&roots, &self.root, &change.path, now.mode, &now.content).map(Some)
                }
                None => Ok(None),
            };
            match (old, new) {
                (Ok(old), Ok(new)) => {
                    path_patch(&mut patch.text, &change.path, old.as_ref(), new.as_ref());
                }
                (Err(why), _) | (_, Err(why)) => {
                    patch.notes.push(format!("{} ({why})", change.path));
                }
            }
        }
        patch
    }

    /// The original of a copied file, read beneath the original's directory and checked
    /// against the id the copy had at the start.
    fn load_origin(&self, path: &RelPath, id: &BlobId) -> Result<Vec<u8>, Undiffable> {
        let Some(origin) = &self.origin else {
            return Err(Undiffable::StartUnknown);
        };
        let roots = Roots::new(std::slice::from_ref(origin));
        let bytes = roots
            .open_file(&origin.join(path.to_path()))
            .and_then(|file| {
                let mut bytes = Vec::new();
                file.take(MAX_DIFFED_FILE + 1).read_to_end(&mut bytes)?;
                Ok(bytes)
            })
            .map_err(Undiffable::OriginUnreadable)?;
        if BlobId::of(&bytes) != *id {
            return Err(Undiffable::OriginChanged);
        }
        Ok(bytes)
    }

    /// The starting content of `entry`.
    fn load_start(
        &self,
        path: &RelPath,
        entry: &Entry,
        objects: &mut Option<io::Result<GitObjects>>,
    ) -> Result<FileEntry, Undiffable> {
        let content = match &entry.content {
            Content::Link(target) => target.clone(),
            Content::Large { size } => return Err(Undiffable::TooLarge(*size)),
            Content::Blob {
                source: Source::None,
                ..
            } => return Err(Undiffable::StartUnknown),
            Content::Blob {
                id,
                source: Source::Store,
            } => self.store.get(id).map_err(Undiffable::StartLost)?,
            Content::Blob {
                id,
                source: Source::Origin,
            } => self.load_origin(path, id)?,
            Content::Blob {
                id,
                source: Source::Git,
            } => {
                let Some(directory) = &self.objects else {
                    return Err(Undiffable::StartUnknown);
                };
                let reader = objects.get_or_insert_with(|| GitObjects::open(directory));
                match reader {
                    Ok(reader) => reader.get(id).map_err(Undiffable::StartUnreadable)?,
                    Err(e) => {
                        return Err(Undiffable::NoGit(io::Error::new(e.kind(), e.to_string())));
                    }
                }
            }
        };
        Ok(FileEntry {
            mode: entry.mode,
            content,
        })
    }
}

/// The content of a file as it is now, read beneath `roots`.
fn load_now(
    roots: &Roots,
    root: &std::path::Path,
    path: &RelPath,
    mode: u32,
    content: &Content,
) -> Result<FileEntry, Undiffable> {
    let bytes = match content {
        Content::Link(target) => target.clone(),
        Content::Large { size } => return Err(Undiffable::TooLarge(*size)),
        Content::Blob { .. } if mode == MODE_SYMLINK => {
            return Err(Undiffable::ChangedWhileWritten);
        }
        Content::Blob { .. } => {
            let at = root.join(path.to_path());
            let file = roots.open_file(&at).map_err(Undiffable::NowUnreadable)?;
            let mut bytes = Vec::new();
            file.take(MAX_DIFFED_FILE + 1)
                .read_to_end(&mut bytes)
                .map_err(Undiffable::NowUnreadable)?;
            if bytes.len() as u64 > MAX_DIFFED_FILE {
                return Err(Undiffable::TooLarge(bytes.len() as u64));
            }
            bytes
        }
    };
    Ok(FileEntry {
        mode,
        content: bytes,
    })
}

/// Why a changed file is named in a note instead of diffed.
#[derive(Debug, thiserror::Error)]
enum Undiffable {
    #[error("its starting content is unknown")]
    StartUnknown,
    #[error("its starting content is lost: {0}")]
    StartLost(#[source] io::Error),
    #[error("its starting content cannot be read: {0}")]
    StartUnreadable(#[source] io::Error),
    #[error("git cannot be run to read it: {0}")]
    NoGit(#[source] io::Error),
    #[error("its original cannot be read: {0}")]
    OriginUnreadable(#[source] io::Error),
    #[error("its original changed after the workspace was copied")]
    OriginChanged,
    #[error("{0} bytes, larger than the {max} MiB drover diffs", max = MAX_DIFFED_FILE / (1024 * 1024))]
    TooLarge(u64),
    #[error("it changed while the diff was written")]
    ChangedWhileWritten,
    #[error("{0}")]
    NowUnreadable(#[source] io::Error),
}
