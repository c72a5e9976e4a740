//! The model of a resumed run: the recorded turns first, played back as a replay plays
//! them, then the live model, which is asked only for the turns the recording lacks.

use async_trait::async_trait;

use super::replay::ReplayModel;
use super::{AppliedContextEdits, Model, ModelError, ModelRequest, OutputMode, RetryNotice};
use crate::message::ModelResponse;

pub(crate) struct ResumedModel {
    recorded: ReplayModel,
    /// Recorded turns not yet played back.
    left: u32,
    live: Box<dyn Model>,
}

impl ResumedModel {
    /// `recorded` plays back the first `turns` turns; `live` answers every one after.
    pub(crate) fn new(recorded: ReplayModel, turns: u32, live: Box<dyn Model>) -> Self {
        ResumedModel {
            recorded,
            left: turns,
            live,
        }
    }
}

#[async_trait]
impl Model for ResumedModel {
    /// The live model's: the run is its, the recording only brings it back to where it was.
    fn provider(&self) -> &str {
        self.live.provider()
    }

    fn name(&self) -> &str {
        self.live.name()
    }

    fn retry_notices(&mut self) -> Option<tokio::sync::mpsc::UnboundedReceiver<RetryNotice>> {
        self.live.retry_notices()
    }

    fn output_mode(&self) -> OutputMode {
        self.live.output_mode()
    }

    /// The live model's: recorded turns bring their compactions from the recording.
    fn applied_context_edits(&mut self) -> Option<AppliedContextEdits> {
        self.live.applied_context_edits()
    }

    async fn respond(&mut self, request: ModelRequest<'_>) -> Result<ModelResponse, ModelError> {
        if self.left > 0 {
            self.left -= 1;
            return self.recorded.respond(request).await;
        }
        self.live.respond(request).await
    }
}
