//! Asking the model for a turn while recording its retries.
//!
//! A provider retries inside `respond`, which has no transcript; it announces each retry
//! on a channel instead, and this writes every notice as a `retry` event the moment it
//! arrives — so a run killed during a long backoff still shows why it was waiting.

use tokio::sync::mpsc::UnboundedReceiver;

use crate::message::ModelResponse;
use crate::model::{Model, ModelError, ModelRequest, RetryNotice};
use crate::record::transcript::TranscriptError;
use crate::record::{Event, TranscriptWriter};

/// The model's answer; the outer error means the transcript could not be written.
pub(super) async fn respond_recorded(
    model: &mut dyn Model,
    notices: &mut Option<UnboundedReceiver<RetryNotice>>,
    transcript: &mut TranscriptWriter,
    request: ModelRequest<'_>,
) -> Result<Result<ModelResponse, ModelError>, TranscriptError> {
    let Some(receiver) = notices else {
        return Ok(model.respond(request).await);
    };
    let respond = model.respond(request);
    tokio::pin!(respond);
    let answer = loop {
        tokio::select! {
            biased;
            Some(notice) = receiver.recv() => transcript.write(event(notice))?,
            answer = &mut respond => break answer,
        }
    };
    while let Ok(notice) = receiver.try_recv() {
        transcript.write(event(notice))?;
    }
    Ok(answer)
}

fn event(notice: RetryNotice) -> Event {
    Event::Retry {
        attempt: notice.attempt,
        reason: notice.reason,
        status: notice.status,
        delay_ms: notice.delay_ms,
    }
}
