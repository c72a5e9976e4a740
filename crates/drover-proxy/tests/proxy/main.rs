//! The proxy end to end on this machine: servers on 127.0.0.1 reached (or not) through
//! it by CONNECT, plain HTTP and SOCKS5, with the events it reports.

// Support code outside #[test] functions may panic too: a panic is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

mod connect;
mod http;
mod limits;
mod socks;
