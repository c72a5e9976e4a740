//! `diff:` — what the task's diff leaves out. Build by-products a check creates (a
//! `Cargo.lock` that `cargo check` writes in a crate that commits none, a coverage file)
//! are not the agent's work, yet they land in `diff.patch` and fail
//! `expect.files_changed.only`. Leaving them out is the user's decision, written in the
//! spec, and every path left out is named in the reports, so nothing is hidden silently.

use super::expect::PathGlob;
use serde::Deserialize;

/// `diff: { exclude: [glob, ...] }`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiffSpec {
    /// Changed paths matching one of these are left out of `diff.patch`,
    /// `files_changed` and the expectations (the same glob dialect as `expect:`).
    #[serde(default)]
    pub exclude: Vec<PathGlob>,
}

impl DiffSpec {
    /// Is the relative, `/`-separated `path` left out of the diff?
    pub fn excludes(&self, path: impl AsRef<std::path::Path>) -> bool {
        let path = path.as_ref();
        self.exclude.iter().any(|glob| glob.is_match(path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(yaml: &str) -> DiffSpec {
        serde_saphyr::from_str(yaml).unwrap()
    }

    #[test]
    fn excluded_paths_match_like_expectation_globs() {
        let diff = spec("exclude: [Cargo.lock, coverage/, '*.profraw']");
        assert!(diff.excludes("Cargo.lock"));
        // A pattern without `/` matches at any depth, a directory covers what is below.
        assert!(diff.excludes("crates/a/Cargo.lock"));
        assert!(diff.excludes("coverage/index.html"));
        assert!(diff.excludes("deep/x.profraw"));
        assert!(!diff.excludes("src/Cargo.lock.rs"));
        assert!(!diff.excludes("src/lib.rs"));
    }

    #[test]
    fn anchored_patterns_match_only_at_the_root() {
        let diff = spec("exclude: [/Cargo.lock]");
        assert!(diff.excludes("Cargo.lock"));
        assert!(!diff.excludes("crates/a/Cargo.lock"));
    }

    #[test]
    fn unknown_keys_and_bad_globs_are_refused() {
        assert!(serde_saphyr::from_str::<DiffSpec>("include: [a]").is_err());
        assert!(serde_saphyr::from_str::<DiffSpec>("exclude: ['']").is_err());
        assert!(serde_saphyr::from_str::<DiffSpec>("exclude: ['~/x']").is_err());
        assert!(serde_saphyr::from_str::<DiffSpec>("exclude: ['a/[b']").is_err());
    }
}
