//! The cache's finished checkouts, one per commit a task asked for
//! (`<cache>/<key>.trees/<commit>/`), each the lower layer of the overlay a task's
//! checkout is (see `overlay`). drover makes one, under the repository's cache lock, as
//! a clone of the mirror that copies its objects (so the mirror's later fetches and
//! repacks never change it), checked out detached at the commit with `origin` set to
//! the credential-free URL; it is renamed into place when whole and only then marked
//! ready (`<commit>.ready`), and a template without its marker is never used. No task
//! writes it: the overlay copies up what a task changes into the task's own directory.
//!
//! A task holds a shared lock on `<commit>.lock` while its overlay is mounted. When a
//! template is made, the repository's others are removed unless a task holds them or a
//! branch or tag of the mirror points at their commit, so the cache keeps what tasks
//! ask for again. Taking a hold and removing a template both happen under the
//! repository's cache lock, so a template is never removed between a task finding it
//! and holding it; a removal takes the marker and the name away first, so a drover
//! killed midway leaves a `.old-` directory the next build sweeps, never a template
//! that looks whole.

use std::collections::BTreeSet;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

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
/// the task's changes going to `scratch`, and bring the checkout's other branches and
/// tags to where the mirror has them now. The caller holds the repository's cache lock.
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
    if !ready_marker(trees, commit).is_file() {
        remove_leftovers(trees);
        if template.exists() {
            // Made or removed only in part by a drover that was killed: never used.
            retire(trees, commit).map_err(|_| TemplateFailure::Local)?;
        }
        build(trees, mirror, url, commit, git)?;
        remove_unheld(trees, commit, &tips(git, mirror));
    }
    // Only `remove_unheld`, under the lock this caller holds, ever holds it exclusively:
    // a holder elsewhere is not drover's, and a copy does instead of waiting on it.
    let hold = lock(
        &trees.join(format!("{commit}.lock")),
        FlockOperation::NonBlockingLockShared,
    )
    .map_err(|_| TemplateFailure::Local)?;
    let upper = scratch.join("upper");
    let work = scratch.join("work");
    for dir in [&upper, &work] {
        std::fs::create_dir(dir).map_err(|_| TemplateFailure::Local)?;
    }
    let mount =
        overlay::mount(&template, &upper, &work, target).map_err(|_| TemplateFailure::Local)?;
    let mirror_text = mirror.to_string_lossy().into_owned();
    git.run(
        Some(target),
        &[
            "fetch",
            "--quiet",
            "--no-tags",
            "--prune",
            "--no-write-fetch-head",
            "--",
            &mirror_text,
            "+refs/heads/*:refs/remotes/origin/*",
            "+refs/tags/*:refs/tags/*",
        ],
    )
    .map_err(TemplateFailure::Git)?;
    Ok(OverlayCheckout {
        _mount: mount,
        _hold: hold,
    })
}

/// `<commit>.ready`: written once the template is whole, removed before it is retired.
fn ready_marker(trees: &Path, commit: &str) -> PathBuf {
    trees.join(format!("{commit}.ready"))
}

/// Make the template of `commit` in `trees`: built under a temp name, renamed whole,
/// then marked ready.
fn build(
    trees: &Path,
    mirror: &Path,
    url: &str,
    commit: &str,
    git: &RemoteGit<'_>,
) -> Result<(), TemplateFailure> {
    std::fs::create_dir_all(trees).map_err(|_| TemplateFailure::Local)?;
    let building = trees.join(format!(".new-{commit}"));
    let cloned = super::cache::copy_of(git, mirror, &building);
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
    std::fs::rename(&building, trees.join(commit)).map_err(|_| TemplateFailure::Local)?;
    std::fs::write(ready_marker(trees, commit), b"").map_err(|_| TemplateFailure::Local)
}

/// The commits the mirror's branches and tags point at now: their templates are kept.
fn tips(git: &RemoteGit<'_>, mirror: &Path) -> BTreeSet<String> {
    let listed = git
        .run(
            Some(mirror),
            &["for-each-ref", "--format=%(objectname) %(*objectname)"],
        )
        .unwrap_or_default();
    String::from_utf8_lossy(&listed)
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// Remove the templates in `trees` that no task holds, but `kept` and those of the
/// mirror's branch and tag tips (`tips`).
fn remove_unheld(trees: &Path, kept: &str, tips: &BTreeSet<String>) {
    let Ok(entries) = std::fs::read_dir(trees) else {
        return;
    };
    let names: Vec<String> = entries
        .flatten()
        .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_dir()))
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name != kept && !tips.contains(name))
        .filter(|name| crate::workspace::start_commit::is_object_id(name))
        .collect();
    for name in names {
        let lock_path = trees.join(format!("{name}.lock"));
        let Ok(_unheld) = lock(&lock_path, FlockOperation::NonBlockingLockExclusive) else {
            continue;
        };
        if retire(trees, &name).is_ok() {
            let _ = std::fs::remove_file(&lock_path);
        }
    }
}

/// Take template `commit` out of use at once (its marker, then its name), then remove
/// it: a drover killed meanwhile leaves a `.old-` directory, never a template that
/// looks whole.
fn retire(trees: &Path, commit: &str) -> std::io::Result<()> {
    match std::fs::remove_file(ready_marker(trees, commit)) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => return Err(error),
        _ => {}
    }
    let retired = trees.join(format!(".old-{commit}"));
    if retired.exists() {
        std::fs::remove_dir_all(&retired)?;
    }
    std::fs::rename(trees.join(commit), &retired)?;
    std::fs::remove_dir_all(&retired)
}

/// Remove what a killed drover left half made or half removed (`.new-`, `.old-`): only
/// the holder of the cache lock builds or removes, and that is this caller.
fn remove_leftovers(trees: &Path) {
    let Ok(entries) = std::fs::read_dir(trees) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with(".new-") || name.starts_with(".old-") {
            let _ = std::fs::remove_dir_all(entry.path());
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
