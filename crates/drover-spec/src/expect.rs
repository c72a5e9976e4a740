//! `expect:` — what a task's result must look like beyond its checks, e.g. which files
//! it may change. Globs are compiled while the spec loads, so a bad one is a spec error
//! at its own line and column rather than a surprise after an expensive run.

use super::values::InvalidValue;
use globset::{GlobBuilder, GlobMatcher};
use serde::Deserialize;

/// Everything a spec can expect of a task's result.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expectations {
    #[serde(default)]
    pub files_changed: Option<FilesChangedExpectation>,
}

/// Expectations about the files the task added, changed or deleted (the report's
/// `files_changed`, paths relative to the workspace).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FilesChangedExpectation {
    /// Every changed file must match one of these (an empty list: nothing may change).
    #[serde(default)]
    pub only: Option<Vec<PathGlob>>,
    /// At most this many files may change.
    #[serde(default)]
    pub max: Option<usize>,
    /// Each of these must match at least one changed file.
    #[serde(default)]
    pub must_include: Option<Vec<PathGlob>>,
}

/// A gitignore-style glob relative to the workspace, the same dialect as permission
/// rules: `src/**` is anchored at the workspace root, a pattern without `/` (`*.md`)
/// matches at any depth, and a pattern naming a directory covers everything below it.
#[derive(Debug, Clone, Deserialize)]
#[serde(try_from = "String")]
pub struct PathGlob {
    text: String,
    /// The path itself.
    exact: GlobMatcher,
    /// Anything below it, when the pattern names a directory.
    below: GlobMatcher,
}

impl PathGlob {
    /// The pattern as written in the spec.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Does the relative, `/`-separated `path` match? Matched on the path's bytes, so a
    /// file name that is not UTF-8 matches as it is.
    pub fn is_match(&self, path: impl AsRef<std::path::Path>) -> bool {
        let path = path.as_ref();
        self.exact.is_match(path) || self.below.is_match(path)
    }
}

impl std::fmt::Display for PathGlob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl TryFrom<String> for PathGlob {
    type Error = InvalidValue;
    fn try_from(text: String) -> Result<Self, Self::Error> {
        let trimmed = text.trim().trim_end_matches('/');
        if trimmed.is_empty() {
            return Err(InvalidValue(
                "an empty glob matches nothing; write e.g. src/** or *.md".into(),
            ));
        }
        if trimmed.starts_with("//") || trimmed.starts_with("~/") {
            return Err(InvalidValue(format!(
                "glob {text:?} is not relative to the workspace; expectations are about the workspace's files"
            )));
        }
        let anchored = match trimmed.strip_prefix('/') {
            Some(rest) => rest.to_string(),
            None if trimmed.contains('/') => trimmed.to_string(),
            None => format!("**/{trimmed}"),
        };
        let build = |glob: &str| {
            GlobBuilder::new(glob)
                .literal_separator(true)
                .backslash_escape(true)
                .build()
                .map(|g| g.compile_matcher())
                .map_err(|e| InvalidValue(format!("invalid glob {text:?}: {}", e.kind())))
        };
        Ok(PathGlob {
            exact: build(&anchored)?,
            below: build(&format!("{anchored}/**"))?,
            text,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn glob(text: &str) -> PathGlob {
        PathGlob::try_from(text.to_string()).unwrap()
    }

    #[test]
    fn globs_follow_the_permission_rule_dialect() {
        assert!(glob("src/**").is_match("src/a/b.rs"));
        assert!(!glob("src/**").is_match("lib/src/b.rs"));
        assert!(glob("/src/*.rs").is_match("src/a.rs"));
        assert!(!glob("src/*.rs").is_match("src/a/b.rs"));
        assert!(glob("*.md").is_match("docs/guide.md"));
        assert!(glob("docs").is_match("docs/guide.md"));
        assert!(glob("docs/").is_match("a/docs/guide.md"));
        assert!(glob("README.md").is_match("README.md"));
    }

    #[test]
    fn bad_globs_are_refused_with_the_reason() {
        let error = PathGlob::try_from("src/[".to_string())
            .unwrap_err()
            .to_string();
        assert!(error.contains("src/["), "{error}");
        assert!(PathGlob::try_from(String::new()).is_err());
        assert!(PathGlob::try_from("//etc/**".to_string()).is_err());
    }
}
