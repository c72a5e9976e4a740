//! The cache's finished checkouts, one per commit a task asked for
//! (`<cache>/<key>.trees/<commit>/`), each the lower layer of the overlay a task's
//! checkout is (see `overlay`). drover makes one, under the repository's cache lock, as
//! a clone of the mirror that copies its objects (so the mirror's later fetches and
//! repacks never change it), checked out detached at the commit with `origin` set to
//! the credential-free URL; it is renamed into place only when whole. No task writes it:
//! the overlay copies up what a task changes into the task's own directory.
//!
//! A task holds a shared lock on `<commit>.lock` while its overlay is mounted. When a
//! template is made, the repository's other templates that no task holds are removed,
//! so the cache keeps the newest commit and those in use. Taking a hold and removing
//! a template both happen under the repository's cache lock, so a template is never
//! removed between a task finding it and holding it.

use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::fs::{FlockOperation, Mode, OFlags};

use super::overlay::{self, OverlayMount};
use super::remote_git::{GitFailure, RemoteGit};

/// A task's checkout as an overlay: the mount first, so it is taken down before the
/// template's hold is let go.
#[derive(Debug)]
pub(crate) struct OverlayCheckout {
    _mount: OverlayMount,
    _hold: OwnedFd,
}

/// Why no overlay checkout was made.
pub(super) enum TemplateFailure {
    /// git could not make the template: the task's clone fails as any would.
    Git(GitFailure),
    /// The template could not be made, held or mounted here (the cache's filesystem, a
    /// path overlayfs cannot take): a copy will do.
    Local,
}

/// Mount the template of `commit` (made from `mirror` when missing) at `target`, with
/// the task's changes going to `scratch`. The caller holds the repository's cache lock.
pub(super) fn overlay_checkout(
    trees: &Path,
    mirror: &Path,
    url: &str,
    commit: &str,
    git: &RemoteGit<'_>,
    scratch: &Path,
    target: &Path,
) -> Result<OverlayCheckout, TemplateFailure> {
    // The commit names a directory: only a full object id may.
    if !crate::workspace::start_commit::is_object_id(commit) {
        return Err(TemplateFailure::Local);
    }
    let template = trees.join(commit);
    if !template.join(".git").is_dir() {
        build(trees, mirror, url, commit, git)?;
        remove_unheld(trees, commit);
    }
    let hold = lock(
        &trees.join(format!("{commit}.lock")),
        FlockOperation::LockShared,
    )
    .map_err(|_| TemplateFailure::Local)?;
    let upper = scratch.join("upper");
    let work = scratch.join("work");
    for dir in [&upper, &work] {
        std::fs::create_dir(dir).map_err(|_| TemplateFailure::Local)?;
    }
    let mount =
        overlay::mount(&template, &upper, &work, target).map_err(|_| TemplateFailure::Local)?;
    Ok(OverlayCheckout {
        _mount: mount,
        _hold: hold,
    })
}

/// Make the template of `commit` in `trees`: built under a temp name, renamed whole.
fn build(
    trees: &Path,
    mirror: &Path,
    url: &str,
    commit: &str,
    git: &RemoteGit<'_>,
) -> Result<(), TemplateFailure> {
    std::fs::create_dir_all(trees).map_err(|_| TemplateFailure::Local)?;
    let building = trees.join(format!(".new-{commit}"));
    // Only the holder of the cache lock builds: one left here was cut short.
    if building.exists() {
        std::fs::remove_dir_all(&building).map_err(|_| TemplateFailure::Local)?;
    }
    let source = mirror.to_string_lossy().into_owned();
    let destination = building.to_string_lossy().into_owned();
    let cloned = git.run(
        None,
        &[
            "clone",
            "--quiet",
            "--local",
            "--no-hardlinks",
            "--no-checkout",
            "--",
            &source,
            &destination,
        ],
    );
    let made = cloned
        .and_then(|_| git.run(Some(&building), &["config", "remote.origin.url", url]))
        .and_then(|_| {
            git.run(
                Some(&building),
                &["checkout", "--quiet", "--detach", commit],
            )
        });
    if let Err(failure) = made {
        let _ = std::fs::remove_dir_all(&building);
        return Err(TemplateFailure::Git(failure));
    }
    std::fs::rename(&building, trees.join(commit)).map_err(|_| TemplateFailure::Local)
}

/// Remove the templates in `trees` other than `kept` that no task holds.
fn remove_unheld(trees: &Path, kept: &str) {
    let Ok(entries) = std::fs::read_dir(trees) else {
        return;
    };
    let names: Vec<String> = entries
        .flatten()
        .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_dir()))
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name != kept && crate::workspace::start_commit::is_object_id(name))
        .collect();
    for name in names {
        let lock_path = trees.join(format!("{name}.lock"));
        let Ok(_unheld) = lock(&lock_path, FlockOperation::NonBlockingLockExclusive) else {
            continue;
        };
        if std::fs::remove_dir_all(trees.join(&name)).is_ok() {
            let _ = std::fs::remove_file(&lock_path);
        }
    }
}

/// `path` opened (made if missing, never through a symlink) and locked as `how` says.
fn lock(path: &Path, how: FlockOperation) -> std::io::Result<OwnedFd> {
    let flags = OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rustix::fs::open(path, flags, Mode::from_raw_mode(0o600))?;
    rustix::fs::flock(&fd, how)?;
    Ok(fd)
}
