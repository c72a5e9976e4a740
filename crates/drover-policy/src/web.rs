//! Deciding WebFetch calls: which hosts the rules open, and which addresses stay closed
//! unless a rule names the exact host. drover often runs on a CI machine whose network
//! reaches things the agent must not (cloud metadata at 169.254.169.254, the runner's
//! own services on loopback, the private network): the runner's network is not the
//! agent's, so a wildcard or a bare `WebFetch` rule never opens those.
//!
//! The same judgement serves the policy (the first URL of a call) and the tool (every
//! redirect hop), through [`judge_url`] and a [`WebGrants`] lookup.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use url::{Host, Url};

use super::{Decision, Grounds, Policy, Rule, Specifier, ToolFacts};

/// What the rules grant for one host (normalised: lowercase, punycode, no trailing dot).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostGrant {
    /// An allow rule covers the host and no deny rule does.
    pub allowed: bool,
    /// An allow rule names exactly this host, and the host is an IP address or
    /// `localhost`: only such a rule opens a loopback, private or link-local address. A
    /// DNS name never does, even named exactly: what it resolves to is not the rule
    /// writer's to see (a name that resolves, or re-resolves, to 169.254.169.254).
    pub named_exactly: bool,
    /// The rule that decided (the deny rule, or the allow rule), as written.
    pub rule: Option<String>,
}

/// The rules' grant for a host, as the tool asks it for every hop of a fetch.
pub type WebGrants = dyn Fn(&str) -> HostGrant + Send + Sync;

/// A URL the rules let WebFetch fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlGrant {
    /// What to fetch: `http` upgraded to `https` except for an exactly named loopback host.
    pub url: Url,
    /// The host as the rules judged it.
    pub host: String,
    pub grant: HostGrant,
}

/// Why a URL may not be fetched; the reason is worded for the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct UrlRefused {
    /// The deny rule that refused it, if one did.
    pub rule: Option<String>,
    pub reason: String,
}

/// Judge `url` by `grants`: a well-formed http(s) URL without credentials, to a host the
/// rules allow, and (for an address no rule may open by wildcard) named exactly.
pub fn judge_url(url: &Url, grants: &dyn Fn(&str) -> HostGrant) -> Result<UrlGrant, UrlRefused> {
    let refuse = |reason: String| UrlRefused { rule: None, reason };
    if !matches!(url.scheme(), "http" | "https") {
        return Err(refuse(format!(
            "{url} is not an http:// or https:// URL; WebFetch fetches only web pages"
        )));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(refuse(
            "the URL carries credentials (user:password@); WebFetch never sends credentials, write the URL without them".to_string(),
        ));
    }
    let Some(host) = normalised_host(url) else {
        return Err(refuse(format!("{url} names no host")));
    };
    let grant = grants(&host);
    if !grant.allowed {
        return Err(match grant.rule {
            Some(rule) => UrlRefused {
                reason: format!("WebFetch of host {host} is denied by rule {rule}"),
                rule: Some(rule),
            },
            None => refuse(format!(
                "WebFetch of host {host} matches no allow rule (default deny); add WebFetch(domain:{host}) to permissions.allow if the task needs it"
            )),
        });
    }
    let restricted = restricted_host(url);
    if let Some(kind) = restricted
        && !grant.named_exactly
    {
        return Err(refuse(format!(
            "{host} is {kind}, which WebFetch reaches only when an allow rule names exactly this host, as in WebFetch(domain:{host}); a wildcard or a bare WebFetch rule does not open it"
        )));
    }
    let mut url = url.clone();
    // Plain http stays only for a loopback host a rule names: a local test server.
    let keep_http = restricted == Some(AddressKind::Loopback) && grant.named_exactly;
    if url.scheme() == "http" && !keep_http {
        // Err only for a scheme change url refuses (never between http and https).
        let _ = url.set_scheme("https");
    }
    Ok(UrlGrant { url, host, grant })
}

