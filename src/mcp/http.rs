//! MCP servers over streamable HTTP (`url:`): both protocol eras, as over stdio — the
//! stateless 2026-07-28 revision and the legacy session (`Mcp-Session-Id`), which rmcp's
//! transport keeps. drover does not start these servers; it connects from its own
//! process, so the sandbox does not apply to them (docs/mcp.md says so).
//!
//! Headers take `${VAR}` values from drover's environment when the server is reached:
//! a token is never written in a spec, and the task's redactor and command environment
//! treat every variable a header names as a secret (see `run::task::redaction`).

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use reqwest::header::{HeaderName, HeaderValue};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

use super::vars::{VarSource, expand};
use crate::http_client::RefusedRedirects;

/// Headers the transport sets itself; a spec may not set them (checked when the spec is).
/// Whether `name` (lowercase) is a header the transport sets itself: one of
/// [`RESERVED_HEADERS`], or any `Mcp-` header (`Mcp-Method`, `Mcp-Name`, and those later
/// revisions add), which a gateway must see as the request says.
pub(crate) fn reserved_header(name: &str) -> bool {
    RESERVED_HEADERS.contains(&name) || name.starts_with("mcp-")
}

pub(crate) const RESERVED_HEADERS: &[&str] = &[
    "accept",
    "content-type",
    "content-length",
    "host",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
    // Hop-by-hop: the HTTP client's own business.
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// Why a connection to an HTTP server cannot even be tried.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HttpSetupError {
    #[error("header {name}: its value (after ${{VAR}} expansion) is not a valid HTTP header value")]
    HeaderValue { name: String },
    #[error("header {name:?} is not a valid HTTP header name")]
    HeaderName { name: String },
    #[error("cannot build the HTTP client: {0}")]
    Client(#[from] reqwest::Error),
}

/// The headers sent with every request to a server: its `headers:` (values expanded)
/// and those its headers helper printed (taken as they are), which win over a `headers:`
/// entry of the same name, as in Claude Code.
pub(crate) struct Headers<'a> {
    pub written: &'a BTreeMap<String, String>,
    pub vars: &'a VarSource,
    pub helper: &'a BTreeMap<String, String>,
}

/// The transport to `url`, sending `headers` with every request; the redirects it
/// refuses are noted in `refused`.
pub(crate) fn transport(
    url: &str,
    headers: &Headers<'_>,
    connect_timeout: Duration,
    refused: &RefusedRedirects,
) -> Result<StreamableHttpClientTransport<reqwest::Client>, HttpSetupError> {
    let sends_headers = !headers.written.is_empty() || !headers.helper.is_empty();
    if sends_headers && plain_http_off_machine(url) {
        crate::esay!(
            "drover: warning: MCP server at {url}: its headers go over plain http:// to another machine; use https://"
        );
    }
    // A redirect could carry the headers (a token) to another host: like every client
    // of drover's, this one follows none, and the handshake fails naming the Location.
    let client = crate::http_client::builder_noting(refused)
        .connect_timeout(connect_timeout)
        .build()?;
    let config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(header_map(
        headers.written,
        headers.vars,
        headers.helper,
    )?);
    Ok(StreamableHttpClientTransport::with_client(client, config))
}

fn header_map(
    written: &BTreeMap<String, String>,
    vars: &VarSource,
    helper: &BTreeMap<String, String>,
) -> Result<HashMap<HeaderName, HeaderValue>, HttpSetupError> {
    let mut map = HashMap::new();
    let expanded = written
        .iter()
        .map(|(name, value)| (name, expand(value, vars)));
    // A helper's values are sent as printed: a `${VAR}` in them is text, never a variable
    // of drover's to expand.
    let printed = helper.iter().map(|(name, value)| (name, value.clone()));
    for (name, value) in expanded.chain(printed) {
        let header = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| HttpSetupError::HeaderName { name: name.clone() })?;
        let mut value = HeaderValue::from_str(&value)
            .map_err(|_| HttpSetupError::HeaderValue { name: name.clone() })?;
        value.set_sensitive(true);
        // Names are case-insensitive: a helper's `authorization` replaces `Authorization`.
        map.insert(header, value);
    }
    Ok(map)
}

/// An `http://` URL whose host is not this machine: what it sends can be read on the way.
fn plain_http_off_machine(url: &str) -> bool {
    let Ok(parsed) = reqwest::Url::parse(url) else {
        return false;
    };
    let host = parsed.host_str().unwrap_or_default();
    let ip = host.trim_start_matches('[').trim_end_matches(']');
    let loopback = host == "localhost"
        || ip
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    parsed.scheme() == "http" && !loopback
}

/// Why a `url:`/`headers:` entry cannot be used, for the spec check; None when fine. A
/// URL with `${VAR}` in it is checked once expanded, when its server starts.
pub(crate) fn endpoint_problem(url: &str, headers: &BTreeMap<String, String>) -> Option<String> {
    if url.contains("${") {
        return headers_problem(headers);
    }
    url_problem(url).or_else(|| headers_problem(headers))
}

