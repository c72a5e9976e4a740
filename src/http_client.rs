//! Every HTTP client drover builds (model providers, MCP servers over HTTP, WebFetch)
//! starts here, so they all trust the same roots, use the same TLS implementation and
//! refuse the same redirects.
//!
//! reqwest is built with rustls and no bundled crypto provider: ring is installed as the
//! process's provider, which needs no C toolchain (aws-lc would). Certificates are
//! checked by the platform verifier, which on Linux reads the system trust store and
//! honours `SSL_CERT_FILE` and `SSL_CERT_DIR` — what a corporate CA set-up relies on.
//!
//! No client follows a redirect on its own. reqwest's default follows up to ten and, on
//! the way to another host, strips only the headers it knows (`Authorization`, cookies):
//! an `x-api-key`, or a header a spec sets, would go wherever a `Location` says. A
//! request goes only to the URL the user wrote; a redirect fails it with
//! [`RedirectRefused`], which names where the server pointed. WebFetch, which judges
//! every hop by the rules and sends no credentials, follows hops itself.

use std::sync::{Arc, Mutex, Once, PoisonError};

/// A redirect that was not followed: the request fails with this as its cause.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "the server answered HTTP {status} with a redirect to {location}, which drover does not follow (it would carry the request and its credentials to a place the user did not name)"
)]
pub(crate) struct RedirectRefused {
    pub status: u16,
    /// Where the redirect pointed, resolved against the request's URL.
    pub location: String,
}

/// The redirects a client refused, for a caller whose HTTP library keeps only an
/// error's text (rmcp drops the cause): it can still say where the server pointed.
#[derive(Debug, Clone, Default)]
pub(crate) struct RefusedRedirects(Arc<Mutex<Option<RedirectRefused>>>);

impl RefusedRedirects {
    /// The last redirect refused, if any was.
    pub(crate) fn last(&self) -> Option<RedirectRefused> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn note(&self, refused: RedirectRefused) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(refused);
    }
}

/// A client builder with drover's user agent and TLS set up, following no redirect.
pub(crate) fn builder() -> reqwest::ClientBuilder {
    builder_noting(&RefusedRedirects::default())
}

/// [`builder`], noting every redirect its client refuses in `refused`.
pub(crate) fn builder_noting(refused: &RefusedRedirects) -> reqwest::ClientBuilder {
    install_crypto_provider();
    let noted = refused.clone();
    reqwest::Client::builder()
        .user_agent(concat!("drover/", env!("CARGO_PKG_VERSION")))
        .redirect(reqwest::redirect::Policy::custom(move |attempt| {
            let refused = RedirectRefused {
                status: attempt.status().as_u16(),
                location: attempt.url().to_string(),
            };
            noted.note(refused.clone());
            attempt.error(refused)
        }))
}

/// The redirect `error` is the refusal of, if it is one.
pub(crate) fn refused_redirect(error: &reqwest::Error) -> Option<&RedirectRefused> {
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        if let Some(refused) = cause.downcast_ref::<RedirectRefused>() {
            return Some(refused);
        }
        source = cause.source();
    }
    None
}

/// Installs ring as rustls's provider once per process. Without a provider, reqwest
/// panics when a client is built.
fn install_crypto_provider() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        // An Err means another provider was installed first (only ever by drover itself,
        // which has no other): that one serves as well.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[test]
    fn clients_build_with_tls_ready() {
        let client = super::builder().build();
        assert!(client.is_ok(), "{client:?}");
        // A second one too: the provider is installed once.
        assert!(super::builder().build().is_ok());
    }

    /// A server on 127.0.0.1 answering every request with `head`; how many it got.
    fn answering(head: String) -> (String, Arc<AtomicUsize>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&requests);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut data = Vec::new();
                let mut buf = [0u8; 4096];
                while !data.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => data.extend_from_slice(&buf[..n]),
                    }
                }
                counted.fetch_add(1, Ordering::SeqCst);
                let _ = stream.write_all(head.as_bytes());
            }
        });
        (url, requests)
    }

    #[tokio::test]
    async fn no_client_follows_a_redirect_and_the_error_names_where_it_pointed() {
        let ok = "HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
        let (elsewhere, reached) = answering(ok.to_string());
        let client = builder().no_proxy().build().unwrap();
        for (status, location) in [
            (307, format!("{elsewhere}/v1/messages")),
            (302, "/v2/messages".to_string()),
        ] {
            let (api, asked) = answering(format!(
                "HTTP/1.1 {status} Moved\r\nlocation: {location}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            ));
            let error = client
                .get(format!("{api}/v1/messages"))
                .header("x-api-key", "sk-secret")
                .send()
                .await
                .unwrap_err();
            let refused = refused_redirect(&error).unwrap_or_else(|| panic!("{error:?}"));
            assert_eq!(refused.status, status);
            // A relative Location is named resolved, as it would have been followed.
            let resolved = if location.starts_with('/') {
                format!("{api}{location}")
            } else {
                location
            };
            assert_eq!(refused.location, resolved);
            let noted = RefusedRedirects::default();
            let noting = builder_noting(&noted).no_proxy().build().unwrap();
            let _ = noting.get(format!("{api}/v1/messages")).send().await;
            assert_eq!(noted.last().map(|r| r.location), Some(resolved.clone()));
            assert_eq!(
                asked.load(Ordering::SeqCst),
                2,
                "asked once a client, not again"
            );
        }
        assert_eq!(reached.load(Ordering::SeqCst), 0, "nothing went elsewhere");
    }
}
