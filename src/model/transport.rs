//! One streaming POST to a provider, with timeouts, retries and error classification.
//!
//! Both providers share this: they differ only in the request body and in how they
//! decode the event stream (a [`Decoder`]). Everything that can fail transiently is
//! retried here, every retry is announced as a [`RetryNotice`] (the agent writes it to
//! the transcript), and every error that leaves is already worded for people, with the
//! API key scrubbed from it.

use std::time::{Duration, SystemTime};

use futures::StreamExt;
use reqwest::header::{HeaderMap, HeaderValue};
use tokio::sync::mpsc::UnboundedSender;

use super::ModelError;
use super::http_errors::chain;
pub(crate) use super::http_errors::{error_message, is_context_error};
use super::not_a_stream::{MAX_QUOTED_BODY, StreamStart, Verdict};
use super::retry::{RetryPolicy, retryable_status, server_delay};
use super::sse::{SseEvent, SseParser};
use crate::message::ModelResponse;
use crate::spec::TimeoutsSpec;

/// A retry about to happen, for the transcript's `retry` event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RetryNotice {
    /// The attempt that failed, from 1.
    pub attempt: u32,
    pub reason: String,
    /// The HTTP status, when the failure was one.
    pub status: Option<u16>,
    pub delay_ms: u64,
}

/// How one attempt failed.
#[derive(Debug)]
pub(crate) enum Failure {
    /// Worth another attempt (after `server_delay`, when the server named one).
    Retry {
        reason: String,
        status: Option<u16>,
        server_delay: Option<Duration>,
    },
    /// Retrying cannot help.
    Fatal(ModelError),
}

impl Failure {
    pub(crate) fn retry(reason: impl Into<String>) -> Self {
        Failure::Retry {
            reason: reason.into(),
            status: None,
            server_delay: None,
        }
    }
}

/// Turns a provider's event stream into one response.
pub(crate) trait Decoder {
    /// What the stream tells beside the turn (Anthropic: the context edits the server
    /// applied), `()` when nothing.
    type Extra;
    /// Take the next event; an error event or an unreadable one fails the attempt.
    fn event(&mut self, event: SseEvent) -> Result<(), Failure>;
    /// The stream has sent its final event: nothing more needs to be read.
    fn complete(&self) -> bool;
    /// The stream ended (`clean`: the server closed it normally rather than cutting it).
    /// A response that did not reach its end is a retryable failure.
    fn finish(self, clean: bool) -> Result<(ModelResponse, Self::Extra), Failure>;
}

/// What one request adds to the provider's own settings: an optional part that only
/// some requests carry (Anthropic's context editing) brings its header and its way of
/// being refused.
#[derive(Debug, Default)]
pub(crate) struct PerRequest {
    /// Headers that replace the provider's headers of the same names for this request.
    pub headers: HeaderMap,
    /// Reads an HTTP error (status, the error's message) as a refusal of the optional
    /// part: such an error is returned as given, not retried, before any other reading.
    pub refusal: Option<fn(u16, &str) -> Option<ModelError>>,
}

/// Connect, first-byte, idle and whole-request timeouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Timeouts {
    pub connect: Duration,
    pub first_byte: Duration,
    pub idle: Duration,
    pub request: Duration,
}

impl From<TimeoutsSpec> for Timeouts {
    fn from(spec: TimeoutsSpec) -> Self {
        Timeouts {
            connect: spec.connect.0,
            first_byte: spec.first_byte.0,
            idle: spec.idle.0,
            request: spec.request.0,
        }
    }
}

/// What a success response said of itself, for errors that quote it.
struct Answer {
    status: u16,
    content_type: Option<String>,
}

/// An endpoint and everything needed to call it.
pub(crate) struct Transport {
    /// Err when the HTTP client could not be built (reported on the first request).
    client: Result<reqwest::Client, std::sync::Arc<reqwest::Error>>,
    url: String,
    headers: HeaderMap,
    /// The variable the key came from, to name in authentication errors.
    key_env: Option<String>,
    /// The key itself, only to scrub it from any text that leaves this module.
    secret: Option<String>,
    policy: RetryPolicy,
    timeouts: Timeouts,
    notices: Option<UnboundedSender<RetryNotice>>,
}

