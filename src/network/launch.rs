//! The network of one command launched under rules naming hosts: a proxy of its own on
//! 127.0.0.1 (so every attempt is known to be this command's), and the channel the
//! launcher reports the connections it refused on (those that tried to go around the
//! proxy). Every attempt is recorded; what the command's result should say about the
//! denied ones is kept for it (`LaunchOutcome`).

use std::future::Future;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use drover_proxy::{ConnectionEvent, Decision, Proxy, ProxyHandle};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::task::JoinHandle;

use super::NetworkRecorder;
use crate::policy::EgressRules;
use crate::record::network::{NetworkAttempt, NetworkOrigin};
use crate::record::transcript::Event;
use crate::sandbox::launch_network::{LaunchOutcome, LaunchedNetwork};

/// The attempts of one command recorded one by one; beyond, they are counted in one
/// `network_omitted` event (a command looping on a refused host must not flood the
/// transcript).
const MAX_RECORDED: u64 = 500;
/// The denied targets a command's result names at most.
const MAX_NAMED: usize = 10;
/// The longest line the launcher writes on the report channel.
const MAX_REPORT_LINE: u64 = 1024;

#[derive(Default)]
struct Seen {
    recorded: u64,
    omitted_allowed: u64,
    omitted_denied: u64,
    outcome: LaunchOutcome,
}

/// One command's proxy and report channel, alive until the command has ended.
pub(crate) struct LaunchNetwork {
    port: u16,
    /// The launcher's end of the report channel, until it is started.
    launcher_end: Option<OwnedFd>,
    proxy: Option<ProxyHandle>,
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

fn lock(seen: &Mutex<Seen>) -> std::sync::MutexGuard<'_, Seen> {
    seen.lock().unwrap_or_else(|e| e.into_inner())
}

