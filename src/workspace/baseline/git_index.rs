//! What the repository's own index knows about the workspace: for each tracked file, the
//! blob id and the file's metadata when git last saw it. A file whose metadata still
//! matches is the blob the index names, so the baseline need neither read nor keep it —
//! this is what makes a baseline of a large repository cost about a `git status`.
//!
//! The index is parsed here rather than asked of `git`: running `git` in the workspace
//! would read its `.git/config`, which an agent of an earlier task in the same workspace
//! could have written (`core.fsmonitor`, clean filters: programs git runs). Only
//! version 2 to 4 indexes of SHA-1 repositories without a split index are used; anything
//! else simply gives no help, and every file is read instead.

use std::io::{self, BufReader, Read};
use std::path::{Path, PathBuf};

use super::sorted::SortedPaths;
use super::stat::{StatKey, Timestamp};
use crate::workspace::RelPath;

/// One clean-candidate entry: the blob id and the metadata git recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct IndexEntry {
    pub id: [u8; 20],
    pub mode: u32,
    /// As git stores them: 32-bit truncated values.
    pub stat: IndexStat,
}

/// The metadata fields git compares (`ie_match_stat`), truncated to 32 bits as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct IndexStat {
    pub ctime: (u32, u32),
    pub mtime: (u32, u32),
    pub ino: u32,
    pub size: u32,
}

impl IndexStat {
    /// Does the file's current metadata still match, and was the entry written safely
    /// before the file's last change could have happened (not "racily clean")?
    pub(super) fn matches(&self, current: &StatKey, index_written: Timestamp) -> bool {
        let same_time = |stored: (u32, u32), now: Timestamp| {
            stored.0 == now.seconds as u32 && (stored.1 == 0 || stored.1 == now.nanos)
        };
        let racy = {
            let (seconds, nanos) = self.mtime;
            let written = (index_written.seconds as u32, index_written.nanos);
            if nanos == 0 {
                seconds >= written.0
            } else {
                (seconds, nanos) >= written
            }
        };
        !racy
            && self.size == current.size as u32
            && self.ino == current.ino as u32
            && same_time(self.mtime, current.mtime)
            && same_time(self.ctime, current.ctime)
    }
}

/// The repository around a workspace, as far as the baseline needs it.
#[derive(Debug)]
pub(super) struct GitIndex {
    /// The object directory holding the blobs the entries name.
    pub objects: PathBuf,
    /// Tracked files below the workspace, relative to it.
    pub entries: SortedPaths<IndexEntry>,
    /// When the index file was last written (for the racy-clean rule).
    pub written: Timestamp,
}

/// Flags in an entry's 16-bit flag field.
const ASSUME_VALID: u16 = 0x8000;
const EXTENDED: u16 = 0x4000;
const STAGE_MASK: u16 = 0x3000;
const NAME_MASK: u16 = 0x0fff;
/// Extended flags (index v3+).
const SKIP_WORKTREE: u16 = 0x4000;
const INTENT_TO_ADD: u16 = 0x2000;

/// The index of the repository `workspace` lies in, limited to the files below it;
/// `None` when there is none or it is of a kind not understood (then nothing is taken
/// on trust).
pub(super) fn load(workspace: &Path) -> Option<GitIndex> {
    load_saved(&IndexSnapshot::take(workspace)?, workspace)
}

/// A repository's index as it was at one moment, kept aside in a private file: taken
/// when a run starts, before any agent can write to `.git`, so a later task's baseline
/// is not fooled by an index an earlier task's agent forged.
#[derive(Debug)]
pub(crate) struct IndexSnapshot {
    /// The top of the work tree (the directory holding `.git`).
    top: PathBuf,
    objects: PathBuf,
    written: Timestamp,
    /// The directory holding the copy (`index`), named so a later run removes it if this
    /// drover is killed.
    saved: crate::workspace::leftovers::HeldTempDir,
}

impl IndexSnapshot {
    /// The top of the work tree the index belongs to.
    pub(crate) fn top(&self) -> &Path {
        &self.top
    }

