//! Where the loop raises hooks and what their answers may do. A hook's answer is as
//! untrusted as the model (the agent can write the scripts hooks run): a `deny` or a
//! block is final, an `allow` never overrides the policy, rewritten input is validated
//! and judged again, and every text a hook sends the model is redacted first.

use serde_json::{Map, Value, json};

use super::session::Session;
use super::{Agent, AgentConfig, Bounded, Stop, bounded, interrupted, limits};
use crate::hooks::Combined;
use crate::record::EndReason;
use crate::record::transcript::TranscriptError;
use crate::spec::HookEvent;

/// What the hooks of one event said, or why the run must stop now.
pub(super) type Answer = Result<Combined, Stop>;

impl Agent<'_> {
    /// Run the hooks of `event` for `subject`, record every run, show their system
    /// messages, and say what they decided together. A run stops on `continue: false`,
    /// the task's deadline, or a signal.
    pub(super) async fn raise(
        &mut self,
        config: &AgentConfig,
        session: &Session,
        event: HookEvent,
        subject: &str,
        tool_use_id: Option<&str>,
        fields: Map<String, Value>,
    ) -> Result<Answer, TranscriptError> {
        let runs = self.hooks.run(event, subject, tool_use_id, fields);
        let runs = match bounded(session.clock.deadline, &config.interrupt, runs).await {
            Bounded::Done(runs) => runs,
            Bounded::TimedOut => {
                return Ok(Err(limits::timeout(
                    config,
                    session.clock.started,
                    session.turns,
                )));
            }
            Bounded::Interrupted => return Ok(Err(interrupted(session.turns))),
        };
        for run in &runs {
            self.transcript.write(run.event(tool_use_id))?;
            if let Some(message) = &run.effect.system_message {
                // One line of printable text: a hook's words must not become a CI
                // workflow command (`::add-mask::`) or a terminal escape.
                let line: String = self
                    .redactor
                    .redact(message)
                    .lines()
                    .next()
                    .unwrap_or("")
                    .chars()
                    .filter(|c| !c.is_control())
                    .take(500)
                    .collect();
                crate::esay!("drover: {} hook says: {}", event.as_str(), line.trim());
            }
        }
        let mut combined = Combined::of(runs.iter().map(|run| &run.effect));
        // What hooks send the model goes through the same redaction as tool results.
        combined.blocks = combined
            .blocks
            .iter()
            .map(|text| self.redactor.redact(text).into_owned())
            .collect();
        combined.additional_context = combined
            .additional_context
            .iter()
            .map(|text| self.redactor.redact(text).into_owned())
            .collect();
        if let Some(reason) = &combined.stop {
            return Ok(Err((
                EndReason::HookStopped,
                format!(
                    "a {} hook stopped the run (continue: false): {}",
                    event.as_str(),
                    self.redactor.redact(reason)
                ),
            )));
        }
        Ok(Ok(combined))
    }

    /// SessionStart (source `startup`) and UserPromptSubmit, once, before the first
    /// request: their context joins the prompt; a blocked prompt ends the run.
    pub(super) async fn open(
        &mut self,
        config: &AgentConfig,
        session: &mut Session,
    ) -> Result<Option<Stop>, TranscriptError> {
        session.opened = true;
        let mut fields = Map::new();
        fields.insert("source".into(), json!("startup"));
        let start = match self
            .raise(
                config,
                session,
                HookEvent::SessionStart,
                "startup",
                None,
                fields,
            )
            .await?
        {
            Ok(answer) => answer,
            Err(stop) => return Ok(Some(stop)),
        };
        let mut fields = Map::new();
        fields.insert("prompt".into(), json!(config.prompt));
        let prompt = match self
            .raise(
                config,
                session,
                HookEvent::UserPromptSubmit,
                "",
                None,
                fields,
            )
            .await?
        {
            Ok(answer) => answer,
            Err(stop) => return Ok(Some(stop)),
        };
        if let Some(reason) = prompt.block_reason() {
            return Ok(Some((
                EndReason::HookStopped,
                format!("a UserPromptSubmit hook blocked the prompt: {reason}"),
            )));
        }
        let context: Vec<String> = start
            .additional_context
            .into_iter()
            .chain(prompt.additional_context)
            .collect();
        if !context.is_empty() {
            let text = context.join("\n\n");
            self.transcript.write(crate::record::Event::UserMessage {
                source: "hook_context".into(),
                text: text.clone(),
            })?;
            session.push_user_text(text);
        }
        Ok(None)
    }

    /// SessionEnd, once the agent's work is over (`reason`: how the loop ended). Its
    /// answers change nothing; they are recorded. Returns how many hooks ran.
    pub(crate) async fn close(
        &mut self,
        config: &AgentConfig,
        session: &Session,
        reason: EndReason,
    ) -> Result<usize, TranscriptError> {
        let mut fields = Map::new();
        fields.insert("reason".into(), json!(reason.as_str()));
        // Cleanup gets the task's deadline, and at least SESSION_END_GRACE even when the
        // deadline has passed: never more (the agent can rewrite these scripts too).
        let floor = tokio::time::Instant::now() + SESSION_END_GRACE;
        let deadline = Some(session.clock.deadline.map_or(floor, |d| d.max(floor)));
        let runs = self
            .hooks
            .run(HookEvent::SessionEnd, reason.as_str(), None, fields);
        let runs = match bounded(deadline, &config.interrupt, runs).await {
            Bounded::Done(runs) => runs,
            Bounded::TimedOut | Bounded::Interrupted => Vec::new(),
        };
        for run in &runs {
            self.transcript.write(run.event(None))?;
        }
        Ok(runs.len())
    }
}

/// How long SessionEnd hooks may run after the task's deadline has passed.
const SESSION_END_GRACE: std::time::Duration = std::time::Duration::from_secs(30);
