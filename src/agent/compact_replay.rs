//! A replay's compactions: exactly where and as far as the recording made them, the
//! recorded summary standing for the conversation (no model is asked), and a drift when
//! the conversation rebuilt is not the one recorded.

use serde_json::{Map, json};

use super::context::{Goal, clear, kept};
use super::session::Session;
use super::{Agent, AgentConfig, Stop};
use crate::record::context::Compaction;
use crate::record::transcript::TranscriptError;
use crate::record::{DriftReport, EndReason, Event};
use crate::spec::HookEvent;

impl Agent<'_> {
    /// The recorded compactions made before the request of turn `session.turns + 1`,
    /// made again.
    pub(super) async fn replay_compactions(
        &mut self,
        config: &AgentConfig,
        session: &mut Session,
    ) -> Result<Option<Stop>, TranscriptError> {
        loop {
            let Some(recorded) = self
                .replay
                .as_mut()
                .and_then(|replay| replay.compaction(session.turns))
            else {
                return Ok(None);
            };
            if let Some(stop) = self.replay_compaction(config, session, recorded).await? {
                return Ok(Some(stop));
            }
        }
    }

    async fn replay_compaction(
        &mut self,
        config: &AgentConfig,
        session: &mut Session,
        recorded: Compaction,
    ) -> Result<Option<Stop>, TranscriptError> {
        // The API's own editing changed nothing drover sends: it is recorded again only.
        if recorded.trigger == "server" {
            session.context.tally.add(&recorded);
            self.transcript
                .write(Event::Compaction(Box::new(recorded)))?;
            return Ok(None);
        }
        let mut fields = Map::new();
        fields.insert("trigger".into(), json!("auto"));
        fields.insert("custom_instructions".into(), json!(""));
        if let Err(stop) = self
            .raise(config, session, HookEvent::PreCompact, "auto", None, fields)
            .await?
        {
            return Ok(Some(stop));
        }
        session.context.keep_opening(&session.messages);
        let bytes_before = session.request_bytes(&config.system);
        match &recorded.summary {
            Some(summary) => session
                .context
                .summarized(&mut session.messages, summary.clone()),
            None => {
                let goal = Goal::Counts {
                    results: recorded.cleared_results,
                    turns: recorded.removed_turns,
                };
                let cleared = clear(
                    &mut session.messages,
                    config.context.keep_tool_results,
                    bytes_before,
                    goal,
                );
                if cleared.turns > 0 {
                    session.context.removed(cleared.turns);
                    session.context.write_opening(&mut session.messages);
                }
            }
        }
        // What the recorded summary request spent counts as it did.
        config.meter.add(&recorded.usage, recorded.cost_usd);
        session.usage.add(&recorded.usage);
        let bytes_after = session.request_bytes(&config.system);
        let rebuilt = kept(&session.messages);
        let expected = recorded.kept.clone();
        let replayed = Compaction {
            bytes_before,
            bytes_after,
            tokens_before: session.context.size.tokens(bytes_before),
            tokens_after: session.context.size.tokens(bytes_after),
            kept: rebuilt.clone(),
            ..recorded
        };
        session.context.tally.add(&replayed);
        self.transcript
            .write(Event::Compaction(Box::new(replayed)))?;
        if rebuilt == expected {
            return Ok(None);
        }
        self.compaction_drift(session, &expected, &rebuilt)
    }

    /// The conversation rebuilt by a replayed compaction is not the recorded one: a
    /// drift, and under `--strict` the end of the run.
    fn compaction_drift(
        &mut self,
        session: &mut Session,
        expected: &str,
        rebuilt: &str,
    ) -> Result<Option<Stop>, TranscriptError> {
        let turn = session.turns;
        let diff = format!(
            "the conversation kept after the compaction before turn {} differs: recorded {expected}, replayed {rebuilt}",
            turn + 1
        );
        self.transcript.write(Event::ReplayDrift {
            tool_use_id: String::new(),
            expected: format!("kept {expected}"),
            actual: format!("kept {rebuilt}"),
            call: session.replayed_calls,
            tool: "compaction".to_string(),
            diff: diff.clone(),
        })?;
        let drift = session.drift.get_or_insert_with(|| DriftReport {
            count: 0,
            call: session.replayed_calls,
            tool: "compaction".to_string(),
            tool_use_id: String::new(),
            diff: diff.clone(),
        });
        drift.count += 1;
        let strict = self.replay.as_ref().is_some_and(|replay| replay.strict());
        Ok(strict.then(|| (EndReason::ReplayDrift, format!("{diff} (--strict)"))))
    }
}
