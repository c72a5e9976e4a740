//! Where a recording and its artifacts lie: a task's folder `DIR/<task>/` holds its
//! `transcript.jsonl`, and `DIR` is the run's artifacts directory.

use std::path::{Path, PathBuf};

/// The transcript of `DIR/TASK` (or the file itself, when given).
pub(crate) fn transcript_of(task: &Path) -> PathBuf {
    let path = if task.is_dir() {
        task.join("transcript.jsonl")
    } else {
        task.to_path_buf()
    };
    // Absolute, so `drover resume .` in the task's folder knows the folder's name.
    std::path::absolute(&path).unwrap_or(path)
}

/// The artifacts directory of `DIR/<task>/transcript.jsonl`: `DIR` (`.` when empty).
pub(crate) fn artifacts_of(transcript: &Path) -> PathBuf {
    transcript
        .parent()
        .and_then(Path::parent)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// Whether `a` and `b` name the same existing file or directory.
pub(crate) fn same_path(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}
