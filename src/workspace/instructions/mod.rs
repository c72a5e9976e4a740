//! Reading a workspace's project instructions (`CLAUDE.md`, `AGENTS.md`, the files the
//! spec's `instructions:` names, and what they import with `@path`) when a task starts,
//! from the task's own workspace (its copy or worktree).
//!
//! These files come from the repository under test. Each is resolved as the kernel
//! would and read only when it lies inside the workspace: a symbolic link may point to
//! another file of the workspace (`CLAUDE.md -> AGENTS.md`), never out of it; the file
//! is then opened beneath the workspace's handle following no link, so a link swapped
//! in meanwhile is refused rather than followed. Only regular files with a single link
//! are read, each up to [`MAX_FILE_BYTES`], all together up to [`MAX_TOTAL_BYTES`], and
//! imports [`MAX_IMPORT_HOPS`] deep, as Claude Code's documentation allows.

mod imports;

use std::collections::HashSet;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::record::transcript::InstructionFile;
use crate::spec::{Position, instruction_path_problem};

use super::Roots;
use super::paths;

/// The most of one file the model is given; the rest is cut with a note.
pub(crate) const MAX_FILE_BYTES: u64 = 64 * 1024;

/// The most of all files together; files beyond it are cut or left out with a note.
pub(crate) const MAX_TOTAL_BYTES: usize = 128 * 1024;

/// How many files one task reads at most (each import counts).
pub(crate) const MAX_FILES: usize = 64;

/// How deep imports are followed: a file the spec names imports at hop 1, what that
/// imports at hop 2, … (Claude Code's maximum).
pub(crate) const MAX_IMPORT_HOPS: usize = 5;

/// A file to read: its path relative to the workspace root, and where the spec named it
/// (None: a default file, skipped when it is missing).
#[derive(Debug, Clone)]
pub(crate) struct Wanted {
    pub path: String,
    pub named_at: Option<Position>,
}

/// What was read, in order, and notes on what was cut, skipped or refused.
#[derive(Debug, Default)]
pub(crate) struct Instructions {
    pub files: Vec<InstructionFile>,
    pub notes: Vec<String>,
}

/// A file the spec names that cannot be read: the task does not start without it.
#[derive(Debug, thiserror::Error)]
#[error("{named_at}: instructions: {path} {reason}")]
pub(crate) struct InstructionsError {
    pub path: String,
    pub named_at: Position,
    pub reason: String,
}

/// Why one file was not read.
enum Unread {
    /// No such file (or a directory): a default file or an import is skipped silently.
    Missing(String),
    /// There, but drover will not read it: named in a note.
    Refused(String),
}

/// Read `wanted` beneath `workspace`.
pub(crate) fn read_instructions(
    workspace: &Path,
    wanted: &[Wanted],
    denied: &dyn Fn(&str) -> Option<String>,
) -> Result<Instructions, InstructionsError> {
    let root = workspace
        .canonicalize()
        .unwrap_or_else(|_| workspace.to_path_buf());
    let mut reader = Reader {
        roots: Roots::new(std::slice::from_ref(&root)),
        denied,
        root,
        seen: HashSet::new(),
        total: 0,
        out: Instructions::default(),
    };
    for file in wanted {
        match (reader.read(&file.path, None, 0), &file.named_at) {
            (Ok(()), _) => {}
            (Err(Unread::Missing(reason) | Unread::Refused(reason)), Some(named_at)) => {
                return Err(InstructionsError {
                    path: file.path.clone(),
                    named_at: named_at.clone(),
                    reason,
                });
            }
            (Err(Unread::Missing(_)), None) => {}
            (Err(Unread::Refused(reason)), None) => {
                reader
                    .out
                    .notes
                    .push(format!("{} not read: {reason}", file.path));
            }
        }
    }
    Ok(reader.out)
}

struct Reader<'a> {
    root: PathBuf,
    roots: Roots,
    /// Why the task's policy would not let the agent Read a file (by its path relative to
    /// the workspace): such a file is not given as instructions either, nor is anything
    /// in git's own directory.
    denied: &'a dyn Fn(&str) -> Option<String>,
    /// The real paths read so far: a file reached twice (a link, an import cycle) once.
    seen: HashSet<PathBuf>,
    total: usize,
    out: Instructions,
}

