//! Why a repository could not be checked out, told apart the way an orchestrator acts
//! on it: worth another try (the host down, a time limit) or not (no such ref,
//! authentication refused, not a repository). Every message names the repository by its
//! credential-free URL and says what to do; git's own words come with the token taken
//! out.

use std::path::Path;
use std::time::Duration;

use super::remote_git::GitFailure;

/// Which end a failed checkout comes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RepoErrorKind {
    /// May pass when tried again: `repo_unavailable`.
    Unavailable,
    /// Will come again: `repo_refused`.
    Refused,
    /// drover was interrupted.
    Interrupted,
}

/// A checkout that failed, with the message the task ends with.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub(crate) struct RepoError {
    pub kind: RepoErrorKind,
    pub message: String,
}

/// What git says when the remote answered and said no.
const REFUSALS: &[&str] = &[
    "authentication failed",
    "could not read username",
    "could not read password",
    "unable to get password",
    "terminal prompts disabled",
    "returned error: 401",
    "returned error: 403",
    "returned error: 404",
    "permission denied",
    "not found",
    "does not appear to be a git repository",
    "not exported",
    "access denied",
    "not a git repository",
    "couldn't find remote ref",
    "not our ref",
    "invalid credentials",
    "host key verification failed",
    "no such file or directory",
];

impl RepoError {
    /// A git command that failed while drover was `doing` something for `url`.
    pub(crate) fn of(url: &str, doing: &str, failure: GitFailure) -> RepoError {
        match failure {
            GitFailure::Spawn(error) => RepoError {
                kind: RepoErrorKind::Unavailable,
                message: format!(
                    "repo {url}: git could not be started ({error}) while {doing}; install git on this machine"
                ),
            },
            GitFailure::TimedOut(limit) => RepoError {
                kind: RepoErrorKind::Unavailable,
                message: format!(
                    "repo {url}: {doing} took longer than repo.timeout ({}), so git was stopped; check the host is reachable, or raise repo.timeout",
                    humantime::format_duration(Duration::from_secs(limit.as_secs()))
                ),
            },
            GitFailure::Interrupted => RepoError {
                kind: RepoErrorKind::Interrupted,
                message: format!("interrupted while repo {url} was cloned; the agent never ran"),
            },
            GitFailure::Failed(stderr) => {
                let said = git_said(&stderr);
                let lower = stderr.to_lowercase();
                if REFUSALS.iter().any(|refusal| lower.contains(refusal)) {
                    RepoError::refused(
                        url,
                        format!("{doing} was refused: {said}"),
                        "check repo.url, repo.ref and the credentials (repo.credentials, or git's configuration)",
                    )
                } else {
                    RepoError {
                        kind: RepoErrorKind::Unavailable,
                        message: format!(
                            "repo {url}: {doing} failed: {said}; check the host is up and reachable from this machine, then run the task again"
                        ),
                    }
                }
            }
        }
    }

    /// The remote refused `what`; `fix` says what to change.
    pub(crate) fn refused(url: &str, what: String, fix: &str) -> RepoError {
        RepoError {
            kind: RepoErrorKind::Refused,
            message: format!("repo {url}: {what}; {fix}"),
        }
    }

    /// `path:` is there and not an empty directory.
    pub(crate) fn not_empty(url: &str, path: &Path) -> RepoError {
        RepoError {
            kind: RepoErrorKind::Refused,
            message: format!(
                "repo {url}: repo.path {} is not an empty directory, and drover never clobbers files; empty or remove it, or name another path",
                path.display()
            ),
        }
    }

    /// drover could not make `what` on this machine.
    pub(crate) fn local(url: &str, what: &str, error: &std::io::Error) -> RepoError {
        RepoError {
            kind: RepoErrorKind::Unavailable,
            message: format!("repo {url}: {what} could not be made: {error}"),
        }
    }
}

/// git's `fatal:`/`error:` lines (else its last line), on one line, cut short.
fn git_said(stderr: &str) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|line| line.starts_with("fatal:") || line.starts_with("error:"))
        .collect();
    let said = if lines.is_empty() {
        stderr
            .lines()
            .map(str::trim)
            .rfind(|line| !line.is_empty())
            .unwrap_or("git gave no reason")
            .to_string()
    } else {
        lines.join(" ")
    };
    let cut: String = said.chars().take(400).collect();
    if cut.len() < said.len() {
        format!("{cut}…")
    } else {
        cut
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_final_and_the_rest_retryable() {
        let refused = RepoError::of(
            "git://h/a.git",
            "listing its refs",
            GitFailure::Failed(
                "fatal: remote error: access denied or repository not exported: /a.git\n".into(),
            ),
        );
        assert_eq!(refused.kind, RepoErrorKind::Refused);
        // An HTTP remote asking for a password no credential gives is a refusal too.
        let unasked = RepoError::of(
            "http://h/a.git",
            "listing its refs",
            GitFailure::Failed("fatal: unable to get password from user\n".into()),
        );
        assert_eq!(unasked.kind, RepoErrorKind::Refused);
        assert!(
            refused.message.starts_with("repo git://h/a.git: "),
            "{}",
            refused.message
        );
        let down = RepoError::of(
            "git://127.0.0.1:1/a.git",
            "listing its refs",
            GitFailure::Failed(
                "fatal: unable to connect to 127.0.0.1:\n127.0.0.1[0: 127.0.0.1]: errno=Connection refused\n".into(),
            ),
        );
        assert_eq!(down.kind, RepoErrorKind::Unavailable);
        let slow = RepoError::of(
            "u",
            "fetching",
            GitFailure::TimedOut(Duration::from_secs(5)),
        );
        assert_eq!(slow.kind, RepoErrorKind::Unavailable);
        assert!(
            slow.message.contains("repo.timeout (5s)"),
            "{}",
            slow.message
        );
    }
}
