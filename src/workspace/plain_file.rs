//! Reading a file from a folder anyone may have written (a recorded task's folder, a
//! downloaded artifact): the name is opened without following a symbolic link and
//! without blocking, and only a regular file with a single link, of bounded size, is
//! read. So a planted link to a secret, a device, a FIFO or `/proc/kmsg` neither hangs
//! drover nor lends it another file's contents.

use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

/// The contents of the regular file at `path`, at most `max` bytes; an error for a link,
/// anything but a regular file, a file with other hard links, or a larger one.
pub(crate) fn read_plain_file(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    let flags = rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits() as i32)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    if meta.nlink() != 1 {
        return Err(std::io::Error::other(
            "a regular file with other hard links (it may be another file's)",
        ));
    }
    if meta.len() > max {
        return Err(std::io::Error::other(format!(
            "larger than {} MiB",
            max >> 20
        )));
    }
    let mut bytes = Vec::new();
    file.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(std::io::Error::other("it grew while it was read"));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_plain_regular_file_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "data").unwrap();
        assert_eq!(read_plain_file(&file, 100).unwrap(), b"data");
        assert!(read_plain_file(&file, 2).is_err(), "too large");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert!(
            read_plain_file(&link, 100).is_err(),
            "a link is not followed"
        );
        let hard = dir.path().join("hard");
        std::fs::hard_link(&file, &hard).unwrap();
        assert!(read_plain_file(&hard, 100).is_err(), "a second link");
        assert!(read_plain_file(dir.path(), 100).is_err(), "a directory");
    }
}
