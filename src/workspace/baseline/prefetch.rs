//! Listing directories ahead of the walk on a second thread. Listing (an open, a
//! `getdents`, a `stat` per file) is most of a walk's cost and independent of the rest,
//! so a helper lists the directories the walk will need next while the walk judges and
//! records what it has. The walk never waits for the helper unless the helper is
//! listing that very directory; otherwise it lists it itself. At most [`AHEAD`] listings
//! wait to be taken, so memory stays bounded.

use std::collections::{HashMap, HashSet};
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::{Condvar, Mutex, MutexGuard};

use super::listing::{Listing, list_dir};
use crate::workspace::RelPath;

/// Listings the helper may hold that the walk has not taken yet.
const AHEAD: usize = 64;

#[derive(Default)]
struct State {
    /// Directories to list, the next needed last.
    wanted: Vec<RelPath>,
    /// Directories someone has started listing.
    claimed: HashSet<RelPath>,
    /// Listings done by the helper, not taken yet.
    done: HashMap<RelPath, Listing>,
    finished: bool,
}

/// Shared by the walk and its helper thread.
#[derive(Default)]
pub struct Prefetcher {
    state: Mutex<State>,
    changed: Condvar,
}

impl Prefetcher {
    fn lock(&self) -> MutexGuard<'_, State> {
        // invariant: no code holding the lock panics; a poisoned lock still holds
        // consistent state, so it is used as it is.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The listing of `relative`: the helper's if it has it (waiting only while it is
    /// listing it), else made here.
    pub fn listing(&self, root_fd: &OwnedFd, root: &Path, relative: &RelPath) -> Listing {
        let mut state = self.lock();
        loop {
            if let Some(listing) = state.done.remove(relative) {
                self.changed.notify_all();
                return listing;
            }
            if !state.claimed.contains(relative) {
                state.claimed.insert(relative.clone());
                break;
            }
            state = self
                .changed
                .wait(state)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
        }
        drop(state);
        list_dir(root_fd, root, relative)
    }

    /// The walk will need these directories, the first of `soon` first.
    pub fn look_ahead(&self, soon: impl DoubleEndedIterator<Item = RelPath>) {
        let mut state = self.lock();
        state.wanted.extend(soon.rev());
        self.changed.notify_all();
    }

    /// The helper's loop: list what is wanted until [`Prefetcher::finish`].
    pub fn run(&self, root_fd: &OwnedFd, root: &Path) {
        let mut state = self.lock();
        loop {
            if state.finished {
                return;
            }
            if state.done.len() >= AHEAD || state.wanted.is_empty() {
                state = self
                    .changed
                    .wait(state)
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
                continue;
            }
            let Some(next) = state.wanted.pop() else {
                continue;
            };
            if !state.claimed.insert(next.clone()) {
                continue;
            }
            drop(state);
            let listing = list_dir(root_fd, root, &next);
            state = self.lock();
            state.done.insert(next, listing);
            self.changed.notify_all();
        }
    }

    /// Stop the helper (the walk is over, or gave up).
    pub fn finish(&self) {
        self.lock().finished = true;
        self.changed.notify_all();
    }
}

/// Calls [`Prefetcher::finish`] when dropped, so the helper ends however the walk does.
pub struct FinishOnDrop<'a>(pub &'a Prefetcher);

impl Drop for FinishOnDrop<'_> {
    fn drop(&mut self) {
        self.0.finish();
    }
}