/// The most of an error response body we read and quote.
const MAX_ERROR_BODY: usize = 64 * 1024;

impl Transport {
    /// `headers` carry the authentication; mark the key's value sensitive before.
    pub(crate) fn new(
        url: String,
        headers: HeaderMap,
        key: Option<(String, String)>,
        policy: RetryPolicy,
        timeouts: Timeouts,
        notices: Option<UnboundedSender<RetryNotice>>,
    ) -> Self {
        let client = crate::http_client::builder()
            .connect_timeout(timeouts.connect)
            .build()
            .map_err(std::sync::Arc::new);
        let (key_env, secret) = match key {
            Some((env, secret)) => (Some(env), Some(secret)),
            None => (None, None),
        };
        Transport {
            client,
            url,
            headers,
            key_env,
            secret,
            policy,
            timeouts,
            notices,
        }
    }

    /// The same transport with a client that ignores the environment's proxy, for tests
    /// against a server on 127.0.0.1 (a proxy variable on the test machine would
    /// otherwise stand in between).
    #[cfg(test)]
    pub(crate) fn without_proxy(mut self) -> Self {
        self.client = crate::http_client::builder()
            .connect_timeout(self.timeouts.connect)
            .no_proxy()
            .build()
            .map_err(std::sync::Arc::new);
        self
    }

    /// A header the provider sends with every request.
    pub(crate) fn header(&self, name: &str) -> Option<&HeaderValue> {
        self.headers.get(name)
    }

    /// POST `body` (with what `per_request` adds) and decode the streamed answer,
    /// retrying what can be retried.
    pub(crate) async fn send<D: Decoder>(
        &self,
        body: Vec<u8>,
        per_request: &PerRequest,
        decoder: impl Fn() -> D,
    ) -> Result<(ModelResponse, D::Extra), ModelError> {
        let mut retry = 0;
        loop {
            let attempt = tokio::time::timeout(
                self.timeouts.request,
                self.attempt(&body, per_request, decoder()),
            );
            let failure = match attempt.await {
                Ok(Ok((mut response, extra))) => {
                    // Many OpenAI-compatible servers ignore include_usage: budgets must
                    // still hold, on an estimate.
                    crate::message::Usage::estimate_if_missing(&mut response, body.len());
                    return Ok((response, extra));
                }
                Ok(Err(failure)) => failure,
                Err(_) => Failure::retry(format!(
                    "the request to {} took longer than {} (model.timeouts.request)",
                    self.url,
                    humantime::format_duration(self.timeouts.request)
                )),
            };
            match failure {
                Failure::Fatal(error) => return Err(self.scrub_error(error)),
                Failure::Retry {
                    reason,
                    status,
                    server_delay,
                } => {
                    let reason = self.scrub(&reason);
                    if retry >= self.policy.max_retries {
                        return Err(ModelError::Provider(format!(
                            "{reason} (gave up after {} attempts)",
                            retry + 1
                        )));
                    }
                    let delay = self.policy.delay(retry, server_delay);
                    if let Some(notices) = &self.notices {
                        // The receiver may be gone (nobody records): retrying still helps.
                        let _ = notices.send(RetryNotice {
                            attempt: retry + 1,
                            reason,
                            status,
                            delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                        });
                    }
                    tokio::time::sleep(delay).await;
                    retry += 1;
                }
            }
        }
    }

    /// One request: sent, answered with success, and its stream decoded.
    async fn attempt<D: Decoder>(
        &self,
        body: &[u8],
        per_request: &PerRequest,
        decoder: D,
    ) -> Result<(ModelResponse, D::Extra), Failure> {
        let response = self.post(body, per_request).await?;
        self.decode(response, decoder).await
    }