/// The host of `url` as rules name it: lowercase and punycode (the url crate's), IP
/// literals in their canonical form (IPv6 in brackets), without a trailing dot.
pub(crate) fn normalised_host(url: &Url) -> Option<String> {
    let host = url.host_str()?.trim_end_matches('.');
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

/// A class of addresses no wildcard opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressKind {
    Loopback,
    LinkLocal,
    Private,
    Unspecified,
    Multicast,
    Broadcast,
    Reserved,
}

impl std::fmt::Display for AddressKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            AddressKind::Loopback => "a loopback address",
            AddressKind::LinkLocal => "a link-local address (where cloud metadata services live)",
            AddressKind::Private => "a private-network address",
            AddressKind::Unspecified => "the unspecified address",
            AddressKind::Multicast => "a multicast address",
            AddressKind::Broadcast => "the broadcast address",
            AddressKind::Reserved => "a reserved address",
        })
    }
}

/// The restricted class of `url`'s host when it is an IP literal (in any notation the
/// url crate accepts: `2130706433`, `0x7f.1`, `[::ffff:127.0.0.1]`) or a `localhost`
/// name; None for other names, whose addresses are judged when they are resolved.
pub(crate) fn restricted_host(url: &Url) -> Option<AddressKind> {
    match url.host()? {
        Host::Ipv4(ip) => restricted_ip(IpAddr::V4(ip)),
        Host::Ipv6(ip) => restricted_ip(IpAddr::V6(ip)),
        Host::Domain(name) => {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            (name == "localhost" || name.ends_with(".localhost")).then_some(AddressKind::Loopback)
        }
    }
}

/// The restricted class of an address, or None for a public one.
pub fn restricted_ip(ip: IpAddr) -> Option<AddressKind> {
    match ip {
        IpAddr::V4(ip) => restricted_v4(ip),
        IpAddr::V6(ip) => restricted_v6(ip),
    }
}

fn restricted_v4(ip: Ipv4Addr) -> Option<AddressKind> {
    let [a, b, ..] = ip.octets();
    if ip.is_broadcast() {
        Some(AddressKind::Broadcast)
    } else if a == 0 {
        // 0.0.0.0/8, "this network": 0.0.0.0 reaches the local host on Linux.
        Some(AddressKind::Unspecified)
    } else if ip.is_loopback() {
        Some(AddressKind::Loopback)
    } else if ip.is_link_local() {
        Some(AddressKind::LinkLocal)
    } else if ip.is_private() || (a == 100 && (b & 0xc0) == 64) {
        // 10/8, 172.16/12, 192.168/16, and 100.64/10 (carrier-grade NAT).
        Some(AddressKind::Private)
    } else if ip.is_multicast() {
        Some(AddressKind::Multicast)
    } else if a >= 240
        || (a == 192 && b == 0 && ip.octets()[2] == 0)
        || (a == 198 && (b & 0xfe) == 18)
    {
        // 240/4, 192.0.0/24 (protocol assignments), 198.18/15 (benchmarking).
        Some(AddressKind::Reserved)
    } else {
        None
    }
}

fn restricted_v6(ip: Ipv6Addr) -> Option<AddressKind> {
    // An IPv4 address carried in IPv6 (mapped ::ffff:a.b.c.d, compatible ::a.b.c.d,
    // NAT64 64:ff9b::/96, 6to4 2002::/16) reaches the IPv4 host: judge that.
    if let Some(v4) = embedded_v4(ip) {
        return restricted_v4(v4);
    }
    let segments = ip.segments();
    let first = segments[0];
    if ip.is_unspecified() {
        Some(AddressKind::Unspecified)
    } else if ip.is_loopback() {
        Some(AddressKind::Loopback)
    } else if (first & 0xffc0) == 0xfe80 {
        Some(AddressKind::LinkLocal)
    } else if (first & 0xfe00) == 0xfc00 || (first & 0xffc0) == 0xfec0 {
        // fc00::/7 unique local, fec0::/10 the old site-local.
        Some(AddressKind::Private)
    } else if ip.is_multicast() {
        Some(AddressKind::Multicast)
    } else if (first == 0x2001 && segments[1] == 0)
        || (first == 0x0100 && segments[1..4] == [0, 0, 0])
    {
        // 2001::/32 Teredo (tunnels to an IPv4 host), 100::/64 discard-only.
        Some(AddressKind::Reserved)
    } else {
        None
    }
}

