//! The network of one command launched under rules naming hosts: a proxy of its own on
//! 127.0.0.1 (so every attempt is known to be this command's), and the channel the
//! launcher reports the connections it refused on (those that tried to go around the
//! proxy) and, as root, hands over the proxy's listener in the command's network
//! namespace on. Every attempt is counted; what the command's result should say about
//! the denied ones is kept for it (`LaunchOutcome`).

use std::future::Future;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use drover_proxy::{ConnectionEvent, Decision, Proxy, ProxyHandle};
use tokio::task::JoinHandle;

use super::NetworkRecorder;
use super::replayed::note_target;
use super::report_channel::{self, Report};
use crate::policy::EgressRules;
use crate::record::network::{NetworkAttempt, NetworkOrigin};
use crate::record::transcript::Event;
use crate::sandbox::launch_network::{LaunchOutcome, LaunchedNetwork};

/// The denied attempts of one command recorded one by one; beyond, they are counted in
/// one `network_omitted` event (a command looping on a refused host must not flood the
/// transcript, nor hide what it did afterwards).
const MAX_DENIED_RECORDED: u64 = 500;
/// The same for allowed connections, with a budget of their own: cheap denied attempts
/// never push an allowed one (what the data went out through) out of the transcript.
const MAX_ALLOWED_RECORDED: u64 = 5000;
/// The denied targets a command's result names at most.
const MAX_NAMED: usize = 10;

#[derive(Default)]
struct Seen {
    /// The distinct targets tried, in order (what a replay compares).
    tried: Vec<String>,
    allowed: u64,
    denied: u64,
    omitted_allowed: u64,
    omitted_denied: u64,
    omitted_bytes: u64,
    outcome: LaunchOutcome,
}

/// One command's proxy and report channel, alive until the command has ended.
pub(crate) struct LaunchNetwork {
    port: u16,
    /// The launcher's end of the report channel, until it is started.
    launcher_end: Option<OwnedFd>,
    /// The proxy on 127.0.0.1, and those on listeners the launcher handed over.
    proxies: Arc<Mutex<Vec<ProxyHandle>>>,
    report: Option<JoinHandle<()>>,
    origin: NetworkOrigin,
    recorder: NetworkRecorder,
    seen: Arc<Mutex<Seen>>,
}