    /// Keep aside the index of the repository `workspace` lies in.
    pub(crate) fn take(workspace: &Path) -> Option<IndexSnapshot> {
        let (top, git_dir) = find_repository(workspace)?;
        let common = common_dir(&git_dir);
        if uses_other_object_format(&common) {
            return None;
        }
        let mut file = std::fs::File::open(git_dir.join("index")).ok()?;
        let written = Timestamp::modified(&file.metadata().ok()?);
        let saved = crate::workspace::leftovers::HeldTempDir::new("index").ok()?;
        let mut copy = std::fs::File::create(saved.path().join("index")).ok()?;
        std::io::copy(&mut file, &mut copy).ok()?;
        Some(IndexSnapshot {
            top: top.canonicalize().ok()?,
            objects: common.join("objects").canonicalize().ok()?,
            written,
            saved,
        })
    }
}

/// The top of the work tree of the repository `workspace` lies in (canonical).
pub(crate) fn repository_top(workspace: &Path) -> Option<PathBuf> {
    find_repository(workspace)?.0.canonicalize().ok()
}

/// The entries of a saved index below `workspace` (canonical), relative to it.
pub(super) fn load_saved(snapshot: &IndexSnapshot, workspace: &Path) -> Option<GitIndex> {
    let prefix = workspace.strip_prefix(&snapshot.top).ok()?;
    let prefix = RelPath::from_relative(prefix);
    let file = std::fs::File::open(snapshot.saved.path().join("index")).ok()?;
    let entries = parse(BufReader::new(file), &prefix).ok()??;
    Some(GitIndex {
        objects: snapshot.objects.clone(),
        entries,
        written: snapshot.written,
    })
}

/// The nearest directory at or above `start` holding `.git` (a directory, or a file
/// pointing to one as worktrees and submodules have), and that git directory.
fn find_repository(start: &Path) -> Option<(PathBuf, PathBuf)> {
    for dir in start.ancestors() {
        let dot_git = dir.join(".git");
        let Ok(metadata) = std::fs::symlink_metadata(&dot_git) else {
            continue;
        };
        if metadata.is_dir() {
            return Some((dir.to_path_buf(), dot_git));
        }
        if metadata.is_file() {
            let text = std::fs::read_to_string(&dot_git).ok()?;
            let target = text.strip_prefix("gitdir:")?.trim();
            return Some((dir.to_path_buf(), dir.join(target)));
        }
        return None;
    }
    None
}

/// A linked worktree's git directory names the shared one in `commondir`.
fn common_dir(git_dir: &Path) -> PathBuf {
    match std::fs::read_to_string(git_dir.join("commondir")) {
        Ok(text) => git_dir.join(text.trim()),
        Err(_) => git_dir.to_path_buf(),
    }
}

/// SHA-256 repositories name blobs differently; their indexes are not used.
fn uses_other_object_format(common: &Path) -> bool {
    std::fs::read_to_string(common.join("config"))
        .map(|text| text.to_ascii_lowercase().contains("objectformat"))
        .unwrap_or(true)
}

/// The entries of an index below `prefix`, relative to it. `Ok(None)` for an index this
/// parser does not take on trust (unknown version, split index, sparse directories).
fn parse(mut reader: impl Read, prefix: &RelPath) -> io::Result<Option<SortedPaths<IndexEntry>>> {
    let Some((version, count)) = read_header(&mut reader)? else {
        return Ok(None);
    };
    let mut entries = Vec::new();
    let mut previous_name: Vec<u8> = Vec::new();
    let prefix_bytes = prefix.as_bytes();
    for _ in 0..count {
        let mut fixed = [0u8; 62];
        reader.read_exact(&mut fixed)?;
        let word = |at: usize| {
            u32::from_be_bytes([fixed[at], fixed[at + 1], fixed[at + 2], fixed[at + 3]])
        };
        let flags = u16::from_be_bytes([fixed[60], fixed[61]]);
        let mut extended = 0u16;
        let mut consumed = 62;
        if flags & EXTENDED != 0 {
            if version < 3 {
                return Ok(None);
            }
            let mut more = [0u8; 2];
            reader.read_exact(&mut more)?;
            extended = u16::from_be_bytes(more);
            consumed += 2;
        }
        let name = read_name(&mut reader, version, flags, consumed, &previous_name)?;
        previous_name.clone_from(&name);
        let mode = word(24);
        if mode == 0o040000 {
            return Ok(None); // a sparse index: directories stand for whole trees
        }
        let trusted = flags & (ASSUME_VALID | STAGE_MASK) == 0
            && extended & (SKIP_WORKTREE | INTENT_TO_ADD) == 0
            && (mode == 0o100644 || mode == 0o100755);
        if !trusted {
            continue;
        }
        let relative = if prefix_bytes.is_empty() {
            Some(&name[..])
        } else {
            name.strip_prefix(prefix_bytes)
                .and_then(|rest| rest.strip_prefix(b"/"))
        };
        let Some(relative) = relative else {
            continue;
        };
        let mut id = [0u8; 20];
        id.copy_from_slice(&fixed[40..60]);
        entries.push((
            RelPath::from_bytes(relative.to_vec()),
            IndexEntry {
                id,
                mode,
                stat: IndexStat {
                    ctime: (word(0), word(4)),
                    mtime: (word(8), word(12)),
                    ino: word(20),
                    size: word(36),
                },
            },
        ));
    }
    // A split index keeps its entries in another file: this one is incomplete.
    let mut rest = Vec::new();
    reader.read_to_end(&mut rest)?;
    if has_extension(&rest, b"link") {
        return Ok(None);
    }
    Ok(Some(SortedPaths::from_unsorted(entries)))
}

