//! Every HTTP client drover builds (model providers, MCP servers over HTTP) starts here,
//! so they all trust the same roots and use the same TLS implementation.
//!
//! reqwest is built with rustls and no bundled crypto provider: ring is installed as the
//! process's provider, which needs no C toolchain (aws-lc would). Certificates are
//! checked by the platform verifier, which on Linux reads the system trust store and
//! honours `SSL_CERT_FILE` and `SSL_CERT_DIR` — what a corporate CA set-up relies on.

use std::sync::Once;

/// A client builder with drover's user agent and TLS set up.
pub(crate) fn builder() -> reqwest::ClientBuilder {
    install_crypto_provider();
    reqwest::Client::builder().user_agent(concat!("drover/", env!("CARGO_PKG_VERSION")))
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
    #[test]
    fn clients_build_with_tls_ready() {
        let client = super::builder().build();
        assert!(client.is_ok(), "{client:?}");
        // A second one too: the provider is installed once.
        assert!(super::builder().build().is_ok());
    }
}
