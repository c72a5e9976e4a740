//! Keeping a long conversation inside the model's window (`limits.context`): when a
//! request would pass the threshold, old tool results are cleared (or the model
//! summarizes the conversation), deterministically, and each compaction is recorded so a
//! replay rebuilds the same requests. The loop decides when (`agent::compact`); this
//! module knows sizes and how a conversation is made smaller.

mod clear;
mod size;

use sha2::{Digest, Sha256};

use crate::message::{ContentBlock, Message, Role};
use crate::record::context::ContextTally;
use crate::spec::ContextStrategy;

pub(super) use clear::{Goal, clear, compactable};
pub(crate) use size::{RequestSize, refusal_figures};

/// `limits.context` as the loop applies it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ContextConfig {
    pub strategy: ContextStrategy,
    /// The model's window in tokens.
    pub window: u64,
    /// The share of the window a request may reach before it is compacted.
    pub threshold: f64,
    /// The newest tool results (and turns) a clearing leaves whole.
    pub keep_tool_results: usize,
    /// The spec gave the window (`limits.context.window`): it holds for every agent.
    /// Otherwise each agent's is its own model's, from the table.
    pub window_given: bool,
}

/// The newest results a clearing leaves whole when the spec does not say.
pub(crate) const DEFAULT_KEEP_TOOL_RESULTS: usize = 3;

/// The share of the window a request may reach when the spec does not say.
pub(crate) const DEFAULT_THRESHOLD: f64 = 0.7;

impl Default for ContextConfig {
    fn default() -> Self {
        ContextConfig {
            strategy: ContextStrategy::Off,
            window: crate::model::context_window::UNKNOWN_MODEL_WINDOW,
            threshold: DEFAULT_THRESHOLD,
            keep_tool_results: DEFAULT_KEEP_TOOL_RESULTS,
            window_given: false,
        }
    }
}

impl ContextConfig {
    /// The settings for an agent on `model` (a sub-agent's may be another model, with
    /// another window): the spec's window, else the model's from the table.
    pub(crate) fn for_model(self, model: &str) -> ContextConfig {
        if self.window_given {
            return self;
        }
        ContextConfig {
            window: crate::model::context_window::window(model),
            ..self
        }
    }

    /// The tokens a request may hold before it is compacted.
    pub(crate) fn threshold_tokens(&self) -> u64 {
        (self.window as f64 * self.threshold) as u64
    }

    /// What a compaction brings a request down to: 70% of the threshold, so that the
    /// next one is many turns away (each compaction costs the provider's cache).
    pub(crate) fn target_tokens(&self) -> u64 {
        (self.threshold_tokens() as f64 * 0.7) as u64
    }
}

/// What the session knows of its requests' sizes and of its compactions so far.
#[derive(Debug, Default)]
pub(crate) struct ContextState {
    pub size: RequestSize,
    /// The task's opening message as it was before any compaction changed it.
    opening: Option<Vec<ContentBlock>>,
    /// The summary that stands for the turns before it.
    summary: Option<String>,
    /// Turns removed whole since the last summary (the opening's note says how many).
    removed: u64,
    pub tally: ContextTally,
    /// The server refused its own context editing (`strategy: server`): drover clears.
    pub server_refused: bool,
    /// Why drover clears where the strategy asked for another way (the server refused
    /// its editing): said in the next compaction's `fallback`.
    pub fallback: Option<String>,
    /// What the API's editing cleared in the last request, as it reported it.
    pub server_edits: Option<crate::model::AppliedContextEdits>,
}

impl ContextState {
    /// Keep the opening message as it is now, before a compaction first changes it.
    pub(super) fn keep_opening(&mut self, messages: &[Message]) {
        if self.opening.is_none() {
            self.opening = messages.first().map(|first| first.content.clone());
        }
    }

    /// Turns removed whole: the opening says so from now on.
    pub(super) fn removed(&mut self, turns: u64) {
        self.removed += turns;
    }

