//! `repo:` — the task's workspace cloned from a git repository before isolation and
//! `setup:`, outside the agent's sandbox: the ref resolved with one `git ls-remote`,
//! then fetched into a fresh repository (directly, or from a bare mirror of
//! `--repo-cache`) and checked out. The checkout's `origin` is the credential-free URL;
//! no credential is written anywhere git keeps (see `remote_git`).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::spec::{GitRef, RepoUrl};
use crate::workspace::leftovers::HeldTempDir;

mod cache;
mod errors;
mod overlay;
mod private;
mod remote_git;
mod resolve;
mod template;

pub(crate) use errors::{RepoError, RepoErrorKind};
pub(crate) use private::{checkouts_dir, keep_private, private_dirs};
pub(crate) use remote_git::{Credential, GitFailure, RemoteGit};
use resolve::{Target, Unresolved, resolve};
use template::OverlayCheckout;

/// One clone, as the task's plan asks for it.
#[derive(Clone)]
pub(crate) struct RepoRequest {
    pub url: RepoUrl,
    /// `ref:`, checked; None: the remote's HEAD.
    pub git_ref: Option<GitRef>,
    pub depth: Option<u32>,
    /// `path:`, resolved against the spec file; None: a temp directory.
    pub path: Option<PathBuf>,
    pub credential: Credential,
    pub timeout: Duration,
    /// `--repo-cache`: the directory of bare mirrors.
    pub cache: Option<PathBuf>,
    /// The checkout from the cache may be an overlay of its template (`--repo-checkout`).
    pub overlay: bool,
    /// Where a checkout without `path:` is made: this process's checkouts directory,
    /// held from planning on (see `private`); None: taken when the clone starts.
    pub checkouts: Option<std::sync::Arc<HeldTempDir>>,
    /// A commit to check out instead of `git_ref` (a resumed task's recorded start).
    pub at_commit: Option<String>,
}

/// The checkout the task works in, and the commit it is at. A temp checkout is removed
/// when this is dropped.
pub(crate) struct Checkout {
    pub dir: PathBuf,
    pub commit: String,
    /// Declared before `_temp`, so the mount is taken down before its directory goes.
    _overlay: Option<OverlayCheckout>,
    _temp: Option<HeldTempDir>,
    /// The directory `_temp` is in, held at least as long (declared after it).
    _checkouts: Option<std::sync::Arc<HeldTempDir>>,
}

/// Clone (or fetch) `request` and check it out. `stop` says drover was interrupted.
pub(crate) fn check_out(
    request: &RepoRequest,
    stop: &(dyn Fn() -> bool + Sync),
) -> Result<Checkout, RepoError> {
    let url = &request.url.clean;
    let local = |what: &str, source: std::io::Error| RepoError::local(url, what, &source);
    let git = RemoteGit {
        credential: &request.credential,
        deadline: Instant::now() + request.timeout,
        timeout: request.timeout,
        secrets: secrets_of(&request.credential),
        stop,
    };
    let (dir, temp, checkouts) = match &request.path {
        Some(path) => (empty_directory(path, url)?, None, None),
        None => {
            let checkouts = match &request.checkouts {
                Some(dir) => dir.clone(),
                None => checkouts_dir().map_err(|e| local("the checkouts directory", e))?,
            };
            let temp = HeldTempDir::new_in("repo", Some(checkouts.path()))
                .map_err(|e| local("a temp directory", e))?;
            let dir = temp.path().join("checkout");
            std::fs::create_dir(&dir).map_err(|e| local("the checkout directory", e))?;
            (dir, Some(temp), Some(checkouts))
        }
    };
    let scratch = temp.as_ref().map(HeldTempDir::path);
    let cloned = clone_into(request, &git, (&dir, scratch));
    if cloned.is_err() && temp.is_none() {
        // `path:` is left as it was found: empty.
        empty_out(&dir);
    }
    let (commit, overlay) = cloned?;
    Ok(Checkout {
        commit,
        dir,
        _overlay: overlay,
        _temp: temp,
        _checkouts: checkouts,
    })
}

