//! Read denials expressed as grants. Landlock only ever allows: there is no rule that
//! takes a path away from a grant on its parent. So "read everything except D" becomes
//! "read every entry of `/` except the one leading to D, and inside that one every entry
//! except the next one, …" down to D.
//!
//! Consequences: an entry created later in a directory on the way to a denied path (say
//! a new file directly in `/tmp` when `/tmp/x/secret` is denied) is not readable by the
//! command; directories stay listable everywhere (names, not contents, of a denied
//! directory can be seen), because listing is granted on `/` as a whole.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The paths to grant read access beneath so that everything is readable except the
/// `denied` paths (canonical, absolute). With no denials that is `/` alone.
///
/// A symlink among the siblings is granted only when it resolves to a place that is
/// neither denied nor on the way to a denied path (Landlock checks the real location,
/// and the real location is handled on its own). Entries that cannot be resolved are
/// left out: that denies more, never less.
pub(super) fn read_grants(denied: &[PathBuf]) -> Vec<PathBuf> {
    if denied.is_empty() {
        return vec![PathBuf::from("/")];
    }
    let mut ancestors: BTreeSet<PathBuf> = BTreeSet::new();
    for path in denied {
        let mut parent = path.parent();
        while let Some(dir) = parent {
            ancestors.insert(dir.to_path_buf());
            parent = dir.parent();
        }
    }
    let blocked = |real: &Path| {
        denied
            .iter()
            .any(|d| real.starts_with(d) || d.starts_with(real))
    };
    let mut grants = Vec::new();
    for dir in &ancestors {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if ancestors.contains(&path) || denied.contains(&path) {
                continue;
            }
            match path.canonicalize() {
                Ok(real) if !blocked(&real) => grants.push(path),
                _ => {}
            }
        }
    }
    grants.sort();
    grants
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_denial_grants_the_root() {
        assert_eq!(read_grants(&[]), vec![PathBuf::from("/")]);
    }

    #[test]
    fn siblings_on_the_way_are_granted_and_the_denied_path_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("a/secret"), "s").unwrap();
        std::fs::write(root.join("a/b/ok"), "o").unwrap();
        std::fs::write(root.join("other"), "o").unwrap();
        std::os::unix::fs::symlink(root.join("a/secret"), root.join("link")).unwrap();
        std::os::unix::fs::symlink(root.join("a"), root.join("alias")).unwrap();
        let grants = read_grants(&[root.join("a/secret")]);
        assert!(grants.contains(&root.join("a/b")), "{grants:?}");
        assert!(grants.contains(&root.join("other")));
        assert!(!grants.iter().any(|g| g.starts_with(root.join("a/secret"))));
        assert!(!grants.contains(&root.join("link")), "a link to the secret");
        assert!(
            !grants.contains(&root.join("alias")),
            "a link to an ancestor"
        );
        assert!(!grants.contains(&root) && !grants.contains(&root.join("a")));
        assert!(grants.contains(&PathBuf::from("/usr")) || !Path::new("/usr").exists());
    }
}
