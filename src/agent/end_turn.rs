//! When the model ends its turn: is there a valid final answer (`output.schema`), and
//! do the Stop hooks let it stop? Either can send it back to work with a message.

use serde_json::{Map, json};

use super::output::{MAX_RESENDS, OutputSchema, resend_message};
use super::session::Session;
use super::{Agent, AgentConfig, Stop};
use crate::model::OutputMode;
use crate::record::transcript::TranscriptError;
use crate::record::{EndReason, Event};
use crate::spec::HookEvent;

/// After this many Stop hook blocks in a row the stop proceeds (Claude Code's bound).
pub(super) const MAX_STOP_BLOCKS: u32 = 8;

impl Agent<'_> {
    /// The model ended its turn with `done`: None to go on (a message was added to the
    /// conversation), or how the loop ends.
    pub(super) async fn at_end_turn(
        &mut self,
        config: &AgentConfig,
        session: &mut Session,
        done: Stop,
    ) -> Result<Option<Stop>, TranscriptError> {
        if let Some(schema) = config.output.clone() {
            match self.check_answer(&schema, session)? {
                Some(Verdict::Again(text)) => {
                    self.send_back(session, "output", text)?;
                    return Ok(None);
                }
                Some(Verdict::Fail(stop)) => return Ok(Some(stop)),
                None => {}
            }
        }
        // Stop hooks are the task's: a sub-agent's end is its parent's tool result.
        if self.depth > 0 {
            return Ok(Some(done));
        }
        let mut fields = Map::new();
        fields.insert("stop_hook_active".into(), json!(session.stop_blocks > 0));
        fields.insert(
            "last_assistant_message".into(),
            json!(session.final_text.clone()),
        );
        let answer = match self
            .raise(config, session, HookEvent::Stop, "", None, fields)
            .await?
        {
            Ok(answer) => answer,
            Err(stop) => return Ok(Some(stop)),
        };
        let Some(reason) = answer.block_reason() else {
            session.stop_blocks = 0;
            return Ok(Some(done));
        };
        if session.stop_blocks >= MAX_STOP_BLOCKS {
            crate::esay!(
                "drover: warning: a Stop hook blocked {MAX_STOP_BLOCKS} times in a row; the stop proceeds"
            );
            session.stop_blocks = 0;
            return Ok(Some(done));
        }
        session.stop_blocks += 1;
        self.send_back(session, "stop_hook", reason)?;
        Ok(None)
    }

    /// Record and add a message drover sends the model as the user.
    pub(super) fn send_back(
        &mut self,
        session: &mut Session,
        source: &str,
        text: String,
    ) -> Result<(), TranscriptError> {
        self.transcript.write(Event::UserMessage {
            source: source.to_string(),
            text: text.clone(),
        })?;
        session.push_user_text(text);
        Ok(())
    }

    /// At the end of a turn: whether the final answer is there and valid.
    fn check_answer(
        &mut self,
        schema: &OutputSchema,
        session: &mut Session,
    ) -> Result<Option<Verdict>, TranscriptError> {
        let mode = self.model.output_mode();
        match mode {
            OutputMode::Tool => {
                if session.output.is_some() {
                    return Ok(None);
                }
                if !session.force_output_asked {
                    // The usual way: the model finished its work; now it must answer.
                    session.force_output_asked = true;
                    session.force_output = true;
                    return Ok(Some(Verdict::Again(format!(
                        "Give your final answer now by calling {} (nothing else).",
                        super::STRUCTURED_OUTPUT
                    ))));
                }
                let errors = vec![format!(
                    "no {} call: the final answer must be given with it",
                    super::STRUCTURED_OUTPUT
                )];
                self.invalid_answer(session, errors, mode)
            }
            OutputMode::Text => {
                let value = match OutputSchema::from_text(&session.last_turn_text) {
                    Ok(value) => value,
                    Err(error) => {
                        return self.invalid_answer(session, vec![error.to_string()], mode);
                    }
                };
                let errors = schema.errors(&value);
                if errors.is_empty() {
                    self.accept_answer(session, value)?;
                    Ok(None)
                } else {
                    self.invalid_answer(session, errors, mode)
                }
            }
        }
    }

    /// Record a valid final answer; it stands until a new one replaces it.
    pub(super) fn accept_answer(
        &mut self,
        session: &mut Session,
        value: serde_json::Value,
    ) -> Result<(), TranscriptError> {
        self.transcript.write(Event::Output {
            valid: true,
            value: Some(value.clone()),
            errors: Vec::new(),
        })?;
        session.output = Some(value);
        Ok(())
    }

    /// Count an invalid answer: send it back with its errors, or fail the task after
    /// [`MAX_RESENDS`] resends.
    pub(super) fn invalid_answer(
        &mut self,
        session: &mut Session,
        errors: Vec<String>,
        mode: OutputMode,
    ) -> Result<Option<Verdict>, TranscriptError> {
        self.transcript.write(Event::Output {
            valid: false,
            value: None,
            errors: errors.clone(),
        })?;
        session.invalid_outputs += 1;
        if session.invalid_outputs > MAX_RESENDS {
            return Ok(Some(Verdict::Fail((
                EndReason::InvalidOutput,
                format!(
                    "the final answer was invalid {} times: {}",
                    session.invalid_outputs,
                    errors.join("; ")
                ),
            ))));
        }
        if mode == OutputMode::Tool {
            session.force_output = true;
        }
        let left = MAX_RESENDS + 1 - session.invalid_outputs;
        Ok(Some(Verdict::Again(resend_message(&errors, mode, left))))
    }
}

/// What an end of turn means for the final answer.
pub(super) enum Verdict {
    /// Ask again with this message.
    Again(String),
    /// The task fails.
    Fail(Stop),
}
