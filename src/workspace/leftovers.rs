//! What a drover process killed with SIGKILL leaves behind — temp directories (the
//! task's `TMPDIR`, a scratch copy, a worktree's home, a staging folder) and the temp
//! file of an atomic write cut short — named so that a later run can tell they belong
//! to a drover process that is gone, and remove them.

use std::path::{Path, PathBuf};

/// The prefix of a temp directory of `kind` made by this process:
/// `drover-<kind>-<pid>-` (tempfile adds a random suffix).
pub(crate) fn temp_prefix(kind: &str) -> String {
    format!("drover-{kind}-{}-", std::process::id())
}

/// The marker in an atomic write's temp file name: `.<name>.drover-<pid>-<n>-<x>.tmp`.
pub(crate) const WRITE_TEMP_MARK: &str = ".drover-";

/// Is `pid` a live drover process? (A reused pid of another program does not count.)
fn drover_alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .is_ok_and(|comm| comm.trim_end().starts_with("drover"))
}

/// The pid in `drover-<kind>-<pid>-…`, when `name` has that shape.
fn temp_dir_owner(name: &str) -> Option<u32> {
    let rest = name.strip_prefix("drover-")?;
    let (_kind, rest) = rest.split_once('-')?;
    let (pid, _) = rest.split_once('-')?;
    pid.parse().ok()
}

/// The temp directories of `kind` in `dir` that a drover process now gone left behind.
pub(crate) fn stale_temp_dirs(dir: &Path, kind: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let prefix = format!("drover-{kind}-");
    entries
        .flatten()
        .filter(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            name.starts_with(&prefix)
                && temp_dir_owner(&name).is_some_and(|pid| !drover_alive(pid))
                && entry.file_type().is_ok_and(|t| t.is_dir())
        })
        .map(|entry| entry.path())
        .collect()
}

/// Remove the temp directories in `dir` that a drover process now gone left behind.
/// Returns what was removed.
pub(crate) fn remove_stale_temp_dirs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = temp_dir_owner(&name) else {
            continue;
        };
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if is_dir && !drover_alive(pid) && std::fs::remove_dir_all(entry.path()).is_ok() {
            removed.push(entry.path());
        }
    }
    removed
}

/// Is `name` the temp file of an atomic write by a drover process that is gone?
pub(crate) fn is_stale_write_temp(name: &str) -> bool {
    let Some(body) = name.strip_suffix(".tmp") else {
        return false;
    };
    let Some(at) = body.rfind(WRITE_TEMP_MARK) else {
        return false;
    };
    let mut parts = body[at + WRITE_TEMP_MARK.len()..].split('-');
    let (Some(pid), Some(count), Some(nanos), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let shaped = name.starts_with('.')
        && count.chars().all(|c| c.is_ascii_digit())
        && nanos.chars().all(|c| c.is_ascii_hexdigit());
    shaped && pid.parse::<u32>().is_ok_and(|pid| !drover_alive(pid))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pid no process has (beyond the kernel's default pid_max of 4,194,304).
    const GONE: u32 = 4_999_999;

    #[test]
    fn dirs_of_dead_drovers_go_and_live_ones_stay() {
        let dir = tempfile::tempdir().unwrap();
        let dead = dir.path().join(format!("drover-tmp-{GONE}-abc"));
        let mine = dir.path().join(format!("{}xyz", temp_prefix("ws")));
        let other = dir.path().join("drover-tmp-abc");
        for path in [&dead, &mine, &other] {
            std::fs::create_dir(path).unwrap();
        }
        let removed = remove_stale_temp_dirs(dir.path());
        assert_eq!(removed, vec![dead.clone()]);
        assert!(!dead.exists());
        // This test binary is `drover-<hash>`: its own dir is a live drover's and stays.
        assert!(mine.exists());
        assert!(other.exists());
    }

    #[test]
    fn write_temps_of_dead_drovers_are_recognised() {
        assert!(is_stale_write_temp(&format!(
            ".big.bin.drover-{GONE}-0-1a2b.tmp"
        )));
        assert!(!is_stale_write_temp("notes.tmp"));
        assert!(!is_stale_write_temp(&format!(
            "big.drover-{GONE}-0-1a2b.tmp"
        )));
        assert!(!is_stale_write_temp(&format!(
            ".big.drover-{GONE}-x-1a2b.tmp"
        )));
    }
}
