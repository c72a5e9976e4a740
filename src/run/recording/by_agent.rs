//! A recorded transcript split by agent: the main agent's events, each sub-agent run's,
//! and every hook run in order.

use std::collections::BTreeMap;
use std::path::Path;

use crate::record::transcript::{ScopedEvent, TranscriptError};
use crate::record::{Event, TranscriptReader};

/// A recorded transcript, split by agent.
#[derive(Debug, Default)]
pub(crate) struct Recording {
    /// The main agent's events.
    pub events: Vec<Event>,
    /// Each sub-agent run's events, by agent id.
    pub agent_events: BTreeMap<String, Vec<Event>>,
    /// The hook runs of every agent, in the order they were recorded: a replay answers
    /// each agent's hooks from them in turn.
    pub hook_events: Vec<Event>,
}

impl Recording {
    pub(crate) fn read(path: &Path) -> Result<Recording, TranscriptError> {
        Ok(Recording::of(TranscriptReader::read_scoped(path)?))
    }

    /// The recording of `lines`, each event under the agent whose scope it carries.
    pub(crate) fn of(lines: impl IntoIterator<Item = ScopedEvent>) -> Recording {
        let mut recording = Recording::default();
        for line in lines {
            if matches!(line.event, Event::Hook { .. }) {
                recording.hook_events.push(line.event.clone());
            }
            match line.scope {
                Some(scope) => recording
                    .agent_events
                    .entry(scope.agent_id)
                    .or_default()
                    .push(line.event),
                None => recording.events.push(line.event),
            }
        }
        recording
    }
}
