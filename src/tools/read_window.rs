//! Reading a window of a text file's lines without loading the file: Read of a 2 GB log
//! with `limit: 5` holds five lines (each cut to a bounded length), while the rest of the
//! file streams past once to count its lines and hash it for the read-before-write check.

use std::io::{self, Read};
use std::path::Path;
use std::time::SystemTime;

use sha2::{Digest, Sha256};

use super::text::{BINARY_SNIFF_BYTES, NotText, cut_chars, decode};
use crate::workspace::Roots;

/// Longer lines are cut, so one minified file cannot flood the context.
pub(crate) const MAX_LINE_CHARS: usize = 2000;
/// A line is kept up to this many bytes (enough for the characters Read shows).
const MAX_KEPT_LINE_BYTES: usize = 4 * MAX_LINE_CHARS + 4;
/// The shown lines together are kept up to this many bytes; a window that would hold
/// more ends early and says where to continue.
pub(super) const MAX_WINDOW_BYTES: usize = 2 * 1024 * 1024;
/// UTF-16 files are decoded whole, so they are only read up to this size.
const MAX_UTF16_BYTES: u64 = 64 * 1024 * 1024;
/// Bytes read at a time.
const CHUNK: usize = 64 * 1024;

/// The lines of a file Read shows, and what it learned about the whole file.
#[derive(Debug)]
pub(super) struct Window {
    /// (1-based line number, the line as Read shows it after the tab).
    pub lines: Vec<(usize, String)>,
    /// Lines in the file, counted as `split('\n')` counts them (a final newline starts
    /// an empty last line).
    pub total: usize,
    /// Some shown line was not valid UTF-8 (its bad bytes became U+FFFD).
    pub lossy: bool,
    /// The file holds no text at all.
    pub empty: bool,
    /// sha256 of every byte of the file, for the read-before-write check.
    pub sha256: [u8; 32],
    pub mtime: Option<SystemTime>,
}

/// Why a window could not be read.
#[derive(Debug)]
pub(super) enum WindowError {
    Io(io::Error),
    NotText(NotText),
    /// A UTF-16 file larger than [`MAX_UTF16_BYTES`].
    TooLarge(u64),
}

impl From<io::Error> for WindowError {
    fn from(error: io::Error) -> Self {
        WindowError::Io(error)
    }
}

/// Lines `first..first+limit` (1-based) of the text file at `path`, opened beneath
/// `roots`.
pub(super) fn read_window(
    roots: &Roots,
    path: &Path,
    first: usize,
    limit: usize,
) -> Result<Window, WindowError> {
    let mut file = roots.open_file(path)?;
    let metadata = file.metadata()?;
    let mtime = metadata.modified().ok();
    let mut head = Vec::with_capacity(BINARY_SNIFF_BYTES);
    (&mut file)
        .take(BINARY_SNIFF_BYTES as u64)
        .read_to_end(&mut head)?;
    if head.starts_with(&[0xFF, 0xFE]) || head.starts_with(&[0xFE, 0xFF]) {
        return utf16_window(file, head, metadata.len(), mtime, first, limit);
    }
    let body_start = if head.starts_with(&[0xEF, 0xBB, 0xBF]) {
        3
    } else {
        0
    };
    if head[body_start..].contains(&0) {
        return Err(WindowError::NotText(NotText::Binary));
    }
    let mut hasher = Sha256::new();
    hasher.update(&head);
    let mut lines = LineCollector::new(first, limit);
    lines.feed(&head[body_start..]);
    let mut buffer = vec![0u8; CHUNK];
    loop {
        let read = match file.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => read,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error.into()),
        };
        hasher.update(&buffer[..read]);
        lines.feed(&buffer[..read]);
    }
    let empty = lines.bytes_seen == 0;
    let (shown, total, lossy) = lines.finish();
    Ok(Window {
        lines: shown,
        total,
        lossy,
        empty,
        sha256: hasher.finalize().into(),
        mtime,
    })
}

