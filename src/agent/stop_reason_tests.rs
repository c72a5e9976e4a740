// Test-only module: its parent includes it under #[cfg(test)].
//! How the loop treats each way a model turn can end (refusal, pause_turn, max_tokens),
//! and retry notices announced during any turn, with a stub model that answers exactly
//! what a test queues.

use std::collections::VecDeque;

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use super::*;
use crate::message::ContentBlock;
use crate::model::RetryNotice;
use crate::model::{ModelError, ModelRequest};
use crate::policy::RuleSet;

/// A model that answers with the queued responses, announcing the queued retry notices
/// of each turn while it answers it.
struct Stub {
    turns: VecDeque<(Vec<RetryNotice>, ModelResponse)>,
    sender: UnboundedSender<RetryNotice>,
    receiver: Option<UnboundedReceiver<RetryNotice>>,
}

impl Stub {
    fn new(turns: Vec<(Vec<RetryNotice>, ModelResponse)>) -> Self {
        let (sender, receiver) = unbounded_channel();
        Stub {
            turns: turns.into(),
            sender,
            receiver: Some(receiver),
        }
    }
}

#[async_trait]
impl Model for Stub {
    fn provider(&self) -> &str {
        "stub"
    }
    fn name(&self) -> &str {
        "stub"
    }
    fn retry_notices(&mut self) -> Option<UnboundedReceiver<RetryNotice>> {
        self.receiver.take()
    }
    async fn respond(&mut self, _: ModelRequest<'_>) -> Result<ModelResponse, ModelError> {
        let (notices, response) = self
            .turns
            .pop_front()
            .ok_or(ModelError::ReplayExhausted { turn: 0 })?;
        for notice in notices {
            let _ = self.sender.send(notice);
        }
        Ok(response)
    }
}

fn turn(stop_reason: StopReason, content: Vec<ContentBlock>) -> ModelResponse {
    ModelResponse {
        content,
        stop_reason,
        usage: Usage::default(),
    }
}

fn text(text: &str) -> ContentBlock {
    ContentBlock::Text {
        text: text.to_string(),
    }
}

fn glob_call(id: &str) -> ContentBlock {
    ContentBlock::ToolUse {
        id: id.to_string(),
        name: "Glob".to_string(),
        input: json!({"pattern": "*"}),
    }
}

fn notice(attempt: u32) -> RetryNotice {
    RetryNotice {
        attempt,
        reason: "HTTP 529 overloaded".to_string(),
        status: Some(529),
        delay_ms: 10,
    }
}

/// Run the loop over `turns` in an empty workspace; the outcome and the events.
async fn run(turns: Vec<(Vec<RetryNotice>, ModelResponse)>) -> (LoopOutcome, Vec<Value>) {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().canonicalize().unwrap();
    let registry = Registry::builtin().unwrap();
    let policy = Policy::new(&RuleSet::default(), &workspace, &[]);
    let mut model = Stub::new(turns);
    super::tests::run_loop(&mut model, &registry, &policy, &workspace).await
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

#[tokio::test]
async fn a_refusal_ends_the_task_as_failed_and_runs_none_of_its_calls() {
    let (outcome, events) = run(vec![(
        vec![],
        turn(
            StopReason::Refusal,
            vec![text("I can't help"), glob_call("a")],
        ),
    )])
    .await;
    assert_eq!(outcome.reason, EndReason::Refusal);
    assert_eq!(outcome.reason.status(), crate::record::Status::Failed);
    assert!(outcome.message.contains("refused"), "{}", outcome.message);
    assert_eq!(outcome.turns, 1);
    assert!(of_type(&events, "tool_call").is_empty());
}

#[tokio::test]
async fn pause_turn_asks_the_model_again_and_is_counted_as_a_turn() {
    let (outcome, events) = run(vec![
        (vec![], turn(StopReason::PauseTurn, vec![text("searching")])),
        (vec![], turn(StopReason::EndTurn, vec![text("done")])),
    ])
    .await;
    assert_eq!(outcome.reason, EndReason::EndTurn);
    assert_eq!(outcome.turns, 2);
    assert_eq!(outcome.final_text, "done");
    assert_eq!(of_type(&events, "model_response").len(), 2);
}

#[tokio::test]
async fn a_turn_cut_at_max_tokens_runs_none_of_its_calls() {
    let (outcome, events) = run(vec![(
        vec![],
        turn(StopReason::MaxTokens, vec![glob_call("a")]),
    )])
    .await;
    assert_eq!(outcome.reason, EndReason::MaxTokens);
    assert!(outcome.message.contains("not run"), "{}", outcome.message);
    assert!(of_type(&events, "tool_call").is_empty());
}

#[tokio::test]
async fn retries_of_every_turn_are_recorded_not_only_the_first() {
    let (outcome, events) = run(vec![
        (
            vec![notice(1)],
            turn(StopReason::ToolUse, vec![glob_call("a")]),
        ),
        (
            vec![notice(1), notice(2)],
            turn(StopReason::EndTurn, vec![text("done")]),
        ),
    ])
    .await;
    assert_eq!(outcome.reason, EndReason::EndTurn);
    let retries = of_type(&events, "retry");
    assert_eq!(retries.len(), 3, "{retries:?}");
    // The second turn's retries come after the first turn's tool result.
    let position = |e: &Value| events.iter().position(|x| x == e).unwrap();
    let result = of_type(&events, "tool_result")[0];
    assert!(position(retries[1]) > position(result));
    assert_eq!(retries[2]["attempt"], 2);
}