impl std::fmt::Debug for LaunchNetwork {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LaunchNetwork({})", self.port)
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Each update leaves the state consistent: a poisoned lock is still usable.
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// Count `attempt` as the command's and record it (past its kind's budget, count it
/// only). Only a refusal of a named host is what the command's result names: a client
/// that sent the proxy nothing readable was refused no host.
fn take(seen: &Mutex<Seen>, recorder: &NetworkRecorder, attempt: NetworkAttempt) {
    recorder.count(&attempt);
    let mut seen = lock(seen);
    note_target(&mut seen.tried, attempt.target());
    let denied = attempt.denied();
    // A refusal the command should hear of: of a named host, or of a connection the
    // launcher could not look at (not a client that asked the proxy for nothing).
    let told = !attempt.host.is_empty() || attempt.protocol == "direct";
    if denied && told {
        let why = attempt.reason.as_deref().unwrap_or("denied");
        let named = match attempt.host.is_empty() {
            true => why.to_string(),
            false => format!("{} ({why})", attempt.target()),
        };
        let outcome = &mut seen.outcome;
        if !outcome.denied.contains(&named) {
            if outcome.denied.len() < MAX_NAMED {
                outcome.denied.push(named);
            } else {
                outcome.more_denied += 1;
            }
        }
    }
    let (count, budget) = if denied {
        (&mut seen.denied, MAX_DENIED_RECORDED)
    } else {
        (&mut seen.allowed, MAX_ALLOWED_RECORDED)
    };
    *count += 1;
    if *count <= budget {
        drop(seen);
        recorder.write_attempt(attempt);
        return;
    }
    seen.omitted_bytes += attempt.bytes_up + attempt.bytes_down;
    if denied {
        seen.omitted_denied += 1;
    } else {
        seen.omitted_allowed += 1;
    }
}

impl LaunchNetwork {
    /// Start a proxy judging by `rules` for a command of `origin`, and the channel for
    /// its launcher's reports. Must be called within the runtime.
    pub(crate) fn open(
        rules: EgressRules,
        origin: NetworkOrigin,
        recorder: NetworkRecorder,
    ) -> std::io::Result<LaunchNetwork> {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let sink: Arc<dyn Fn(ConnectionEvent) + Send + Sync> = {
            let (seen, recorder, origin) = (Arc::clone(&seen), recorder.clone(), origin.clone());
            Arc::new(move |event| take(&seen, &recorder, attempt(&origin, event)))
        };
        let proxy = move |sink: &Arc<dyn Fn(ConnectionEvent) + Send + Sync>| {
            let sink = Arc::clone(sink);
            Proxy::new(rules.clone(), move |event| sink(event))
        };
        let (port, first) = proxy(&sink).bind_loopback()?;
        let sink_for_reports = Arc::clone(&sink);
        let proxies = Arc::new(Mutex::new(vec![first]));
        let (ours, launcher_end) = std::os::unix::net::UnixStream::pair()?;
        ours.set_nonblocking(true)?;
        let ours = tokio::net::UnixStream::from_std(ours)?;
        let on_report = {
            let (origin, recorder, seen) = (origin.clone(), recorder.clone(), Arc::clone(&seen));
            let proxies = Arc::clone(&proxies);
            move |report: Report| match report {
                Report::Direct(host, port) => take(&seen, &recorder, direct(&origin, host, port)),
                Report::Uninspectable => take(&seen, &recorder, uninspectable(&origin)),
                // The same proxy, served in the command's network namespace too.
                Report::Listener(listener) => {
                    if let Ok(handle) = proxy(&sink_for_reports).serve(listener) {
                        lock(&proxies).push(handle);
                    }
                }
            }
        };
        let report = tokio::spawn(report_channel::read(ours, on_report));
        Ok(LaunchNetwork {
            port,
            launcher_end: Some(OwnedFd::from(launcher_end)),
            proxies,
            report: Some(report),
            origin,
            recorder,
            seen,
        })
    }

    /// After the command and everything it started are gone: read the launcher's last
    /// reports, close the proxies (their open connections, now without a client, end
    /// and are recorded), and say what was denied.
    async fn finish_now(mut self) -> LaunchOutcome {
        self.launcher_end = None;
        if let Some(report) = self.report.take() {
            // The launcher is gone, so its end is closed: the reader ends at once.
            let _ = tokio::time::timeout(std::time::Duration::from_secs(2), report).await;
        }
        let proxies = std::mem::take(&mut *lock(&self.proxies));
        for proxy in proxies {
            proxy.shutdown().await;
        }
        let seen = std::mem::take(&mut *lock(&self.seen));
        self.recorder.compare(&self.origin, &seen.tried);
        if seen.omitted_allowed + seen.omitted_denied > 0 {
            self.recorder.event(Event::NetworkOmitted {
                origin: self.origin.clone(),
                allowed: seen.omitted_allowed,
                denied: seen.omitted_denied,
                bytes: seen.omitted_bytes,
            });
        }
        seen.outcome
    }
}

impl LaunchedNetwork for LaunchNetwork {
    fn port(&self) -> u16 {
        self.port
    }

    fn launcher_fd(&self) -> Option<RawFd> {
        self.launcher_end.as_ref().map(AsRawFd::as_raw_fd)
    }

    /// drover's copy of the launcher's end goes, so the channel ends when the
    /// launcher does.
    fn started(&mut self) {
        self.launcher_end = None;
    }

