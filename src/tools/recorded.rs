//! Recorded results answering the calls of tools that reach outside the workspace
//! (WebFetch, MCP tools) when a run is replayed or resumed: a replay reaches nothing,
//! and a resumed run does not repeat, while it replays its recorded turns, what the
//! recorded run already did to the world (an issue filed, a message sent).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::Value;

use super::{Tool, ToolCall, ToolContext, ToolError, ToolOutput};
use crate::policy::{CallFacts, ToolFacts};

/// Recorded tool results by call id, in the order they were recorded: a model that
/// repeats an id (some servers do, across turns) has one result per call.
pub(crate) type ResultsById = HashMap<String, VecDeque<ToolOutput>>;

/// The recorded results of a run by call id.
#[derive(Debug)]
pub(crate) struct RecordedAnswers {
    /// Each call takes the next result recorded for its id.
    results: Mutex<ResultsById>,
    /// A resumed run: a call the recording does not answer is made for real.
    then_live: bool,
    /// A resumed run past its recorded turns: the recording answers nothing more (a
    /// live model that repeats a recorded id gets a real result).
    closed: AtomicBool,
}

/// How a call is answered.
#[derive(Debug, PartialEq)]
pub(crate) enum Answer {
    Recorded(ToolOutput),
    /// A replay has no result for the call: it took another path.
    Missing,
    /// A resumed run makes the call for real.
    Live,
}

impl RecordedAnswers {
    /// A replay's: every call is answered from the recording.
    pub(crate) fn replay(results: ResultsById) -> Self {
        RecordedAnswers {
            results: Mutex::new(results),
            then_live: false,
            closed: AtomicBool::new(false),
        }
    }

    /// A resumed run's: recorded calls from the recording, others for real.
    pub(crate) fn resume(results: ResultsById) -> Self {
        RecordedAnswers {
            then_live: true,
            ..RecordedAnswers::replay(results)
        }
    }

    /// How the call `id` is answered (a recorded answer is given once).
    pub(crate) fn answer(&self, id: Option<&str>) -> Answer {
        let recorded = id
            .filter(|_| !self.closed.load(Ordering::SeqCst))
            .and_then(|id| {
                self.results
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .get_mut(id)
                    .and_then(VecDeque::pop_front)
            });
        match recorded {
            Some(output) => Answer::Recorded(output),
            None if self.then_live => Answer::Live,
            None => Answer::Missing,
        }
    }

    /// The recorded turns are over: from now on every call is made for real.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
    }
}

/// A live tool of a resumed run (an MCP server's) whose recorded calls are answered
/// from the recording; the policy judges every call as the tool's own.
pub(crate) struct AnsweredTool {
    inner: Arc<dyn Tool>,
    answers: Arc<RecordedAnswers>,
}

impl AnsweredTool {
    pub(crate) fn new(inner: Arc<dyn Tool>, answers: Arc<RecordedAnswers>) -> Self {
        AnsweredTool { inner, answers }
    }
}

#[async_trait]
impl Tool for AnsweredTool {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn description(&self) -> &str {
        self.inner.description()
    }

    fn input_schema(&self) -> Value {
        self.inner.input_schema()
    }

    fn facts(&self) -> ToolFacts {
        self.inner.facts()
    }

    fn prepare(self: Arc<Self>, input: Value) -> Result<Box<dyn ToolCall>, ToolError> {
        let call = Arc::clone(&self.inner).prepare(input)?;
        Ok(Box::new(AnsweredCall {
            call,
            answers: Arc::clone(&self.answers),
        }))
    }
}

struct AnsweredCall {
    call: Box<dyn ToolCall>,
    answers: Arc<RecordedAnswers>,
}

#[async_trait]
impl ToolCall for AnsweredCall {
    fn facts(&self) -> CallFacts {
        self.call.facts()
    }

    async fn run(self: Box<Self>, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        match self.answers.answer(ctx.call_id.as_deref()) {
            Answer::Recorded(output) => Ok(output),
            Answer::Live | Answer::Missing => self.call.run(ctx).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resume_answers_recorded_calls_until_it_goes_live() {
        let mut results = ResultsById::new();
        results.insert(
            "a".to_string(),
            VecDeque::from([ToolOutput::ok("first"), ToolOutput::ok("second")]),
        );
        let answers = RecordedAnswers::resume(results.clone());
        assert_eq!(
            answers.answer(Some("a")),
            Answer::Recorded(ToolOutput::ok("first"))
        );
        assert_eq!(
            answers.answer(Some("a")),
            Answer::Recorded(ToolOutput::ok("second")),
            "a repeated id takes the next recorded result"
        );
        assert_eq!(answers.answer(Some("a")), Answer::Live);
        assert_eq!(answers.answer(Some("b")), Answer::Live);
        let closed = RecordedAnswers::resume(results.clone());
        closed.close();
        assert_eq!(closed.answer(Some("a")), Answer::Live);
        let replay = RecordedAnswers::replay(results);
        assert_eq!(replay.answer(Some("b")), Answer::Missing);
        assert_eq!(replay.answer(None), Answer::Missing);
    }
}
