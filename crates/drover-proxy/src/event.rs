//! What the proxy tells its caller: one [`ConnectionEvent`] per connection attempt, a
//! denied one at once, an allowed one when the connection closes (with the bytes that
//! crossed). The event is filled as the connection goes ([`Tally`]) and sent exactly
//! once, when it is decided or, failing that, when the connection's task ends however
//! it ends (closed, failed, or stopped with the proxy), so no attempt goes unaccounted.

use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use serde::{Deserialize, Serialize};

/// Receives every event; called on the proxy's tasks, so it must be quick (send on a
/// channel, push to a list).
pub type EventSink = Arc<dyn Fn(ConnectionEvent) + Send + Sync>;

/// How a client asked for its connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    /// `CONNECT host:port` (an HTTPS tunnel, or any TCP).
    Connect,
    /// A plain HTTP request in absolute form (`GET http://host/path`).
    Http,
    /// A SOCKS5 CONNECT.
    Socks5,
    /// Not known: the client sent nothing readable, or the proxy refused it before
    /// reading (over its connection limit).
    Unknown,
}

/// What the task's network rules (or the proxy's limits) made of the attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Allowed,
    Denied,
}

/// One connection attempt, as the transcript records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectionEvent {
    /// The host asked for (normalised when it is a host: lowercase, punycode, IPv6 in
    /// brackets); empty when the client named none.
    pub host: String,
    /// The port asked for; 0 when the client named none.
    pub port: u16,
    pub protocol: Protocol,
    pub decision: Decision,
    /// The entry that decided, as written (`*.npmjs.org`, `localhost:8080`).
    pub rule: Option<String>,
    /// Why it was denied, or why an allowed connection failed (`cannot connect: …`).
    pub reason: Option<String>,
    /// The address connected to (after resolution), for an allowed connection made.
    pub address: Option<IpAddr>,
    /// Bytes sent to the upstream host (a plain HTTP request's rewritten head included).
    pub bytes_up: u64,
    /// Bytes received from the upstream host.
    pub bytes_down: u64,
    /// From accepting the connection to the event.
    pub duration_ms: u64,
}

/// The byte counters of one connection, shared with the stream that counts them.
#[derive(Debug, Clone, Default)]
pub(crate) struct Counters {
    pub(crate) up: Arc<AtomicU64>,
    pub(crate) down: Arc<AtomicU64>,
}

/// One connection's event in the making; sent once, at the latest when dropped.
pub(crate) struct Tally {
    sink: EventSink,
    started: Instant,
    event: ConnectionEvent,
    counters: Counters,
    sent: bool,
}

impl Tally {
    pub(crate) fn new(sink: EventSink, started: Instant) -> Self {
        Tally {
            sink,
            started,
            event: ConnectionEvent {
                host: String::new(),
                port: 0,
                protocol: Protocol::Unknown,
                decision: Decision::Denied,
                rule: None,
                reason: None,
                address: None,
                bytes_up: 0,
                bytes_down: 0,
                duration_ms: 0,
            },
            counters: Counters::default(),
            sent: false,
        }
    }

    pub(crate) fn protocol(&mut self, protocol: Protocol) {
        self.event.protocol = protocol;
    }

    pub(crate) fn target(&mut self, host: String, port: u16) {
        self.event.host = host;
        self.event.port = port;
    }

    /// The rules opened the host; the connection is not made yet.
    pub(crate) fn allowed(&mut self, rule: String) {
        self.event.decision = Decision::Allowed;
        self.event.rule = Some(rule);
    }

    pub(crate) fn connected(&mut self, address: IpAddr) {
        self.event.address = Some(address);
    }

    /// Why an allowed connection failed.
    pub(crate) fn failed(&mut self, reason: String) {
        self.event.reason = Some(reason);
    }

    /// Refused: the event goes out now.
    pub(crate) fn deny(&mut self, rule: Option<String>, reason: String) {
        self.event.decision = Decision::Denied;
        self.event.rule = rule;
        self.event.reason = Some(reason);
        self.send();
    }

    pub(crate) fn counters(&self) -> Counters {
        self.counters.clone()
    }

    /// Send the event unless it went already.
    pub(crate) fn send(&mut self) {
        if self.sent {
            return;
        }
        self.sent = true;
        let mut event = self.event.clone();
        if event.decision == Decision::Denied && event.reason.is_none() {
            event.reason = Some("the connection ended before a request was read".to_string());
        }
        event.bytes_up = self.counters.up.load(Ordering::Relaxed);
        event.bytes_down = self.counters.down.load(Ordering::Relaxed);
        event.duration_ms = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        (self.sink)(event);
    }
}

impl Drop for Tally {
    fn drop(&mut self) {
        self.send();
    }
}