    fn finish(self: Box<Self>) -> Pin<Box<dyn Future<Output = LaunchOutcome> + Send>> {
        Box::pin((*self).finish_now())
    }
}

impl Drop for LaunchNetwork {
    fn drop(&mut self) {
        if let Some(report) = self.report.take() {
            report.abort();
        }
    }
}

/// A connection the launcher refused because it could not read where it went.
fn uninspectable(origin: &NetworkOrigin) -> NetworkAttempt {
    NetworkAttempt {
        reason: Some(UNINSPECTABLE.to_string()),
        ..direct(origin, String::new(), 0)
    }
}

/// Why an uninspectable connection was refused, in words for the model.
const UNINSPECTABLE: &str = "a connection from a process that made itself undumpable (or runs a program it may not read), so drover could not see where it went; such a process has no network here";

/// The transcript's account of a proxy's event.
fn attempt(origin: &NetworkOrigin, event: ConnectionEvent) -> NetworkAttempt {
    let protocol = serde_json::to_value(event.protocol)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| "unknown".to_string());
    NetworkAttempt {
        origin: origin.clone(),
        host: event.host,
        port: event.port,
        protocol,
        decision: match event.decision {
            Decision::Allowed => "allowed",
            Decision::Denied => "denied",
        }
        .to_string(),
        rule: event.rule,
        reason: event.reason,
        address: event.address.map(|a| a.to_string()),
        bytes_up: event.bytes_up,
        bytes_down: event.bytes_down,
        duration_ms: event.duration_ms,
    }
}

/// A connection the launcher refused because it went around the proxy.
fn direct(origin: &NetworkOrigin, host: String, port: u16) -> NetworkAttempt {
    NetworkAttempt {
        origin: origin.clone(),
        host,
        port,
        protocol: "direct".to_string(),
        decision: "denied".to_string(),
        rule: None,
        reason: Some(
            "a direct connection around drover's proxy; the sandbox lets commands reach only the proxy".to_string(),
        ),
        address: None,
        bytes_up: 0,
        bytes_down: 0,
        duration_ms: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attempt_of(port: u16, decision: &str) -> NetworkAttempt {
        NetworkAttempt {
            origin: NetworkOrigin {
                source: "bash".to_string(),
                tool_use_id: Some("toolu_1".to_string()),
                name: None,
            },
            host: "127.0.0.1".to_string(),
            port,
            protocol: "direct".to_string(),
            decision: decision.to_string(),
            rule: None,
            reason: Some("why".to_string()),
            address: None,
            bytes_up: 1,
            bytes_down: 2,
            duration_ms: 0,
        }
    }

    #[test]
    fn attempts_past_the_limit_are_not_written_but_still_counted_in_the_tally() {
        let seen = Mutex::new(Seen::default());
        let recorder = NetworkRecorder::default();
        for _ in 0..MAX_DENIED_RECORDED + 100 {
            take(&seen, &recorder, attempt_of(9, "denied"));
        }
        // A flood of refusals does not push an allowed connection out of the record.
        take(&seen, &recorder, attempt_of(8, "allowed"));
        let seen = lock(&seen);
        assert_eq!((seen.denied, seen.allowed), (MAX_DENIED_RECORDED + 100, 1));
        assert_eq!((seen.omitted_allowed, seen.omitted_denied), (0, 100));
        assert_eq!(seen.omitted_bytes, 300);
        assert_eq!(seen.outcome.denied.len(), 1, "one target, named once");
        let tally = recorder.tally();
        assert_eq!(
            (tally.allowed, tally.denied),
            (1, MAX_DENIED_RECORDED + 100)
        );
        assert_eq!(tally.first_denied, ["127.0.0.1:9"]);
    }

    #[test]
    fn a_client_that_asked_for_nothing_is_not_called_a_blocked_host() {
        let seen = Mutex::new(Seen::default());
        let mut nothing = attempt_of(0, "denied");
        nothing.host = String::new();
        nothing.protocol = "unknown".to_string();
        let recorder = NetworkRecorder::default();
        take(&seen, &recorder, nothing);
        assert_eq!(lock(&seen).outcome.note(), None);
        assert!(recorder.tally().first_denied.is_empty());
        // A connection the launcher could not look at is told, with why.
        take(&seen, &recorder, uninspectable(&NetworkOrigin::default()));
        let note = lock(&seen).outcome.note().unwrap();
        assert!(note.contains("undumpable"), "{note}");
        assert!(recorder.tally().first_denied.is_empty());
    }
}