    /// The request sent, and its response once it starts with a success status; a
    /// failure (retried or not) for no response in time, a refused redirect or an error
    /// status.
    async fn post(
        &self,
        body: &[u8],
        per_request: &PerRequest,
    ) -> Result<reqwest::Response, Failure> {
        let client = self.client.as_ref().map_err(|e| {
            let why = format!("cannot set up the HTTP client: {}", chain(e.as_ref()));
            Failure::Fatal(ModelError::Provider(why))
        })?;
        let mut headers = self.headers.clone();
        for (name, value) in &per_request.headers {
            headers.insert(name, value.clone());
        }
        let request = client
            .post(&self.url)
            .headers(headers)
            .body(body.to_vec())
            .send();
        let response = match tokio::time::timeout(self.timeouts.first_byte, request).await {
            Err(_) => {
                return Err(Failure::retry(format!(
                    "no response from {} within {} (model.timeouts.first_byte)",
                    self.url,
                    humantime::format_duration(self.timeouts.first_byte)
                )));
            }
            Ok(Err(error)) => {
                if let Some(refused) = crate::http_client::refused_redirect(&error) {
                    return Err(Failure::Fatal(
                        self.redirected(refused.status, Some(&refused.location)),
                    ));
                }
                return Err(Failure::retry(format!(
                    "cannot reach {}: {}",
                    self.url,
                    chain(&error)
                )));
            }
            Ok(Ok(response)) => response,
        };
        let status = response.status().as_u16();
        if !(200..300).contains(&status) {
            let header = |name: &str| {
                response
                    .headers()
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string)
            };
            // A 3xx the client did not even try to follow (300, 304, no Location).
            if response.status().is_redirection() {
                let location = header("location");
                return Err(Failure::Fatal(self.redirected(status, location.as_deref())));
            }
            let delay = server_delay(
                header("retry-after-ms").as_deref(),
                header("retry-after").as_deref(),
                SystemTime::now(),
            );
            let text = self.error_body(response).await;
            return Err(self.classify(status, &text, delay, per_request.refusal));
        }
        Ok(response)
    }

    /// The response's event stream through `decoder`, each chunk within the idle timeout.
    /// A body that does not open as an event stream fails at once, saying what it is; a
    /// stream that carried a line that is no SSE and then failed (a proxy's page put into
    /// it) fails for good, quoting that line, where a merely cut stream is retried.
    async fn decode<D: Decoder>(
        &self,
        response: reqwest::Response,
        mut decoder: D,
    ) -> Result<(ModelResponse, D::Extra), Failure> {
        let answer = Answer {
            status: response.status().as_u16(),
            content_type: response
                .headers()
                .get(reqwest::header::CONTENT_TYPE)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()),
        };
        let mut parser = SseParser::new();
        let ended = self
            .read_events(response, &answer, &mut parser, &mut decoder)
            .await;
        parser.finish();
        match (
            ended.and_then(|clean| decoder.finish(clean)),
            parser.foreign(),
        ) {
            (Err(Failure::Retry { reason, .. }), Some(foreign)) => {
                Err(self.foreign_in_stream(&answer, foreign, &reason))
            }
            (result, _) => result,
        }
    }

    /// Feed the stream's events to `decoder` until its final event or the stream's end
    /// (`Ok(clean)`: whether the server closed it normally).
    async fn read_events<D: Decoder>(
        &self,
        response: reqwest::Response,
        answer: &Answer,
        parser: &mut SseParser,
        decoder: &mut D,
    ) -> Result<bool, Failure> {
        let mut stream = response.bytes_stream();
        let mut start = StreamStart::default();
        loop {
            let next = tokio::time::timeout(self.timeouts.idle, stream.next()).await;
            match next {
                Err(_) => {
                    return Err(Failure::retry(format!(
                        "the response stream was silent for {} (model.timeouts.idle)",
                        humantime::format_duration(self.timeouts.idle)
                    )));
                }
                Ok(None) => {
                    if start.end() == Verdict::NotStream {
                        return Err(self.not_a_stream(answer, start.head()));
                    }
                    return Ok(true);
                }
                Ok(Some(Err(error))) => {
                    if decoder.complete() {
                        return Ok(true);
                    }
                    return Err(Failure::retry(format!(
                        "the response stream was cut: {}",
                        chain(&error)
                    )));
                }
                Ok(Some(Ok(bytes))) => {
                    if start.push(&bytes) == Verdict::NotStream {
                        let mut body = start.head().to_vec();
                        self.read_more(&mut stream, &mut body, MAX_QUOTED_BODY)
                            .await;
                        return Err(self.not_a_stream(answer, &body));
                    }
                    for event in parser.push(&bytes) {
                        decoder.event(event)?;
                    }
                    if decoder.complete() {
                        return Ok(true);
                    }
                }
            }
        }
    }

    /// Read (a bounded prefix of) an error response's body.
    async fn error_body(&self, response: reqwest::Response) -> String {
        let mut stream = response.bytes_stream();
        let mut bytes = Vec::new();
        self.read_more(&mut stream, &mut bytes, MAX_ERROR_BODY)
            .await;
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// Add what `stream` brings to `bytes`, up to `max` bytes in all, each chunk within
    /// the idle timeout; an error or a silence ends it.
    async fn read_more(
        &self,
        stream: &mut (impl futures::Stream<Item = reqwest::Result<impl AsRef<[u8]>>> + Unpin),
        bytes: &mut Vec<u8>,
        max: usize,
    ) {
        while bytes.len() < max {
            match tokio::time::timeout(self.timeouts.idle, stream.next()).await {
                Ok(Some(Ok(chunk))) => bytes.extend_from_slice(chunk.as_ref()),
                _ => break,
            }
        }
        bytes.truncate(max);
    }

    /// A success status whose body is no event stream (a captive portal's page …): not
    /// retried, and the error says what came instead.
    fn not_a_stream(&self, answer: &Answer, body: &[u8]) -> Failure {
        // Scrubbed here and again in each quoted part once it is cleaned and before it is
        // cut: cleaning can put a key together, and a cut key is no longer recognised.
        let body = self.scrub(&String::from_utf8_lossy(body));
        let what = super::not_a_stream::describe(
            &self.url,
            answer.status,
            answer.content_type.as_deref(),
            body.as_bytes(),
            &|text| self.scrub(text),
        );
        Failure::Fatal(ModelError::Provider(what))
    }

    /// A stream that carried `foreign` text (a line that is no SSE, and what followed it)
    /// and then failed with `reason`: not retried, and the error quotes the text.
    fn foreign_in_stream(&self, answer: &Answer, foreign: &[u8], reason: &str) -> Failure {
        let foreign = self.scrub(&String::from_utf8_lossy(foreign));
        let what = super::not_a_stream::describe_midway(
            &self.url,
            answer.status,
            answer.content_type.as_deref(),
            foreign.as_bytes(),
            reason,
            &|text| self.scrub(text),
        );
        Failure::Fatal(ModelError::Provider(what))
    }

    /// A redirect of the request, which is not followed: the key and the conversation
    /// go only to the URL the spec names. Asking again would be redirected again.
    fn redirected(&self, status: u16, location: Option<&str>) -> ModelError {
        let to = location.map_or_else(
            || " without a Location".to_string(),
            |location| format!(" to {location}"),
        );
        ModelError::Provider(format!(
            "{} answered HTTP {status}, a redirect{to}; drover does not follow redirects of model requests (they would carry the API key and the conversation where the spec did not send them): if that is where the API really is, set model.base_url (and model.path) to it",
            self.url
        ))
    }

    /// What an HTTP error status means for the run; `refusal` reads it first (see
    /// [`PerRequest::refusal`]).
    fn classify(
        &self,
        status: u16,
        body: &str,
        delay: Option<Duration>,
        refusal: Option<fn(u16, &str) -> Option<ModelError>>,
    ) -> Failure {
        let message = error_message(body);
        if let Some(refused) = refusal.and_then(|refusal| refusal(status, &message)) {
            return Failure::Fatal(refused);
        }
        if is_context_error(status, &message) {
            return Failure::Fatal(ModelError::ContextExhausted(format!(
                "HTTP {status}: {message}"
            )));
        }
        if retryable_status(status) {
            return Failure::Retry {
                reason: format!("HTTP {status}: {message}"),
                status: Some(status),
                server_delay: delay,
            };
        }
        let hint = match status {
            401 | 403 => match &self.key_env {
                Some(env) => format!(
                    "the API did not accept the key; check the key in ${env} (model.api_key_env)"
                ),
                None => {
                    "the server wants a key; set model.api_key_env to the variable that holds it"
                        .to_string()
                }
            },
            404 => format!(
                "check model.base_url and model.path (the request went to {}) and model.name",
                self.url
            ),
            _ => "the API refused the request itself, so it was not retried".to_string(),
        };
        Failure::Fatal(ModelError::Provider(format!(
            "HTTP {status}: {message} — {hint}"
        )))
    }

    fn scrub(&self, text: &str) -> String {
        match &self.secret {
            // A dummy key (`x`, `none`) is no secret, and replacing it would garble the
            // provider's message; the same rule as every other redaction.
            Some(secret) if crate::record::redact::unsafe_to_redact(secret).is_none() => {
                text.replace(secret.as_str(), crate::record::redact::REDACTED)
            }
            _ => text.to_string(),
        }
    }

    fn scrub_error(&self, error: ModelError) -> ModelError {
        match error {
            ModelError::Provider(text) => ModelError::Provider(self.scrub(&text)),
            ModelError::ContextExhausted(text) => ModelError::ContextExhausted(self.scrub(&text)),
            ModelError::ContextEditRefused(text) => {
                ModelError::ContextEditRefused(self.scrub(&text))
            }
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classify_statuses_and_scrub_the_key() {
        let transport = Transport::new(
            "http://127.0.0.1:9/v1/messages".into(),
            HeaderMap::new(),
            Some(("MY_KEY".into(), "sk-secret-123".into())),
            RetryPolicy::default(),
            TimeoutsSpec::default().into(),
            None,
        );
        match transport.classify(
            401,
            r#"{"error":{"message":"invalid key sk-secret-123"}}"#,
            None,
            None,
        ) {
            Failure::Fatal(error) => {
                let text = transport.scrub_error(error).to_string();
                assert!(text.contains("$MY_KEY"), "{text}");
                assert!(!text.contains("sk-secret-123"), "{text}");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            transport.classify(429, "", Some(Duration::from_secs(2)), None),
            Failure::Retry {
                status: Some(429),
                server_delay: Some(_),
                ..
            }
        ));
        assert!(matches!(
            transport.classify(400, "{}", None, None),
            Failure::Fatal(ModelError::Provider(_))
        ));
    }

    /// A request's own refusal reading comes first, and only for the requests that
    /// carry it; a prompt too long is still a prompt too long.
    #[test]
    fn a_requests_refusal_is_read_before_the_usual_classes() {
        let transport = Transport::new(
            "http://127.0.0.1:9/v1/messages".into(),
            HeaderMap::new(),
            None,
            RetryPolicy::default(),
            TimeoutsSpec::default().into(),
            None,
        );
        let refusal = Some(crate::model::anthropic_context::refusal as fn(u16, &str) -> _);
        let named = r#"{"type":"error","error":{"type":"invalid_request_error","message":"context_management: Extra inputs are not permitted"}}"#;
        assert!(matches!(
            transport.classify(400, named, None, refusal),
            Failure::Fatal(ModelError::ContextEditRefused(_))
        ));
        assert!(matches!(
            transport.classify(400, named, None, None),
            Failure::Fatal(ModelError::Provider(_))
        ));
        let too_long = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#;
        assert!(matches!(
            transport.classify(400, too_long, None, refusal),
            Failure::Fatal(ModelError::ContextExhausted(_))
        ));
        // A server error that names it is still retried.
        let overloaded = r#"{"type":"error","error":{"type":"overloaded_error","message":"context_management busy"}}"#;
        assert!(matches!(
            transport.classify(529, overloaded, None, refusal),
            Failure::Retry { .. }
        ));
    }

    #[test]
    fn a_dummy_key_does_not_garble_provider_messages() {
        let transport = Transport::new(
            "http://127.0.0.1:9/v1/chat/completions".into(),
            HeaderMap::new(),
            Some(("LOCAL_KEY".into(), "x".into())),
            RetryPolicy::default(),
            TimeoutsSpec::default().into(),
            None,
        );
        let text = transport.scrub("model nonexistent: xylophone");
        assert_eq!(text, "model nonexistent: xylophone");
    }
}
