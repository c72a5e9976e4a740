//! How big a request is: its bytes as JSON, counted without building the text, and its
//! tokens, estimated from the bytes at the rate the server last counted (four bytes a
//! token until it has counted one). Estimates depend only on the conversation and the
//! recorded usage, so a replay makes the same ones.

use serde::Serialize;

use crate::message::{Message, ToolDefinition, Usage};

/// Counts what is written and keeps none of it.
struct Counter(u64);

impl std::io::Write for Counter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0 += bytes.len() as u64;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The bytes of `value` as JSON.
pub(super) fn json_bytes<T: Serialize + ?Sized>(value: &T) -> u64 {
    let mut counter = Counter(0);
    // Writing to a counter cannot fail, and these types always serialize.
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

/// The sizes of a session's requests.
#[derive(Debug, Default)]
pub(crate) struct RequestSize {
    /// The system prompt's and the tool definitions' bytes: the same in every request.
    fixed: Option<u64>,
    /// The input tokens and bytes of the last request the server counted.
    rate: Option<(u64, u64)>,
}

impl RequestSize {
    /// The request's bytes: system prompt, tools and conversation.
    pub(crate) fn bytes(
        &mut self,
        system: &str,
        tools: &[ToolDefinition],
        messages: &[Message],
    ) -> u64 {
        let fixed = *self
            .fixed
            .get_or_insert_with(|| json_bytes(system) + json_bytes(tools));
        fixed + json_bytes(messages)
    }

    /// The tokens of a request of `bytes`.
    pub(crate) fn tokens(&self, bytes: u64) -> u64 {
        match self.rate {
            Some((tokens, counted)) if counted > 0 => {
                let scaled = u128::from(bytes) * u128::from(tokens);
                u64::try_from(scaled.div_ceil(u128::from(counted))).unwrap_or(u64::MAX)
            }
            _ => bytes.div_ceil(Usage::BYTES_PER_TOKEN as u64),
        }
    }

    /// The bytes a request of `tokens` holds at most.
    pub(crate) fn bytes_for(&self, tokens: u64) -> u64 {
        match self.rate {
            Some((counted_tokens, counted)) if counted_tokens > 0 => {
                let scaled = u128::from(tokens) * u128::from(counted);
                u64::try_from(scaled / u128::from(counted_tokens)).unwrap_or(u64::MAX)
            }
            _ => tokens.saturating_mul(Usage::BYTES_PER_TOKEN as u64),
        }
    }

    /// Learn the rate from what the server counted for a request of `bytes`: its input
    /// tokens, cached or not. An estimate of drover's own teaches nothing.
    pub(crate) fn counted(&mut self, usage: &Usage, bytes: u64) {
        let tokens = usage
            .input_tokens
            .saturating_add(usage.cache_creation_input_tokens)
            .saturating_add(usage.cache_read_input_tokens);
        if !usage.estimated && tokens > 0 && bytes > 0 {
            self.rate = Some((tokens, bytes));
        }
    }

    /// Learn the rate from a refusal that says how many tokens the request had
    /// ("prompt is too long: 40123 tokens > 32000 maximum").
    pub(crate) fn refused(&mut self, tokens: u64, bytes: u64) {
        if tokens > 0 && bytes > 0 {
            self.rate = Some((tokens, bytes));
        }
    }
}

/// The token count and the window a "prompt is too long" refusal names, when it names
/// them (Anthropic: `prompt is too long: 40123 tokens > 32000 maximum`; OpenAI: `maximum
/// context length is 128000 tokens. However, your messages resulted in 130211 tokens`).
pub(crate) fn refusal_figures(message: &str) -> Option<(u64, u64)> {
    let numbers: Vec<u64> = message
        .split(|c: char| !c.is_ascii_digit())
        .filter(|part| !part.is_empty())
        .filter_map(|part| part.parse().ok())
        .filter(|number| *number >= 1_000)
        .collect();
    match numbers.as_slice() {
        [first, second, ..] => {
            let (tokens, window) = if message.contains("maximum context length") {
                (*second, *first)
            } else {
                (*first, *second)
            };
            (tokens > window).then_some((tokens, window))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_are_counted_as_the_json_sent_and_tokens_at_the_server_rate() {
        let messages = vec![Message::user_text("hello")];
        let mut size = RequestSize::default();
        let bytes = size.bytes("sys", &[], &messages);
        assert_eq!(
            bytes,
            (serde_json::to_string("sys").unwrap().len()
                + serde_json::to_string(&Vec::<ToolDefinition>::new())
                    .unwrap()
                    .len()
                + serde_json::to_string(&messages).unwrap().len()) as u64
        );
        assert_eq!(
            size.tokens(4_000),
            1_000,
            "four bytes a token before any count"
        );
        size.counted(
            &Usage {
                input_tokens: 1_000,
                cache_read_input_tokens: 1_000,
                ..Usage::default()
            },
            6_000,
        );
        assert_eq!(size.tokens(6_000), 2_000);
        assert_eq!(size.tokens(3_000), 1_000);
        assert_eq!(size.bytes_for(1_000), 3_000);
        // drover's own estimate is no count.
        size.counted(
            &Usage {
                input_tokens: 10,
                estimated: true,
                ..Usage::default()
            },
            6_000,
        );
        assert_eq!(size.tokens(6_000), 2_000);
    }

    #[test]
    fn refusals_name_the_tokens_and_the_window() {
        assert_eq!(
            refusal_figures("HTTP 400: prompt is too long: 40123 tokens > 32000 maximum"),
            Some((40_123, 32_000))
        );
        assert_eq!(
            refusal_figures(
                "This model's maximum context length is 128000 tokens. However, your messages resulted in 130211 tokens."
            ),
            Some((130_211, 128_000))
        );
        assert_eq!(refusal_figures("HTTP 400: prompt is too long"), None);
    }
}
