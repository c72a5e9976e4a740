//! Anthropic's server-side context editing on the wire: what a request carries to ask
//! for it, how a refusal of it reads, and what the server reports it cleared.
//!
//! The API clears the oldest tool results itself once the prompt passes a threshold, so
//! the conversation drover sends stays whole (and a replay rebuilds the same requests),
//! while what the model sees shrinks. It is a beta: a server, gateway or model that does
//! not know it refuses the request, and the loop asks again without it and clears
//! results itself (`ModelError::ContextEditRefused`).

use reqwest::header::HeaderValue;
use serde_json::{Value, json};

use super::{AppliedContextEdits, ModelError, ServerContextEdit};

/// The beta that turns context editing on.
pub(crate) const BETA: &str = "context-management-2025-06-27";

/// The header that names the betas a request uses.
pub(crate) const BETA_HEADER: &str = "anthropic-beta";

/// The edit drover asks for: clearing old tool uses and their results.
pub(crate) const CLEAR_TOOL_USES: &str = "clear_tool_uses_20250919";

/// The request's `context_management` field. `clear_at_least` is left out at 0 (no
/// minimum: the server's default).
pub(crate) fn body(edit: &ServerContextEdit) -> Value {
    let mut clear = json!({
        "type": CLEAR_TOOL_USES,
        "trigger": {"type": "input_tokens", "value": edit.trigger_tokens},
        "keep": {"type": "tool_uses", "value": edit.keep_tool_uses},
    });
    if edit.clear_at_least_tokens > 0 {
        clear["clear_at_least"] =
            json!({"type": "input_tokens", "value": edit.clear_at_least_tokens});
    }
    json!({"edits": [clear]})
}

/// The `anthropic-beta` value for a request with context editing: the betas the model
/// sends already, comma-separated, with [`BETA`] added once.
pub(crate) fn beta_header(already: Option<&HeaderValue>) -> HeaderValue {
    let Some(already) = already.filter(|value| !value.as_bytes().trim_ascii().is_empty()) else {
        return HeaderValue::from_static(BETA);
    };
    let named = already
        .as_bytes()
        .split(|&byte| byte == b',')
        .any(|beta| beta.trim_ascii() == BETA.as_bytes());
    if named {
        return already.clone();
    }
    let mut joined = already.as_bytes().trim_ascii().to_vec();
    joined.push(b',');
    joined.extend_from_slice(BETA.as_bytes());
    // A valid header value with a comma and a visible-ASCII token added is one too; the
    // fallback is never taken, but loses only the other betas if it were.
    HeaderValue::from_bytes(&joined).unwrap_or_else(|_| HeaderValue::from_static(BETA))
}

/// What names context editing in a refusal: the body field, the beta, the edit, and
/// the feature in words ("context management is not supported for this model").
const MARKERS: [&str; 4] = [
    "context_management",
    "context-management",
    "context management",
    "clear_tool_uses",
];

/// What says the prompt does not fit, whatever else the message names: the server
/// edited (or would have) and the conversation is still too long, which asking again
/// without the editing cannot mend.
const TOO_LONG: [&str; 3] = ["prompt is too long", "prompt too long", "input is too long"];

/// A refusal of a request that asked for context editing, read as a refusal of the
/// editing itself: an HTTP 400 (or 422, as some gateways answer a field they do not
/// know) whose message names it and does not say the prompt is too long. Anything else
/// is classified as usual, so a prompt that is too long stays `ContextExhausted`.
pub(crate) fn refusal(status: u16, message: &str) -> Option<ModelError> {
    let lower = message.to_ascii_lowercase();
    let names = |markers: &[&str]| markers.iter().any(|marker| lower.contains(marker));
    (matches!(status, 400 | 422) && names(&MARKERS) && !names(&TOO_LONG))
        .then(|| ModelError::ContextEditRefused(format!("HTTP {status}: {message}")))
}

