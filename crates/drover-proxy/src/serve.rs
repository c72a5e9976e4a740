//! The proxy: a listener, the loop accepting its connections (at most
//! `max_connections` served at once), and the handle that stops it. Stopping stops
//! accepting and closes every open tunnel; each closed connection still sends its event.

use std::io;
use std::net::{Ipv4Addr, SocketAddr, TcpListener as StdListener};
use std::sync::Arc;
use std::time::Duration;

use drover_policy::EgressRules;
use tokio::io::AsyncWriteExt as _;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::answer::Answer;
use crate::connection::serve_connection;
use crate::event::{ConnectionEvent, Tally};
use crate::http::REFUSAL_DRAIN;
use crate::options::{ProxyOptions, Shared};

/// Connections over the limit that are answered `503` properly (the answer written, the
/// request drained for a moment so the client reads the answer rather than a reset);
/// beyond these, the answer is written as far as the socket takes it at once.
const REFUSING_AT_ONCE: usize = 32;

/// A proxy set up with its rules, its event sink and its options, not yet serving.
pub struct Proxy {
    shared: Shared,
}

/// A serving proxy. Dropping it (or [`ProxyHandle::shutdown`]) stops accepting and
/// closes every open connection; their events are sent as they close.
pub struct ProxyHandle {
    address: SocketAddr,
    cancel: CancellationToken,
    task: Option<JoinHandle<()>>,
}

impl Proxy {
    /// A proxy judging by `rules`, telling `sink` of every connection attempt.
    pub fn new(rules: EgressRules, sink: impl Fn(ConnectionEvent) + Send + Sync + 'static) -> Self {
        Proxy {
            shared: Shared {
                rules,
                sink: Arc::new(sink),
                options: ProxyOptions::default(),
            },
        }
    }

    /// The same proxy with other limits or another resolver.
    pub fn options(mut self, options: ProxyOptions) -> Self {
        self.shared.options = options;
        self
    }

    /// Serve on a new listener on 127.0.0.1 (a port the system picks): its port and the
    /// handle. Must be called within a tokio runtime.
    pub fn bind_loopback(self) -> io::Result<(u16, ProxyHandle)> {
        let listener = StdListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        let handle = self.serve(listener)?;
        Ok((handle.address.port(), handle))
    }

    /// Serve on `listener`, made elsewhere (a descriptor handed over, a namespace's
    /// address). Must be called within a tokio runtime.
    pub fn serve(self, listener: StdListener) -> io::Result<ProxyHandle> {
        listener.set_nonblocking(true)?;
        let listener = TcpListener::from_std(listener)?;
        let address = listener.local_addr()?;
        let cancel = CancellationToken::new();
        let task = tokio::spawn(accept_loop(listener, Arc::new(self.shared), cancel.clone()));
        Ok(ProxyHandle {
            address,
            cancel,
            task: Some(task),
        })
    }
}

impl ProxyHandle {
    /// The address the proxy listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.address
    }

    /// Stop, and wait until every connection is closed and its event sent.
    pub async fn shutdown(mut self) {
        self.cancel.cancel();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for ProxyHandle {
    fn drop(&mut self) {
        // The loop sees it, drops the listener and aborts the connections' tasks.
        self.cancel.cancel();
    }
}

/// Accept until cancelled; then close every connection (each task's event goes out as
/// its task is dropped).
async fn accept_loop(listener: TcpListener, shared: Arc<Shared>, cancel: CancellationToken) {
    let serving = Arc::new(Semaphore::new(shared.options.max_connections));
    let refusing = Arc::new(Semaphore::new(REFUSING_AT_ONCE));
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            () = cancel.cancelled() => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let started = Instant::now();
                    match Arc::clone(&serving).try_acquire_owned() {
                        Ok(permit) => {
                            let shared = Arc::clone(&shared);
                            connections.spawn(async move {
                                serve_connection(stream, shared, started).await;
                                drop(permit);
                            });
                        }
                        Err(_) => refuse_busy(stream, &shared, &refusing, &mut connections, started),
                    }
                }
                // Out of descriptors, or a connection reset before it was accepted:
                // wait a moment rather than spin, and go on.
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            },
        }
    }
    drop(listener);
    connections.shutdown().await;
}

/// Answer a connection over the limit with `503`, its event denied.
fn refuse_busy(
    mut stream: TcpStream,
    shared: &Arc<Shared>,
    refusing: &Arc<Semaphore>,
    connections: &mut JoinSet<()>,
    started: Instant,
) {
    let answer = Answer::Busy(shared.options.max_connections);
    let mut tally = Tally::new(Arc::clone(&shared.sink), started.into_std());
    tally.deny(None, answer.text());
    let Ok(permit) = Arc::clone(refusing).try_acquire_owned() else {
        // A small answer fits a new socket's send buffer: written at once, or not at all.
        let _ = stream.try_write(&answer.to_http());
        return;
    };
    connections.spawn(async move {
        let _ = stream.write_all(&answer.to_http()).await;
        let _ = stream.shutdown().await;
        // Closing with the request unread would reset the connection, and the client
        // might lose the answer: read what it sent, briefly.
        let mut sink = tokio::io::sink();
        let _ = tokio::time::timeout(REFUSAL_DRAIN, tokio::io::copy(&mut stream, &mut sink)).await;
        drop(permit);
    });
}
