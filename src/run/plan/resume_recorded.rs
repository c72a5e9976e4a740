//! What a recording says a resumed task ran with and had spent: the limits in force
//! (the last resume's, else the recorded run's), the tokens its replay will not spend
//! again, and what its starting state left out as drover's own outputs.

use std::path::{Path, PathBuf};

use crate::run::artifacts::{LOCK_FILE, RUN_FILES};
use crate::run::recording::artifacts_of;

use super::live::Overrides;
use super::task_plan::OwnOutputs;
use crate::message::Usage;
use crate::record::Event;
use crate::record::resume_point::ResumePoint;
use crate::record::transcript::ScopedEvent;
use crate::spec::{Limits, TimeoutLimit};

/// The recorded run's settings and spending, as a resume continues them.
#[derive(Debug, Default)]
pub(super) struct RecordedSettings {
    pub max_turns: Option<u32>,
    pub max_cost_usd: Option<f64>,
    pub max_tokens: Option<u64>,
    pub timeout: Option<TimeoutLimit>,
    /// Tokens spent that the replay of the kept turns does not spend again.
    pub spent_before: Usage,
    /// What the recorded starting state left out as drover's own; None for a recording
    /// older than that record.
    pub outputs: Option<OwnOutputs>,
}

/// Read the settings from a recording's events (all of them, dropped lines included)
/// and its resume point.
pub(super) fn recorded_settings(events: &[ScopedEvent], point: &ResumePoint) -> RecordedSettings {
    let mut settings = RecordedSettings::default();
    if let Some(Event::RunStart {
        max_turns,
        settings: recorded,
        ..
    }) = events.first().map(|first| &first.event)
    {
        settings.max_turns = *max_turns;
        settings.max_cost_usd = recorded.max_cost_usd;
        settings.max_tokens = recorded.max_tokens;
        settings.timeout = recorded
            .timeout
            .clone()
            .and_then(|t| TimeoutLimit::try_from(t).ok());
        settings.outputs = recorded
            .artifacts
            .as_ref()
            .map(|dir| outputs(Path::new(dir), &recorded.run_tasks));
    }
    // The last resume's limits hold, wherever it lies: one killed before its first live
    // turn is among the dropped lines.
    let mut earlier_spent = Usage::default();
    if let Some(Event::Resume {
        max_turns,
        max_cost_usd,
        max_tokens,
        timeout,
        spent_before,
        ..
    }) = events
        .iter()
        .rev()
        .map(|scoped| &scoped.event)
        .find(|event| matches!(event, Event::Resume { .. }))
    {
        settings.max_turns = *max_turns;
        settings.max_cost_usd = max_cost_usd.or(settings.max_cost_usd);
        settings.max_tokens = max_tokens.or(settings.max_tokens);
        settings.timeout = timeout
            .clone()
            .and_then(|t| TimeoutLimit::try_from(t).ok())
            .or(settings.timeout);
        earlier_spent = *spent_before;
    }
    settings.spent_before = spent_before(events, point, earlier_spent);
    settings
}

/// Tokens the replay will not spend again: an earlier resume's (it carries them on),
/// every model turn and summary of the dropped lines (a turn cut short was paid for;
/// the kept lines' summaries the replay counts itself), and, when the
/// run ended, what its `run_end` counts beyond every recorded turn (the page model's).
fn spent_before(events: &[ScopedEvent], point: &ResumePoint, earlier: Usage) -> Usage {
    let turns = |events: &[ScopedEvent]| {
        let mut usage = Usage::default();
        for scoped in events {
            match &scoped.event {
                Event::ModelResponse { usage: turn, .. } => usage.add(turn),
                // A summary request's tokens, which the replay of a kept compaction
                // counts again and `run_end` counts among its own.
                Event::Compaction(compaction) => usage.add(&compaction.usage),
                _ => {}
            }
        }
        usage
    };
    let mut spent = earlier;
    spent.add(&turns(&events[point.kept.min(events.len())..]));
    if let Some(end) = &point.end {
        let mut accounted = turns(events);
        accounted.add(&earlier);
        spent.add(&beyond(&end.usage, &accounted));
    }
    spent
}

