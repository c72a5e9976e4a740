//! Reading a provider's error response: the human part of its body, whether it says the
//! conversation no longer fits the context window, and an error's chain of causes.
//!
//! Shared by the transport (HTTP error statuses) and the stream decoders (error events
//! inside a 200 stream), so both word the same refusal the same way.

use serde_json::Value;

/// An error and its causes, `outer: inner: …` (reqwest's own text omits the causes).
pub(super) fn chain(error: &dyn std::error::Error) -> String {
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

/// The human part of an error body: `error.message` (both providers use it, with
/// `error.type` / `error.code` beside it), else the start of the body.
pub(crate) fn error_message(body: &str) -> String {
    if let Ok(value) = serde_json::from_str::<Value>(body) {
        let error = value.get("error").unwrap_or(&value);
        let message = error
            .get("message")
            .and_then(Value::as_str)
            .or_else(|| error.as_str());
        let kind = error
            .get("type")
            .and_then(Value::as_str)
            .or_else(|| error.get("code").and_then(Value::as_str));
        match (kind, message) {
            (Some(kind), Some(message)) => return format!("{kind}: {message}"),
            (None, Some(message)) => return message.to_string(),
            _ => {}
        }
    }
    let trimmed = body.trim();
    if trimmed.is_empty() {
        return "(empty response body)".to_string();
    }
    let mut end = trimmed.len().min(500);
    while !trimmed.is_char_boundary(end) {
        end -= 1;
    }
    trimmed[..end].to_string()
}

/// Does this refusal say the conversation no longer fits the model's context window?
/// Anthropic: 400 `prompt is too long`; OpenAI: `context_length_exceeded`; vLLM:
/// "maximum context length" / "maximum model length"; llama.cpp (and Ollama, which runs
/// it): `exceed_context_size_error` "the request exceeds the available context size";
/// LiteLLM and OpenRouter: `ContextWindowExceededError`; Bedrock and others: "input is too
/// long"; 413 is a request too large to accept at all.
pub(crate) fn is_context_error(status: u16, message: &str) -> bool {
    let lower = message.to_lowercase();
    matches!(status, 400 | 413 | 422)
        && [
            "prompt is too long",
            "prompt too long",
            "input is too long",
            "context_length_exceeded",
            "maximum context length",
            "max context length",
            "maximum model length",
            "max_model_len",
            "context length",
            "context window",
            "contextwindowexceeded",
            "exceed_context_size",
            "available context size",
            "context size",
            "request_too_large",
            "too many tokens",
        ]
        .iter()
        .any(|marker| lower.contains(marker))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_messages_from_both_providers() {
        assert_eq!(
            error_message(
                r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#
            ),
            "invalid_request_error: prompt is too long: 210000 tokens > 200000 maximum"
        );
        assert_eq!(
            error_message(
                r#"{"error":{"message":"This model's maximum context length is 128000 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}"#
            ),
            "invalid_request_error: This model's maximum context length is 128000 tokens."
        );
        assert_eq!(
            error_message("<html>bad gateway</html>"),
            "<html>bad gateway</html>"
        );
        assert_eq!(error_message(""), "(empty response body)");
        assert_eq!(error_message(&"é".repeat(400)).len(), 500);
    }

    /// The bodies the servers really send when the conversation does not fit, through
    /// the same `error_message` the transport applies.
    #[test]
    fn context_errors_of_local_servers_and_gateways() {
        let bodies = [
            // llama.cpp server (and Ollama, which runs it)
            (
                400,
                r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":4121,"n_ctx":4096}}"#,
            ),
            (
                400,
                r#"{"error":{"code":400,"message":"request (32768 tokens) exceeds the available context size (32768 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":32768,"n_ctx":32768}}"#,
            ),
            // vLLM, older and newer wording
            (
                400,
                r#"{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5123 tokens (4099 in the messages, 1024 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}"#,
            ),
            (
                400,
                r#"{"error":{"message":"The decoder prompt (length 5000) is longer than the maximum model length of 4096. Make sure that `max_model_len` is no smaller than the number of text tokens.","type":"BadRequestError","param":null,"code":400}}"#,
            ),
            // Ollama's own wording
            (
                400,
                r#"{"error":{"message":"prompt too long; exceeded max context length by 512 tokens","type":"invalid_request_error","param":null,"code":null}}"#,
            ),
            // LiteLLM proxy
            (
                400,
                r#"{"error":{"message":"litellm.ContextWindowExceededError: litellm.BadRequestError: ContextWindowExceededError: OpenAIException - Error code: 400","type":null,"param":null,"code":"400"}}"#,
            ),
            // OpenRouter
            (
                400,
                r#"{"error":{"message":"This endpoint's maximum context length is 131072 tokens. However, you requested about 140000 tokens (139000 of text input, 1000 in the output). Please reduce the length of either one.","code":400,"metadata":{"provider_name":null}}}"#,
            ),
            // Bedrock through a gateway
            (
                400,
                r#"{"message":"Input is too long for requested model."}"#,
            ),
        ];
        for (status, body) in bodies {
            let message = error_message(body);
            assert!(is_context_error(status, &message), "{body}");
            assert!(!is_context_error(500, &message), "{body}");
        }
    }

    #[test]
    fn context_errors() {
        assert!(is_context_error(
            400,
            "invalid_request_error: prompt is too long: 1 > 0"
        ));
        assert!(is_context_error(
            400,
            "This model's maximum context length is 8192 tokens"
        ));
        assert!(is_context_error(413, "request_too_large: too big"));
        assert!(!is_context_error(400, "invalid_request_error: bad tool"));
        assert!(!is_context_error(
            400,
            "invalid_request_error: max_tokens must be positive"
        ));
        assert!(!is_context_error(500, "prompt is too long"));
    }
}
