//! What a proxy is set up with: its limits, the resolver, and (for its tasks) the rules
//! and the event sink, shared by every connection.

use std::future::Future;
use std::io;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use drover_policy::EgressRules;

use crate::event::EventSink;

/// Resolves a name (never an address, never a name the rules refused) to its addresses.
pub type Resolver = Arc<
    dyn Fn(String) -> Pin<Box<dyn Future<Output = io::Result<Vec<IpAddr>>> + Send>> + Send + Sync,
>;

/// The proxy's limits and its resolver. The defaults suit a task: 256 connections, 30 s
/// for a request head and for reaching the host, 64 KiB of head, the system's resolver.
#[derive(Clone)]
pub struct ProxyOptions {
    /// Connections served at once; one more is answered `503` at once.
    pub max_connections: usize,
    /// How long a client may take to send its request head (HTTP) or handshake (SOCKS5),
    /// from the moment it connected: a client that never sends one must not hold the
    /// proxy, or the task, forever.
    pub head_timeout: Duration,
    /// How long resolving the host and connecting to it may take (`504` after).
    pub connect_timeout: Duration,
    /// The largest request (or response) head read.
    pub max_head_bytes: usize,
    /// The system's resolver (`getaddrinfo`) unless the caller gives its own.
    pub resolver: Resolver,
}

impl Default for ProxyOptions {
    fn default() -> Self {
        ProxyOptions {
            max_connections: 256,
            head_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(30),
            max_head_bytes: 64 * 1024,
            resolver: Arc::new(|name| Box::pin(system_resolve(name))),
        }
    }
}

/// The addresses of `name`, as the system resolves them.
async fn system_resolve(name: String) -> io::Result<Vec<IpAddr>> {
    let found = tokio::net::lookup_host((name.as_str(), 0)).await?;
    Ok(found.map(|address| address.ip()).collect())
}

/// What every connection's task reads.
pub(crate) struct Shared {
    pub(crate) rules: EgressRules,
    pub(crate) sink: EventSink,
    pub(crate) options: ProxyOptions,
}
