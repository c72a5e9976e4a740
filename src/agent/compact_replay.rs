//! A replay's compactions: exactly where and as far as the recording made them, the
//! recorded summary standing for the conversation (no model is asked), and a drift when
//! the conversation rebuilt is not the one recorded.

use serde_json::{Map, json};

use super::context::{Goal, clear, kept};
use super::session::Session;
use super::{Agent, AgentConfig, Stop, run_cost};
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
                return self.replay_compaction_stop(config, session).await;
            };
            if let Some(stop) = self.replay_compaction(config, session, recorded).await? {
                return Ok(Some(stop));
            }
        }
    }

    /// A PreCompact hook stopped the recorded run here: its recorded answer stops the
    /// replay here too.
    async fn replay_compaction_stop(
        &mut self,
        config: &AgentConfig,
        session: &mut Session,
    ) -> Result<Option<Stop>, TranscriptError> {
        let stopped = self
            .replay
            .as_ref()
            .is_some_and(|replay| replay.compaction_stopped(session.turns));
        if !stopped {
            return Ok(None);
        }
        Ok(self
            .raise(
                config,
                session,
                HookEvent::PreCompact,
                "auto",
                None,
                pre_compact_fields(),
            )
            .await?
            .err())
    }

    async fn replay_compaction(
        &mut self,
        config: &AgentConfig,
        session: &mut Session,
        recorded: Compaction,
    ) -> Result<Option<Stop>, TranscriptError> {
        // The API's own editing changed nothing drover sends: it is recorded again only.
        // Only what such an edit can be (no summary, no turn removed) passes for one.
        if recorded.trigger == "server"
            && recorded.strategy == "server"
            && recorded.summary.is_none()
            && recorded.removed_turns == 0
        {
            session.context.tally.add(&recorded);
            self.transcript
                .write(Event::Compaction(Box::new(recorded)))?;
            return Ok(None);
        }
        if let Err(stop) = self
            .raise(
                config,
                session,
                HookEvent::PreCompact,
                "auto",
                None,
                pre_compact_fields(),
            )
            .await?
        {
            return Ok(Some(stop));
        }
        session.context.keep_opening(&session.messages);
        let bytes_before = session.request_bytes(&config.system);
        rebuild(config, session, &recorded, bytes_before);
        // What the recorded summary request spent counts as it did (no turn: a clearing
        // spent nothing, and its missing cost makes no price unknown). Its cost is worked
        // out again from its tokens, as a replayed turn's is: a recording's figure is
        // not trusted with the budget.
        let cost = if recorded.usage.is_zero() {
            None
        } else {
            run_cost(config, &recorded.usage)
        };
        config.meter.add_spent(&recorded.usage, cost);
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
            cost_usd: cost,
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

/// PreCompact's stdin fields beyond the common ones, as Claude Code gives them for an
/// automatic compaction.
pub(super) fn pre_compact_fields() -> Map<String, serde_json::Value> {
    let mut fields = Map::new();
    fields.insert("trigger".into(), json!("auto"));
    fields.insert("custom_instructions".into(), json!(""));
    fields
}

/// Make the recorded compaction again on the conversation of a request of `bytes`:
/// its summary put in place, or as many results cleared and turns removed.
fn rebuild(config: &AgentConfig, session: &mut Session, recorded: &Compaction, bytes: u64) {
    match &recorded.summary {
        Some(summary) => session
            .context
            .summarized(&mut session.messages, summary.clone()),
        None => {
            let goal = Goal::Counts {
                results: recorded.cleared_results,
                turns: recorded.removed_turns,
            };
            // As the run cleared: a refused request's compaction keeps no result.
            let keep = if recorded.trigger == "refused" {
                0
            } else {
                config.context.keep_tool_results
            };
            let cleared = clear(&mut session.messages, keep, bytes, goal);
            if cleared.turns > 0 {
                session.context.removed(cleared.turns);
                session.context.write_opening(&mut session.messages);
            }
        }
    }
}
