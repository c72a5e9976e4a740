//! `--repo-cache DIR`: a bare mirror per repository, so the second night fetches what
//! is new instead of cloning it all. Each mirror is named by a hash of its
//! credential-free URL and locked (`flock` on `<hash>.lock`) while a task fetches into it
//! and fetches from it, so the tasks of a run and drover processes sharing the
//! directory take turns. The mirror's `origin` is the credential-free URL, and the
//! credentials go with each fetch (`remote_git`): the cache stores none.
//!
//! The checkout is a local clone of the mirror that copies its object files
//! (`--local --no-hardlinks`): no pack is computed again (a `file://` fetch would run
//! `pack-objects` over the whole history, costing about what the network clone did),
//! and no hard link and no alternates (`--shared`, `--reference` without
//! `--dissociate`) tie the agent-writable checkout to the cache, so no task can change
//! an object the next task's checkout is made from. `depth:` does not apply to it: the
//! history is copied, not transferred.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rustix::fs::{FlockOperation, Mode, OFlags};
use sha2::Digest as _;

use super::errors::RepoError;
use super::overlay;
use super::remote_git::RemoteGit;
use super::resolve::Target;
use super::template::{self, OverlayCheckout, TemplateFailure};
use super::{RepoRequest, commit_of, missing_commit};

/// What a mirror fetches: every branch and tag, the whole history.
const MIRROR_REFSPECS: [&str; 2] = ["+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"];

/// The mirror of `clean_url` in `cache`: `<hash>.git`, and its lock file.
pub(crate) fn mirror_paths(cache: &Path, clean_url: &str) -> (PathBuf, PathBuf) {
    let hash = crate::digest::hex(&sha2::Sha256::digest(clean_url.as_bytes()));
    let key = hash.get(..32).unwrap_or(&hash);
    (
        cache.join(format!("{key}.git")),
        cache.join(format!("{key}.lock")),
    )
}

/// What `fetch_through` made of the task's directory.
pub(super) struct Prepared {
    /// The commit `target` names.
    pub commit: String,
    /// The checkout is the commit's template mounted (and checked out already); None:
    /// a copy of the mirror, not checked out yet.
    pub overlay: Option<OverlayCheckout>,
}

/// Bring the mirror of the request's repository up to date, then make the empty `dir`
/// the checkout: an overlay of the commit's template when `scratch` (the task's temp
/// directory, for the overlay's own directories) is given and this process can mount
/// one, else a copy of the mirror (no checkout yet).
pub(super) fn fetch_through(
    cache: &Path,
    request: &RepoRequest,
    git: &RemoteGit<'_>,
    (dir, scratch): (&Path, Option<&Path>),
    target: &Target,
) -> Result<Prepared, RepoError> {
    let url = &request.url.clean;
    let local = |what: &str, error: std::io::Error| RepoError::local(url, what, &error);
    std::fs::create_dir_all(cache).map_err(|e| local("--repo-cache", e))?;
    let (mirror, lock_path) = mirror_paths(cache, url);
    let _lock =
        lock(&lock_path, git.deadline, git.stop).map_err(|e| local("the cache's lock", e))?;
    let fail = |what: &'static str| move |failure| RepoError::of(url, what, failure);
    if !mirror.join("HEAD").is_file() {
        git.run(
            None,
            &["init", "--quiet", "--bare", "--", &path_text(&mirror)],
        )
        .map_err(fail("making the cache's mirror"))?;
    }
    git.run(Some(&mirror), &["config", "remote.origin.url", url])
        .map_err(fail("making the cache's mirror"))?;
    let mut args = vec!["fetch", "--quiet", "--prune", "--no-tags", "--", url];
    args.extend(MIRROR_REFSPECS);
    git.run(Some(&mirror), &args)
        .map_err(fail("fetching into the cache"))?;
    let commit = match target {
        Target::Ref { commit, .. } => commit.clone(),
        Target::Commit(id) => {
            if commit_of(git, &mirror, &format!("{id}^{{commit}}")).is_none() {
                // A commit no branch or tag reaches: fetched by id and kept by a ref.
                let keep = format!("+{id}:refs/drover/commits/{id}");
                git.run(
                    Some(&mirror),
                    &["fetch", "--quiet", "--no-tags", "--", url, &keep],
                )
                .map_err(fail("fetching the commit into the cache"))?;
            }
            id.clone()
        }
        Target::Abbreviated(prefix) => commit_of(git, &mirror, &format!("{prefix}^{{commit}}"))
            .ok_or_else(|| missing_commit(url, target))?,
    };
    if commit_of(git, &mirror, &format!("{commit}^{{commit}}")).is_none() {
        return Err(missing_commit(url, target));
    }
    if let Some(scratch) = scratch.filter(|_| request.overlay && overlay::available()) {
        let trees = trees_path(&mirror);
        match template::overlay_checkout(&trees, &mirror, url, &commit, git, scratch, dir) {
            Ok(overlay) => {
                return Ok(Prepared {
                    commit,
                    overlay: Some(overlay),
                });
            }
            Err(TemplateFailure::Git(failure)) => {
                return Err(RepoError::of(url, "making the cache's checkout", failure));
            }
            // Not mountable here after all (the cache's filesystem, an odd path): a copy.
            Err(TemplateFailure::Local) => {}
        }
    }
    copy_of(git, &mirror, dir).map_err(fail("copying the cache's mirror"))?;
    Ok(Prepared {
        commit,
        overlay: None,
    })
}

/// `<key>.trees` beside `<key>.git`: the mirror's templates.
fn trees_path(mirror: &Path) -> PathBuf {
    mirror.with_extension("trees")
}

/// Clone `mirror` into `dir`, copying its object files (see the module's comment), no
/// checkout yet.
pub(super) fn copy_of(
    git: &RemoteGit<'_>,
    mirror: &Path,
    dir: &Path,
) -> Result<Vec<u8>, super::GitFailure> {
    git.run(
        None,
        &[
            "clone",
            "--quiet",
            "--local",
            "--no-hardlinks",
            "--no-checkout",
            "--",
            &path_text(mirror),
            &path_text(dir),
        ],
    )
}

fn path_text(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// Take the lock at `path`, waiting while another task or drover holds it, until the
/// clone's deadline or an interrupt.
fn lock(
    path: &Path,
    deadline: Instant,
    stop: &(dyn Fn() -> bool + Sync),
) -> std::io::Result<OwnedFd> {
    let flags = OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rustix::fs::open(path, flags, Mode::from_raw_mode(0o600))?;
    loop {
        match rustix::fs::flock(&fd, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => return Ok(fd),
            Err(rustix::io::Errno::WOULDBLOCK) => {}
            Err(error) => return Err(error.into()),
        }
        if Instant::now() >= deadline || stop() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!(
                    "another task or drover held {} until repo.timeout passed",
                    path.display()
                ),
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
