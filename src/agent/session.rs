//! The state of one task's conversation, kept across the rounds of the loop: a task
//! whose checks fail goes back to work in the same conversation, under the same limits.

use std::collections::BTreeMap;

use serde_json::Value;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::time::Instant;

use crate::message::{ContentBlock, Message, Role, ToolDefinition, Usage};
use crate::model::RetryNotice;
use crate::record::Denial;

/// When the loop started and when it must end (all rounds together).
#[derive(Clone, Copy)]
pub(super) struct Clock {
    pub started: Instant,
    pub deadline: Option<Instant>,
}

/// One task's conversation and what it has used.
pub(crate) struct Session {
    pub(super) messages: Vec<Message>,
    pub(super) turns: u32,
    pub(super) usage: Usage,
    pub(super) final_text: String,
    /// The text of the last turn only (empty when it had none): a final answer given as
    /// text must be the last turn's, not an earlier one's.
    pub(super) last_turn_text: String,
    pub(super) denials: Vec<Denial>,
    /// Replayed results that differed from the recording: how many, and the first.
    pub(super) drift: Option<crate::record::DriftReport>,
    /// Tool calls compared with the recording so far (a replay's call numbers).
    pub(super) replayed_calls: u32,
    /// Calls the policy allowed, by tool name.
    pub(super) calls: BTreeMap<String, u64>,
    /// The tools offered, the same in every request.
    pub(super) tools: Vec<ToolDefinition>,
    /// Where the provider reports its retries (taken once: the receiver is the model's).
    pub(super) notices: Option<UnboundedReceiver<RetryNotice>>,
    pub(super) clock: Clock,
    /// SessionStart and UserPromptSubmit have run.
    pub(super) opened: bool,
    /// Stop hooks that blocked in a row.
    pub(super) stop_blocks: u32,
    /// The last final answer valid against `output.schema`.
    pub(super) output: Option<Value>,
    /// Final answers found invalid so far.
    pub(super) invalid_outputs: u32,
    /// The next request forces the `StructuredOutput` call.
    pub(super) force_output: bool,
    /// The model was already asked once for its `StructuredOutput` call.
    pub(super) force_output_asked: bool,
    /// The sizes of its requests and its compactions (`limits.context`).
    pub(super) context: super::context::ContextState,
    /// The same call with the same result, in a row (`limits.max_identical_calls`).
    pub(super) repeats: super::repeats::Repeats,
    /// The next request is the wrap-up turn; the run then ends with this.
    pub(super) wrap_up: Option<(crate::record::EndReason, String)>,
    /// What the model wrote in its wrap-up turn.
    pub(super) wrap_up_text: Option<String>,
    /// The model had its wrap-up turn (one a run).
    pub(super) wrapped_up: bool,
    /// The longest a model request took so far (how much time a turn needs).
    pub(super) longest_request: std::time::Duration,
    /// The longest a working turn took so far, its request and its tools.
    pub(super) longest_turn: std::time::Duration,
    /// The output tokens of the last turn (what the next one may write).
    pub(super) last_output_tokens: u64,
}

/// Text added to the conversation for one request only (the summary prompt).
pub(super) enum Transient {
    /// A block added to the last message, the user's.
    Block,
    /// A message of its own.
    Message,
}

impl Session {
    /// The turns this conversation took so far (what a task that stopped on an error,
    /// such as a full disk, reports it ran).
    pub(crate) fn turns(&self) -> u32 {
        self.turns
    }

    pub(super) fn new(
        prompt: String,
        tools: Vec<ToolDefinition>,
        notices: Option<UnboundedReceiver<RetryNotice>>,
        clock: Clock,
    ) -> Session {
        Session {
            messages: vec![Message::user_text(prompt)],
            turns: 0,
            usage: Usage::default(),
            final_text: String::new(),
            last_turn_text: String::new(),
            denials: Vec::new(),
            drift: None,
            replayed_calls: 0,
            calls: BTreeMap::new(),
            tools,
            notices,
            clock,
            opened: false,
            stop_blocks: 0,
            output: None,
            invalid_outputs: 0,
            force_output: false,
            force_output_asked: false,
            context: Default::default(),
            repeats: Default::default(),
            wrap_up: None,
            wrap_up_text: None,
            wrapped_up: false,
            longest_request: std::time::Duration::ZERO,
            longest_turn: std::time::Duration::ZERO,
            last_output_tokens: 0,
        }
    }

    /// Add `text` as the user's for one request; [`Session::take_transient`] takes it
    /// out again.
    pub(super) fn push_transient(&mut self, text: String) -> Transient {
        let added = match self.messages.last() {
            Some(last) if last.role == Role::User => Transient::Block,
            _ => Transient::Message,
        };
        self.push_user_text(text);
        added
    }

    pub(super) fn take_transient(&mut self, added: Transient) {
        match added {
            Transient::Block => {
                if let Some(last) = self.messages.last_mut() {
                    last.content.pop();
                }
            }
            Transient::Message => {
                self.messages.pop();
            }
        }
    }

    /// The bytes of the next request as it stands (system prompt, tools, conversation).
    pub(super) fn request_bytes(&mut self, system: &str) -> u64 {
        self.context.size.bytes(system, &self.tools, &self.messages)
    }

    /// Add `text` to the conversation as the user's: to the last message when it is
    /// the user's (tool results), else as a new message.
    pub(crate) fn push_user_text(&mut self, text: String) {
        let block = ContentBlock::Text { text };
        match self.messages.last_mut() {
            Some(last) if last.role == Role::User => last.content.push(block),
            _ => self.messages.push(Message {
                role: Role::User,
                content: vec![block],
            }),
        }
    }

    /// Send the agent back to work with `message` (failed checks): a new round, in
    /// which a final answer must be given again.
    pub(crate) fn next_round(&mut self, message: String) {
        self.output = None;
        self.invalid_outputs = 0;
        self.force_output = false;
        self.force_output_asked = false;
        self.stop_blocks = 0;
        // The checks' message changes what the model knows: repeats count afresh.
        self.repeats = Default::default();
        self.push_user_text(message);
    }

    /// The valid final answer, if the task has one.
    pub(crate) fn output(&self) -> Option<&Value> {
        self.output.as_ref()
    }
}
