//! Interruption: a cancelled CI job sends SIGINT or SIGTERM. drover then stops every
//! task at once — the model request or tools in flight are cancelled and their process
//! groups killed — and still writes what it owes: each transcript's `run_end` (reason
//! `interrupted`), each diff, and the run's reports. Tasks not yet started are reported
//! as not started. A second signal exits at once.

use std::sync::Mutex;

use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;

/// Cancelled when drover is interrupted: every step of a task that can wait watches it.
pub(crate) type Interrupt = CancellationToken;

/// What a second signal does before it exits: write the reports drover has so far.
type LastWords = Box<dyn Fn() + Send>;
static LAST_WORDS: Mutex<Option<LastWords>> = Mutex::new(None);

/// Register what to write when a second signal makes drover exit at once (the run's
/// reports as far as they are known). Replaces what was registered before.
pub(crate) fn on_second_signal(write: impl Fn() + Send + 'static) {
    // A poisoned lock only means a panic elsewhere while registering; register anyway.
    let mut slot = LAST_WORDS.lock().unwrap_or_else(|e| e.into_inner());
    *slot = Some(Box::new(write));
}

/// Run `act` while what a second signal writes waits: the artifacts directory's sweep
/// and the reports a second signal writes never interleave (the sweep would take those
/// reports for planted files).
pub(crate) fn holding_last_words<T>(act: impl FnOnce() -> T) -> T {
    let _held = LAST_WORDS.lock().unwrap_or_else(|e| e.into_inner());
    act()
}

/// Listen for SIGINT and SIGTERM; the returned token is cancelled on the first. When the
/// signal handlers cannot be installed the default actions apply, and the token is never
/// cancelled.
pub(crate) fn install() -> CancellationToken {
    let token = CancellationToken::new();
    let (Ok(mut interrupt), Ok(mut terminate)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        return token;
    };
    let cancel = token.clone();
    tokio::spawn(async move {
        let name = tokio::select! {
            _ = interrupt.recv() => "SIGINT",
            _ = terminate.recv() => "SIGTERM",
        };
        crate::esay!(
            "drover: {name}: stopping every task and writing transcripts, diffs and reports (send it again to exit at once)"
        );
        cancel.cancel();
        tokio::select! {
            _ = interrupt.recv() => {},
            _ = terminate.recv() => {},
        }
        crate::esay!(
            "drover: second signal: writing the reports as they stand and exiting at once"
        );
        // Held until the process is gone: a sweep waiting for it never runs.
        let last_words = LAST_WORDS.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(write) = last_words.as_ref() {
            write();
        }
        std::process::exit(crate::exit::RUNNER_ERROR);
    });
    token
}
