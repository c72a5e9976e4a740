//! One host of `sandbox.network`'s `allow:` or `deny:` lists: a name, `*.suffix`, an IP
//! literal or `localhost`, optionally `:port`. Written by the spec's author, matched by
//! the egress proxy, so it is normalised once here (lowercase, punycode, no trailing
//! dot; the same normalisation as WebFetch's `domain:` rules), and anything that is not
//! plainly a host (a URL, a path, credentials, `*` alone) is refused rather than guessed
//! at: a guess would widen or narrow the network without the author knowing.

use std::fmt;

use serde::{Serialize, Serializer};
use url::{Host, Url};

/// A host (and port) as the spec names it, normalised.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HostPattern {
    /// `example.org`, `*.example.org` (its subdomains, not itself), `10.0.0.5`,
    /// `[::1]`, or `localhost`: lowercase, punycode, no trailing dot.
    pub host: String,
    /// The one port it names; None: the web's ports, 443 and 80
    /// ([`HostPattern::DEFAULT_PORTS`]) in an allow list, every port in a deny list.
    pub port: Option<u16>,
}

impl HostPattern {
    /// The ports an allowed host without `:port` may be reached on.
    pub const DEFAULT_PORTS: [u16; 2] = [443, 80];

    /// `*.suffix`: the subdomains of `suffix`, never `suffix` itself.
    pub fn is_wildcard(&self) -> bool {
        self.host.starts_with("*.")
    }

    /// Whether the entry names an address itself (an IP literal, or `localhost`), the
    /// only kind of entry that opens a loopback, link-local or private address: an
    /// allowed name that resolves to one is refused (no DNS rebinding into the machine).
    pub fn names_address(&self) -> bool {
        self.host == "localhost"
            || self.host.starts_with('[')
            || self.host.parse::<std::net::Ipv4Addr>().is_ok()
    }
}

impl fmt::Display for HostPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.host)?;
        match self.port {
            Some(port) => write!(f, ":{port}"),
            None => Ok(()),
        }
    }
}

/// Recorded as written canonically (`run_start`'s sandbox, a network event's rule).
impl Serialize for HostPattern {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl std::str::FromStr for HostPattern {
    type Err = HostError;
    fn from_str(written: &str) -> Result<Self, Self::Err> {
        parse(written)
    }
}

/// What a host entry may look like, for every message that refuses one.
const FORMS: &str =
    "example.org, *.example.org, 10.0.0.5, [::1] or localhost, each optionally :PORT";

/// Why an entry is not a host; each message says what to write instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostError {
    #[error("the host is empty; write a host name ({FORMS})")]
    Empty,
    #[error("{written:?} must be a host name, not a URL: write {suggestion:?} ({FORMS})")]
    Url { written: String, suggestion: String },
    #[error("{0:?} must be a host name ({FORMS}) without a path, query or credentials")]
    NotAHost(String),
    #[error(
        "{0:?} would allow every host: write `network: true` for the whole network, or name the hosts ({FORMS})"
    )]
    Everything(String),
    #[error("{0:?}: a wildcard is written once, at the start (*.example.org: its subdomains)")]
    Wildcard(String),
    #[error(
        "{0:?}: a wildcard stands for subdomains of a name, not of an IP address; name the address itself"
    )]
    WildcardAddress(String),
    #[error(
        "{written:?}: an IPv6 address is written in brackets: [{address}] (with a port: [{address}]:443)"
    )]
    BareIpv6 { written: String, address: String },
    #[error("{0:?}: the port is missing after `:`; write a port from 1 to 65535, or no `:`")]
    NoPort(String),
    #[error("{0:?}: port 0 names no port; write a port from 1 to 65535")]
    PortZero(String),
    #[error("{written:?}: {port:?} is not a port; write a port from 1 to 65535")]
    BadPort { written: String, port: String },
    #[error(
        "{written:?} reads as the IPv4 address {address}: write it so, with four numbers, or name a host"
    )]
    ShortAddress { written: String, address: String },
    #[error("{written:?} is not a host name ({reason}); write {FORMS}")]
    Unparsable { written: String, reason: String },
}