/// The IPv4 address an IPv6 address stands for, if it embeds one.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return Some(v4);
    }
    let s = ip.segments();
    let low = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    if s[..6] == [0; 6] && !ip.is_unspecified() && !ip.is_loopback() {
        return Some(low); // ::a.b.c.d (IPv4-compatible, deprecated but routed by some)
    }
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return Some(low);
    }
    // ::ffff:0:a.b.c.d (SIIT) and 64:ff9b:1::/48 (local-use NAT64) translate too.
    if s[..6] == [0, 0, 0, 0, 0xffff, 0] || s[..3] == [0x64, 0xff9b, 1] {
        return Some(low);
    }
    if s[0] == 0x2002 {
        return Some(Ipv4Addr::new(
            (s[1] >> 8) as u8,
            s[1] as u8,
            (s[2] >> 8) as u8,
            s[2] as u8,
        ));
    }
    None
}

/// Why a rule's `domain:` value names no host a rule can hold.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DomainError {
    #[error(
        "domain:{0} must be a host name (example.com, *.example.com, 127.0.0.1, [::1]) without scheme, port or path"
    )]
    NotAHost(String),
    #[error("domain:{written}: {source}")]
    Unparsable {
        written: String,
        source: url::ParseError,
    },
    #[error("domain:{0} names no host")]
    NoHost(String),
    #[error("domain:{0}: a wildcard stands for subdomains of a name, not of an IP address")]
    WildcardAddress(String),
}

/// A rule's `domain:` value normalised as hosts are: `example.com`, `*.example.com`
/// (subdomains only), an IPv4 address or a bracketed IPv6 one. No port, path or
/// credentials: the rule names a host.
pub(crate) fn rule_domain(written: &str) -> Result<String, DomainError> {
    let (wildcard, name) = match written.strip_prefix("*.") {
        Some(rest) => (true, rest),
        None => (false, written),
    };
    let bracketed = name.starts_with('[') && name.ends_with(']');
    let bad_char = |c: char| matches!(c, '/' | '@' | '?' | '#' | '\\' | '*' | ' ');
    if name.is_empty() || name.contains(bad_char) || (!bracketed && name.contains(':')) {
        return Err(DomainError::NotAHost(written.to_string()));
    }
    let parsed =
        Url::parse(&format!("http://{name}/")).map_err(|source| DomainError::Unparsable {
            written: written.to_string(),
            source,
        })?;
    let Some(host) = normalised_host(&parsed) else {
        return Err(DomainError::NoHost(written.to_string()));
    };
    if wildcard && !matches!(parsed.host(), Some(Host::Domain(_))) {
        return Err(DomainError::WildcardAddress(written.to_string()));
    }
    Ok(if wildcard { format!("*.{host}") } else { host })
}

/// How a rule's domain covers a host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DomainMatch {
    /// The rule names this host.
    Exact,
    /// `*.example.com` and a subdomain of example.com (never example.com itself).
    Wildcard,
}

/// Does the (normalised) rule domain `pattern` cover the (normalised) `host`?
pub(crate) fn domain_covers(pattern: &str, host: &str) -> Option<DomainMatch> {
    if pattern == host {
        return Some(DomainMatch::Exact);
    }
    let suffix = pattern.strip_prefix('*')?;
    let is_ip = host.starts_with('[') || host.parse::<Ipv4Addr>().is_ok();
    (!is_ip && host.len() > suffix.len() && host.ends_with(suffix)).then_some(DomainMatch::Wildcard)
}