/// The index's version and entry count; None for no index or a version this parser does
/// not know.
fn read_header(reader: &mut impl Read) -> io::Result<Option<(u32, u32)>> {
    let mut header = [0u8; 12];
    reader.read_exact(&mut header)?;
    if &header[..4] != b"DIRC" {
        return Ok(None);
    }
    let version = u32::from_be_bytes([header[4], header[5], header[6], header[7]]);
    if !(2..=4).contains(&version) {
        return Ok(None);
    }
    let count = u32::from_be_bytes([header[8], header[9], header[10], header[11]]);
    Ok(Some((version, count)))
}

/// An entry's path name, after its fixed part (`consumed` bytes): version 4 writes it as
/// a change of the previous entry's name; earlier versions write it whole, padded.
fn read_name(
    reader: &mut impl Read,
    version: u32,
    flags: u16,
    consumed: usize,
    previous_name: &[u8],
) -> io::Result<Vec<u8>> {
    if version == 4 {
        let strip = read_varint(&mut *reader)?;
        let keep = previous_name
            .len()
            .checked_sub(strip)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "bad name prefix"))?;
        let mut name = previous_name[..keep].to_vec();
        name.extend(read_until_nul(&mut *reader)?);
        return Ok(name);
    }
    let length = usize::from(flags & NAME_MASK);
    let name = if length < usize::from(NAME_MASK) {
        let mut name = vec![0u8; length];
        reader.read_exact(&mut name)?;
        let mut nul = [0u8; 1];
        reader.read_exact(&mut nul)?;
        name
    } else {
        read_until_nul(&mut *reader)?
    };
    // Entries are padded with NULs to a multiple of 8 bytes (name's NUL included).
    let total = consumed + name.len() + 1;
    let padding = (8 - total % 8) % 8;
    let mut pad = vec![0u8; padding];
    reader.read_exact(&mut pad)?;
    Ok(name)
}

/// Whether the extension area (followed by the 20-byte checksum) holds `signature`.
fn has_extension(mut rest: &[u8], signature: &[u8; 4]) -> bool {
    while rest.len() >= 8 + 20 {
        if &rest[..4] == signature {
            return true;
        }
        let size = u32::from_be_bytes([rest[4], rest[5], rest[6], rest[7]]) as usize;
        let Some(next) = rest.get(8 + size..) else {
            return false;
        };
        rest = next;
    }
    false
}

/// Index v4's offset encoding of how many bytes to drop from the previous name.
fn read_varint(reader: &mut impl Read) -> io::Result<usize> {
    let mut byte = [0u8; 1];
    reader.read_exact(&mut byte)?;
    let mut value = usize::from(byte[0] & 0x7f);
    while byte[0] & 0x80 != 0 {
        reader.read_exact(&mut byte)?;
        value = value
            .checked_add(1)
            .and_then(|v| v.checked_mul(128))
            .and_then(|v| v.checked_add(usize::from(byte[0] & 0x7f)))
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "varint overflow"))?;
    }
    Ok(value)
}

fn read_until_nul(reader: &mut impl Read) -> io::Result<Vec<u8>> {
    let mut name = Vec::new();
    let mut byte = [0u8; 1];
    loop {
        reader.read_exact(&mut byte)?;
        if byte[0] == 0 {
            return Ok(name);
        }
        name.push(byte[0]);
        if name.len() > 64 * 1024 {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "name too long"));
        }
    }
}

#[cfg(test)]
#[path = "git_index_tests.rs"]
mod tests;
