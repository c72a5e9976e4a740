//! Turning the paths a model writes into real paths.

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
    let joined = if expanded.is_absolute() {
        expanded
    } else {
        workspace.join(expanded)
    };
    Ok(normalize(&joined))
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
    fn canonicalize_for_write_keeps_missing_tail() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let target = root.join("new/dir/file.txt");
        assert_eq!(canonicalize_for_write(&target).unwrap(), target);
    }
}
