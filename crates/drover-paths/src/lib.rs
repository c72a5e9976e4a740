//! Turning the paths a model writes into real paths.
//!
//! Pure std: no drover type, no I/O beyond reading the file system's symlinks. Its own
//! crate because both the workspace and the permission policy (`drover-policy`) resolve
//! paths the same way, and the policy must not depend on the binary that holds the
//! workspace.

use std::path::{Component, Path, PathBuf};

/// Why a path from a tool input cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("the path is empty; give a file path relative to the workspace or absolute")]
    Empty,
    #[error("the path contains a NUL byte, which no file name can hold")]
    NulByte,
}

/// Resolve `input` (absolute, or relative to `workspace`) to an absolute path with `.` and
/// `..` removed lexically. Symlinks are not resolved here; confinement checks do that.
pub fn resolve(workspace: &Path, input: &str) -> Result<PathBuf, PathError> {
    Ok(normalize(&joined(workspace, input)?))
}

/// `input` with `~/` expanded, joined to `base` when relative; nothing removed.
fn joined(base: &Path, input: &str) -> Result<PathBuf, PathError> {
    if input.is_empty() {
        return Err(PathError::Empty);
    }
    if input.contains('\0') {
        return Err(PathError::NulByte);
    }
    let expanded = match input.strip_prefix("~/") {
        Some(rest) => match std::env::var_os("HOME") {
            Some(home) => PathBuf::from(home).join(rest),
            None => PathBuf::from(input),
        },
        None => PathBuf::from(input),
    };
    Ok(if expanded.is_absolute() {
        expanded
    } else {
        base.join(expanded)
    })
}

/// The names and `..` of a path, in order (root and `.` dropped).
fn steps(path: &Path) -> impl Iterator<Item = std::ffi::OsString> + '_ {
    path.components().filter_map(|c| match c {
        Component::Normal(name) => Some(name.to_os_string()),
        Component::ParentDir => Some("..".into()),
        _ => None,
    })
}

/// A path resolved the way the kernel would: symlinks followed and `..` taken after them
/// (so `link/..` is the parent of the link's target, not the directory holding the link).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Physical {
    /// Absolute, without symlinks as far as the path exists; a missing tail is kept
    /// lexically.
    pub path: PathBuf,
    /// The path passes through `/proc` or `/dev/fd` (`/dev/stdin` …): names that mean the
    /// process opening them, so what they reach for a command cannot be known here.
    pub through_process: bool,
}

/// How many symlinks a resolution follows before giving up, as the kernel's ELOOP.
const MAX_LINKS: usize = 40;

/// Resolve `input` (absolute, or relative to `base`) physically (see [`Physical`]).
pub fn resolve_physical(base: &Path, input: &str) -> Result<Physical, PathError> {
    let joined = joined(base, input)?;
    let mut pending: std::collections::VecDeque<std::ffi::OsString> = steps(&joined).collect();
    let mut resolved = PathBuf::from("/");
    let mut links = 0;
    let mut through_process = false;
    while let Some(name) = pending.pop_front() {
        if name == ".." {
            resolved.pop();
            continue;
        }
        let candidate = resolved.join(&name);
        if is_process_path(&candidate) {
            through_process = true;
        }
        match std::fs::symlink_metadata(&candidate) {
            Ok(meta) if meta.file_type().is_symlink() && links < MAX_LINKS => {
                links += 1;
                let Ok(target) = std::fs::read_link(&candidate) else {
                    resolved = candidate;
                    continue;
                };
                if target.is_absolute() {
                    resolved = PathBuf::from("/");
                }
                let parts: Vec<std::ffi::OsString> = steps(&target).collect();
                for part in parts.into_iter().rev() {
                    pending.push_front(part);
                }
            }
            _ => resolved = candidate,
        }
    }
    Ok(Physical {
        path: resolved,
        through_process,
    })
}