/// Fetch and check out into the empty `dir` (with `scratch`, the task's temp directory,
/// for an overlay from the cache); the commit checked out, and the overlay.
fn clone_into(
    request: &RepoRequest,
    git: &RemoteGit<'_>,
    (dir, scratch): (&Path, Option<&Path>),
) -> Result<(String, Option<OverlayCheckout>), RepoError> {
    let url = &request.url.clean;
    let target = match &request.at_commit {
        Some(commit) => Target::Commit(commit.clone()),
        None => {
            let listed = git
                .run(None, &["ls-remote", "--symref", "--", url])
                .map_err(|failure| RepoError::of(url, "listing its refs", failure))?;
            resolve(&String::from_utf8_lossy(&listed), request.git_ref.as_ref())
                .map_err(|unresolved| unresolved_error(url, unresolved))?
        }
    };
    let fail = |what: &'static str| move |failure| RepoError::of(url, what, failure);
    let (commit, overlay) = match &request.cache {
        Some(cache) => {
            let prepared = cache::fetch_through(cache, request, git, (dir, scratch), &target)?;
            (prepared.commit, prepared.overlay)
        }
        None => {
            git.run(Some(dir), &["init", "--quiet"])
                .map_err(fail("making the checkout"))?;
            (fetch_direct(request, git, dir, &target)?, None)
        }
    };
    let branch = match &target {
        Target::Ref { branch, .. } => branch
            .clone()
            .filter(|name| crate::spec::ref_problem(name).is_none()),
        Target::Commit(_) | Target::Abbreviated(_) => None,
    };
    if overlay.is_some() {
        // The template has `origin` and is checked out, detached at the commit.
        if let Some(branch) = branch.as_deref() {
            check_out_commit(git, dir, &commit, Some(branch))
                .map_err(fail("checking out the commit"))?;
        }
        return Ok((commit, overlay));
    }
    // `origin` is the repository, never the cache's mirror (a clone of it names it,
    // and has the fetch refspec already).
    git.run(Some(dir), &["config", "remote.origin.url", url])
        .map_err(fail("making the checkout"))?;
    if request.cache.is_none() {
        git.run(
            Some(dir),
            &[
                "config",
                "remote.origin.fetch",
                "+refs/heads/*:refs/remotes/origin/*",
            ],
        )
        .map_err(fail("making the checkout"))?;
    }
    check_out_commit(git, dir, &commit, branch.as_deref())
        .map_err(fail("checking out the commit"))?;
    Ok((commit, None))
}

/// Fetch `target` from the remote into `dir`; the commit fetched.
fn fetch_direct(
    request: &RepoRequest,
    git: &RemoteGit<'_>,
    dir: &Path,
    target: &Target,
) -> Result<String, RepoError> {
    let url = &request.url.clean;
    let depth = request.depth.map(|depth| format!("--depth={depth}"));
    let mut args: Vec<&str> = vec!["fetch", "--quiet", "--no-tags"];
    let wanted = match target {
        Target::Ref { name, .. } => name.clone(),
        Target::Commit(id) => id.clone(),
        // An abbreviation can only be looked up among the commits fetched: all of them.
        Target::Abbreviated(_) => "+refs/heads/*:refs/remotes/origin/*".to_string(),
    };
    if let (Some(depth), false) = (&depth, matches!(target, Target::Abbreviated(_))) {
        args.push(depth);
    }
    args.extend(["--", url, &wanted]);
    git.run(Some(dir), &args)
        .map_err(|failure| RepoError::of(url, "fetching", failure))?;
    let revision = match target {
        Target::Abbreviated(prefix) => format!("{prefix}^{{commit}}"),
        Target::Ref { .. } | Target::Commit(_) => "FETCH_HEAD^{commit}".to_string(),
    };
    commit_of(git, dir, &revision).ok_or_else(|| missing_commit(url, target))
}

