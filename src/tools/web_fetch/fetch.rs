//! The HTTP side of WebFetch. drover fetches in its own process (not in the sandbox), so
//! the confinement is here: every hop is judged by the rules again, redirects are
//! followed by hand, and names are resolved by a resolver that drops addresses no rule
//! opened (loopback, link-local, private …), so neither a redirect nor DNS rebinding
//! reaches what the first URL could not. Proxies from the environment are not used: a
//! proxy would connect on our behalf to whatever address it resolves, out of our sight.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::header::{ACCEPT, ACCEPT_ENCODING, CONTENT_ENCODING, CONTENT_TYPE, LOCATION};
use url::Url;

use super::encoding::{self, BodyDecoder, Coding, Cut};
use crate::policy::{UrlGrant, WebGrants, judge_url, restricted_ip};

/// Most bytes read of a body, and most kept once decoded; reading stops there.
pub(crate) const MAX_BODY_BYTES: usize = 10 * 1024 * 1024;
/// Most redirects followed in one fetch.
pub(crate) const MAX_REDIRECTS: usize = 10;
/// Longest wait for a connection.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest a whole fetch (every hop, every byte) may take.
pub(crate) const TOTAL_TIMEOUT: Duration = Duration::from_secs(60);

/// A response body, read.
#[derive(Debug)]
pub(crate) struct Body {
    /// The URL that answered (after the redirects followed).
    pub url: Url,
    pub status: reqwest::StatusCode,
    pub content_type: Option<String>,
    /// The body decoded (when it came gzip- or deflate-encoded).
    pub bytes: Vec<u8>,
    /// How the body came encoded.
    pub coding: Coding,
    /// Where reading or decoding stopped at [`MAX_BODY_BYTES`].
    pub cut: Cut,
}

/// What a fetch came to.
#[derive(Debug)]
pub(crate) enum Fetched {
    Page(Body),
    /// A redirect this fetch does not follow: to a host the rules do not open to it.
    Redirect {
        from: Url,
        to: String,
        status: u16,
        why: String,
    },
}

/// Fetch `start` (already judged), following redirects the rules allow.
pub(crate) async fn fetch(start: UrlGrant, grants: Arc<WebGrants>) -> Result<Fetched, FetchError> {
    match tokio::time::timeout(TOTAL_TIMEOUT, hops(start, grants)).await {
        Ok(fetched) => fetched,
        Err(_) => Err(FetchError::TooSlow),
    }
}

/// Why a page was not fetched. The reqwest errors are described with their causes
/// (`describe`), which is what the model needs to know.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FetchError {
    #[error("the fetch took longer than {} seconds and was stopped", TOTAL_TIMEOUT.as_secs())]
    TooSlow,
    #[error("drover could not set up the HTTP client: {0}")]
    Client(String),
    #[error("fetching {url} failed: {why}")]
    Request { url: url::Url, why: String },
    #[error("{url} redirected to a Location that is not text")]
    LocationNotText { url: url::Url },
    #[error("{url} redirected to an invalid URL {location:?}: {source}")]
    BadLocation {
        url: url::Url,
        location: String,
        source: url::ParseError,
    },
    #[error("reading {url} failed: {why}")]
    Read { url: url::Url, why: String },
    #[error("{url}: more than {MAX_REDIRECTS} redirects; WebFetch stopped following them")]
    TooManyRedirects { url: url::Url },
    #[error(
        "{url} answered HTTP {status} with its body encoded as Content-Encoding: {encoding}, which WebFetch does not decode (it asks for and decodes only {}); the body was not read",
        encoding::ACCEPT_ENCODING
    )]
    Encoding {
        url: url::Url,
        status: u16,
        encoding: String,
    },
    #[error("{url}: its {coding}-encoded body could not be decoded: {why}")]
    Undecodable {
        url: url::Url,
        coding: &'static str,
        why: String,
    },
}

