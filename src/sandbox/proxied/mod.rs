//! The network of a command under a per-host policy: it may reach drover's egress proxy
//! and nothing else. The proxy (outside the sandbox) judges every host by the task's
//! rules and accounts for every connection; this module makes sure no connection goes
//! around it, as root and as an unprivileged user alike, without user namespaces
//! (which many CI kernels restrict):
//!
//! - the first seccomp filter (see `socket_filter`) lets the command create Unix
//!   sockets and TCP sockets only: no UDP (no DNS of its own), raw, packet or netlink
//!   socket, no TCP Fast Open (a `sendto` that connects), no io_uring;
//! - the second ([`connect_filter`]) hands every `connect()` and `listen()` to the
//!   launcher, which connects a TCP socket only to the proxy's port on 127.0.0.1,
//!   refuses every other internet address (and tells drover, over the report channel,
//!   who was tried), and lets Unix sockets through ([`on_behalf`]);
//! - Landlock's TCP rules (ABI 4, Linux 6.7) allow connecting to the proxy's port only
//!   and binding none, as a further layer;
//! - as root, a network namespace of the command's own with loopback only, into which
//!   the proxy's listener is brought ([`namespace`]);
//! - the command cannot reach its launcher, which answers its calls ([`scoped`]).
//!
//! The launcher's notification thread is [`notify`].

pub(crate) mod connect_filter;
pub(crate) mod namespace;
pub(crate) mod notify;
mod on_behalf;
mod pass_fd;
pub(crate) use pass_fd::receive_with_descriptors;
pub(crate) mod scoped;

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;

use super::SandboxError;

/// What a proxied launch needs, known only when the command starts: the proxy's port
/// and where to report refused connections.
#[derive(Debug)]
pub(crate) struct ProxiedLaunch {
    pub proxy_port: u16,
    /// drover's end of the report channel, as inherited by the launcher.
    pub report: Option<std::fs::File>,
}

/// The command's side of the connect filter, kept by the launcher's main thread until
/// the command has started: the compiled filter and the end of the socket pair the
/// command's process sends the filter's listener over (before its `exec`).
pub(crate) struct FilterHandover {
    pub filter: Arc<connect_filter::ConnectFilter>,
    pub child_end: OwnedFd,
}

impl FilterHandover {
    /// Start the thread that will receive the listener from the command's process and
    /// answer its calls. Started before the launcher enters a PID namespace (a process
    /// there can start no thread) and after Landlock and the socket filter are in force
    /// (the thread inherits both); the thread drops its own capabilities, as the
    /// launcher's main thread does later.
    pub(crate) fn start(launch: ProxiedLaunch) -> Result<FilterHandover, SandboxError> {
        let (launcher_end, child_end) = rustix::net::socketpair(
            rustix::net::AddressFamily::UNIX,
            rustix::net::SocketType::STREAM,
            rustix::net::SocketFlags::CLOEXEC,
            None,
        )
        .map_err(|e| SandboxError::failed("make the channel for the connect filter", e))?;
        std::thread::Builder::new()
            .name("drover-connect".into())
            .spawn(move || {
                if super::capabilities::drop_capabilities().is_err() {
                    return;
                }
                // Blocks until the command's process sends it; fails when the command
                // never started (the pair's other end is gone).
                let Ok(listener) = pass_fd::receive(launcher_end.as_raw_fd()) else {
                    return;
                };
                notify::serve(listener, launch.proxy_port, launch.report);
            })
            .map_err(|e| SandboxError::failed("start the connect filter's thread", e))?;
        Ok(FilterHandover {
            filter: Arc::new(connect_filter::ConnectFilter::new()),
            child_end,
        })
    }
}

/// Send `listener` over `channel` as the launcher does (for the reader's tests).
#[cfg(test)]
pub(crate) fn send_listener_for_tests(
    channel: &std::os::unix::net::UnixStream,
    listener: &std::net::TcpListener,
) {
    pass_fd::send(channel.as_raw_fd(), listener.as_raw_fd()).unwrap();
}