/// What `total` counts beyond `part`, count by count.
fn beyond(total: &Usage, part: &Usage) -> Usage {
    Usage {
        input_tokens: total.input_tokens.saturating_sub(part.input_tokens),
        output_tokens: total.output_tokens.saturating_sub(part.output_tokens),
        cache_creation_input_tokens: total
            .cache_creation_input_tokens
            .saturating_sub(part.cache_creation_input_tokens),
        cache_read_input_tokens: total
            .cache_read_input_tokens
            .saturating_sub(part.cache_read_input_tokens),
        web_search_requests: total
            .web_search_requests
            .saturating_sub(part.web_search_requests),
        estimated: total.estimated,
    }
}

/// The recorded run's own outputs: its artifacts directory, every task's folder in it,
/// and its reports.
fn outputs(artifacts: &Path, tasks: &[String]) -> OwnOutputs {
    OwnOutputs {
        artifacts: artifacts.to_path_buf(),
        folders: tasks
            .iter()
            .filter(|name| Path::new(name).components().count() == 1)
            .map(|name| artifacts.join(name))
            .collect(),
        files: RUN_FILES
            .iter()
            .chain([&LOCK_FILE])
            .map(|file| artifacts.join(file))
            .collect(),
    }
}

/// For a recording older than the record of its outputs: the artifacts directory
/// holding the task's folder, and every folder there holding a transcript.
pub(super) fn guessed_outputs(transcript: &Path) -> OwnOutputs {
    let dir = &artifacts_of(transcript);
    let folders: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|entry| entry.path())
                .filter(|path| {
                    std::fs::symlink_metadata(path).is_ok_and(|meta| meta.is_dir())
                        && path.join("transcript.jsonl").is_file()
                })
                .collect()
        })
        .unwrap_or_default();
    OwnOutputs {
        artifacts: dir.to_path_buf(),
        folders,
        files: RUN_FILES
            .iter()
            .chain([&LOCK_FILE])
            .map(|file| dir.join(file))
            .collect(),
    }
}

/// Apply the recorded limits where the command line gives none and they are tighter
/// than the spec's: a run given `--max-turns 2` resumes with that limit still, but a
/// recording cannot lift or loosen a limit its spec sets.
pub(super) fn narrow_to_recorded(
    overrides: &mut Overrides,
    recorded: &RecordedSettings,
    spec: &Limits,
) {
    fn tighter<T: PartialOrd + Copy>(recorded: Option<T>, spec: Option<T>) -> Option<T> {
        match (recorded, spec) {
            (Some(recorded), Some(spec)) if recorded < spec => Some(recorded),
            (Some(recorded), None) => Some(recorded),
            _ => None,
        }
    }
    overrides.max_turns = overrides.max_turns.or(tighter(
        recorded.max_turns,
        spec.max_turns.as_ref().map(|l| l.value),
    ));
    overrides.max_cost_usd = overrides.max_cost_usd.or(tighter(
        recorded.max_cost_usd,
        spec.max_cost_usd.as_ref().map(|l| l.value),
    ));
    overrides.max_tokens = overrides.max_tokens.or(tighter(
        recorded.max_tokens,
        spec.max_tokens.as_ref().map(|l| l.value),
    ));
    let limit = |timeout: Option<TimeoutLimit>| match TimeoutLimit::effective(timeout) {
        Some(duration) => duration,
        None => std::time::Duration::MAX,
    };
    if overrides.timeout.is_none()
        && let Some(recorded) = recorded.timeout
        && limit(Some(recorded)) < limit(spec.timeout)
    {
        overrides.timeout = Some(recorded);
    }
}
