//! drover's egress proxy: the one door out of a task's sandbox. The sandboxed command can
//! reach only this proxy's port on 127.0.0.1 (the launcher sees to that), and finds it
//! in `HTTP_PROXY`, `HTTPS_PROXY` and `ALL_PROXY`. The proxy serves HTTP `CONNECT`
//! tunnels, plain HTTP requests in absolute form and SOCKS5 on that one port, judges
//! every host and port by the task's network rules (`drover_policy::EgressRules`)
//! before resolving anything, resolves names itself, connects only to addresses the
//! rules open, and tells its caller of every attempt ([`ConnectionEvent`]).
//!
//! ```no_run
//! # async fn example() -> std::io::Result<()> {
//! use drover_policy::EgressRules;
//! use drover_proxy::Proxy;
//!
//! let rules = EgressRules::new(&[("registry.npmjs.org".to_string(), None)], &[])
//!     .expect("a valid entry");
//! let (port, handle) = Proxy::new(rules, |event| {
//!     let _ = event; // into the transcript
//! })
//! .bind_loopback()?;
//! // HTTPS_PROXY=http://127.0.0.1:{port} for the sandboxed command, then:
//! handle.shutdown().await;
//! # let _ = port;
//! # Ok(())
//! # }
//! ```
//!
//! It knows nothing of specs, sandboxes or transcripts: the run sets it up and records
//! its events.

mod answer;
mod connection;
mod counted;
mod event;
mod forward;
mod head;
mod http;
mod options;
mod serve;
mod socks;
mod tunnel;
mod upstream;

pub use answer::{DENIED_HEADER, denial_text};
pub use event::{ConnectionEvent, Decision, EventSink, Protocol};
pub use options::{ProxyOptions, Resolver};
pub use serve::{Proxy, ProxyHandle};
