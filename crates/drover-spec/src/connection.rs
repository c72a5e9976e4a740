//! How drover talks to a real provider: retries and timeouts (`model.retry`,
//! `model.timeouts`). Separate from the model's identity so the defaults live in one place.

use std::time::Duration;

use serde::Deserialize;

use super::SpecDuration;

/// `model.retry`: how hard to try before a task ends with `provider_error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetrySpec {
    /// Retries after the first attempt (0 = never retry).
    #[serde(default = "default_max_retries")]
    pub max_retries: u32,
    /// The delay before the first retry; it doubles with every retry, with jitter.
    #[serde(default = "default_initial_backoff")]
    pub initial_backoff: SpecDuration,
    /// No computed delay exceeds this (a server's `retry-after` is honoured up to 5 minutes).
    #[serde(default = "default_max_backoff")]
    pub max_backoff: SpecDuration,
}

impl Default for RetrySpec {
    fn default() -> Self {
        RetrySpec {
            max_retries: default_max_retries(),
            initial_backoff: default_initial_backoff(),
            max_backoff: default_max_backoff(),
        }
    }
}

fn default_max_retries() -> u32 {
    4
}

fn default_initial_backoff() -> SpecDuration {
    SpecDuration(Duration::from_secs(1))
}

fn default_max_backoff() -> SpecDuration {
    SpecDuration(Duration::from_secs(30))
}

/// `model.timeouts`: each one, when it passes, fails the attempt (which is retried).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimeoutsSpec {
    /// Establishing the TCP (and TLS) connection.
    #[serde(default = "default_connect")]
    pub connect: SpecDuration,
    /// From sending the request to the response headers.
    #[serde(default = "default_first_byte")]
    pub first_byte: SpecDuration,
    /// Silence between two pieces of the streamed response.
    #[serde(default = "default_idle")]
    pub idle: SpecDuration,
    /// The whole attempt, from sending the request to the end of the response. Bytes
    /// and keep-alive comments do not extend it: a server trickling a byte a second, or
    /// sending only keep-alives, cannot hold a run for ever.
    #[serde(default = "default_request")]
    pub request: SpecDuration,
}

impl Default for TimeoutsSpec {
    fn default() -> Self {
        TimeoutsSpec {
            connect: default_connect(),
            first_byte: default_first_byte(),
            idle: default_idle(),
            request: default_request(),
        }
    }
}

fn default_connect() -> SpecDuration {
    SpecDuration(Duration::from_secs(10))
}

fn default_first_byte() -> SpecDuration {
    SpecDuration(Duration::from_secs(120))
}

fn default_request() -> SpecDuration {
    SpecDuration(Duration::from_secs(600))
}

fn default_idle() -> SpecDuration {
    SpecDuration(Duration::from_secs(60))
}