/// `written` as a [`HostPattern`], or why it is none.
pub(super) fn parse(written: &str) -> Result<HostPattern, HostError> {
    if written.is_empty() {
        return Err(HostError::Empty);
    }
    if written.contains("://") {
        return Err(HostError::Url {
            written: written.to_string(),
            suggestion: url_host(written).unwrap_or_else(|| "example.org".to_string()),
        });
    }
    let not_a_host = |c: char| matches!(c, '/' | '@' | '?' | '#' | '\\' | '%') || c.is_whitespace();
    if written.contains(not_a_host) {
        return Err(HostError::NotAHost(written.to_string()));
    }
    let (host, port) = split_port(written)?;
    let (wildcard, name) = match host.strip_prefix("*.") {
        Some(rest) => (true, rest),
        None => (false, host),
    };
    if host == "*" || name == "*" {
        return Err(HostError::Everything(written.to_string()));
    }
    if name.contains('*') {
        return Err(HostError::Wildcard(written.to_string()));
    }
    let (normal, is_name) = normalised(written, name)?;
    if wildcard && !is_name {
        return Err(HostError::WildcardAddress(written.to_string()));
    }
    Ok(HostPattern {
        host: if wildcard {
            format!("*.{normal}")
        } else {
            normal
        },
        port,
    })
}

/// The host (and port) of a URL written where a host belongs, to say what to write.
fn url_host(written: &str) -> Option<String> {
    let url = Url::parse(written).ok()?;
    let host = url.host_str()?.trim_end_matches('.').to_ascii_lowercase();
    Some(match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host,
    })
}

/// `written` split at its port: `[::1]:8080`, `example.org:443`, `example.org`.
fn split_port(written: &str) -> Result<(&str, Option<u16>), HostError> {
    let (host, port) = if written.trim_start_matches("*.").starts_with('[') {
        let close = written
            .find(']')
            .ok_or_else(|| HostError::NotAHost(written.to_string()))?;
        let (host, rest) = written.split_at(close + 1);
        match rest.strip_prefix(':') {
            Some(port) => (host, Some(port)),
            None if rest.is_empty() => (host, None),
            None => return Err(HostError::NotAHost(written.to_string())),
        }
    } else {
        match written.matches(':').count() {
            0 => (written, None),
            1 => written
                .split_once(':')
                .map(|(host, port)| (host, Some(port)))
                .ok_or_else(|| HostError::NotAHost(written.to_string()))?,
            _ => {
                return Err(HostError::BareIpv6 {
                    written: written.to_string(),
                    address: written.to_string(),
                });
            }
        }
    };
    let port = port.map(|port| port_number(written, port)).transpose()?;
    Ok((host, port))
}

fn port_number(written: &str, port: &str) -> Result<u16, HostError> {
    if port.is_empty() {
        return Err(HostError::NoPort(written.to_string()));
    }
    let bad = || HostError::BadPort {
        written: written.to_string(),
        port: port.to_string(),
    };
    if !port.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    match port.parse::<u16>() {
        Ok(0) => Err(HostError::PortZero(written.to_string())),
        Ok(port) => Ok(port),
        Err(_) => Err(bad()),
    }
}

/// `name` (no port, no wildcard) as the URL parser normalises a host, and whether it is
/// a domain name (not an IP address).
fn normalised(written: &str, name: &str) -> Result<(String, bool), HostError> {
    if name.is_empty() {
        return Err(HostError::Empty);
    }
    let unparsable = |reason: String| HostError::Unparsable {
        written: written.to_string(),
        reason,
    };
    let url = Url::parse(&format!("http://{name}/")).map_err(|e| unparsable(e.to_string()))?;
    let is_name = matches!(url.host(), Some(Host::Domain(_)));
    let host = url
        .host_str()
        .unwrap_or_default()
        .trim_end_matches('.')
        .to_ascii_lowercase();
    if host.is_empty() {
        return Err(unparsable("it names no host".to_string()));
    }
    // The URL parser reads `8080`, `127.1` and `0x7f.1` as IPv4 addresses; an address
    // is taken only as it is usually written, so a mistyped entry is not one by accident.
    if matches!(url.host(), Some(Host::Ipv4(_)))
        && name.trim_end_matches('.').to_ascii_lowercase() != host
    {
        return Err(HostError::ShortAddress {
            written: written.to_string(),
            address: host,
        });
    }
    Ok((host, is_name))
}

#[cfg(test)]
#[path = "host_tests.rs"]
mod tests;