/// The full id of the commit `revision` names in `dir`'s repository.
fn commit_of(git: &RemoteGit<'_>, dir: &Path, revision: &str) -> Option<String> {
    let output = git
        .run(
            Some(dir),
            &[
                "rev-parse",
                "--verify",
                "--quiet",
                "--end-of-options",
                revision,
            ],
        )
        .ok()?;
    let id = String::from_utf8_lossy(&output).trim().to_string();
    crate::workspace::start_commit::is_object_id(&id).then_some(id)
}

/// Check out `commit`: on a local branch of the remote branch's name (tracking it), or
/// detached for a tag or a commit.
fn check_out_commit(
    git: &RemoteGit<'_>,
    dir: &Path,
    commit: &str,
    branch: Option<&str>,
) -> Result<(), GitFailure> {
    let Some(branch) = branch else {
        git.run(Some(dir), &["checkout", "--quiet", "--detach", commit])?;
        return Ok(());
    };
    let tracking = format!("refs/remotes/origin/{branch}");
    git.run(Some(dir), &["update-ref", &tracking, commit])?;
    // `--track` writes `branch.<name>.remote` and `.merge` from the tracking ref.
    git.run(
        Some(dir),
        &["checkout", "--quiet", "-B", branch, "--track", &tracking],
    )?;
    Ok(())
}

/// `path`, made if missing, when it is an empty directory; else the error naming it.
fn empty_directory(path: &Path, url: &str) -> Result<PathBuf, RepoError> {
    match std::fs::symlink_metadata(path) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(path).map_err(|e| RepoError::local(url, "repo.path", &e))?;
        }
        Err(error) => return Err(RepoError::local(url, "repo.path", &error)),
        Ok(meta) if !meta.is_dir() => return Err(RepoError::not_empty(url, path)),
        Ok(_) => {}
    }
    let empty = std::fs::read_dir(path)
        .map_err(|e| RepoError::local(url, "repo.path", &e))?
        .next()
        .is_none();
    if !empty {
        return Err(RepoError::not_empty(url, path));
    }
    Ok(path.canonicalize().unwrap_or_else(|_| path.to_path_buf()))
}

/// Remove what a failed clone left in `dir`, leaving `dir` itself.
fn empty_out(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let _ = match entry.file_type() {
            Ok(kind) if kind.is_dir() => std::fs::remove_dir_all(&path),
            _ => std::fs::remove_file(&path),
        };
    }
}

/// The values no message may quote: the token.
fn secrets_of(credential: &Credential) -> Vec<String> {
    match credential {
        Credential::Token { token, .. } => vec![token.clone()],
        Credential::GitConfig | Credential::Helper(_) => Vec::new(),
    }
}

fn unresolved_error(url: &str, unresolved: Unresolved) -> RepoError {
    match unresolved {
        Unresolved::Empty => RepoError::refused(
            url,
            "the repository has no commit (no branch, tag or HEAD)".to_string(),
            "push a commit to it, or name another repository",
        ),
        Unresolved::NoSuchRef { asked, branches } => {
            let there = if branches.is_empty() {
                String::new()
            } else {
                format!(" (its branches include {})", branches.join(", "))
            };
            RepoError::refused(
                url,
                format!("it has no branch or tag {asked:?}{there}"),
                "fix repo.ref: a branch, a tag or a commit id of that repository",
            )
        }
    }
}

fn missing_commit(url: &str, target: &Target) -> RepoError {
    let asked = match target {
        Target::Ref { name, .. } => name.clone(),
        Target::Commit(id) | Target::Abbreviated(id) => id.clone(),
    };
    RepoError::refused(
        url,
        format!("{asked:?} names no commit there"),
        "fix repo.ref: a branch, a tag or a commit id of that repository",
    )
}

#[cfg(test)]
#[path = "repo_tests.rs"]
mod tests;
