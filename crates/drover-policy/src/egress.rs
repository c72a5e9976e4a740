//! Judging the connections of sandboxed commands: which host and port the task's network
//! rules open, and which addresses a connection to an allowed host may go to.
//!
//! The egress proxy asks twice. First by name, before anything is resolved ([`judge`]):
//! a name the rules refuse never reaches the resolver, so a denied name leaks nothing
//! through DNS. Then for every address the name resolved to ([`address_allowed`]): the
//! rules name hosts, but what a name resolves to is not the rule writer's to see (a
//! name that resolves, or re-resolves, to 169.254.169.254 or 127.0.0.1), so a loopback,
//! link-local, private or reserved address is reached only when an allow entry names
//! that address itself, or `localhost` for a loopback address of the name `localhost`.
//!
//! The entries are plain data (a normalised host or `*.suffix` and an optional port),
//! so this knows nothing of the spec that wrote them; matching is WebFetch's `domain:`
//! matching (`web`): `*.example.com` covers subdomains only, a deny entry naming
//! `example.com` covers its subdomains too, and deny wins.
//!
//! [`judge`]: EgressRules::judge
//! [`address_allowed`]: EgressRules::address_allowed

use std::fmt;
use std::net::IpAddr;

use url::{Host, Url};

use crate::web::{AddressKind, DomainMatch, domain_covers, restricted_ip, rule_domain};

/// The ports an allow entry without a port opens: HTTPS and HTTP.
pub const DEFAULT_PORTS: [u16; 2] = [443, 80];

/// A host a connection names, normalised the way entries are: a DNS name (lowercase,
/// punycode, no trailing dot) or an IP address (IPv4-mapped IPv6 taken as the IPv4 one).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum EgressHost {
    Name(String),
    Address(IpAddr),
}

/// Why a host a client sent is no host.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{written:?} is not a host name or IP address")]
pub struct HostError {
    /// What the client wrote, cut to 100 characters.
    pub written: String,
}

impl EgressHost {
    /// Normalise a host as a client wrote it (a CONNECT line, a URL, a SOCKS5 request):
    /// IP literals in any notation a URL accepts (`2130706433`, `0x7f.1`, `[::1]`) are
    /// the address they stand for, names are lowercase punycode without trailing dot.
    pub fn parse(written: &str) -> Result<Self, HostError> {
        let refuse = || HostError {
            written: written.chars().take(100).collect(),
        };
        let bracketed = written.starts_with('[') && written.ends_with(']');
        // What a URL's authority would end at, or take as credentials, is no host.
        let bad = |c: char| {
            c.is_control() || c.is_whitespace() || matches!(c, '/' | '@' | '?' | '#' | '\\' | '*')
        };
        if written.is_empty() || written.contains(bad) || (!bracketed && written.contains(':')) {
            return Err(refuse());
        }
        let url = Url::parse(&format!("http://{written}/")).map_err(|_| refuse())?;
        match url.host() {
            Some(Host::Ipv4(ip)) => Ok(EgressHost::from(IpAddr::V4(ip))),
            Some(Host::Ipv6(ip)) => Ok(EgressHost::from(IpAddr::V6(ip))),
            Some(Host::Domain(name)) => {
                let name = name.trim_end_matches('.');
                if name.is_empty() {
                    Err(refuse())
                } else {
                    Ok(EgressHost::Name(name.to_ascii_lowercase()))
                }
            }
            None => Err(refuse()),
        }
    }

    /// The address, for a host that is one.
    pub fn address(&self) -> Option<IpAddr> {
        match self {
            EgressHost::Address(ip) => Some(*ip),
            EgressHost::Name(_) => None,
        }
    }
}

impl From<IpAddr> for EgressHost {
    fn from(ip: IpAddr) -> Self {
        EgressHost::Address(canonical(ip))
    }
}

/// As entries are written: `example.com`, `10.0.0.5`, `[::1]`.
impl fmt::Display for EgressHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EgressHost::Name(name) => f.write_str(name),
            EgressHost::Address(IpAddr::V4(ip)) => write!(f, "{ip}"),
            EgressHost::Address(IpAddr::V6(ip)) => write!(f, "[{ip}]"),
        }
    }
}

/// An IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) is the IPv4 address: one address,
/// one judgement, whichever way it is written.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_canonical(),
        v4 => v4,
    }
}

/// `host:port`, IPv6 in brackets.
fn host_port(host: &EgressHost, port: u16) -> String {
    format!("{host}:{port}")
}

