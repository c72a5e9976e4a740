//! When and how long to wait before trying a provider request again.
//!
//! Real APIs fail transiently (rate limits, overload, resets, cut streams); a CI run
//! should ride those out rather than fail, but give up in bounded time and say why. The
//! schedule is exponential with jitter so that many runners hitting one limit do not
//! retry in lockstep, and a server's `retry-after` wins over our own guess.

use std::hash::{BuildHasher as _, Hasher as _};
use std::time::{Duration, SystemTime};

use crate::spec::RetrySpec;

/// The retry budget of one provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RetryPolicy {
    pub max_retries: u32,
    pub initial_backoff: Duration,
    pub max_backoff: Duration,
}

/// A server's `retry-after` is honoured, but never beyond this: a run must end in
/// bounded time even when a server asks for an hour.
pub(crate) const MAX_SERVER_DELAY: Duration = Duration::from_secs(300);

impl Default for RetryPolicy {
    fn default() -> Self {
        RetrySpec::default().into()
    }
}

impl From<RetrySpec> for RetryPolicy {
    fn from(spec: RetrySpec) -> Self {
        RetryPolicy {
            max_retries: spec.max_retries,
            initial_backoff: spec.initial_backoff.0,
            max_backoff: spec.max_backoff.0.max(spec.initial_backoff.0),
        }
    }
}

impl RetryPolicy {
    /// The delay before retry number `retry` (0 for the first retry): the exponential
    /// step `initial * 2^retry` capped at `max_backoff`, of which a random half is taken
    /// off ("equal jitter"), so the delay is in `[step/2, step]`.
    pub(crate) fn backoff(&self, retry: u32, random: f64) -> Duration {
        let step = self
            .initial_backoff
            .saturating_mul(2u32.saturating_pow(retry.min(31)))
            .min(self.max_backoff);
        let half = step / 2;
        half + half.mul_f64(random.clamp(0.0, 1.0))
    }

    /// The delay to use: the server's, when it gave one, else our backoff.
    pub(crate) fn delay(&self, retry: u32, server: Option<Duration>) -> Duration {
        match server {
            Some(delay) => delay.min(MAX_SERVER_DELAY),
            None => self.backoff(retry, jitter()),
        }
    }
}

/// A number in `[0, 1)` that differs between calls and processes. Not cryptographic:
/// it only spreads retries out.
fn jitter() -> f64 {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// HTTP statuses worth another attempt: timeouts, conflicts, rate limits, server
/// errors and Anthropic's 529 "overloaded".
pub(crate) fn retryable_status(status: u16) -> bool {
    matches!(status, 408 | 409 | 429 | 500 | 502 | 503 | 504 | 529)
}

/// The delay a response asks for: `retry-after-ms` (milliseconds, non-standard but sent
/// by OpenAI and Anthropic), else `retry-after` as seconds or as an HTTP date.
pub(crate) fn server_delay(
    retry_after_ms: Option<&str>,
    retry_after: Option<&str>,
    now: SystemTime,
) -> Option<Duration> {
    if let Some(ms) = retry_after_ms.and_then(|v| v.trim().parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_secs_f64(ms.min(1e9) / 1000.0));
    }
    let value = retry_after?.trim();
    if let Ok(seconds) = value.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0)
            .then(|| Duration::from_secs_f64(seconds.min(1e9)));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> RetryPolicy {
        RetryPolicy {
            max_retries: 5,
            initial_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(30),
        }
    }

    #[test]
    fn backoff_doubles_within_jitter_bounds_and_caps() {
        let p = policy();
        let steps = [1, 2, 4, 8, 16, 30, 30];
        for (retry, step) in steps.iter().enumerate() {
            let step = Duration::from_secs(*step);
            let low = p.backoff(retry as u32, 0.0);
            let high = p.backoff(retry as u32, 1.0);
            assert_eq!(low, step / 2, "retry {retry}");
            assert_eq!(high, step, "retry {retry}");
            let random = p.delay(retry as u32, None);
            assert!(random >= low && random <= high, "retry {retry}: {random:?}");
        }
        assert_eq!(p.backoff(1000, 1.0), Duration::from_secs(30));
    }

    #[test]
    fn the_server_delay_wins_but_is_bounded() {
        let p = policy();
        assert_eq!(
            p.delay(0, Some(Duration::from_secs(7))),
            Duration::from_secs(7)
        );
        assert_eq!(
            p.delay(0, Some(Duration::from_secs(100_000))),
            MAX_SERVER_DELAY
        );
    }

    #[test]
    fn retry_after_forms() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(
            server_delay(None, Some("3"), now),
            Some(Duration::from_secs(3))
        );
        assert_eq!(
            server_delay(None, Some(" 1.5 "), now),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            server_delay(Some("250"), Some("3"), now),
            Some(Duration::from_millis(250))
        );
        assert_eq!(
            server_delay(Some("junk"), Some("2"), now),
            Some(Duration::from_secs(2))
        );
        let date = httpdate::fmt_http_date(now + Duration::from_secs(42));
        assert_eq!(
            server_delay(None, Some(&date), now),
            Some(Duration::from_secs(42))
        );
        let past = httpdate::fmt_http_date(now - Duration::from_secs(42));
        assert_eq!(server_delay(None, Some(&past), now), Some(Duration::ZERO));
        assert_eq!(server_delay(None, Some("-1"), now), None);
        assert_eq!(server_delay(None, Some("soon"), now), None);
        assert_eq!(server_delay(None, None, now), None);
    }

    #[test]
    fn retryable_statuses() {
        for status in [408, 409, 429, 500, 502, 503, 504, 529] {
            assert!(retryable_status(status), "{status}");
        }
        for status in [400, 401, 403, 404, 413, 422] {
            assert!(!retryable_status(status), "{status}");
        }
    }
}
