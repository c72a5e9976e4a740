//! The conversation as the loop keeps it: Anthropic-style messages and content blocks.
//!
//! Every provider translates to and from these types, so the loop, the transcript and
//! replay all speak one format.
//!
//! Plain data and nothing of drover: its own crate so the spec, the policy and the
//! record can name the conversation without depending on the binary (drover re-exports
//! it as `crate::message`).

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;

fn is_zero(count: &u64) -> bool {
    *count == 0
}

/// Anthropic's server-side web search, as a task's policy lets the model use it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebSearch {
    /// Only results from these domains (and their subdomains); empty: any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_domains: Vec<String>,
    /// Never results from these.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocked_domains: Vec<String>,
    /// Searches per request at most.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_uses: Option<u32>,
}

/// One block of a message, tagged the way the Anthropic Messages API tags it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    Text {
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
    /// A call of a tool the provider runs itself (Anthropic's web search), kept to be
    /// sent back as it came.
    ServerToolUse {
        id: String,
        name: String,
        input: Value,
    },
    /// The provider's result of a web search, kept verbatim (its encrypted content must
    /// go back unchanged in later requests).
    WebSearchToolResult {
        tool_use_id: String,
        content: Value,
    },
    ToolResult {
        tool_use_id: String,
        content: String,
        #[serde(default)]
        is_error: bool,
        /// Images the tool returned (an MCP tool's image content), after the text.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<Image>,
    },
}

/// An image a tool returned, as the Anthropic API takes it in a tool result: base64 data
/// and its media type. Providers that take no images get the text's note only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Image {
    pub media_type: String,
    /// Base64, as the tool sent it.
    pub data: String,
}

impl Image {
    /// The image's bytes; None when `data` is not valid base64.
    pub fn bytes(&self) -> Option<Vec<u8>> {
        base64::engine::general_purpose::STANDARD
            .decode(&self.data)
            .ok()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    User,
    Assistant,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: Vec<ContentBlock>,
}

impl Message {
    pub fn user_text(text: impl Into<String>) -> Self {
        Message {
            role: Role::User,
            content: vec![ContentBlock::Text { text: text.into() }],
        }
    }
}

/// Why the model stopped producing its turn; the Anthropic names, which the loop acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    EndTurn,
    ToolUse,
    MaxTokens,
    StopSequence,
    PauseTurn,
    Refusal,
}

/// Token counts for one response or, summed, for a whole run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    #[serde(default)]
    pub cache_creation_input_tokens: u64,
    #[serde(default)]
    pub cache_read_input_tokens: u64,
    /// Searches Anthropic's web search server tool ran for this turn (priced apart).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub web_search_requests: u64,
    /// The server reported no usage, so these counts are drover's estimate from the
    /// request and response sizes (see docs/limits.md); limits are enforced on it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub estimated: bool,
}

impl Usage {
    /// No token at all (what serializers leave out).
    pub fn is_zero(&self) -> bool {
        self.total() == 0 && self.web_search_requests == 0
    }

    /// Add another turn's usage. Counts come from a server and may be absurd (2^63 per
    /// turn): they saturate at `u64::MAX`, never wrap to a small number that would
    /// disable `max_tokens`.
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cache_creation_input_tokens = self
            .cache_creation_input_tokens
            .saturating_add(other.cache_creation_input_tokens);
        self.cache_read_input_tokens = self
            .cache_read_input_tokens
            .saturating_add(other.cache_read_input_tokens);
        self.web_search_requests = self
            .web_search_requests
            .saturating_add(other.web_search_requests);
        self.estimated |= other.estimated;
    }

    /// About four bytes of text make a token for the tokenizers in use; an estimate
    /// errs high rather than low only through the request's JSON overhead.
    pub const BYTES_PER_TOKEN: usize = 4;

    /// `response`'s usage, or when the server reported none at all (every count zero:
    /// no real request costs nothing), an estimate from the request's and the answer's
    /// sizes, marked `estimated`.
    pub fn estimate_if_missing(response: &mut ModelResponse, request_bytes: usize) {
        if response.usage != Usage::default() {
            return;
        }
        let output_bytes: usize = response
            .content
            .iter()
            .map(|block| match block {
                ContentBlock::Text { text } => text.len(),
                ContentBlock::ToolUse { name, input, .. } => name.len() + input.to_string().len(),
                ContentBlock::ToolResult { content, .. } => content.len(),
                ContentBlock::ServerToolUse { input, .. } => input.to_string().len(),
                ContentBlock::WebSearchToolResult { content, .. } => content.to_string().len(),
            })
            .sum();
        let tokens = |bytes: usize| (bytes.div_ceil(Self::BYTES_PER_TOKEN)).max(1) as u64;
        response.usage = Usage {
            input_tokens: tokens(request_bytes),
            output_tokens: tokens(output_bytes),
            cache_creation_input_tokens: 0,
            cache_read_input_tokens: 0,
            web_search_requests: response.usage.web_search_requests,
            estimated: true,
        };
    }

    /// The total for people: `1234`, or `~1234 (estimated)` when drover estimated it.
    pub fn shown(&self) -> String {
        if self.estimated {
            format!("~{} (estimated)", self.total())
        } else {
            self.total().to_string()
        }
    }

    /// Every token of the usage, saturating (see [`Usage::add`]).
    pub fn total(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.output_tokens)
            .saturating_add(self.cache_creation_input_tokens)
            .saturating_add(self.cache_read_input_tokens)
    }
}

#[cfg(test)]
mod usage_tests {
    use super::Usage;

    #[test]
    fn huge_counts_saturate_instead_of_wrapping() {
        let huge = Usage {
            input_tokens: 1 << 63,
            output_tokens: 1 << 63,
            cache_creation_input_tokens: u64::MAX,
            cache_read_input_tokens: 1,
            web_search_requests: 0,
            estimated: false,
        };
        assert_eq!(huge.total(), u64::MAX);
        let mut sum = huge;
        sum.add(&huge);
        assert_eq!(sum.input_tokens, u64::MAX);
        assert_eq!(sum.total(), u64::MAX);
    }
}

/// A tool as offered to a model (the Anthropic `tools` array format).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
}

/// One assistant turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelResponse {
    pub content: Vec<ContentBlock>,
    pub stop_reason: StopReason,
    pub usage: Usage,
}

impl ModelResponse {
    /// The tool calls of this turn, in the order the model made them.
    pub fn tool_calls(&self) -> impl Iterator<Item = (&str, &str, &Value)> {
        self.content.iter().filter_map(|block| match block {
            ContentBlock::ToolUse { id, name, input } => Some((id.as_str(), name.as_str(), input)),
            _ => None,
        })
    }

    /// All text blocks of this turn joined by newlines.
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self
            .content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        texts.join("\n")
    }
}
