//! Reaching the host a client asked for: the rules judge the name first (a refused name
//! is never resolved, so it leaks nothing through DNS), then every address it resolves
//! to (a loopback or private address only when an entry names it), and the connection
//! goes to an address that passed, the next one tried when one fails.

use std::io;
use std::net::{IpAddr, SocketAddr};

use drover_policy::{AddressRefused, EgressHost, EgressVerdict};
use tokio::net::TcpStream;

use crate::answer::Answer;
use crate::event::Tally;
use crate::options::Shared;

/// Why no connection was made.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// The rules refused the host or every address it resolves to.
    Denied {
        why: String,
    },
    /// Resolving or connecting failed; `refused` when the host refused the connection.
    Unreachable {
        why: String,
        refused: bool,
    },
    TimedOut {
        why: String,
    },
}

impl Refusal {
    /// The HTTP answer for a client that asked for `host:port`.
    pub(crate) fn answer(&self, host: &EgressHost, port: u16) -> Answer {
        match self {
            Refusal::Denied { why } => Answer::Denied {
                target: format!("{host}:{port}"),
                why: why.clone(),
            },
            Refusal::Unreachable { why, .. } => Answer::BadGateway(why.clone()),
            Refusal::TimedOut { why } => Answer::GatewayTimeout(why.clone()),
        }
    }
}

/// Judge `host:port`, resolve it, connect. The event learns the decision (sent at once
/// when denied), the rule, the address connected to, or why it failed.
pub(crate) async fn open(
    shared: &Shared,
    tally: &mut Tally,
    host: &EgressHost,
    port: u16,
) -> Result<TcpStream, Refusal> {
    match shared.rules.judge_host(host, port) {
        EgressVerdict::Denied { rule, reason } => {
            tally.deny(rule, reason.clone());
            return Err(Refusal::Denied { why: reason });
        }
        EgressVerdict::Allowed { rule } => tally.allowed(rule),
    }
    let limit = shared.options.connect_timeout;
    let reached = tokio::time::timeout(limit, resolve_and_connect(shared, host, port)).await;
    let failure = match reached {
        Ok(Ok((stream, address))) => {
            tally.connected(address);
            return Ok(stream);
        }
        Ok(Err(Failure::Refused(refused))) => {
            tally.deny(refused.rule, refused.reason.clone());
            return Err(Refusal::Denied {
                why: refused.reason,
            });
        }
        Ok(Err(Failure::Io { why, refused })) => Refusal::Unreachable { why, refused },
        Err(_) => Refusal::TimedOut {
            why: format!(
                "cannot reach {host}:{port} within {} s",
                limit.as_secs_f64()
            ),
        },
    };
    let why = match &failure {
        Refusal::Unreachable { why, .. } | Refusal::TimedOut { why } | Refusal::Denied { why } => {
            why.clone()
        }
    };
    tally.failed(why);
    Err(failure)
}

/// Why `resolve_and_connect` made no connection.
enum Failure {
    /// Every address was refused by the rules (the first refusal).
    Refused(AddressRefused),
    Io {
        why: String,
        refused: bool,
    },
}

async fn resolve_and_connect(
    shared: &Shared,
    host: &EgressHost,
    port: u16,
) -> Result<(TcpStream, IpAddr), Failure> {
    let addresses = match host {
        EgressHost::Address(ip) => vec![*ip],
        EgressHost::Name(name) => {
            (shared.options.resolver)(name.clone())
                .await
                .map_err(|error| Failure::Io {
                    why: format!("cannot resolve {name}: {error}"),
                    refused: false,
                })?
        }
    };
    let mut first_refusal = None;
    let mut last_error: Option<io::Error> = None;
    let mut tried = 0;
    for ip in addresses {
        if let Err(refused) = shared.rules.address_allowed(host, port, ip) {
            first_refusal.get_or_insert(refused);
            continue;
        }
        tried += 1;
        match TcpStream::connect(SocketAddr::new(ip, port)).await {
            Ok(stream) => {
                // Small writes (TLS handshakes, interactive protocols) go out at once.
                let _ = stream.set_nodelay(true);
                return Ok((stream, ip));
            }
            Err(error) => last_error = Some(error),
        }
    }
    match (last_error, first_refusal) {
        (Some(error), _) => Err(Failure::Io {
            refused: error.kind() == io::ErrorKind::ConnectionRefused,
            why: format!(
                "cannot connect to {host}:{port} ({tried} address{} tried): {error}",
                if tried == 1 { "" } else { "es" }
            ),
        }),
        (None, Some(refused)) => Err(Failure::Refused(refused)),
        (None, None) => Err(Failure::Io {
            why: format!("{host} resolves to no address"),
            refused: false,
        }),
    }
}