/// The edits a response's `context_management` reports (`applied_edits`, one entry per
/// edit the server made), added up; `None` when it made none.
pub(crate) fn applied(context_management: &Value) -> Option<AppliedContextEdits> {
    let edits = context_management
        .get("applied_edits")
        .and_then(Value::as_array)
        .filter(|edits| !edits.is_empty())?;
    let count = |edit: &Value, field: &str| edit.get(field).and_then(Value::as_u64).unwrap_or(0);
    Some(
        edits
            .iter()
            .fold(AppliedContextEdits::default(), |sum, edit| {
                AppliedContextEdits {
                    cleared_tool_uses: sum
                        .cleared_tool_uses
                        .saturating_add(count(edit, "cleared_tool_uses")),
                    cleared_input_tokens: sum
                        .cleared_input_tokens
                        .saturating_add(count(edit, "cleared_input_tokens")),
                }
            }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_edit_asked_for() {
        let edit = ServerContextEdit {
            trigger_tokens: 100_000,
            keep_tool_uses: 3,
            clear_at_least_tokens: 20_000,
        };
        assert_eq!(
            body(&edit),
            json!({"edits": [{
                "type": "clear_tool_uses_20250919",
                "trigger": {"type": "input_tokens", "value": 100_000},
                "keep": {"type": "tool_uses", "value": 3},
                "clear_at_least": {"type": "input_tokens", "value": 20_000},
            }]})
        );
        let no_minimum = body(&ServerContextEdit {
            clear_at_least_tokens: 0,
            ..edit
        });
        assert!(no_minimum["edits"][0].get("clear_at_least").is_none());
        assert_eq!(no_minimum["edits"][0]["keep"]["value"], 3);
    }

    #[test]
    fn the_beta_is_added_to_the_betas_already_sent_once() {
        assert_eq!(beta_header(None), BETA);
        assert_eq!(beta_header(Some(&HeaderValue::from_static(" "))), BETA);
        assert_eq!(
            beta_header(Some(&HeaderValue::from_static("prompt-caching-2024-07-31"))),
            "prompt-caching-2024-07-31,context-management-2025-06-27"
        );
        let both = HeaderValue::from_static("a-beta, context-management-2025-06-27");
        assert_eq!(beta_header(Some(&both)), both);
    }

    #[test]
    fn refusals_that_name_context_editing_are_its_own() {
        for (status, message) in [
            (
                400,
                "invalid_request_error: context_management: Extra inputs are not permitted",
            ),
            (
                400,
                "invalid_request_error: Unexpected value(s) `context-management-2025-06-27` for the `anthropic-beta` header",
            ),
            (
                400,
                "invalid_request_error: context management is not supported for this model",
            ),
            // Names the edit and the window: the edit, not the conversation, is at fault.
            (
                400,
                "invalid_request_error: context_management.edits.0.trigger: must be below the model's context window",
            ),
            (
                422,
                "Unprocessable Entity: unknown field `context_management`",
            ),
        ] {
            match refusal(status, message) {
                Some(ModelError::ContextEditRefused(text)) => {
                    assert!(text.contains(message), "{text}");
                    assert!(text.starts_with(&format!("HTTP {status}")), "{text}");
                }
                other => panic!("{message}: {other:?}"),
            }
        }
        for (status, message) in [
            (
                400,
                "invalid_request_error: prompt is too long: 210000 tokens > 200000 maximum",
            ),
            (
                400,
                "invalid_request_error: prompt is too long after context management: 210000 tokens > 200000 maximum",
            ),
            (400, "invalid_request_error: max_tokens: must be positive"),
            (500, "api_error: context_management failed"),
            (401, "authentication_error: context-management needs a key"),
        ] {
            assert!(refusal(status, message).is_none(), "{status} {message}");
        }
    }

    #[test]
    fn applied_edits_are_added_up() {
        let reported = json!({"applied_edits": [
            {"type": "clear_tool_uses_20250919", "cleared_tool_uses": 8, "cleared_input_tokens": 50_000},
            {"type": "clear_thinking_20251015", "cleared_thinking_turns": 2, "cleared_input_tokens": 1_000},
        ]});
        assert_eq!(
            applied(&reported),
            Some(AppliedContextEdits {
                cleared_tool_uses: 8,
                cleared_input_tokens: 51_000,
            })
        );
        assert_eq!(applied(&json!({"applied_edits": []})), None);
        assert_eq!(applied(&json!({})), None);
        assert_eq!(applied(&Value::Null), None);
        let huge = json!({"applied_edits": [
            {"cleared_tool_uses": u64::MAX, "cleared_input_tokens": u64::MAX},
            {"cleared_tool_uses": 1, "cleared_input_tokens": 1},
        ]});
        assert_eq!(applied(&huge).map(|a| a.cleared_tool_uses), Some(u64::MAX));
    }
}