/// One allow or deny entry, compiled.
#[derive(Debug, Clone)]
struct Entry {
    /// `example.com`, `*.example.com`, `10.0.0.5` or `[::1]` (normalised).
    pattern: String,
    /// The address the entry names, when it names one.
    address: Option<IpAddr>,
    /// None: 443 and 80 for an allow entry, every port for a deny entry.
    port: Option<u16>,
    /// The entry as events and refusals name it.
    text: String,
}

impl Entry {
    fn new(written: &str, port: Option<u16>, from: Option<&str>) -> Result<Entry, EgressRuleError> {
        let shown = match port {
            Some(port) => format!("{written}:{port}"),
            None => written.to_string(),
        };
        let invalid = |reason: String| EgressRuleError {
            entry: shown.clone(),
            reason,
        };
        if port == Some(0) {
            return Err(invalid("port 0 is no port".to_string()));
        }
        let normalised = rule_domain(written).map_err(|error| invalid(error.to_string()))?;
        let (pattern, address) = if normalised.starts_with("*.") {
            (normalised, None)
        } else {
            let host =
                EgressHost::parse(&normalised).map_err(|error| invalid(error.to_string()))?;
            (host.to_string(), host.address())
        };
        let text = match (port, from) {
            (Some(port), None) => format!("{pattern}:{port}"),
            (None, None) => pattern.clone(),
            (Some(port), Some(from)) => format!("{pattern}:{port} ({from})"),
            (None, Some(from)) => format!("{pattern} ({from})"),
        };
        Ok(Entry {
            pattern,
            address,
            port,
            text,
        })
    }

    /// How this entry, as an allow entry, covers `host`.
    fn allow_covers(&self, host: &str) -> Option<DomainMatch> {
        domain_covers(&self.pattern, host)
    }

    /// Whether this entry, as a deny entry, covers `host`: its subdomains too, so a deny
    /// list naming `evil.com` does not fail open for `sub.evil.com`.
    fn deny_covers(&self, host: &str) -> bool {
        domain_covers(&self.pattern, host).is_some()
            || (self.address.is_none()
                && !self.pattern.starts_with('*')
                && domain_covers(&format!("*.{}", self.pattern), host).is_some())
    }

    fn allows_port(&self, port: u16) -> bool {
        match self.port {
            Some(own) => own == port,
            None => DEFAULT_PORTS.contains(&port),
        }
    }

    fn denies_port(&self, port: u16) -> bool {
        self.port.is_none_or(|own| own == port)
    }
}

/// Why an entry cannot be compiled; the spec checks entries first, so this is a
/// backstop that fails closed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("network entry {entry}: {reason}")]
pub struct EgressRuleError {
    pub entry: String,
    pub reason: String,
}

/// A task's network rules: allow and deny entries, deny by default.
#[derive(Debug, Clone, Default)]
pub struct EgressRules {
    allow: Vec<Entry>,
    deny: Vec<Entry>,
}

/// The judgement of a host and port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EgressVerdict {
    /// The allow entry that opens it, as events name it.
    Allowed { rule: String },
    /// The deny entry that refused it (None: no allow entry covers it), and why, in
    /// words for the agent.
    Denied {
        rule: Option<String>,
        reason: String,
    },
}

impl EgressVerdict {
    pub fn allowed(&self) -> bool {
        matches!(self, EgressVerdict::Allowed { .. })
    }

    /// The entry that decided, if one did.
    pub fn rule(&self) -> Option<&str> {
        match self {
            EgressVerdict::Allowed { rule } => Some(rule),
            EgressVerdict::Denied { rule, .. } => rule.as_deref(),
        }
    }
}

/// Why a resolved address may not be connected to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct AddressRefused {
    /// The deny entry naming the address, if one did.
    pub rule: Option<String>,
    pub reason: String,
}

/// One entry as plain data: a host (`example.com`, `*.example.com`, `10.0.0.5`,
/// `[::1]`) and an optional port.
pub type EntryData = (String, Option<u16>);

