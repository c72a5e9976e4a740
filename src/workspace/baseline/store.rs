//! Where the baseline keeps the starting content of files git cannot give back (untracked
//! or modified ones, or every file outside a repository): a private directory of files
//! named by their git blob id, on disk rather than in memory.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::PathBuf;

use sha1::{Digest, Sha1};

use super::BlobId;

/// A content-addressed directory that lives as long as the task's baseline.
#[derive(Debug)]
pub(super) struct Store {
    dir: crate::workspace::leftovers::HeldTempDir,
}

/// Bytes moved at a time: memory stays flat whatever the file's size.
const CHUNK: usize = 64 * 1024;

impl Store {
    /// A new, empty store in the system temp directory (named so that a later run
    /// removes it if this drover is killed).
    pub(super) fn new() -> io::Result<Store> {
        let dir = crate::workspace::leftovers::HeldTempDir::new("base")?;
        Ok(Store { dir })
    }

    /// Copy everything `source` yields into the store and return its blob id. `size` is
    /// what the file's metadata said: if the content turns out to be of another length
    /// (it changed while being read), the id is computed again from what was stored.
    pub(super) fn put(&self, source: &mut impl Read, size: u64) -> io::Result<BlobId> {
        let mut temp = tempfile::NamedTempFile::new_in(self.dir.path())?;
        let mut hasher = blob_hasher(size);
        let copied = for_each_chunk(source, |chunk| {
            hasher.update(chunk);
            temp.write_all(chunk)
        })?;
        temp.flush()?;
        let id = if copied == size {
            BlobId(hasher.finalize().into())
        } else {
            hash_reader(&mut File::open(temp.path())?, copied)?
        };
        let target = self.path_of(&id);
        if !target.exists() {
            temp.persist(&target).map_err(|e| e.error)?;
        }
        Ok(id)
    }

    /// The content stored under `id`, checked against it (a store that was tampered
    /// with gives an error, never other bytes).
    pub(super) fn get(&self, id: &BlobId) -> io::Result<Vec<u8>> {
        let content = std::fs::read(self.path_of(id))?;
        if BlobId::of(&content) != *id {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("the stored copy of blob {} was altered", id.hex()),
            ));
        }
        Ok(content)
    }

    fn path_of(&self, id: &BlobId) -> PathBuf {
        self.dir.path().join(id.hex())
    }
}

/// Hand everything `reader` yields to `use_chunk`, [`CHUNK`] bytes at a time; returns
/// how many bytes there were.
fn for_each_chunk(
    reader: &mut impl Read,
    mut use_chunk: impl FnMut(&[u8]) -> io::Result<()>,
) -> io::Result<u64> {
    let mut buffer = vec![0u8; CHUNK];
    let mut total = 0u64;
    loop {
        let read = match reader.read(&mut buffer) {
            Ok(0) => return Ok(total),
            Ok(read) => read,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        use_chunk(&buffer[..read])?;
        total += read as u64;
    }
}

/// A SHA-1 hasher already fed git's blob header for `size` bytes of content.
pub(super) fn blob_hasher(size: u64) -> Sha1 {
    let mut hasher = Sha1::new();
    hasher.update(format!("blob {size}\0").as_bytes());
    hasher
}

/// The blob id of the `size` bytes `reader` yields, read in chunks.
pub(super) fn hash_reader(reader: &mut impl Read, size: u64) -> io::Result<BlobId> {
    let mut hasher = blob_hasher(size);
    let total = for_each_chunk(reader, |chunk| {
        hasher.update(chunk);
        Ok(())
    })?;
    if total != size {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "the file changed size while it was read",
        ));
    }
    Ok(BlobId(hasher.finalize().into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stores_by_git_blob_id_and_gives_the_content_back() {
        let store = Store::new().unwrap();
        let id = store.put(&mut &b"old\n"[..], 4).unwrap();
        assert_eq!(id.hex(), "3367afdbbf91e638efe983616377c60477cc6612");
        assert_eq!(store.get(&id).unwrap(), b"old\n");
        // A size that was wrong (the file changed meanwhile) still gives the true id.
        let again = store.put(&mut &b"old\n"[..], 99).unwrap();
        assert_eq!(again, id);
    }

    #[test]
    fn an_altered_copy_is_an_error() {
        let store = Store::new().unwrap();
        let id = store.put(&mut &b"x"[..], 1).unwrap();
        std::fs::write(store.path_of(&id), b"y").unwrap();
        let error = store.get(&id).unwrap_err();
        assert!(error.to_string().contains("altered"), "{error}");
    }
}