    /// The conversation is replaced by `summary`: the opening and the summary alone.
    /// What drover said after the last turn (the wrap-up's prompt, a loop's warning, a
    /// hook's reason, failed checks) is for the request the summary comes before: it
    /// stays, after the summary.
    pub(super) fn summarized(&mut self, messages: &mut Vec<Message>, summary: String) {
        self.summary = Some(summary);
        self.removed = 0;
        let notes: Vec<ContentBlock> = match messages.last() {
            Some(last) if messages.len() > 1 && last.role == Role::User => last
                .content
                .iter()
                .filter(|block| matches!(block, ContentBlock::Text { .. }))
                .cloned()
                .collect(),
            _ => Vec::new(),
        };
        messages.truncate(1);
        self.write_opening(messages);
        if let Some(first) = messages.first_mut() {
            first.content.extend(notes);
        }
    }

    /// Write the opening again: the task as it was given, then the summary and the note
    /// of removed turns, when there are.
    pub(super) fn write_opening(&self, messages: &mut [Message]) {
        let (Some(opening), Some(first)) = (&self.opening, messages.first_mut()) else {
            return;
        };
        let mut content = opening.clone();
        if let Some(summary) = &self.summary {
            content.push(ContentBlock::Text {
                text: summary_text(summary),
            });
        }
        if self.removed > 0 {
            content.push(ContentBlock::Text {
                text: format!(
                    "[drover removed the {} oldest turns of this conversation to keep it inside the model's context window. Call the tools again for anything you need from them.]",
                    self.removed
                ),
            });
        }
        first.content = content;
    }
}

/// How the model's summary stands for the conversation it replaced.
fn summary_text(summary: &str) -> String {
    format!(
        "drover compacted this conversation to keep it inside the model's context window. Your summary of the work so far:\n\n{summary}\n\nContinue the task from where the summary leaves off."
    )
}

/// What drover asks the model when it summarizes (`strategy: summarize`).
pub(crate) const SUMMARY_PROMPT: &str = "drover: this conversation is about to outgrow the model's context window, and your summary will replace it. Do not call any tools. Write a summary that lets you carry on without the earlier messages:
1. The task and every requirement or constraint it set.
2. What has been done so far: files changed and how, commands run and what they showed.
3. What was learned: the files, functions and errors that matter, and their causes.
4. What remains to be done, in order, and the very next step.
Name files, functions and commands exactly. Answer with the summary only.";

/// A fingerprint of what `messages` keep: each message's role and blocks by kind, call
/// id and whether a result is cleared; texts only as being there (drover's may name
/// paths that differ between a run and its replay).
pub(super) fn kept(messages: &[Message]) -> String {
    let mut hash = Sha256::new();
    for message in messages {
        hash.update(match message.role {
            Role::User => b"u",
            Role::Assistant => b"a",
        });
        for block in &message.content {
            match block {
                ContentBlock::Text { .. } => hash.update(b"t"),
                ContentBlock::ToolUse { id, .. } | ContentBlock::ServerToolUse { id, .. } => {
                    hash.update(b"c");
                    hash.update(id.as_bytes());
                }
                ContentBlock::ToolResult {
                    tool_use_id,
                    content,
                    ..
                } => {
                    hash.update(if content.starts_with(clear::CLEARED) {
                        b"x"
                    } else {
                        b"r"
                    });
                    hash.update(tool_use_id.as_bytes());
                }
                ContentBlock::WebSearchToolResult { tool_use_id, .. } => {
                    hash.update(b"w");
                    hash.update(tool_use_id.as_bytes());
                }
            }
        }
    }
    hash.finalize()
        .iter()
        .take(8)
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_agent_has_its_models_window_unless_the_spec_gave_one() {
        let table = ContextConfig {
            strategy: ContextStrategy::ClearToolResults,
            window: 1_047_576,
            ..ContextConfig::default()
        };
        assert_eq!(table.for_model("gpt-4o-mini").window, 128_000);
        assert_eq!(table.for_model("claude-haiku-4-5").window, 200_000);
        let given = ContextConfig {
            window_given: true,
            window: 50_000,
            ..table
        };
        assert_eq!(given.for_model("gpt-4o-mini").window, 50_000);
    }
}
