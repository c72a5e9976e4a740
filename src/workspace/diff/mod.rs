//! The workspace diff (`diff.patch`): what the agent changed, in git's patch format, so a
//! reviewer can read it and `git apply` can replay it on an untouched copy of the
//! workspace. Binary files travel as `GIT binary patch` literals; output is byte-for-byte
//! deterministic (paths sorted, no timestamps).

mod base85;
mod blob_id;

use std::fmt::Write as _;
use std::io::Write as _;

use similar::{Algorithm, TextDiff, udiff::UnifiedHunkHeader};

use blob_id::NULL_ID;
pub(crate) use blob_id::blob_id;

use crate::workspace::RelPath;
#[cfg(test)]
use crate::workspace::TreeInMemory;
use crate::workspace::file_entry::FileEntry;

/// Lines of unchanged context around each change, as git uses by default.
const CONTEXT_LINES: usize = 3;

/// A `git apply`-able diff from `before` to `after` (trees in memory, as tests build
/// them); empty when nothing changed.
#[cfg(test)]
pub(crate) fn unified_diff(before: &TreeInMemory, after: &TreeInMemory) -> String {
    let mut out = String::new();
    for path in before.changed_paths(after) {
        path_patch(
            &mut out,
            &path,
            before.files.get(&path),
            after.files.get(&path),
        );
    }
    out
}

/// Append the patch of one changed path (`None`: no file on that side) to `out`.
pub(crate) fn path_patch(
    out: &mut String,
    path: &RelPath,
    old: Option<&FileEntry>,
    new: Option<&FileEntry>,
) {
    match (old, new) {
        // A symlink cannot turn into a file in place: git writes a deletion and a
        // creation of the same path.
        (Some(old), Some(new)) if old.is_symlink() != new.is_symlink() => {
            file_patch(out, path, Some(old), None);
            file_patch(out, path, None, Some(new));
        }
        _ => file_patch(out, path, old, new),
    }
}

/// Whether git would treat this content as binary (or it cannot be shown as text).
pub(crate) fn is_binary(content: &[u8]) -> bool {
    content.contains(&0) || std::str::from_utf8(content).is_err()
}

/// The patch of one path. `None` is "no file on that side".
fn file_patch(out: &mut String, path: &RelPath, old: Option<&FileEntry>, new: Option<&FileEntry>) {
    let a_name = quote_path(&[b"a/", path.as_bytes()].concat());
    let b_name = quote_path(&[b"b/", path.as_bytes()].concat());
    let _ = writeln!(out, "diff --git {a_name} {b_name}");
    match (old, new) {
        (None, Some(new)) => {
            let _ = writeln!(out, "new file mode {:o}", new.mode);
        }
        (Some(old), None) => {
            let _ = writeln!(out, "deleted file mode {:o}", old.mode);
        }
        (Some(old), Some(new)) if old.mode != new.mode => {
            let _ = writeln!(out, "old mode {:o}\nnew mode {:o}", old.mode, new.mode);
        }
        _ => {}
    }
    let old_content = old.map_or(&[][..], |entry| entry.content.as_slice());
    let new_content = new.map_or(&[][..], |entry| entry.content.as_slice());
    if old.is_some() && new.is_some() && old_content == new_content {
        return; // a mode change only
    }
    let old_id = old.map_or_else(|| NULL_ID.to_string(), |e| blob_id(&e.content));
    let new_id = new.map_or_else(|| NULL_ID.to_string(), |e| blob_id(&e.content));
    let _ = write!(out, "index {old_id}..{new_id}");
    match (old, new) {
        (Some(old), Some(new)) if old.mode == new.mode => {
            let _ = writeln!(out, " {:o}", old.mode);
        }
        _ => out.push('\n'),
    }
    if is_binary(old_content) || is_binary(new_content) {
        out.push_str("GIT binary patch\n");
        literal(out, new_content);
        literal(out, old_content);
        return;
    }
    if old_content.is_empty() && new_content.is_empty() {
        return; // an empty file added or deleted: the header says it all
    }
    let old_label = if old.is_some() { &a_name } else { "/dev/null" };
    let new_label = if new.is_some() { &b_name } else { "/dev/null" };
    // git ends a name containing a space with a tab so the line parses unambiguously.
    let tab = if path.as_bytes().contains(&b' ') {
        "\t"
    } else {
        ""
    };
    let old_tab = if old.is_some() { tab } else { "" };
    let new_tab = if new.is_some() { tab } else { "" };
    let _ = writeln!(out, "--- {old_label}{old_tab}\n+++ {new_label}{new_tab}");
    text_hunks(
        out,
        &String::from_utf8_lossy(old_content),
        &String::from_utf8_lossy(new_content),
    );
}

/// Unified hunks. Lines are split on `\n` only, as git does: a lone `\r` stays inside
/// its line (similar's own line splitting would break the line there).
fn text_hunks(out: &mut String, old: &str, new: &str) {
    let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
    let new_lines: Vec<&str> = new.split_inclusive('\n').collect();
    let diff = TextDiff::configure()
        .algorithm(Algorithm::Myers)
        .newline_terminated(true)
        .diff_slices(&old_lines, &new_lines);
    for group in diff.grouped_ops(CONTEXT_LINES) {
        if group.is_empty() {
            continue;
        }
        let _ = writeln!(out, "{}", UnifiedHunkHeader::new(&group));
        for op in &group {
            for change in diff.iter_changes(op) {
                let line = change.value();
                let _ = write!(out, "{}{line}", change.tag());
                if !line.ends_with('\n') {
                    out.push_str("\n\\ No newline at end of file\n");
                }
            }
        }
    }
}

/// One `literal` section: the zlib-deflated content in base85 lines, then a blank line.
#[expect(
    clippy::expect_used,
    reason = "invariant: deflating into a Vec<u8> cannot fail"
)]
fn literal(out: &mut String, content: &[u8]) {
    let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    // invariant: writing into a Vec<u8> cannot fail, so neither can the encoder.
    encoder
        .write_all(content)
        // invariant: deflating into a Vec cannot fail.
        .expect("invariant: deflating into memory cannot fail");
    // invariant: as above, finishing only flushes into the Vec.
    let deflated = encoder
        .finish()
        // invariant: deflating into a Vec cannot fail.
        .expect("invariant: deflating into memory cannot fail");
    let _ = writeln!(out, "literal {}", content.len());
    out.push_str(&base85::encode_lines(&deflated));
    out.push('\n');
}

/// Git's C-style quoting of a path in patch headers (`core.quotePath` default): names
/// with control characters, quotes, backslashes or non-ASCII bytes go in double quotes
/// with escapes, everything else verbatim.
pub(crate) fn quote_path(name: &[u8]) -> String {
    let needs_quotes = name
        .iter()
        .any(|&b| b < 0x20 || b == 0x7f || b >= 0x80 || b == b'"' || b == b'\\');
    if !needs_quotes {
        return String::from_utf8_lossy(name).into_owned();
    }
    let mut out = String::with_capacity(name.len() + 2);
    out.push('"');
    for &byte in name {
        match byte {
            0x07 => out.push_str("\\a"),
            0x08 => out.push_str("\\b"),
            b'\t' => out.push_str("\\t"),
            b'\n' => out.push_str("\\n"),
            0x0b => out.push_str("\\v"),
            0x0c => out.push_str("\\f"),
            b'\r' => out.push_str("\\r"),
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b if !(0x20..0x7f).contains(&b) => {
                let _ = write!(out, "\\{b:03o}");
            }
            b => out.push(char::from(b)),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
#[path = "diff_tests.rs"]
mod tests;
