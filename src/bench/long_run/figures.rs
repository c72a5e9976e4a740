//! What the mock model counted over one run: each accepted request's size, their sum
//! (the cost proxy: every request resends the conversation), the largest, and the
//! requests it refused as too long. Printed by `drover bench --mock-model` as one JSON
//! line when it stops, and read back by the long-run bench and the tests.

use serde::{Deserialize, Serialize};

use crate::message::Usage;

/// One accepted request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Request {
    /// The scenario turns answered once this one was: its own turn for a request with
    /// tools, the turns done before it for a text-only one.
    pub turn: u32,
    /// A request without tools (a summary or a wrap-up), answered with text.
    pub text: bool,
    pub bytes: u64,
    pub tokens: u64,
}

/// The mock's figures for one run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Figures {
    /// The window enforced, in tokens (None: every request accepted).
    pub window: Option<u64>,
    /// Scenario turns answered.
    pub turns: u32,
    /// Text-only requests answered (summaries, wrap-ups).
    pub text_answers: u32,
    /// Requests answered 400 `prompt is too long`.
    pub refusals: u32,
    /// The largest refused request, in tokens (0: none).
    pub largest_refused_tokens: u64,
    /// Body bytes of every accepted request, summed.
    pub bytes_summed: u64,
    /// The largest accepted request.
    pub peak_bytes: u64,
    pub peak_tokens: u64,
    pub requests: Vec<Request>,
}

/// A request's tokens as the mock counts them: its body's bytes, four to a token, as
/// drover estimates them too.
pub(crate) fn tokens(bytes: u64) -> u64 {
    bytes.div_ceil(Usage::BYTES_PER_TOKEN as u64)
}

impl Figures {
    /// Count an accepted request.
    pub(crate) fn accept(&mut self, turn: u32, text: bool, bytes: u64) {
        let tokens = tokens(bytes);
        self.bytes_summed += bytes;
        self.peak_bytes = self.peak_bytes.max(bytes);
        self.peak_tokens = self.peak_tokens.max(tokens);
        if text {
            self.text_answers += 1;
        } else {
            self.turns = self.turns.max(turn);
        }
        self.requests.push(Request {
            turn,
            text,
            bytes,
            tokens,
        });
    }

    /// Count a refused request.
    pub(crate) fn refuse(&mut self, tokens: u64) {
        self.refusals += 1;
        self.largest_refused_tokens = self.largest_refused_tokens.max(tokens);
    }

    /// The bytes of the accepted requests up to scenario turn `turn`, the text-only
    /// requests made before it included: what reaching that turn cost.
    pub(crate) fn bytes_through(&self, turn: u32) -> u64 {
        self.requests
            .iter()
            .filter(|request| request.turn < turn || (request.turn == turn && !request.text))
            .map(|request| request.bytes)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_add_up_and_a_prefix_counts_the_text_requests_before_its_turn() {
        let mut figures = Figures::default();
        figures.accept(1, false, 400);
        figures.accept(2, false, 801);
        figures.refuse(900);
        figures.accept(2, true, 100);
        figures.accept(3, false, 300);
        assert_eq!(figures.turns, 3);
        assert_eq!(figures.text_answers, 1);
        assert_eq!(figures.refusals, 1);
        assert_eq!(figures.largest_refused_tokens, 900);
        assert_eq!(figures.bytes_summed, 1601);
        assert_eq!(figures.peak_bytes, 801);
        assert_eq!(figures.peak_tokens, 201);
        assert_eq!(figures.bytes_through(1), 400);
        assert_eq!(figures.bytes_through(2), 1201);
        assert_eq!(figures.bytes_through(3), 1601);
        let line = serde_json::to_string(&figures).unwrap();
        assert_eq!(serde_json::from_str::<Figures>(&line).unwrap(), figures);
    }
}
