//! The model side of the loop: one trait, several providers.
//!
//! The loop only sees [`Model`]; providers translate the conversation to their wire format.
//! `script` plays the turns written in the spec, `replay` plays the model responses of a
//! recorded transcript. Both are deterministic, so runs built on them can be replayed and
//! compared byte for byte. `anthropic` and `openai` stream from the real APIs (or any
//! server speaking their wire format) through a shared transport with retries.

pub(crate) mod anthropic;
pub(crate) mod anthropic_context;
mod anthropic_stream;
pub(crate) mod context_window;
mod http_errors;
mod not_a_stream;
pub(crate) mod openai;
mod openai_stream;
pub(crate) mod pricing;
pub(crate) mod remote;
pub(crate) mod remote_model;
pub(crate) mod replay;
pub(crate) mod resumed;
pub(crate) mod retry;
pub(crate) mod script;
pub(crate) mod sse;
pub(crate) mod transport;

pub(crate) use transport::RetryNotice;

use async_trait::async_trait;

use crate::message::{Message, ModelResponse, ToolDefinition};

/// What the loop sends for one turn.
pub(crate) struct ModelRequest<'a> {
    pub system: &'a str,
    pub messages: &'a [Message],
    pub tools: &'a [ToolDefinition],
    /// Which tools the model may call this turn.
    pub tool_choice: ToolChoice<'a>,
    /// The final answer's JSON Schema, for providers that constrain the text to it.
    pub output_schema: Option<&'a serde_json::Value>,
    /// Anthropic's server-side web search, when the policy allows it (other providers
    /// have no such tool and leave it out).
    pub web_search: Option<&'a crate::message::WebSearch>,
    /// The provider's own context editing for this request (`limits.context: {strategy:
    /// server}`): Anthropic's API then clears old tool results itself. Providers
    /// without it leave it out; the loop asks only Anthropic.
    pub context_edit: Option<&'a ServerContextEdit>,
}

/// Server-side context editing, as the loop asks for it: once the prompt passes
/// `trigger_tokens`, the server clears the oldest tool uses and their results, keeping
/// the newest `keep_tool_uses`, and (when above 0) at least `clear_at_least_tokens`
/// tokens at a time, so each clearing is worth the prompt cache it breaks. The
/// conversation drover sends stays whole: the server edits what the model sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ServerContextEdit {
    pub trigger_tokens: u64,
    pub keep_tool_uses: u32,
    pub clear_at_least_tokens: u64,
}

/// What the server reported it cleared before it answered one request (the sum over
/// the edits it applied), for the loop's `compaction` event.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct AppliedContextEdits {
    pub cleared_tool_uses: u64,
    pub cleared_input_tokens: u64,
}

/// Which tools the model may call in one turn. The tools are offered in every request
/// all the same: the prefix of the request stays the same for the provider's cache, and
/// a conversation with tool calls in it needs their definitions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum ToolChoice<'a> {
    /// Any, or none: the model decides.
    #[default]
    Auto,
    /// This one (the final `StructuredOutput`).
    Tool(&'a str),
    /// None: a turn of text only (a summary, a wrap-up).
    Nothing,
}

/// How a provider gives a final answer that must match a schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OutputMode {
    /// As the input of a `StructuredOutput` tool call (forced with `tool_choice`).
    Tool,
    /// As the final text, constrained by the provider's JSON response format.
    Text,
}

/// Why a model could not produce a turn.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ModelError {
    /// A replayed transcript has no more model responses although the loop asks for one:
    /// the replay no longer follows the recording.
    #[error(
        "the recorded transcript has no model response for turn {turn}: the replay drifted from the recording"
    )]
    ReplayExhausted { turn: u32 },
    /// The provider failed in a way retries could not fix.
    #[error("provider error: {0}")]
    Provider(String),
    /// The API refused the request because the conversation no longer fits the model's
    /// context window; retrying the same conversation cannot help.
    #[error("the conversation no longer fits the model's context window; the API said: {0}")]
    ContextExhausted(String),
    /// The API refused the request because of the context editing it asked for (an
    /// unknown beta or field, a model without it). Not retried: the same request would
    /// be refused again; the loop asks again without it and clears results itself.
    #[error("the API refused its server-side context editing; it said: {0}")]
    ContextEditRefused(String),
}

/// A source of assistant turns.
#[async_trait]
pub(crate) trait Model: Send {
    /// The provider name recorded in the transcript (`script`, `replay`, `anthropic`, …).
    fn provider(&self) -> &str;
    /// The model name recorded in the transcript.
    fn name(&self) -> &str;
    /// Where this model announces its retries (providers that retry hand the receiver
    /// over once; the agent writes each notice to the transcript as it arrives).
    fn retry_notices(&mut self) -> Option<tokio::sync::mpsc::UnboundedReceiver<RetryNotice>> {
        None
    }
    /// How this provider gives a schema-valid final answer.
    fn output_mode(&self) -> OutputMode {
        OutputMode::Tool
    }
    /// What the server reported it cleared for the last response (server-side context
    /// editing), taken: a second call returns `None` until another response reports
    /// edits. `None` from providers without it, and when the server cleared nothing.
    fn applied_context_edits(&mut self) -> Option<AppliedContextEdits> {
        None
    }
    /// Produce the next assistant turn for the conversation so far.
    async fn respond(&mut self, request: ModelRequest<'_>) -> Result<ModelResponse, ModelError>;
}