impl Policy {
    /// What the rules grant `tool` (WebFetch) for `host`: deny rules first (a bare one,
    /// or a domain covering the host), then an allow rule naming the host exactly, then
    /// a wildcard or a bare allow rule.
    pub fn web_grant(&self, tool: &ToolFacts, host: &str) -> HostGrant {
        web_grant(&self.allow, &self.deny, tool, host)
    }

    /// The grant lookup for the WebFetch tool of this run (rules copied, so it lives as
    /// long as the run's tools).
    pub fn web_grants(&self, tool: ToolFacts) -> std::sync::Arc<WebGrants> {
        let (allow, deny) = (self.allow.clone(), self.deny.clone());
        std::sync::Arc::new(move |host: &str| web_grant(&allow, &deny, &tool, host))
    }

    /// Decide a call that names the URL `raw`.
    pub(super) fn decide_url(&self, tool: &ToolFacts, raw: &str) -> Decision {
        let name = &tool.name;
        let url = match Url::parse(raw.trim()) {
            Ok(url) => url,
            Err(error) => {
                return Decision::deny(
                    None,
                    format!(
                        "{name}: {raw:?} is not a valid URL ({error}); write a full URL such as https://example.com/page"
                    ),
                );
            }
        };
        let grants = |host: &str| self.web_grant(tool, host);
        match judge_url(&url, &grants) {
            Ok(granted) => {
                let reason = format!(
                    "{name}({}) is allowed by rule {}",
                    granted.host,
                    granted.grant.rule.as_deref().unwrap_or("?")
                );
                Decision::Allow(Grounds::new(granted.grant.rule, reason))
            }
            Err(refused) => Decision::Deny(Grounds::new(refused.rule, refused.reason)),
        }
    }
}

fn web_grant(allow: &[Rule], deny: &[Rule], tool: &ToolFacts, host: &str) -> HostGrant {
    let covers = |rule: &Rule| match rule.specifier() {
        None => Some(None),
        Some(Specifier::Domain(pattern)) => domain_covers(pattern, host).map(Some),
        Some(_) => None,
    };
    let governing = |rules: &[Rule]| -> Vec<(Rule, Option<DomainMatch>)> {
        rules
            .iter()
            .filter(|rule| rule.governs_tool(tool))
            .filter_map(|rule| covers(rule).map(|m| (rule.clone(), m)))
            .collect()
    };
    // A deny rule naming a domain covers its subdomains too: a deny list must not fail
    // open for `sub.evil.com` when it names `evil.com`.
    let denies = |rule: &Rule| match rule.specifier() {
        None => true,
        Some(Specifier::Domain(pattern)) => {
            domain_covers(pattern, host).is_some()
                || (!pattern.starts_with('*')
                    && domain_covers(&format!("*.{pattern}"), host).is_some())
        }
        Some(_) => false,
    };
    if let Some(rule) = deny
        .iter()
        .find(|rule| rule.governs_tool(tool) && denies(rule))
    {
        return HostGrant {
            allowed: false,
            named_exactly: false,
            rule: Some(rule.text().to_string()),
        };
    }
    let literal_or_localhost = host.starts_with('[')
        || host.parse::<Ipv4Addr>().is_ok()
        || host == "localhost"
        || host.ends_with(".localhost");
    let allowed = governing(allow);
    let exact = allowed.iter().find(|(_, m)| *m == Some(DomainMatch::Exact));
    match exact.or(allowed.first()) {
        Some((rule, m)) => HostGrant {
            allowed: true,
            named_exactly: *m == Some(DomainMatch::Exact) && literal_or_localhost,
            rule: Some(rule.text().to_string()),
        },
        None => HostGrant::default(),
    }
}

#[cfg(test)]
#[path = "web_tests.rs"]
mod tests;