/// Count `attempt` as `origin`'s and record it (or, past the limit, count it only: in
/// the command's `network_omitted` event and the task's tally).
fn take(seen: &Mutex<Seen>, recorder: &NetworkRecorder, attempt: NetworkAttempt) {
    let mut seen = lock(seen);
    let denied = attempt.denied();
    if denied {
        let why = attempt.reason.as_deref().unwrap_or("denied");
        let named = format!("{} ({why})", attempt.target());
        let outcome = &mut seen.outcome;
        if outcome.denied.len() < MAX_NAMED {
            if !outcome.denied.contains(&named) {
                outcome.denied.push(named);
            }
        } else if !outcome.denied.contains(&named) {
            outcome.more_denied += 1;
        }
    }
    if seen.recorded < MAX_RECORDED {
        seen.recorded += 1;
        drop(seen);
        recorder.attempt(attempt);
        return;
    }
    if denied {
        seen.omitted_denied += 1;
    } else {
        seen.omitted_allowed += 1;
    }
    drop(seen);
    // Not written, but the task's report counts every attempt.
    recorder.count(&attempt);
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
        let sink = {
            let (seen, recorder, origin) = (Arc::clone(&seen), recorder.clone(), origin.clone());
            move |event: ConnectionEvent| take(&seen, &recorder, attempt(&origin, event))
        };
        let (port, proxy) = Proxy::new(rules, sink).bind_loopback()?;
        let (ours, launcher_end) = std::os::unix::net::UnixStream::pair()?;
        ours.set_nonblocking(true)?;
        let ours = tokio::net::UnixStream::from_std(ours)?;
        let report = tokio::spawn(read_reports(
            ours,
            origin.clone(),
            recorder.clone(),
            Arc::clone(&seen),
        ));
        Ok(LaunchNetwork {
            port,
            launcher_end: Some(OwnedFd::from(launcher_end)),
            proxy: Some(proxy),
            report: Some(report),
            origin,
            recorder,
            seen,
        })
    }

    /// After the command and everything it started are gone: close the proxy (its open
    /// connections, now without a client, end and are recorded), read the launcher's
    /// last reports, and say what was denied.
    async fn finish_now(mut self) -> LaunchOutcome {
        self.launcher_end = None;
        if let Some(proxy) = self.proxy.take() {
            proxy.shutdown().await;
        }
        if let Some(report) = self.report.take() {
            // The launcher is gone, so its end is closed: the reader ends at once. Only
            // a command still holding the channel (it cannot: the launcher's copy is
            // close-on-exec) could keep it open.
            let _ = tokio::time::timeout(std::time::Duration::from_secs(2), report).await;
        }
        let seen = std::mem::take(&mut *lock(&self.seen));
        if seen.omitted_allowed + seen.omitted_denied > 0 {
            self.recorder.event(Event::NetworkOmitted {
                origin: self.origin.clone(),
                allowed: seen.omitted_allowed,
                denied: seen.omitted_denied,
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

/// Read the launcher's reports of refused direct connections, one JSON line each:
/// `{"direct": {"address": "93.184.216.34", "port": 443}}`.
async fn read_reports(
    channel: tokio::net::UnixStream,
    origin: NetworkOrigin,
    recorder: NetworkRecorder,
    seen: Arc<Mutex<Seen>>,
) {
    let mut reader = BufReader::new(channel);
    let mut line = String::new();
    loop {
        line.clear();
        match (&mut reader)
            .take(MAX_REPORT_LINE)
            .read_line(&mut line)
            .await
        {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let Some((host, port)) = direct_target(&line) else {
            continue;
        };
        let attempt = NetworkAttempt {
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
        };
        take(&seen, &recorder, attempt);
    }
}

/// The address and port of a report line (IPv6 in brackets, as hosts are written).
fn direct_target(line: &str) -> Option<(String, u16)> {
    let value: serde_json::Value = serde_json::from_str(line.trim()).ok()?;
    let direct = value.get("direct")?;
    let address: std::net::IpAddr = direct.get("address")?.as_str()?.parse().ok()?;
    let port = u16::try_from(direct.get("port")?.as_u64()?).ok()?;
    let host = match address {
        std::net::IpAddr::V4(v4) => v4.to_string(),
        std::net::IpAddr::V6(v6) => format!("[{v6}]"),
    };
    Some((host, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn denied(port: u16) -> NetworkAttempt {
        NetworkAttempt {
            origin: NetworkOrigin {
                source: "bash".to_string(),
                tool_use_id: Some("toolu_1".to_string()),
                name: None,
            },
            host: "127.0.0.1".to_string(),
            port,
            protocol: "direct".to_string(),
            decision: "denied".to_string(),
            rule: None,
            reason: Some("direct".to_string()),
            address: None,
            bytes_up: 0,
            bytes_down: 0,
            duration_ms: 0,
        }
    }

    #[test]
    fn attempts_past_the_limit_are_not_written_but_still_counted_in_the_tally() {
        let seen = Mutex::new(Seen::default());
        let recorder = NetworkRecorder::default();
        for _ in 0..MAX_RECORDED + 100 {
            take(&seen, &recorder, denied(9));
        }
        let seen = lock(&seen);
        assert_eq!(seen.recorded, MAX_RECORDED);
        assert_eq!((seen.omitted_allowed, seen.omitted_denied), (0, 100));
        assert_eq!(seen.outcome.denied.len(), 1, "one target, named once");
        let tally = recorder.tally();
        assert_eq!((tally.allowed, tally.denied), (0, MAX_RECORDED + 100));
        assert_eq!(tally.first_denied, ["127.0.0.1:9"]);
    }

    #[test]
    fn report_lines_name_an_address_and_a_port() {
        assert_eq!(
            direct_target(r#"{"direct":{"address":"93.184.216.34","port":443}}"#),
            Some(("93.184.216.34".to_string(), 443))
        );
        assert_eq!(
            direct_target(r#"{"direct":{"address":"::1","port":22}}"#),
            Some(("[::1]".to_string(), 22))
        );
        assert_eq!(
            direct_target(r#"{"direct":{"address":"evil","port":1}}"#),
            None
        );
        assert_eq!(direct_target("not json"), None);
    }
}
