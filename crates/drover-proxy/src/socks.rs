//! A SOCKS5 client of the proxy (RFC 1928), on the same port as HTTP: no authentication,
//! CONNECT to a domain name, an IPv4 or an IPv6 address, judged like any connection. A
//! refusal by the rules is reply 0x02, "connection not allowed by ruleset". BIND and UDP
//! ASSOCIATE are refused (0x07): the proxy relays TCP only.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use drover_policy::{EgressHost, HostError};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::counted::Counted;
use crate::event::{Protocol, Tally};
use crate::options::Shared;
use crate::tunnel::relay;
use crate::upstream::{Refusal, open};

const VERSION: u8 = 5;
const NO_AUTHENTICATION: u8 = 0;
const NO_ACCEPTABLE_METHOD: u8 = 0xff;
const CONNECT: u8 = 1;

/// The reply codes the proxy sends.
const SUCCEEDED: u8 = 0;
const GENERAL_FAILURE: u8 = 1;
const NOT_ALLOWED: u8 = 2;
const HOST_UNREACHABLE: u8 = 4;
const CONNECTION_REFUSED: u8 = 5;
const COMMAND_NOT_SUPPORTED: u8 = 7;
const ADDRESS_TYPE_NOT_SUPPORTED: u8 = 8;

/// What a handshake asked for, or why it asked for nothing the proxy serves.
enum Asked {
    Connect {
        host: Result<EgressHost, HostError>,
        port: u16,
    },
    /// Refused with this reply code (None: no reply, the method negotiation failed or
    /// the stream ended) and this reason.
    Refused { code: Option<u8>, reason: String },
}

/// Serve the SOCKS5 client on `client`, whose version byte was read already.
pub(crate) async fn serve_socks(
    mut client: TcpStream,
    shared: &Shared,
    tally: &mut Tally,
    deadline: Instant,
) {
    tally.protocol(Protocol::Socks5);
    let asked = match tokio::time::timeout_at(deadline, handshake(&mut client)).await {
        Ok(Ok(asked)) => asked,
        Ok(Err(error)) => Asked::Refused {
            code: None,
            reason: format!("no SOCKS5 request: {error}"),
        },
        Err(_) => Asked::Refused {
            code: Some(GENERAL_FAILURE),
            reason: format!(
                "no complete SOCKS5 request within {} s",
                shared.options.head_timeout.as_secs()
            ),
        },
    };
    let (host, port) = match asked {
        Asked::Connect { host, port } => (host, port),
        Asked::Refused { code, reason } => {
            tally.deny(None, reason);
            if let Some(code) = code {
                let _ = client.write_all(&reply(code)).await;
            }
            return;
        }
    };
    let host = match host {
        Ok(host) => host,
        Err(error) => {
            tally.target(error.written.clone(), port);
            tally.deny(None, error.to_string());
            let _ = client.write_all(&reply(GENERAL_FAILURE)).await;
            return;
        }
    };
    tally.target(host.to_string(), port);
    let stream = match open(shared, tally, &host, port).await {
        Ok(stream) => stream,
        Err(refusal) => {
            let code = match refusal {
                Refusal::Denied { .. } => NOT_ALLOWED,
                Refusal::Unreachable { refused: true, .. } => CONNECTION_REFUSED,
                Refusal::Unreachable { .. } | Refusal::TimedOut { .. } => HOST_UNREACHABLE,
            };
            let _ = client.write_all(&reply(code)).await;
            return;
        }
    };
    let mut upstream = Counted::new(stream, tally.counters());
    if client.write_all(&reply(SUCCEEDED)).await.is_ok() {
        relay(&mut client, &mut upstream).await;
    }
}

/// The method negotiation and the request, after the version byte.
async fn handshake(client: &mut TcpStream) -> std::io::Result<Asked> {
    let count = client.read_u8().await?;
    let mut methods = vec![0; usize::from(count)];
    client.read_exact(&mut methods).await?;
    if !methods.contains(&NO_AUTHENTICATION) {
        client.write_all(&[VERSION, NO_ACCEPTABLE_METHOD]).await?;
        return Ok(Asked::Refused {
            code: None,
            reason: "the SOCKS5 client offers no method without authentication".to_string(),
        });
    }
    client.write_all(&[VERSION, NO_AUTHENTICATION]).await?;
    let mut request = [0; 4];
    client.read_exact(&mut request).await?;
    let [version, command, _reserved, address_type] = request;
    if version != VERSION {
        return Ok(Asked::Refused {
            code: Some(GENERAL_FAILURE),
            reason: format!("SOCKS request of version {version}, not 5"),
        });
    }
    if command != CONNECT {
        return Ok(Asked::Refused {
            code: Some(COMMAND_NOT_SUPPORTED),
            reason: format!(
                "SOCKS5 command {command} (BIND or UDP ASSOCIATE) is not supported: the proxy relays TCP connections only"
            ),
        });
    }
    let host = match address_type {
        1 => {
            let mut octets = [0; 4];
            client.read_exact(&mut octets).await?;
            Ok(EgressHost::from(IpAddr::V4(Ipv4Addr::from(octets))))
        }
        3 => {
            let length = client.read_u8().await?;
            let mut name = vec![0; usize::from(length)];
            client.read_exact(&mut name).await?;
            let name = String::from_utf8_lossy(&name).into_owned();
            // Some clients send an address as text, IPv6 without brackets.
            match name.parse::<IpAddr>() {
                Ok(ip) => Ok(EgressHost::from(ip)),
                Err(_) => EgressHost::parse(&name),
            }
        }
        4 => {
            let mut octets = [0; 16];
            client.read_exact(&mut octets).await?;
            Ok(EgressHost::from(IpAddr::V6(Ipv6Addr::from(octets))))
        }
        other => {
            return Ok(Asked::Refused {
                code: Some(ADDRESS_TYPE_NOT_SUPPORTED),
                reason: format!("SOCKS5 address type {other} is not one of 1, 3, 4"),
            });
        }
    };
    let port = client.read_u16().await?;
    Ok(Asked::Connect { host, port })
}

/// A reply with `code` and an unspecified bound address: the sandbox learns nothing of
/// the addresses on the proxy's side.
fn reply(code: u8) -> [u8; 10] {
    [VERSION, code, 0, 1, 0, 0, 0, 0, 0, 0]
}
