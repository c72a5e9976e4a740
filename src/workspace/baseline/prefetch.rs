//! Listing directories ahead of the walk on a second thread. Listing (an open, a
//! `getdents`, a `stat` per file) is most of a walk's cost and independent of the rest,
//! so a helper lists the directories the walk will need next while the walk judges and
//! records what it has. When the walk reaches a directory the helper is still listing,
//! it lists the next wanted one itself meanwhile, so both threads list. At most
//! [`AHEAD`] listings wait to be taken, so memory stays bounded.

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
    /// Threads waiting on [`Prefetcher::changed`].
    waiting: usize,
}

/// Shared by the walk and its helper thread.
#[derive(Default)]
pub(super) struct Prefetcher {
    state: Mutex<State>,
    changed: Condvar,
}

impl State {
    /// The next wanted directory no one has claimed, claimed now; none while
    /// [`AHEAD`] listings already wait to be taken.
    fn claim_wanted(&mut self) -> Option<RelPath> {
        while self.done.len() < AHEAD {
            let next = self.wanted.pop()?;
            if self.claimed.insert(next.clone()) {
                return Some(next);
            }
        }
        None
    }
}

impl Prefetcher {
    fn lock(&self) -> MutexGuard<'_, State> {
        // invariant: no code holding the lock panics; a poisoned lock still holds
        // consistent state, so it is used as it is.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Wait for a change, counted so that changes nobody waits for cost no wake-up.
    fn wait<'a>(&'a self, mut state: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        state.waiting += 1;
        let mut state = self
            .changed
            .wait(state)
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        state.waiting -= 1;
        state
    }

    fn notify(&self, state: &State) {
        if state.waiting > 0 {
            self.changed.notify_all();
        }
    }

    /// List `next` (claimed by the caller) without the lock held, then hand it over.
    fn list_claimed<'a>(
        &'a self,
        state: MutexGuard<'a, State>,
        root_fd: &OwnedFd,
        root: &Path,
        next: RelPath,
    ) -> MutexGuard<'a, State> {
        drop(state);
        let listing = list_dir(root_fd, root, &next);
        let mut state = self.lock();
        state.done.insert(next, listing);
        self.notify(&state);
        state
    }

    /// The listing of `relative`: the helper's if it has it, else made here. While the
    /// helper is still listing it, this thread lists the next wanted directory rather
    /// than wait, so both threads stay busy.
    pub(super) fn listing(&self, root_fd: &OwnedFd, root: &Path, relative: &RelPath) -> Listing {
        let mut state = self.lock();
        loop {
            if let Some(listing) = state.done.remove(relative) {
                self.notify(&state);
                return listing;
            }
            if !state.claimed.contains(relative) {
                state.claimed.insert(relative.clone());
                break;
            }
            state = match state.claim_wanted() {
                Some(next) => self.list_claimed(state, root_fd, root, next),
                None => self.wait(state),
            };
        }
        drop(state);
        list_dir(root_fd, root, relative)
    }

    /// The walk will need these directories, the first of `soon` first.
    pub(super) fn look_ahead(&self, soon: impl DoubleEndedIterator<Item = RelPath>) {
        let mut state = self.lock();
        let before = state.wanted.len();
        state.wanted.extend(soon.rev());
        if state.wanted.len() > before {
            self.notify(&state);
        }
    }

    /// The helper's loop: list what is wanted until [`Prefetcher::finish`].
    pub(super) fn run(&self, root_fd: &OwnedFd, root: &Path) {
        let mut state = self.lock();
        while !state.finished {
            state = match state.claim_wanted() {
                Some(next) => self.list_claimed(state, root_fd, root, next),
                None => self.wait(state),
            };
        }
    }

    /// Stop the helper (the walk is over, or gave up).
    pub(super) fn finish(&self) {
        let mut state = self.lock();
        state.finished = true;
        self.notify(&state);
    }
}

/// Calls [`Prefetcher::finish`] when dropped, so the helper ends however the walk does.
pub(super) struct FinishOnDrop<'a>(pub &'a Prefetcher);

impl Drop for FinishOnDrop<'_> {
    fn drop(&mut self) {
        self.0.finish();
    }
}
