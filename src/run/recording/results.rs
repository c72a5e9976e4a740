//! The recorded tool results: what a replay expects its calls to give again, and what
//! answers the calls that must not reach out twice (WebFetch, MCP tools).

use std::collections::BTreeMap;

use crate::record::Event;
use crate::tools::ToolOutput;
use crate::tools::recorded::ResultsById;

/// The recorded tool results of one agent's events, by tool_use id in recorded order.
pub(crate) fn recorded_results(events: &[Event]) -> ResultsById {
    let mut results = ResultsById::new();
    for event in events {
        if let Event::ToolResult {
            tool_use_id,
            is_error,
            content,
            images,
            ..
        } = event
        {
            results
                .entry(tool_use_id.clone())
                .or_default()
                .push_back(ToolOutput {
                    content: content.clone(),
                    is_error: *is_error,
                    images: images.clone(),
                });
        }
    }
    results
}

/// The recorded results a replay answers tools with instead of reaching out (WebFetch,
/// MCP tools): the main agent's `expected`, and every sub-agent run's, by call id.
pub(crate) fn answers(
    expected: &ResultsById,
    agent_events: &BTreeMap<String, Vec<Event>>,
) -> ResultsById {
    let mut all = expected.clone();
    for events in agent_events.values() {
        for (id, outputs) in recorded_results(events) {
            all.entry(id).or_default().extend(outputs);
        }
    }
    all
}
