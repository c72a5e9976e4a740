//! The replay model: plays back the model responses of a recorded transcript, in order,
//! with no model and no network.

use async_trait::async_trait;

use super::{Model, ModelError, ModelRequest};
use crate::message::ModelResponse;
use crate::record::Event;

pub(crate) struct ReplayModel {
    provider: String,
    name: String,
    responses: std::vec::IntoIter<ModelResponse>,
    turn: u32,
}

impl ReplayModel {
    /// Build from a transcript's events: the recorded provider and model names are kept
    /// for the record, the `model_response` events become the turns.
    pub(crate) fn from_events(events: &[Event]) -> Self {
        let mut provider = String::from("replay");
        let mut name = String::from("replay");
        let mut responses = Vec::new();
        for event in events {
            match event {
                Event::RunStart {
                    provider: p,
                    model: m,
                    ..
                } => {
                    provider = format!("replay:{p}");
                    name = m.clone();
                }
                Event::ModelResponse {
                    content,
                    stop_reason,
                    usage,
                    ..
                } => responses.push(ModelResponse {
                    content: content.clone(),
                    stop_reason: *stop_reason,
                    usage: *usage,
                }),
                _ => {}
            }
        }
        ReplayModel {
            provider,
            name,
            responses: responses.into_iter(),
            turn: 0,
        }
    }
}

#[async_trait]
impl Model for ReplayModel {
    fn provider(&self) -> &str {
        &self.provider
    }

    /// The recording's provider decides how its final answer was given.
    fn output_mode(&self) -> super::OutputMode {
        if self.provider == "replay:openai" {
            super::OutputMode::Text
        } else {
            super::OutputMode::Tool
        }
    }

    fn name(&self) -> &str {
        &self.name
    }

    async fn respond(&mut self, _request: ModelRequest<'_>) -> Result<ModelResponse, ModelError> {
        self.turn += 1;
        self.responses
            .next()
            .ok_or(ModelError::ReplayExhausted { turn: self.turn })
    }
}
