//! Reading a spec file: only a regular file, only so many bytes, only UTF-8, so a FIFO
//! named `*.yaml` cannot hang drover and `/dev/zero` cannot fill its memory, and a
//! wrongly encoded file is refused with the line and column where it goes wrong.

use std::fmt::Write as _;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use sha2::{Digest, Sha256};

use super::error::{Position, SpecError};

/// No real spec comes near this; a larger file is refused before it is parsed.
pub(super) const MAX_SPEC_BYTES: u64 = 4 * 1024 * 1024;

/// Lowercase hex SHA-256 of `bytes`: the spec's hash as the transcript and reports carry
/// it, the same form as every other digest drover writes. Computed here with sha2 so the
/// spec needs nothing of the binary.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(64);
    for byte in Sha256::digest(bytes) {
        // invariant: writing to a String cannot fail.
        let _ = write!(out, "{byte:02x}");
    }
    out
}

/// The text of the spec (or defaults file) at `path`.
pub(crate) fn spec_text(path: &Path) -> Result<String, SpecError> {
    let io = |source: std::io::Error| SpecError::Io {
        path: path.to_path_buf(),
        source,
    };
    // Opening a FIFO for reading blocks until a writer comes: never block.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(path)
        .map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    let at_start = |message: String| SpecError::Invalid {
        position: Position {
            path: path.to_path_buf(),
            line: 1,
            column: 1,
        },
        message,
    };
    if meta.is_dir() {
        return Err(at_start(
            "is a directory; a spec (or a file it names) must be a file".to_string(),
        ));
    }
    if !meta.is_file() {
        return Err(at_start(
            "not a regular file (a FIFO, device or socket); a spec must be a file".to_string(),
        ));
    }
    if meta.len() > MAX_SPEC_BYTES {
        return Err(at_start(format!(
            "the file has {} bytes, more than the {MAX_SPEC_BYTES} a spec may have",
            meta.len()
        )));
    }
    let mut bytes = Vec::new();
    // The size can change after the check: never read more than the cap (plus one byte
    // to notice).
    file.take(MAX_SPEC_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > MAX_SPEC_BYTES {
        return Err(at_start(format!(
            "the file grew past the {MAX_SPEC_BYTES} bytes a spec may have while it was read"
        )));
    }
    if bytes.starts_with(&[0xFF, 0xFE]) || bytes.starts_with(&[0xFE, 0xFF]) {
        return Err(at_start("the file is UTF-16; save it as UTF-8".to_string()));
    }
    String::from_utf8(bytes).map_err(|error| {
        let valid = &error.as_bytes()[..error.utf8_error().valid_up_to()];
        let line = valid.iter().filter(|&&b| b == b'\n').count() as u64 + 1;
        let line_start = valid.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let column = String::from_utf8_lossy(&valid[line_start..])
            .chars()
            .count() as u64
            + 1;
        SpecError::Invalid {
            position: Position {
                path: path.to_path_buf(),
                line,
                column,
            },
            message: "invalid UTF-8 here; a spec must be UTF-8 text".to_string(),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifos_devices_huge_and_misencoded_files_are_refused_with_a_position() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("task.yaml");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let error = spec_text(&fifo).unwrap_err().to_string();
        assert!(error.contains("not a regular file"), "{error}");
        let error = spec_text(Path::new("/dev/zero")).unwrap_err().to_string();
        assert!(error.contains("not a regular file"), "{error}");

        let big = dir.path().join("big.yaml");
        std::fs::write(&big, vec![b'#'; MAX_SPEC_BYTES as usize + 1]).unwrap();
        let error = spec_text(&big).unwrap_err().to_string();
        assert!(error.contains("more than the"), "{error}");

        let latin1 = dir.path().join("latin1.yaml");
        std::fs::write(&latin1, b"version: 1\nname: caf\xe9\n").unwrap();
        let error = spec_text(&latin1).unwrap_err().to_string();
        assert!(error.contains("latin1.yaml:2:10: invalid UTF-8"), "{error}");

        let utf16 = dir.path().join("utf16.yaml");
        std::fs::write(&utf16, b"\xff\xfev\x00").unwrap();
        let error = spec_text(&utf16).unwrap_err().to_string();
        assert!(error.contains("UTF-16"), "{error}");

        let fine = dir.path().join("fine.yaml");
        std::fs::write(&fine, "version: 1\n").unwrap();
        assert_eq!(spec_text(&fine).unwrap(), "version: 1\n");
    }
}
