//! What the sandbox asks of a command's network under rules naming hosts, without
//! knowing how it is served: something that opens, per launch, a proxy the command may
//! reach ([`NetworkOpener`]), and the launch's side of it ([`LaunchedNetwork`]): the
//! proxy's port, the channel the launcher reports refused connections on, and, once the
//! command has ended, what was denied ([`LaunchOutcome`]). drover's egress proxy
//! (the `network` module, a higher layer) implements both.

use std::fmt::Debug;
use std::future::Future;
use std::os::fd::RawFd;
use std::pin::Pin;

use crate::record::network::NetworkOrigin;

/// Opens the network of each command launched under one set of rules.
pub(crate) trait NetworkOpener: Debug + Send + Sync {
    /// A proxy for one command started by `origin`. Must be called within the runtime.
    fn open(&self, origin: NetworkOrigin) -> std::io::Result<Box<dyn LaunchedNetwork>>;
}

/// One command's network, alive until the command has ended.
pub(crate) trait LaunchedNetwork: Debug + Send {
    /// The proxy's port on 127.0.0.1.
    fn port(&self) -> u16;
    /// The report channel's end for the launcher to inherit (None once started).
    fn launcher_fd(&self) -> Option<RawFd>;
    /// The launcher has started, holding its own copy of the channel.
    fn started(&mut self);
    /// After the command and everything it started are gone: what was denied.
    fn finish(self: Box<Self>) -> Pin<Box<dyn Future<Output = LaunchOutcome> + Send>>;
}

/// What the command's result says about its network: the denied targets, each with
/// why, in the order first tried.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct LaunchOutcome {
    pub denied: Vec<String>,
    /// Denied attempts beyond those named.
    pub more_denied: u64,
}

impl LaunchOutcome {
    /// The note for the command's result (None when nothing was denied): worded so the
    /// model does not take a blocked host for a broken registry.
    pub(crate) fn note(&self) -> Option<String> {
        if self.denied.is_empty() {
            return None;
        }
        let more = match self.more_denied {
            0 => String::new(),
            n => format!("; and {n} more"),
        };
        Some(format!(
            "drover: the task's network policy blocked {}{more}. These hosts are not broken or down: the task's sandbox.network rules do not allow them. Only the hosts the rules allow are reachable, through the proxy in HTTPS_PROXY/HTTP_PROXY.",
            self.denied.join("; ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_note_names_what_was_blocked_and_says_it_is_the_policy() {
        let outcome = LaunchOutcome {
            denied: vec!["evil.example:443 (no allow entry covers it)".to_string()],
            more_denied: 2,
        };
        let note = outcome.note().unwrap();
        assert!(note.contains("evil.example:443"), "{note}");
        assert!(note.contains("and 2 more"), "{note}");
        assert!(note.contains("not broken"), "{note}");
        assert_eq!(LaunchOutcome::default().note(), None);
    }
}
