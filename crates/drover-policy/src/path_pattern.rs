//! Gitignore-style path patterns of permission rules.
//!
//! `src/**` and `/src/**` are relative to the workspace root; a pattern without a slash
//! (`.env`, `*.pem`) matches at any depth; `//abs/path` is absolute; `~/x` is under the
//! home directory. A pattern that names a directory also covers everything below it.

use std::path::Path;

use globset::{GlobBuilder, GlobMatcher};

/// A path pattern compiled once, when its rule is parsed: rules are matched against
/// every file a search walks (Grep, Glob and LS skip Read-denied files), so nothing is
/// compiled per match.
#[derive(Debug, Clone)]
pub struct PathPattern {
    source: String,
    /// What the globs are matched against.
    scope: Scope,
    /// The pattern itself, and the pattern as a directory covering what is below it.
    exact: GlobMatcher,
    below: GlobMatcher,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// `//abs/path` and `~/path`: absolute paths.
    Absolute,
    /// Everything else: paths relative to the workspace.
    Workspace,
}

impl PartialEq for PathPattern {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
    }
}

impl Eq for PathPattern {}

impl PathPattern {
    /// Compile `pattern`; the error is the glob parser's.
    pub fn new(pattern: &str) -> Result<Self, globset::Error> {
        let (scope, glob) = if let Some(abs) = pattern.strip_prefix("//") {
            (Scope::Absolute, format!("/{abs}"))
        } else if let Some(rest) = pattern.strip_prefix("~/") {
            let home = super::expand::home_dir().unwrap_or_default();
            (
                Scope::Absolute,
                home.join(rest).to_string_lossy().into_owned(),
            )
        } else {
            let trimmed = pattern.trim_end_matches('/');
            let anchored = match trimmed.strip_prefix('/') {
                Some(rest) => rest.to_string(),
                None if trimmed.contains('/') => trimmed.to_string(),
                None => format!("**/{trimmed}"),
            };
            (Scope::Workspace, anchored)
        };
        let build = |text: &str| {
            GlobBuilder::new(text)
                .literal_separator(true)
                .backslash_escape(true)
                .build()
                .map(|g| g.compile_matcher())
        };
        Ok(PathPattern {
            source: pattern.to_string(),
            scope,
            exact: build(&glob)?,
            below: build(&format!("{}/**", glob.trim_end_matches('/')))?,
        })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Does it match the file at `absolute` (`relative` to the workspace when inside)?
    pub fn matches(&self, absolute: &Path, relative: Option<&str>) -> bool {
        let subject = match self.scope {
            Scope::Absolute => absolute.to_string_lossy(),
            Scope::Workspace => match relative {
                Some(relative) => relative.into(),
                None => return false,
            },
        };
        let subject: &str = &subject;
        self.exact.is_match(subject) || self.below.is_match(subject)
    }
}

/// One-off matching (tests): compiles the pattern each time.
#[cfg(test)]
pub(super) fn matches(pattern: &str, absolute: &Path, relative: Option<&str>) -> bool {
    PathPattern::new(pattern).is_ok_and(|p| p.matches(absolute, relative))
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