impl Reader<'_> {
    /// Read `path` (relative to the workspace root), then what it imports.
    fn read(&mut self, path: &str, imported_by: Option<&str>, hops: usize) -> Result<(), Unread> {
        if let Some(problem) = instruction_path_problem(path) {
            return Err(Unread::Refused(problem));
        }
        let real = self.locate(path)?;
        let relative = paths::relative_to(&self.root, &real).unwrap_or_default();
        if relative.split('/').any(|part| part == ".git") {
            return Err(Unread::Refused("it is in git's own directory".into()));
        }
        if let Some(reason) = (self.denied)(&relative) {
            return Err(Unread::Refused(reason));
        }
        if !self.seen.insert(real.clone()) {
            return Ok(());
        }
        if self.out.files.len() >= MAX_FILES {
            return Err(Unread::Refused(format!(
                "drover reads at most {MAX_FILES} instruction files"
            )));
        }
        let room = MAX_TOTAL_BYTES.saturating_sub(self.total);
        if room == 0 {
            return Err(Unread::Refused(format!(
                "the instructions already reach drover's limit of {} KiB",
                MAX_TOTAL_BYTES / 1024
            )));
        }
        let (text, size, taken) = self.text_of(&real, room)?;
        let cut = (text.len() as u64) < size;
        if cut {
            self.out.notes.push(format!(
                "{path} cut to its first {} bytes of {size} (drover gives the model at most {} KiB of one file, {} KiB in all)",
                text.len(),
                MAX_FILE_BYTES / 1024,
                MAX_TOTAL_BYTES / 1024
            ));
        }
        // The budget counts what was taken from the file, the rest of a cut line too.
        self.total += taken;
        // An empty file says nothing: no heading for it.
        if text.trim().is_empty() {
            return Ok(());
        }
        let found = imports::imports(&text);
        self.out.files.push(InstructionFile {
            path: path.to_string(),
            imported_by: imported_by.map(str::to_string),
            text,
            cut_from: cut.then_some(size),
        });
        self.follow(path, &found, hops);
        Ok(())
    }

    /// Read the files `path` imports (`found`), or say why not.
    fn follow(&mut self, path: &str, found: &[String], hops: usize) {
        for import in found {
            let Some(target) = import_target(path, import) else {
                self.out.notes.push(format!(
                    "{path}: @{import} not imported: drover reads imports only inside the workspace, relative to the importing file"
                ));
                continue;
            };
            if hops >= MAX_IMPORT_HOPS {
                self.out.notes.push(format!(
                    "{path}: @{import} not imported: imports are followed {MAX_IMPORT_HOPS} deep"
                ));
                continue;
            }
            match self.read(&target, Some(path), hops + 1) {
                Ok(()) | Err(Unread::Missing(_)) => {}
                Err(Unread::Refused(reason)) => self
                    .out
                    .notes
                    .push(format!("{path}: @{import} not imported: {reason}")),
            }
        }
    }

    /// The real path of `path` (relative to the root): inside the workspace, whatever
    /// links it goes through.
    fn locate(&self, path: &str) -> Result<PathBuf, Unread> {
        let physical = paths::resolve_physical(&self.root, path)
            .map_err(|e| Unread::Refused(e.to_string()))?;
        if physical.through_process || !physical.path.starts_with(&self.root) {
            return Err(Unread::Refused(
                "it is a symbolic link that leads out of the workspace".into(),
            ));
        }
        Ok(physical.path)
    }

    /// The text of the file at `real` (at most `room` bytes of it, and at most
    /// [`MAX_FILE_BYTES`]), its whole size, and how many bytes were taken from it.
    fn text_of(&self, real: &Path, room: usize) -> Result<(String, u64, usize), Unread> {
        let file = self.roots.open_file(real).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound | std::io::ErrorKind::IsADirectory => {
                Unread::Missing("does not exist in the workspace".into())
            }
            _ => Unread::Refused(format!("cannot be read ({e})")),
        })?;
        let meta = file
            .metadata()
            .map_err(|e| Unread::Refused(format!("cannot be read ({e})")))?;
        if meta.nlink() != 1 {
            return Err(Unread::Refused(
                "it is a regular file with other hard links (it may be another file's, outside the workspace)".into(),
            ));
        }
        let limit = MAX_FILE_BYTES.min(room as u64);
        let mut bytes = Vec::new();
        file.take(limit)
            .read_to_end(&mut bytes)
            .map_err(|e| Unread::Refused(format!("cannot be read ({e})")))?;
        let size = meta.len().max(bytes.len() as u64);
        let taken = bytes.len();
        Ok((head_text(bytes, size), size, taken))
    }
}

/// The text of `bytes`, the head of a file of `size` bytes: when cut, it ends at the
/// last whole line (or whole character); bytes that are not UTF-8 become U+FFFD.
fn head_text(mut bytes: Vec<u8>, size: u64) -> String {
    if (bytes.len() as u64) < size {
        if let Some(newline) = bytes.iter().rposition(|b| *b == b'\n') {
            bytes.truncate(newline + 1);
        } else if let Err(error) = std::str::from_utf8(&bytes)
            && error.error_len().is_none()
        {
            bytes.truncate(error.valid_up_to());
        }
    }
    match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(error) => String::from_utf8_lossy(error.as_bytes()).into_owned(),
    }
}

/// Where `import` (as written after `@` in the file at `from`) lies, relative to the
/// workspace root; None for a path drover does not import (absolute, in the home
/// directory, or leaving the workspace).
fn import_target(from: &str, import: &str) -> Option<String> {
    if import.starts_with('/') || import.starts_with('~') || import.contains('\0') {
        return None;
    }
    let dir = Path::new(from).parent().unwrap_or(Path::new(""));
    let mut parts: Vec<String> = dir
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    for part in import.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            name => parts.push(name.to_string()),
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

#[cfg(test)]
#[path = "instructions_tests.rs"]
mod tests;
