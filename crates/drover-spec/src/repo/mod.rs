//! `repo:` — a git repository cloned (or fetched) as the task's workspace. The values
//! stay plain strings where they are written (`url`, `ref`, `path`), so a later pass
//! (a matrix's substitution) may rewrite them before they are checked; what each must be
//! is checked by [`RepoSpec::problems`], at its own line and column, and turned into the
//! typed [`RepoUrl`] and [`GitRef`] by the layers that clone.
//!
//! The URL and the ref reach git, which runs outside the sandbox as drover's user: a
//! scheme git would run a program for (`ext::`), an option in disguise (`-u…`), or a ref
//! git would read as revision syntax are refused here, before anything runs.

use std::time::Duration;

use serde::Deserialize;
use serde_saphyr::{Location, Spanned};

use crate::values::SpecDuration;

mod git_ref;
mod url;

pub use git_ref::{GitRef, ref_problem};
pub use url::{RepoScheme, RepoUrl, UrlProblem};

/// How long a clone or fetch may take when the spec says nothing.
pub const DEFAULT_REPO_TIMEOUT: Duration = Duration::from_secs(600);

/// The deepest `depth:` drover takes (a larger one is a full clone said another way).
pub const MAX_REPO_DEPTH: u32 = 1_000_000;

/// `repo: { url, ref, depth, path, credentials, timeout }`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RepoSpec {
    /// git://, https://, http://, ssh://, file:// or scp-like `user@host:path`.
    pub url: Spanned<String>,
    /// A branch, a tag or a commit (full or abbreviated); absent: the remote's HEAD.
    #[serde(default, rename = "ref")]
    pub git_ref: Option<Spanned<String>>,
    /// A shallow clone of this many commits; absent: the whole history.
    #[serde(default)]
    pub depth: Option<Spanned<u32>>,
    /// Where the checkout goes, relative to the spec file; absent: a fresh temp
    /// directory removed when the task ends.
    #[serde(default)]
    pub path: Option<Spanned<String>>,
    /// Where the token or password comes from; absent: git's own configuration.
    #[serde(default)]
    pub credentials: Option<Spanned<RepoCredentials>>,
    /// The wall clock for the clone or fetch; default 10m.
    #[serde(default)]
    pub timeout: Option<Spanned<SpecDuration>>,
}

/// `credentials: { env: VAR, username: NAME }` or `{ helper: "store --file …" }`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RepoCredentials {
    /// The environment variable holding the token (or password).
    #[serde(default)]
    pub env: Option<String>,
    /// The user name sent with the token; default `x-access-token`, which the common
    /// hosts take with a token.
    #[serde(default)]
    pub username: Option<String>,
    /// A git credential helper (`credential.helper`'s syntax), instead of the ones git's
    /// configuration names.
    #[serde(default)]
    pub helper: Option<String>,
}

/// The user name sent with a token when the spec names none.
pub const DEFAULT_TOKEN_USERNAME: &str = "x-access-token";

impl RepoSpec {
    /// The clone's time limit.
    pub fn timeout(&self) -> Duration {
        self.timeout
            .as_ref()
            .map_or(DEFAULT_REPO_TIMEOUT, |timeout| timeout.value.0)
    }

    /// The ref asked for, as written (None: the remote's HEAD).
    pub fn ref_name(&self) -> Option<&str> {
        self.git_ref.as_ref().map(|r| r.value.as_str())
    }

    /// Every problem of this `repo:`, each at the location of what it is about: the
    /// URL's scheme and shape, the ref, the depth, the credentials. Checked after the
    /// spec is read (and any substitution made), so a template is never refused.
    pub fn problems(&self) -> Vec<(Location, String)> {
        let mut problems = Vec::new();
        let url = RepoUrl::parse(&self.url.value);
        if let Err(problem) = &url {
            problems.push((self.url.referenced, format!("repo.url: {problem}")));
        }
        if let Some(git_ref) = &self.git_ref
            && let Some(problem) = ref_problem(&git_ref.value)
        {
            problems.push((git_ref.referenced, format!("repo.ref: {problem}")));
        }
        if let Some(depth) = &self.depth
            && !(1..=MAX_REPO_DEPTH).contains(&depth.value)
        {
            problems.push((
                depth.referenced,
                format!(
                    "repo.depth must be between 1 and {MAX_REPO_DEPTH}, not {}; leave it out for the whole history",
                    depth.value
                ),
            ));
        }
        if let Some(path) = &self.path
            && path.value.trim().is_empty()
        {
            problems.push((
                path.referenced,
                "repo.path is empty; name a directory relative to the spec file, or leave it out for a temp directory".into(),
            ));
        }
        if let Some(credentials) = &self.credentials {
            problems.extend(
                credentials_problem(&credentials.value).map(|p| (credentials.referenced, p)),
            );
            if let Ok(url) = &url
                && url.password.is_some()
            {
                problems.push((
                    credentials.referenced,
                    "repo.url carries a password and repo.credentials names another; keep one of them".into(),
                ));
            }
        }
        problems
    }
}

/// What is wrong with `credentials:`: exactly one of `env` and `helper`, a variable name
/// that is one, a helper that is not empty.
fn credentials_problem(credentials: &RepoCredentials) -> Option<String> {
    match (&credentials.env, &credentials.helper) {
        (Some(_), Some(_)) => Some(
            "repo.credentials names both env and helper; keep one (env: a variable holding a token, helper: a git credential helper)".into(),
        ),
        (None, None) => Some(
            "repo.credentials names neither env nor helper; write { env: VAR } or { helper: \"…\" }, or leave credentials out for git's own configuration".into(),
        ),
        (Some(env), None) => {
            let valid = !env.is_empty()
                && !env.starts_with(|c: char| c.is_ascii_digit())
                && env.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !valid {
                return Some(format!(
                    "repo.credentials.env {env:?} is no environment variable name; use letters, digits and '_'"
                ));
            }
            credentials
                .username
                .as_deref()
                .filter(|name| name.is_empty() || name.chars().any(char::is_control))
                .map(|_| "repo.credentials.username is empty or holds a control character".into())
        }
        (None, Some(helper)) => {
            if credentials.username.is_some() {
                Some("repo.credentials.username goes with env:, not helper: (the helper gives its own)".into())
            } else if helper.trim().is_empty() || helper.chars().any(char::is_control) {
                Some("repo.credentials.helper is empty or holds a control character".into())
            } else {
                None
            }
        }
    }
}

#[cfg(test)]
#[path = "repo_tests.rs"]
mod tests;
