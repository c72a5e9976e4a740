//! Every process a task started, so that none of them runs when the task takes its diff
//! or starts a check: the task stops them all and waits until each launcher has killed
//! its command's tree and exited.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::Notify;

use super::Stopper;

/// The live commands of one task (foreground and background, checks too).
#[derive(Debug, Default)]
pub(crate) struct ProcessTracker {
    inner: Mutex<Inner>,
    changed: Notify,
}

#[derive(Debug, Default)]
struct Inner {
    next: u64,
    live: BTreeMap<u64, Weak<Stopper>>,
}

/// Held while a command's launcher may still run; dropping it unregisters the command.
#[derive(Debug)]
pub(crate) struct Token {
    tracker: Arc<ProcessTracker>,
    id: u64,
}

impl Drop for Token {
    fn drop(&mut self) {
        self.tracker.lock().live.remove(&self.id);
        self.tracker.changed.notify_waiters();
    }
}

impl ProcessTracker {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // Each mutation is one insert or remove: a poisoned lock is still consistent.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Register a started command until the returned token is dropped.
    pub(crate) fn register(self: &Arc<Self>, stopper: &Arc<Stopper>) -> Token {
        let mut inner = self.lock();
        inner.next += 1;
        let id = inner.next;
        inner.live.insert(id, Arc::downgrade(stopper));
        Token {
            tracker: Arc::clone(self),
            id,
        }
    }

    /// How many commands may still run.
    pub(crate) fn live(&self) -> usize {
        self.lock().live.len()
    }

    /// Stop every live command and wait until all are gone, at most `limit`. Returns
    /// whether all are gone.
    pub(crate) async fn stop_all_and_wait(&self, limit: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let notified = self.changed.notified();
            let stoppers: Vec<Arc<Stopper>> = self
                .lock()
                .live
                .values()
                .filter_map(Weak::upgrade)
                .collect();
            if self.live() == 0 {
                return true;
            }
            for stopper in &stoppers {
                stopper.stop();
            }
            drop(stoppers);
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return self.live() == 0;
            }
        }
    }
}