async fn hops(start: UrlGrant, grants: Arc<WebGrants>) -> Result<Fetched, FetchError> {
    let resolver = GuardedResolver {
        grants: Arc::clone(&grants),
    };
    let client = crate::http_client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .referer(false)
        .connect_timeout(CONNECT_TIMEOUT)
        .timeout(TOTAL_TIMEOUT)
        .dns_resolver(Arc::new(resolver))
        .build()
        .map_err(|e| FetchError::Client(describe(&e)))?;
    let mut current = start.url;
    for _ in 0..=MAX_REDIRECTS {
        let response = client
            .get(current.clone())
            .header(
                ACCEPT,
                "text/html, text/markdown, text/plain, application/json;q=0.9, */*;q=0.5",
            )
            .header(ACCEPT_ENCODING, encoding::ACCEPT_ENCODING)
            .send()
            .await
            .map_err(|e| FetchError::Request {
                url: current.clone(),
                why: describe(&e),
            })?;
        let status = response.status();
        if status.is_redirection()
            && let Some(location) = response.headers().get(LOCATION)
        {
            let location = location.to_str().map_err(|_| FetchError::LocationNotText {
                url: current.clone(),
            })?;
            let target = current
                .join(location)
                .map_err(|source| FetchError::BadLocation {
                    url: current.clone(),
                    location: location.to_string(),
                    source,
                })?;
            match judge_url(&target, &*grants) {
                Ok(next) => {
                    current = next.url;
                    continue;
                }
                Err(refused) => {
                    return Ok(Fetched::Redirect {
                        from: current,
                        to: target.to_string(),
                        status: status.as_u16(),
                        why: refused.reason,
                    });
                }
            }
        }
        return page(response, current).await.map(Fetched::Page);
    }
    Err(FetchError::TooManyRedirects { url: current })
}

/// The page `response` (not a redirect followed) brings from `current`, read and decoded.
async fn page(response: reqwest::Response, current: Url) -> Result<Body, FetchError> {
    let status = response.status();
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let coding = encoding::coding(
        response
            .headers()
            .get_all(CONTENT_ENCODING)
            .iter()
            .map(|v| v.as_bytes()),
    )
    .map_err(|unsupported| FetchError::Encoding {
        url: current.clone(),
        status: status.as_u16(),
        encoding: unsupported.0,
    })?;
    let (bytes, cut) = read_decoded(response, coding, &current).await?;
    Ok(Body {
        url: current,
        status,
        content_type,
        bytes,
        coding,
        cut,
    })
}

/// The body decoded from `coding` as it arrives, up to [`MAX_BODY_BYTES`] read and as
/// many kept, and where it was cut.
async fn read_decoded(
    mut response: reqwest::Response,
    coding: Coding,
    url: &Url,
) -> Result<(Vec<u8>, Cut), FetchError> {
    let undecodable = |why: encoding::Undecodable| FetchError::Undecodable {
        url: url.clone(),
        coding: coding.name(),
        why: why.to_string(),
    };
    let mut decoder = BodyDecoder::new(coding, MAX_BODY_BYTES);
    loop {
        let chunk = response.chunk().await.map_err(|e| FetchError::Read {
            url: url.clone(),
            why: describe(&e),
        })?;
        let Some(chunk) = chunk else { break };
        if !decoder.push(&chunk).map_err(undecodable)? {
            break;
        }
    }
    decoder.finish().map_err(undecodable)
}

/// An error with its causes (reqwest's own text stops at "error sending request").
fn describe(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// Resolves names as the system does, then keeps only the addresses the rules open:
/// public ones, and any address of a host an allow rule names exactly. The connection
/// goes to an address kept here, so what was judged is what is reached.
pub(super) struct GuardedResolver {
    pub(super) grants: Arc<WebGrants>,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().trim_end_matches('.').to_ascii_lowercase();
        let grant = (self.grants)(&host);
        Box::pin(async move {
            if !grant.allowed {
                return Err(refusal(format!("no rule allows {host}")));
            }
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let kept = kept_addresses(&found, grant.named_exactly);
            if kept.is_empty() {
                let shown: Vec<String> = found.iter().map(|a| a.ip().to_string()).collect();
                return Err(refusal(format!(
                    "{host} resolves to {} only, which WebFetch reaches only when an allow rule names exactly this host (WebFetch(domain:{host}))",
                    if shown.is_empty() {
                        "no address".to_string()
                    } else {
                        shown.join(", ")
                    }
                )));
            }
            Ok(Box::new(kept.into_iter()) as Addrs)
        })
    }
}

/// The addresses a connection may go to: all of them for an exactly named host, else
/// the public ones.
pub(crate) fn kept_addresses(found: &[SocketAddr], named_exactly: bool) -> Vec<SocketAddr> {
    found
        .iter()
        .copied()
        .filter(|addr| named_exactly || restricted_ip(addr.ip()).is_none())
        .collect()
}

fn refusal(message: String) -> Box<dyn std::error::Error + Send + Sync> {
    Box::new(std::io::Error::new(
        std::io::ErrorKind::PermissionDenied,
        message,
    ))
}