/// UTF-16 needs decoding as a whole: bounded by size instead of streamed.
fn utf16_window(
    mut file: std::fs::File,
    mut bytes: Vec<u8>,
    size: u64,
    mtime: Option<SystemTime>,
    first: usize,
    limit: usize,
) -> Result<Window, WindowError> {
    if size > MAX_UTF16_BYTES {
        return Err(WindowError::TooLarge(size));
    }
    file.read_to_end(&mut bytes)?;
    let decoded = decode(&bytes).map_err(WindowError::NotText)?;
    let mut lines = LineCollector::new(first, limit);
    lines.feed(decoded.text.as_bytes());
    let (shown, total, _) = lines.finish();
    Ok(Window {
        lines: shown,
        total,
        lossy: decoded.lossy,
        empty: decoded.text.is_empty(),
        sha256: Sha256::digest(&bytes).into(),
        mtime,
    })
}

/// Splits a byte stream into lines, keeping only the window's (each cut short).
struct LineCollector {
    first: usize,
    last: usize,
    number: usize,
    current: Vec<u8>,
    current_chars: usize,
    shown: Vec<(usize, String)>,
    kept_bytes: usize,
    lossy: bool,
    bytes_seen: u64,
}

impl LineCollector {
    fn new(first: usize, limit: usize) -> LineCollector {
        LineCollector {
            first,
            last: first.saturating_add(limit.max(1) - 1),
            number: 1,
            current: Vec::new(),
            current_chars: 0,
            shown: Vec::new(),
            kept_bytes: 0,
            lossy: false,
            bytes_seen: 0,
        }
    }

    fn in_window(&self) -> bool {
        (self.first..=self.last).contains(&self.number)
    }

    fn feed(&mut self, mut bytes: &[u8]) {
        self.bytes_seen += bytes.len() as u64;
        while !bytes.is_empty() {
            let end = bytes.iter().position(|&b| b == b'\n');
            let segment = &bytes[..end.unwrap_or(bytes.len())];
            if self.in_window() {
                let room = MAX_KEPT_LINE_BYTES.saturating_sub(self.current.len());
                self.current
                    .extend_from_slice(&segment[..segment.len().min(room)]);
                self.current_chars += segment.iter().filter(|&&b| b & 0xC0 != 0x80).count();
            }
            match end {
                Some(at) => {
                    self.end_line();
                    bytes = &bytes[at + 1..];
                }
                None => bytes = &[],
            }
        }
    }

    fn end_line(&mut self) {
        if self.in_window() {
            let line = self.shown_line();
            self.kept_bytes += line.len();
            self.shown.push((self.number, line));
            // A window too large to hold ends here; Read says where to continue.
            if self.kept_bytes > MAX_WINDOW_BYTES {
                self.last = self.number;
            }
        }
        self.number += 1;
        self.current.clear();
        self.current_chars = 0;
    }

    /// The current line as Read shows it: without a final `\r`, cut to
    /// `MAX_LINE_CHARS` characters with a note of its full length.
    fn shown_line(&mut self) -> String {
        let mut chars = self.current_chars;
        if self.current.len() < MAX_KEPT_LINE_BYTES && self.current.last() == Some(&b'\r') {
            self.current.pop();
            chars -= 1;
        }
        let kept = if self.current.len() >= MAX_KEPT_LINE_BYTES {
            // Cut inside a character perhaps: keep only whole ones.
            match std::str::from_utf8(&self.current) {
                Ok(text) => text.to_string(),
                Err(error) if error.error_len().is_none() => {
                    String::from_utf8_lossy(&self.current[..error.valid_up_to()]).into_owned()
                }
                Err(_) => {
                    self.lossy = true;
                    String::from_utf8_lossy(&self.current).into_owned()
                }
            }
        } else {
            match std::str::from_utf8(&self.current) {
                Ok(text) => text.to_string(),
                Err(_) => {
                    self.lossy = true;
                    String::from_utf8_lossy(&self.current).into_owned()
                }
            }
        };
        let max = MAX_LINE_CHARS;
        let (shown, cut) = cut_chars(&kept, max);
        if cut || chars > max {
            format!("{shown}… [line truncated: {chars} characters in total]")
        } else {
            kept
        }
    }

    /// The shown lines, the total line count and whether a shown line was not UTF-8.
    fn finish(mut self) -> (Vec<(usize, String)>, usize, bool) {
        // What follows the last newline is a line too (empty when the file ends with one).
        self.end_line();
        (self.shown, self.number - 1, self.lossy)
    }
}

#[cfg(test)]
#[path = "read_window_tests.rs"]
mod tests;