/// `/proc/…`, `/dev/fd`, `/dev/stdin`, `/dev/stdout`, `/dev/stderr`: their meaning
/// depends on the process that opens them.
fn is_process_path(path: &Path) -> bool {
    path.starts_with("/proc")
        || ["/dev/fd", "/dev/stdin", "/dev/stdout", "/dev/stderr"]
            .iter()
            .any(|magic| path.starts_with(magic))
}

/// Remove `.` and `..` components without touching the file system. `..` at the root
/// stays at the root, as the kernel treats it.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() && !out.has_root() {
                    out.push(component);
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// `path` relative to `workspace` with `/` separators, or None when it lies outside.
pub fn relative_to(workspace: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(workspace).ok()?;
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    Some(parts.join("/"))
}

/// Canonicalize `path`, or for a path that does not exist yet, its nearest existing
/// ancestor with the rest appended: where a write would really land.
pub fn canonicalize_for_write(path: &Path) -> std::io::Result<PathBuf> {
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    loop {
        match existing.canonicalize() {
            Ok(canonical) => {
                let mut out = canonical;
                for part in rest.iter().rev() {
                    out.push(part);
                }
                return Ok(out);
            }
            Err(error) => {
                let Some(name) = existing.file_name().map(|n| n.to_os_string()) else {
                    return Err(error);
                };
                rest.push(name);
                if !existing.pop() {
                    return Err(error);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_resolve_against_the_workspace() {
        let ws = Path::new("/ws");
        assert_eq!(
            resolve(ws, "src/lib.rs").unwrap(),
            PathBuf::from("/ws/src/lib.rs")
        );
        assert_eq!(
            resolve(ws, "./src/../a.txt").unwrap(),
            PathBuf::from("/ws/a.txt")
        );
        assert_eq!(
            resolve(ws, "/etc/passwd").unwrap(),
            PathBuf::from("/etc/passwd")
        );
        assert_eq!(resolve(ws, "../../x").unwrap(), PathBuf::from("/x"));
    }

    #[test]
    fn empty_and_nul_paths_are_errors() {
        assert_eq!(resolve(Path::new("/ws"), ""), Err(PathError::Empty));
        assert_eq!(resolve(Path::new("/ws"), "a\0b"), Err(PathError::NulByte));
    }

    #[test]
    fn relative_to_uses_forward_slashes_and_rejects_outside() {
        let ws = Path::new("/ws");
        assert_eq!(
            relative_to(ws, Path::new("/ws/a/b.rs")).as_deref(),
            Some("a/b.rs")
        );
        assert_eq!(relative_to(ws, Path::new("/other")), None);
    }

    #[test]
    fn physical_resolution_takes_dotdot_after_symlinks_and_flags_process_paths() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("real/inner")).unwrap();
        std::os::unix::fs::symlink(root.join("real/inner"), root.join("link")).unwrap();
        // `link/..` is `real`, not the directory holding the link.
        let p = resolve_physical(&root, "link/../x").unwrap();
        assert_eq!(p.path, root.join("real/x"));
        assert!(!p.through_process);
        assert_eq!(
            resolve_physical(&root, "real/./inner/../new/file")
                .unwrap()
                .path,
            root.join("real/new/file")
        );
        for magic in [
            "/dev/fd/../cwd/.env",
            "/proc/self//cwd/x",
            "/proc/thread-self/cwd/.env",
            "/proc/self/./root/etc",
            "/dev/stdin",
            "../../../../../../proc/self/cwd",
        ] {
            assert!(
                resolve_physical(&root, magic).unwrap().through_process,
                "{magic}"
            );
        }
        std::os::unix::fs::symlink("/proc/self", root.join("me")).unwrap();
        assert!(
            resolve_physical(&root, "me/cwd/.env")
                .unwrap()
                .through_process
        );
        // A loop of links ends.
        std::os::unix::fs::symlink(root.join("loop"), root.join("loop")).unwrap();
        assert!(resolve_physical(&root, "loop/x").is_ok());
    }

    #[test]
    fn canonicalize_for_write_keeps_missing_tail() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let target = root.join("new/dir/file.txt");
        assert_eq!(canonicalize_for_write(&target).unwrap(), target);
    }
}
