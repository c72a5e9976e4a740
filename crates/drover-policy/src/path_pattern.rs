//! Gitignore-style path patterns of permission rules, in every form Claude Code documents.
//!
//! `src/**`, `/src/**` and `./src/**` are relative to the workspace root (the project root
//! and the agent's starting directory, which are one directory in drover); a pattern
//! without a slash (`.env`, `*.pem`) matches at any depth; `//abs/path` is absolute;
//! `~/x` is under the home directory. A pattern that names a directory also covers
//! everything below it. A pattern drover could accept but not apply as written (`..`,
//! empty or `.` parts, `~user/`, `///`) is refused when the rule is parsed, so no rule
//! is accepted and then quietly matches nothing.

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
    /// Compile `pattern`, or say why it cannot be applied as written.
    pub fn new(pattern: &str) -> Result<Self, PatternError> {
        let (scope, glob) = scope_and_glob(pattern)?;
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

    /// Does it name paths outside the workspace (`//abs/path`, `~/path`)? Every other
    /// form matches only inside it.
    pub fn reaches_outside_workspace(&self) -> bool {
        self.scope == Scope::Absolute
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

/// Why a path pattern is refused.
#[derive(Debug, thiserror::Error)]
pub enum PatternError {
    #[error(transparent)]
    Glob(#[from] globset::Error),
    /// A form that would not mean what it says; the text says what to write instead.
    #[error("{0}")]
    Form(String),
}

/// What a pattern is matched against, and the glob itself.
fn scope_and_glob(pattern: &str) -> Result<(Scope, String), PatternError> {
    let form = |message: String| Err(PatternError::Form(message));
    if pattern.is_empty() {
        return form(
            "the path pattern is empty; write a path, or the tool name alone for every path".into(),
        );
    }
    if let Some(abs) = pattern.strip_prefix("//") {
        if abs.starts_with('/') {
            return form(format!(
                "{pattern:?} starts with more than two slashes; write //{} for an absolute path",
                abs.trim_start_matches('/')
            ));
        }
        let glob = format!("/{abs}");
        check_parts(pattern, &glob)?;
        return Ok((Scope::Absolute, glob));
    }
    if pattern == "~" || pattern.starts_with("~/") {
        let Some(home) = super::expand::home_dir() else {
            return form(format!(
                "{pattern:?} is under the home directory, but HOME is not set; set HOME or write the path as //abs/path"
            ));
        };
        let rest = pattern.trim_start_matches('~').trim_start_matches('/');
        let glob = home.join(rest).to_string_lossy().into_owned();
        check_parts(pattern, rest)?;
        return Ok((Scope::Absolute, glob));
    }
    if pattern.starts_with('~') {
        return form(format!(
            "{pattern:?}: only ~/ (your home directory) is understood, not another user's; write //abs/path"
        ));
    }
    // `./x` is `x` from the workspace root, anchored there as `/x` is.
    let mut rest = pattern;
    let mut anchored = false;
    while let Some(after) = rest.strip_prefix("./") {
        rest = after;
        anchored = true;
    }
    if rest == "." || (anchored && rest.is_empty()) {
        return Ok((Scope::Workspace, "**".to_string()));
    }
    if let Some(after) = rest.strip_prefix('/') {
        if anchored || after.starts_with('/') {
            return form(format!(
                "{pattern:?} mixes ./ with an absolute path; write ./x or /x for the workspace, //x for an absolute path"
            ));
        }
        rest = after;
        anchored = true;
    }
    let trimmed = rest.trim_end_matches('/');
    check_parts(pattern, trimmed)?;
    let glob = if anchored || trimmed.contains('/') {
        trimmed.to_string()
    } else {
        format!("**/{trimmed}")
    };
    Ok((Scope::Workspace, glob))
}

/// Refuse the parts of a path that would make a pattern mean something else than it
/// reads: `..` (where it points depends on symbolic links), `.` and empty parts (no
/// path the policy compares has them, so the pattern would match nothing).
fn check_parts(pattern: &str, path: &str) -> Result<(), PatternError> {
    let inner = path.trim_start_matches('/').trim_end_matches('/');
    if inner.is_empty() {
        return Ok(());
    }
    for part in inner.split('/') {
        let problem = match part {
            ".." => "`..`",
            "." => "a `.` part",
            "" => "an empty part (`//` inside the path)",
            _ => continue,
        };
        return Err(PatternError::Form(format!(
            "{pattern:?} has {problem}, which would make the rule match another path than it reads, or none; write the path without it"
        )));
    }
    Ok(())
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
    fn dot_slash_patterns_are_anchored_at_the_workspace_root() {
        assert!(rel("./.env", ".env"));
        assert!(!rel("./.env", "config/.env"));
        assert!(rel("./.env.*", ".env.local"));
        assert!(rel("./secrets/**", "secrets/a/key.txt"));
        assert!(!rel("./secrets/**", "x/secrets/key.txt"));
        assert!(rel("././src/*.rs", "src/a.rs"));
        assert!(rel("./", "anything/at/all"));
        assert!(rel(".", "anything"));
    }

    #[test]
    fn forms_that_cannot_mean_what_they_read_are_refused() {
        for refused in [
            "",
            "../secret",
            "a/../b",
            "./../x",
            "a/./b",
            "a//b",
            "///etc/passwd",
            ".//etc/passwd",
            "~root/.ssh",
            "//etc/../root",
        ] {
            let error = PathPattern::new(refused).expect_err(refused);
            assert!(matches!(error, PatternError::Form(_)), "{refused}: {error}");
        }
    }

    #[test]
    fn absolute_patterns_match_absolute_paths_only() {
        assert!(matches("//etc/**", Path::new("/etc/passwd"), None));
        assert!(!rel("//etc/**", "etc/passwd"));
        assert!(!matches("src/**", Path::new("/src/a"), None));
    }
}