impl EgressRules {
    /// Compile `allow` and `deny` entries. An entry that is no host fails the whole set:
    /// a rule set missing one of its entries would judge other than its writer meant.
    pub fn new(allow: &[EntryData], deny: &[EntryData]) -> Result<Self, EgressRuleError> {
        let compile = |entries: &[EntryData]| {
            entries
                .iter()
                .map(|(host, port)| Entry::new(host, *port, None))
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(EgressRules {
            allow: compile(allow)?,
            deny: compile(deny)?,
        })
    }

    /// The same rules with the hosts of a preset allowed too; events name them with the
    /// preset (`registry.npmjs.org (registries: npm)`).
    pub fn with_preset(
        mut self,
        preset: &str,
        hosts: &[EntryData],
    ) -> Result<Self, EgressRuleError> {
        for (host, port) in hosts {
            self.allow.push(Entry::new(host, *port, Some(preset))?);
        }
        Ok(self)
    }

    /// Judge a host as a client wrote it and a port, before anything is resolved.
    pub fn judge(&self, host: &str, port: u16) -> EgressVerdict {
        match EgressHost::parse(host) {
            Ok(host) => self.judge_host(&host, port),
            Err(error) => EgressVerdict::Denied {
                rule: None,
                reason: error.to_string(),
            },
        }
    }

    /// Judge a normalised host and a port: a deny entry covering both refuses, then an
    /// allow entry naming the host exactly opens it, then a wildcard one.
    pub fn judge_host(&self, host: &EgressHost, port: u16) -> EgressVerdict {
        let name = host.to_string();
        if port == 0 {
            return EgressVerdict::Denied {
                rule: None,
                reason: "port 0 is no port".to_string(),
            };
        }
        if let Some(entry) = self
            .deny
            .iter()
            .find(|entry| entry.denies_port(port) && entry.deny_covers(&name))
        {
            return EgressVerdict::Denied {
                rule: Some(entry.text.clone()),
                reason: format!("denied by {}", entry.text),
            };
        }
        let covering = |wanted: DomainMatch| {
            self.allow
                .iter()
                .find(|entry| entry.allows_port(port) && entry.allow_covers(&name) == Some(wanted))
        };
        if let Some(entry) =
            covering(DomainMatch::Exact).or_else(|| covering(DomainMatch::Wildcard))
        {
            return EgressVerdict::Allowed {
                rule: entry.text.clone(),
            };
        }
        EgressVerdict::Denied {
            rule: None,
            reason: self.no_allow_reason(&name, port),
        }
    }

    /// "no allow rule", with the ports that are open to the host when some are (a rule
    /// for `example.com` opens 443 and 80, not 8443).
    fn no_allow_reason(&self, name: &str, port: u16) -> String {
        let other: Vec<&Entry> = self
            .allow
            .iter()
            .filter(|entry| entry.allow_covers(name).is_some())
            .collect();
        if other.is_empty() {
            "no allow rule".to_string()
        } else {
            let open = if other.iter().any(|entry| entry.port.is_none()) {
                " (an entry without a port opens 443 and 80 only)"
            } else {
                ""
            };
            format!(
                "no allow rule for port {port}; the entries for this host: {}{open}",
                other
                    .iter()
                    .map(|entry| entry.text.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    }

    /// May a connection to `host:port`, already judged allowed, go to `ip` (one address
    /// the host resolved to, or the host's own address)? A public address may, unless
    /// a deny entry names it; a loopback, link-local, private or otherwise reserved one
    /// only when an allow entry names that exact address for the port, or, for a
    /// loopback address of the name `localhost`, when an allow entry names `localhost`
    /// for the port.
    pub fn address_allowed(
        &self,
        host: &EgressHost,
        port: u16,
        ip: IpAddr,
    ) -> Result<(), AddressRefused> {
        let ip = canonical(ip);
        let shown = host_port(&EgressHost::Address(ip), port);
        if let Some(entry) = self
            .deny
            .iter()
            .find(|entry| entry.address == Some(ip) && entry.denies_port(port))
        {
            return Err(AddressRefused {
                rule: Some(entry.text.clone()),
                reason: format!("{host} resolves to {shown}, denied by {}", entry.text),
            });
        }
        let Some(kind) = restricted_ip(ip) else {
            return Ok(());
        };
        let names_address = self
            .allow
            .iter()
            .any(|entry| entry.address == Some(ip) && entry.allows_port(port));
        let localhost = matches!(host, EgressHost::Name(name) if name == "localhost");
        let names_localhost = kind == AddressKind::Loopback
            && localhost
            && self
                .allow
                .iter()
                .any(|entry| entry.pattern == "localhost" && entry.allows_port(port));
        if names_address || names_localhost {
            return Ok(());
        }
        let entry = match (kind, localhost) {
            (AddressKind::Loopback, true) => format!("localhost:{port} or {shown}"),
            _ => shown.clone(),
        };
        Err(AddressRefused {
            rule: None,
            reason: if host.address() == Some(ip) {
                format!("{shown} is {kind}, opened only by an allow entry naming {entry}")
            } else {
                format!(
                    "{host} resolves to {shown}, {kind}, which only an allow entry naming {entry} opens"
                )
            },
        })
    }
}

#[cfg(test)]
#[path = "egress_tests.rs"]
mod tests;
