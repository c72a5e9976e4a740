//! Interruption: a cancelled CI job sends SIGINT or SIGTERM. drover then stops every
//! task at once — the model request or tools in flight are cancelled and their process
//! groups killed — and still writes what it owes: each transcript's `run_end` (reason
//! `interrupted`), each diff, and the run's reports. Tasks not yet started are reported
//! as not started. A second signal exits at once.

use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::watch;

/// Listen for SIGINT and SIGTERM; the returned receiver becomes true on the first.
/// None when the signal handlers cannot be installed (then the default actions apply).
pub fn install() -> Option<watch::Receiver<bool>> {
    let mut interrupt = signal(SignalKind::interrupt()).ok()?;
    let mut terminate = signal(SignalKind::terminate()).ok()?;
    let (sender, receiver) = watch::channel(false);
    tokio::spawn(async move {
        let name = tokio::select! {
            _ = interrupt.recv() => "SIGINT",
            _ = terminate.recv() => "SIGTERM",
        };
        eprintln!(
            "drover: {name}: stopping every task and writing transcripts, diffs and reports (send it again to exit at once)"
        );
        let _ = sender.send(true);
        tokio::select! {
            _ = interrupt.recv() => {},
            _ = terminate.recv() => {},
        }
        eprintln!("drover: second signal: exiting at once; reports may be incomplete");
        std::process::exit(crate::exit::RUNNER_ERROR);
    });
    Some(receiver)
}