/// Why `url` cannot be reached as an MCP server; None when fine.
pub(crate) fn url_problem(url: &str) -> Option<String> {
    let parsed = match reqwest::Url::parse(url) {
        Ok(parsed) if matches!(parsed.scheme(), "http" | "https") && parsed.has_host() => parsed,
        _ => return Some(format!("url: {url:?} is not an http:// or https:// URL")),
    };
    if !parsed.username().is_empty() || parsed.password().is_some() {
        // A URL is printed and recorded; credentials belong in headers, from variables.
        return Some(
            "url: has a user name or password in it; send credentials in headers: instead, from a variable (Authorization: \"Bearer ${TOKEN}\")"
                .to_string(),
        );
    }
    None
}

/// Why a `headers:` entry cannot be sent; None when fine.
fn headers_problem(headers: &BTreeMap<String, String>) -> Option<String> {
    for name in headers.keys() {
        if HeaderName::from_bytes(name.as_bytes()).is_err() {
            return Some(format!("headers: {name:?} is not a valid HTTP header name"));
        }
        if reserved_header(&name.to_ascii_lowercase()) {
            return Some(format!(
                "headers: {name} is set by the MCP transport itself and cannot be overridden"
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn endpoints_must_be_http_urls_with_headers_the_transport_leaves_alone() {
        let none = BTreeMap::new();
        assert_eq!(endpoint_problem("http://127.0.0.1:3001/mcp", &none), None);
        assert_eq!(endpoint_problem("https://mcp.example.com/", &none), None);
        for bad in [
            "ftp://example.com/",
            "127.0.0.1:3001",
            "http://",
            "not a url",
        ] {
            let problem = endpoint_problem(bad, &none).unwrap();
            assert!(problem.contains("http:// or https://"), "{bad}: {problem}");
        }
        let ok = headers(&[("Authorization", "Bearer ${TOKEN}"), ("X-Org", "a")]);
        assert_eq!(endpoint_problem("http://h/", &ok), None);
        // A URL with variables is checked once they are expanded; its headers now.
        assert_eq!(
            endpoint_problem("${MCP_BASE:-http://127.0.0.1:1}/mcp", &none),
            None
        );
        let bad_header = headers(&[("bad header", "x")]);
        assert!(endpoint_problem("${MCP_BASE}/mcp", &bad_header).is_some());
        assert!(url_problem("ftp://h/").is_some());
        let userinfo = endpoint_problem("https://me:pw@h/mcp", &none).unwrap();
        assert!(
            userinfo.contains("send credentials in headers"),
            "{userinfo}"
        );
        assert!(endpoint_problem("http://h/", &headers(&[("Connection", "close")])).is_some());
        assert!(plain_http_off_machine("http://docs.example.com/mcp"));
        assert!(!plain_http_off_machine("http://127.0.0.1:3001/mcp"));
        assert!(!plain_http_off_machine("http://[::1]:3001/mcp"));
        assert!(!plain_http_off_machine("http://localhost/mcp"));
        assert!(!plain_http_off_machine("https://docs.example.com/mcp"));
        let reserved = endpoint_problem("http://h/", &headers(&[("Mcp-Session-Id", "x")]));
        assert!(reserved.unwrap().contains("cannot be overridden"));
        let invalid = endpoint_problem("http://h/", &headers(&[("bad header", "x")]));
        assert!(invalid.unwrap().contains("not a valid HTTP header name"));
    }

    #[test]
    fn header_values_are_expanded_and_marked_sensitive() {
        let none = BTreeMap::new();
        let map = header_map(
            &headers(&[
                ("X-Plain", "v"),
                ("X-Default", "${DROVER_TEST_NO_SUCH_VAR:-fallback}"),
            ]),
            &VarSource::Environment,
            &none,
        )
        .unwrap();
        let value = &map[&HeaderName::from_static("x-default")];
        assert_eq!(value.to_str().unwrap(), "fallback");
        assert!(value.is_sensitive());
        let broken = header_map(
            &headers(&[("X-Bad", "line\nbreak")]),
            &VarSource::Environment,
            &none,
        )
        .unwrap_err();
        // A variable the source does not pass is unset: its default, else empty.
        let path = header_map(
            &headers(&[("X-Path", "${PATH:-none}")]),
            &VarSource::Only(Default::default()),
            &none,
        )
        .unwrap();
        assert_eq!(path[&HeaderName::from_static("x-path")], "none");
        assert!(broken.to_string().contains("X-Bad"), "{broken}");
    }

    #[test]
    fn a_helpers_headers_win_over_written_ones_and_are_not_expanded() {
        let written = headers(&[("Authorization", "Bearer static"), ("X-Org", "acme")]);
        let helper = headers(&[("authorization", "Bearer ${PATH}"), ("X-New", "n")]);
        let map = header_map(&written, &VarSource::Environment, &helper).unwrap();
        assert_eq!(map.len(), 3);
        assert_eq!(
            map[&HeaderName::from_static("authorization")],
            "Bearer ${PATH}"
        );
        assert_eq!(map[&HeaderName::from_static("x-org")], "acme");
        assert_eq!(map[&HeaderName::from_static("x-new")], "n");
        assert!(map.values().all(HeaderValue::is_sensitive));
    }
}
