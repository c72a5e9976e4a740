//! The model side of the loop: one trait, several providers.
//!
//! The loop only sees [`Model`]; providers translate the conversation to their wire format.
//! `script` plays the turns written in the spec, `replay` plays the model responses of a
//! recorded transcript. Both are deterministic, so runs built on them can be replayed and
//! compared byte for byte.

mod message;
pub mod pricing;
pub mod replay;
pub mod script;

pub use message::{ContentBlock, Message, ModelResponse, Role, StopReason, ToolDefinition, Usage};

use async_trait::async_trait;

/// What the loop sends for one turn.
pub struct ModelRequest<'a> {
    pub system: &'a str,
    pub messages: &'a [Message],
    pub tools: &'a [ToolDefinition],
}

/// Why a model could not produce a turn.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// A replayed transcript has no more model responses although the loop asks for one:
    /// the replay no longer follows the recording.
    #[error(
        "the recorded transcript has no model response for turn {turn}: the replay drifted from the recording"
    )]
    ReplayExhausted { turn: u32 },
    /// The provider failed in a way retries could not fix.
    #[error("provider error: {0}")]
    Provider(String),
}

/// A source of assistant turns.
#[async_trait]
pub trait Model: Send {
    /// The provider name recorded in the transcript (`script`, `replay`, `anthropic`, …).
    fn provider(&self) -> &str;
    /// The model name recorded in the transcript.
    fn name(&self) -> &str;
    /// Produce the next assistant turn for the conversation so far.
    async fn respond(&mut self, request: ModelRequest<'_>) -> Result<ModelResponse, ModelError>;
}
