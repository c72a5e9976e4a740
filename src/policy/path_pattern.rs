//! Gitignore-style path patterns of permission rules.
//!
//! `src/**` and `/src/**` are relative to the workspace root; a pattern without a slash
//! (`.env`, `*.pem`) matches at any depth; `//abs/path` is absolute; `~/x` is under the
//! home directory. A pattern that names a directory also covers everything below it.

use std::path::Path;

use globset::GlobBuilder;

/// Does `pattern` match the file at `absolute` (`relative` to the workspace when inside)?
pub fn matches(pattern: &str, absolute: &Path, relative: Option<&str>) -> bool {
    if let Some(abs) = pattern.strip_prefix("//") {
        return glob_matches(&format!("/{abs}"), &absolute.to_string_lossy());
    }
    if let Some(rest) = pattern.strip_prefix("~/") {
        let Some(home) = std::env::var_os("HOME") else {
            return false;
        };
        let full = Path::new(&home).join(rest);
        return glob_matches(&full.to_string_lossy(), &absolute.to_string_lossy());
    }
    let Some(relative) = relative else {
        return false;
    };
    let trimmed = pattern.trim_end_matches('/');
    let anchored = match trimmed.strip_prefix('/') {
        Some(rest) => rest.to_string(),
        None if trimmed.contains('/') => trimmed.to_string(),
        None => format!("**/{trimmed}"),
    };
    glob_matches(&anchored, relative)
}

/// The glob matches the path itself or, naming a directory, anything below it.
fn glob_matches(glob: &str, path: &str) -> bool {
    let build = |text: &str| {
        GlobBuilder::new(text)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map(|g| g.compile_matcher())
    };
    let Ok(exact) = build(glob) else {
        return false;
    };
    if exact.is_match(path) {
        return true;
    }
    build(&format!("{}/**", glob.trim_end_matches('/'))).is_ok_and(|below| below.is_match(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(pattern: &str, path: &str) -> bool {
        matches(pattern, &Path::new("/ws").join(path), Some(path))
    }

    #[test]
    fn relative_patterns_are_anchored_at_the_workspace() {
        assert!(rel("src/**", "src/a/b.rs"));
        assert!(!rel("src/**", "lib/src/b.rs"));
        assert!(rel("/src/*.rs", "src/a.rs"));
        assert!(!rel("src/*.rs", "src/a/b.rs"));
    }

    #[test]
    fn bare_names_match_at_any_depth_and_directories_cover_their_contents() {
        assert!(rel(".env", ".env"));
        assert!(rel(".env", "config/.env"));
        assert!(rel("*.pem", "a/b/key.pem"));
        assert!(rel("secrets", "secrets/token.txt"));
        assert!(rel("secrets/", "x/secrets/token.txt"));
    }

    #[test]
    fn absolute_patterns_match_absolute_paths_only() {
        assert!(matches("//etc/**", Path::new("/etc/passwd"), None));
        assert!(!rel("//etc/**", "etc/passwd"));
        assert!(!matches("src/**", Path::new("/src/a"), None));
    }
}
