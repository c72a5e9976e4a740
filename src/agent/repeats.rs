//! Loop detection (`limits.max_identical_calls`): a model that makes the same call and
//! gets the same result again and again is stuck, and would burn its budget until a
//! limit stopped it. The first time a streak reaches the limit the model is told; the
//! next time (the same streak going on, or another) the run ends with reason `loop`.

use std::hash::{DefaultHasher, Hash, Hasher};

use crate::message::{ContentBlock, Role};
use crate::record::transcript::TranscriptError;
use crate::record::{EndReason, Event};

use super::session::Session;
use super::{Agent, AgentConfig, Call, Stop};

/// The tool that waits on a background shell.
const POLLING_TOOL: &str = "BashOutput";

/// The streak of identical calls so far.
#[derive(Debug, Default)]
pub(crate) struct Repeats {
    /// The last call's tool, input and result, hashed.
    last: Option<u64>,
    /// How many times in a row it came.
    streak: u32,
    /// The turn after which the model was told it repeats itself.
    warned: Option<u32>,
}

impl Repeats {
    /// Count one call with its result; the streak it is part of.
    fn see(&mut self, name: &str, input: &serde_json::Value, result: &ContentBlock) -> u32 {
        let mut hasher = DefaultHasher::new();
        name.hash(&mut hasher);
        // Value's text is the same for the same input: object keys are sorted.
        input.to_string().hash(&mut hasher);
        if let ContentBlock::ToolResult {
            content,
            is_error,
            images,
            ..
        } = result
        {
            content.hash(&mut hasher);
            is_error.hash(&mut hasher);
            for image in images {
                image.data.hash(&mut hasher);
            }
        }
        let call = hasher.finish();
        if self.last == Some(call) {
            self.streak += 1;
        } else {
            self.last = Some(call);
            self.streak = 1;
        }
        self.streak
    }
}

impl Agent<'_> {
    /// Count the turn's calls with their results (the last message's): tell the model
    /// the first time it makes the same call `max_identical_calls` times in a row, and
    /// end the run the next time.
    pub(super) fn watch_repeats(
        &mut self,
        calls: &[Call],
        config: &AgentConfig,
        session: &mut Session,
    ) -> Result<Option<Stop>, TranscriptError> {
        let Some(limit) = config.max_identical_calls else {
            return Ok(None);
        };
        let Some(last) = session.messages.last().filter(|m| m.role == Role::User) else {
            return Ok(None);
        };
        // The first streak of the turn to reach the limit: (its tool, its length).
        let mut reached: Option<(&str, u32)> = None;
        for call in calls {
            // Waiting on a background shell repeats itself by nature ("is running, no
            // new output") while the world changes: neither a loop nor its end.
            if call.name == POLLING_TOOL {
                continue;
            }
            let Some(result) = last.content.iter().find(|block| {
                matches!(block, ContentBlock::ToolResult { tool_use_id, .. } if *tool_use_id == call.id)
            }) else {
                continue;
            };
            let streak = session.repeats.see(&call.name, &call.input, result);
            if streak >= limit && reached.is_none() {
                reached = Some((call.name.as_str(), streak));
            }
        }
        let Some((tool, streak)) = reached else {
            return Ok(None);
        };
        // The warning counts from the turn after it: calls of the same turn were made
        // before the model could read it.
        if session
            .repeats
            .warned
            .is_some_and(|turn| turn < session.turns)
        {
            return Ok(Some((
                EndReason::Loop,
                format!(
                    "the model called {tool} with the same input and got the same result {streak} times in a row (limits.max_identical_calls {limit}), after it was told it was repeating itself; the run was stopped after {}",
                    crate::output::counted(session.turns, "turn", "turns")
                ),
            )));
        }
        if session.repeats.warned.is_some() {
            return Ok(None);
        }
        session.repeats.warned = Some(session.turns);
        let text = format!(
            "drover: you have called {tool} with the same input {streak} times in a row and got the same result each time. Repeating it will not change the result: try a different approach, or end your turn and say what blocks you. If you make this call again with the same result (or repeat any other call {limit} times in a row), the run ends."
        );
        self.transcript.write(Event::UserMessage {
            source: "loop".to_string(),
            text: text.clone(),
        })?;
        session.push_user_text(text);
        Ok(None)
    }
}
