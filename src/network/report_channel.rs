//! drover's end of a launch's report channel: the launcher writes a JSON line for each
//! connection it refused (`{"direct": {"address": …, "port": …}}`), and, as root, first
//! hands over the proxy's listener in the command's network namespace (`SCM_RIGHTS`).
//! Only the launcher holds the other end (close-on-exec, and the launcher is not
//! dumpable: the command cannot reach it), but the reader takes nothing on trust: a
//! line it cannot read is skipped, never the end of the reading.

use std::net::TcpListener;
use std::os::fd::{AsFd, OwnedFd};

use rustix::net::RecvFlags;
use tokio::io::Interest;
use tokio::net::UnixStream;

use crate::sandbox::proxied::receive_with_descriptors;

/// The longest line the launcher writes; a longer one is skipped.
const MAX_LINE: usize = 1024;

/// What arrived on the channel.
pub(super) enum Report {
    /// A refused direct connection: the address (IPv6 in brackets) and port.
    Direct(String, u16),
    /// A connection refused because the launcher could not read where it went (the
    /// command's process made itself undumpable).
    Uninspectable,
    /// The proxy's listener in the command's network namespace.
    Listener(TcpListener),
}

/// Read the channel until the launcher closes it, handing each report to `on_report`.
pub(super) async fn read(channel: UnixStream, mut on_report: impl FnMut(Report)) {
    let mut pending: Vec<u8> = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let received = match channel.readable().await {
            Ok(()) => channel.try_io(Interest::READABLE, || receive(&channel, &mut buf)),
            Err(_) => return,
        };
        let (read, fds) = match received {
            Ok(received) => received,
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(_) => return,
        };
        for fd in fds {
            on_report(Report::Listener(TcpListener::from(fd)));
        }
        if read == 0 {
            return;
        }
        // A descriptor travels with one NUL byte (see `sandbox::proxied`), which no
        // JSON line holds: drop NULs.
        pending.extend(buf[..read].iter().filter(|byte| **byte != 0));
        while let Some(end) = pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            if let Some(report) = report_of(&line) {
                on_report(report);
            }
        }
        if pending.len() > MAX_LINE {
            pending.clear();
        }
    }
}

/// One `recvmsg` that does not wait: the bytes read and the descriptors that came with
/// them.
fn receive(channel: &UnixStream, buf: &mut [u8]) -> std::io::Result<(usize, Vec<OwnedFd>)> {
    receive_with_descriptors(channel.as_fd(), buf, RecvFlags::DONTWAIT)
}

/// What a report line says, if it is one.
fn report_of(line: &[u8]) -> Option<Report> {
    let value: serde_json::Value = serde_json::from_slice(line).ok()?;
    if value.get("uninspectable").is_some() {
        return Some(Report::Uninspectable);
    }
    let (host, port) = direct_target(&value)?;
    Some(Report::Direct(host, port))
}

/// The address and port of a `direct` report (IPv6 in brackets, as hosts are written).
fn direct_target(value: &serde_json::Value) -> Option<(String, u16)> {
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
    use std::io::Write;

    use super::*;

    #[test]
    fn report_lines_name_an_address_and_a_port() {
        let target = |line: &str| {
            serde_json::from_str(line)
                .ok()
                .and_then(|value| direct_target(&value))
        };
        assert_eq!(
            target(r#"{"direct":{"address":"93.184.216.34","port":443}}"#),
            Some(("93.184.216.34".to_string(), 443))
        );
        assert_eq!(
            target(r#"{"direct":{"address":"::1","port":22}}"#),
            Some(("[::1]".to_string(), 22))
        );
        assert_eq!(target(r#"{"direct":{"address":"evil","port":1}}"#), None);
        assert_eq!(target("not json"), None);
    }

    #[tokio::test]
    async fn an_unreadable_line_is_skipped_and_a_listener_arrives() {
        let (ours, mut theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        ours.set_nonblocking(true).unwrap();
        let ours = UnixStream::from_std(ours).unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        crate::sandbox::proxied::send_listener_for_tests(&theirs, &listener);
        theirs.write_all(b"\xff\xfe not utf-8\n").unwrap();
        theirs
            .write_all(b"{\"direct\":{\"address\":\"10.0.0.1\",\"port\":22}}\n")
            .unwrap();
        theirs.write_all(b"{\"uninspectable\":{}}\n").unwrap();
        drop(theirs);
        let mut got = Vec::new();
        read(ours, |report| {
            got.push(match report {
                Report::Direct(host, port) => format!("{host}:{port}"),
                Report::Uninspectable => "uninspectable".to_string(),
                Report::Listener(listener) => {
                    format!("listener {}", listener.local_addr().unwrap().port())
                }
            })
        })
        .await;
        assert_eq!(
            got,
            [
                format!("listener {port}"),
                "10.0.0.1:22".to_string(),
                "uninspectable".to_string()
            ]
        );
    }
}
