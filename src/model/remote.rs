//! The settings of a real provider (anthropic, openai), resolved from the spec and the
//! environment while the run is planned — so a missing key or model name stops the run
//! with exit 2 before any task starts and before any request is made.

use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

use super::retry::RetryPolicy;
use super::transport::{RetryNotice, Timeouts, Transport};
use crate::spec::{ModelSpec, Provider};

/// An API key. Its `Debug` does not show it, so it cannot leak through a log line or an
/// error that formats a config.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct ApiKey(String);

impl ApiKey {
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey([redacted])")
    }
}

/// `api_key_env: none` — a local server that wants no key (llama.cpp, Ollama, vLLM).
pub(crate) const NO_KEY: &str = "none";

/// Everything a real provider needs for a task.
#[derive(Debug, Clone)]
pub(crate) struct RemoteConfig {
    pub provider: Provider,
    pub name: String,
    /// The full endpoint URL.
    pub url: String,
    pub api_key: Option<ApiKey>,
    /// The variable the key was read from.
    pub key_env: Option<String>,
    pub max_tokens: u32,
    pub temperature: Option<f64>,
    pub retry: RetryPolicy,
    pub timeouts: Timeouts,
}

/// Why a real provider cannot be used as the spec and environment say; each says what
/// to do, and none contains a key.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RemoteConfigError {
    #[error("provider {} is not a remote one", .0.as_str())]
    NotRemote(Provider),
    #[error("provider {} needs a model name: set model.name or pass --model", .0.as_str())]
    NoModelName(Provider),
    #[error(
        "the API key variable {variable} is not set or empty: export the key in {variable}, set model.api_key_env to the variable that holds it, or `api_key_env: none` for a server that needs no key"
    )]
    NoKey { variable: String },
    #[error("model.base_url {base:?} is not an http:// or https:// URL")]
    NotHttp { base: String },
}

/// `max_tokens` when the spec does not say.
pub(crate) const DEFAULT_MAX_TOKENS: u32 = 8192;

impl RemoteConfig {
    /// Resolve a real provider's settings. `name` is the model name after `--model`;
    /// `env` reads the environment (a parameter so tests need not change the process's).
    /// Errors are worded for people and never contain a key.
    pub(crate) fn resolve(
        provider: Provider,
        spec: &ModelSpec,
        name: Option<String>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, RemoteConfigError> {
        let (default_key, base_env, default_base, default_path) = match provider {
            Provider::Anthropic => (
                "ANTHROPIC_API_KEY",
                "ANTHROPIC_BASE_URL",
                "https://api.anthropic.com",
                "/v1/messages",
            ),
            Provider::Openai => (
                "OPENAI_API_KEY",
                "OPENAI_BASE_URL",
                "https://api.openai.com",
                "/v1/chat/completions",
            ),
            Provider::Script | Provider::Replay => {
                return Err(RemoteConfigError::NotRemote(provider));
            }
        };
        let name = name
            .filter(|n| !n.trim().is_empty())
            .ok_or(RemoteConfigError::NoModelName(provider))?;
        let key_env = spec.api_key_env.as_deref().unwrap_or(default_key);
        let (api_key, key_env) = if key_env == NO_KEY {
            (None, None)
        } else {
            match env(key_env) {
                Some(key) if !key.trim().is_empty() => (
                    Some(ApiKey(key.trim().to_string())),
                    Some(key_env.to_string()),
                ),
                _ => {
                    return Err(RemoteConfigError::NoKey {
                        variable: key_env.to_string(),
                    });
                }
            }
        };
        let base = spec
            .base_url
            .clone()
            .or_else(|| env(base_env).filter(|b| !b.trim().is_empty()))
            .unwrap_or_else(|| default_base.to_string());
        let base = base.trim().trim_end_matches('/').to_string();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(RemoteConfigError::NotHttp { base });
        }
        let path = match &spec.path {
            Some(path) if path.starts_with('/') => path.clone(),
            Some(path) => format!("/{path}"),
            // A base URL that already ends in /v1 (as OpenAI-compatible servers are often
            // written: http://localhost:11434/v1) is not given a second /v1.
            None if base.ends_with("/v1") => default_path.trim_start_matches("/v1").to_string(),
            None => default_path.to_string(),
        };
        Ok(RemoteConfig {
            provider,
            name,
            url: format!("{base}{path}"),
            api_key,
            key_env,
            max_tokens: spec.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
            temperature: spec.temperature,
            retry: spec.retry.map(Into::into).unwrap_or_default(),
            timeouts: spec.timeouts.unwrap_or_default().into(),
        })
    }

    /// The transport for the provider's headers, and where its retry notices arrive.
    pub(crate) fn transport(
        &self,
        headers: reqwest::header::HeaderMap,
    ) -> (Transport, UnboundedReceiver<RetryNotice>) {
        let (sender, receiver) = unbounded_channel();
        let key = match (&self.key_env, &self.api_key) {
            (Some(env), Some(key)) => Some((env.clone(), key.expose().to_string())),
            _ => None,
        };
        let transport = Transport::new(
            self.url.clone(),
            headers,
            key,
            self.retry,
            self.timeouts,
            Some(sender),
        );
        (transport, receiver)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(yaml: &str) -> ModelSpec {
        serde_saphyr::from_str(yaml).unwrap()
    }

    fn env(name: &str) -> Option<String> {
        match name {
            "ANTHROPIC_API_KEY" => Some("sk-ant-secret".into()),
            "OPENAI_BASE_URL" => Some("http://gateway:4000/v1/".into()),
            "EMPTY" => Some(" ".into()),
            _ => None,
        }
    }

    #[test]
    fn defaults_and_overrides() {
        let s = spec("provider: anthropic\nname: claude-x\n");
        let config = RemoteConfig::resolve(Provider::Anthropic, &s, s.name.clone(), env).unwrap();
        assert_eq!(config.url, "https://api.anthropic.com/v1/messages");
        assert_eq!(config.max_tokens, DEFAULT_MAX_TOKENS);
        assert_eq!(config.key_env.as_deref(), Some("ANTHROPIC_API_KEY"));
        assert!(!format!("{config:?}").contains("sk-ant-secret"));

        let s = spec("provider: openai\napi_key_env: none\n");
        let config = RemoteConfig::resolve(Provider::Openai, &s, Some("m".into()), env).unwrap();
        assert_eq!(config.url, "http://gateway:4000/v1/chat/completions");
        assert!(config.api_key.is_none());

        let s = spec(
            "provider: openai\napi_key_env: none\nbase_url: http://127.0.0.1:8080\npath: api/chat\n",
        );
        let config = RemoteConfig::resolve(Provider::Openai, &s, Some("m".into()), env).unwrap();
        assert_eq!(config.url, "http://127.0.0.1:8080/api/chat");
    }

    #[test]
    fn missing_key_or_name_is_refused_without_the_key() {
        let s = spec("provider: openai\nname: gpt\n");
        let error = RemoteConfig::resolve(Provider::Openai, &s, s.name.clone(), env)
            .unwrap_err()
            .to_string();
        assert!(error.contains("OPENAI_API_KEY"), "{error}");
        let s = spec("provider: openai\nname: gpt\napi_key_env: EMPTY\n");
        let error = RemoteConfig::resolve(Provider::Openai, &s, s.name.clone(), env)
            .unwrap_err()
            .to_string();
        assert!(error.contains("EMPTY"), "{error}");
        let s = spec("provider: anthropic\n");
        let error = RemoteConfig::resolve(Provider::Anthropic, &s, None, env)
            .unwrap_err()
            .to_string();
        assert!(error.contains("--model"), "{error}");
    }
}
