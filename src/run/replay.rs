//! `drover replay`: the recorded run again, from its recorded starting workspace, with
//! the recorded model responses, through the same loop and tools.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::agent::ReplayExpectations;
use crate::record::{Event, TranscriptReader};
use crate::spec::Isolation;
use crate::tools::ToolOutput;
use crate::tools::recorded::ResultsById;

use super::plan_error::{PlanError, ReplayError};
use super::replay_inputs::ReplayOptions;
use super::replay_inputs::{replay_servers, say_what_runs, source_spec, starting_workspace};
use super::replay_spec::{Granted, replay_spec, unreadable_in_replays};
use super::task::{ModelSource, TaskPlan};

/// The MCP tools (and MCP resource tools) the recorded run offered or called, by name.
fn mcp_tools_used(events: &[Event]) -> Vec<String> {
    let mut names = std::collections::BTreeSet::new();
    for event in events {
        match event {
            Event::McpServer { tools, .. } => {
                names.extend(tools.iter().map(|tool| tool.name.clone()));
            }
            Event::ToolCall { name, .. }
                if name.starts_with("mcp__")
                    || name == crate::mcp::LIST_RESOURCES
                    || name == crate::mcp::READ_RESOURCE =>
            {
                names.insert(name.clone());
            }
            _ => {}
        }
    }
    names.into_iter().collect()
}

/// Read the transcript and plan the replay. Errors are bad input (exit 2).
pub(crate) fn plan_replay(options: &ReplayOptions) -> Result<TaskPlan, PlanError> {
    // A forged or damaged transcript is refused before anything of it runs.
    crate::record::chain::verify_file(&options.transcript).map_err(|source| {
        ReplayError::Forged {
            transcript: options.transcript.clone(),
            source,
        }
    })?;
    let Recording {
        events,
        others: Recorded {
            agent_events,
            hook_events,
        },
    } = Recording::read(&options.transcript).map_err(ReplayError::from)?;
    let Some(Event::RunStart {
        spec_path,
        spec_yaml,
        spec_sha256,
        workspace,
        workspace_sha256,
        task,
        max_turns,
        output_schema,
        agents,
        ..
    }) = events.first().cloned()
    else {
        return Err(ReplayError::NoRunStart {
            transcript: options.transcript.clone(),
        }
        .into());
    };
    let output = options.artifacts.join(&task).join("transcript.jsonl");
    if same_path(&output, &options.transcript) {
        return Err(ReplayError::WouldOverwrite {
            transcript: options.transcript.clone(),
            artifacts: options.artifacts.clone(),
        }
        .into());
    }
    let mut spec = source_spec(options, spec_path, spec_yaml, &spec_sha256)?;
    say_what_runs(&spec, options);
    let granted = Granted {
        checks: options.checks,
        mcp: options.mcp,
        vouched: options.spec.is_some(),
    };
    spec.spec = replay_spec(spec.spec, &granted);
    let mcp_servers = if options.mcp {
        replay_servers(&spec, options)?
    } else {
        Default::default()
    };
    let (origin, workspace_from_recording) = starting_workspace(options, &workspace)?;
    let unreadable = if granted.vouched {
        Vec::new()
    } else {
        unreadable_in_replays(&origin)
    };
    let results = recorded_results(&events);
    let rules = super::spec_checks::rule_set(&spec)?;
    let masks = super::spec_checks::replay_masks_with(&spec, &options.ignore)?;
    // `--diff-only`: the diff.patch recorded beside the transcript.
    let recorded_patch = if options.diff_only {
        let patch = options
            .transcript
            .parent()
            .unwrap_or(Path::new("."))
            .join("diff.patch");
        match super::diff_only::RecordedPatch::read(&patch) {
            Ok(recorded) => Some(recorded),
            Err(source) => return Err(ReplayError::NoRecordedDiff { patch, source }.into()),
        }
    } else {
        None
    };
    let replayed_mcp_tools = if options.mcp {
        Vec::new()
    } else {
        mcp_tools_used(&events)
    };
    // The recorded agents (their scripts were never recorded: the recording answers).
    let agents = if agents.is_null() {
        BTreeMap::new()
    } else {
        serde_json::from_value(agents).map_err(|e| ReplayError::AgentsUnreadable {
            transcript: options.transcript.clone(),
            message: e.to_string(),
        })?
    };
    // A resumed recording ran on with the limits its last resume set.
    let resumed_limits = events.iter().rev().find_map(|event| match event {
        Event::Resume {
            max_turns,
            max_cost_usd,
            ..
        } => Some((*max_turns, *max_cost_usd)),
        _ => None,
    });
    let max_tokens_limit = events
        .iter()
        .rev()
        .find_map(|event| match event {
            Event::Resume { max_tokens, .. } => Some(*max_tokens),
            Event::RunStart { settings, .. } => Some(settings.max_tokens),
            _ => None,
        })
        .flatten()
        .or(spec.spec.limits.max_tokens.as_ref().map(|l| l.value));
    let (max_turns, max_cost_usd) = match resumed_limits {
        Some((turns, cost)) => (
            turns,
            cost.or(spec.spec.limits.max_cost_usd.as_ref().map(|l| l.value)),
        ),
        None => (
            max_turns,
            spec.spec.limits.max_cost_usd.as_ref().map(|l| l.value),
        ),
    };
    let recorded_answers = std::sync::Arc::new(crate::tools::recorded::RecordedAnswers::replay(
        answers(&results, &agent_events),
    ));
    Ok(TaskPlan {
        max_cost_usd,
        max_tokens: max_tokens_limit,
        answers: Some(recorded_answers),
        resume: None,
        // A replay has no page model: its WebFetch calls fetch again and show the page.
        web_fetch_model: None,
        rules,
        mcp_servers,
        agents,
        agent_events,
        hook_events,
        recorded_patch,
        // Hooks are not run in a replay: their recorded answers are given again.
        hooks: Default::default(),
        output_schema: (!output_schema.is_null()).then_some(output_schema),
        mcp_vars: crate::mcp::VarSource::Only(options.mcp_env.iter().cloned().collect()),
        replayed_mcp_tools,
        max_turns,
        spec,
        model: ModelSource::Replay {
            events,
            expectations: Some(ReplayExpectations {
                results,
                strict: options.strict,
                masks: std::sync::Arc::new(masks),
                handover: None,
            }),
        },
        origin,
        // A replay never touches the workspace it restores from.
        isolation: Isolation::Copy,
        expected_fingerprint: Some(workspace_sha256),
        workspace_from_recording,
        fixed_environment: true,
        unreadable,
        excluded: recorded_artifacts(&options.transcript, &task)
            .into_iter()
            .collect(),
        own_outputs: Default::default(),
        recorded_outputs: None,
        saved_index: None,
    })
}

/// The recorded tool results of one agent's events, by tool_use id in recorded order:
/// what a replay expects its calls to give again.
pub(super) fn recorded_results(events: &[Event]) -> ResultsById {
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
pub(super) fn answers(
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

/// A recorded transcript, split by agent.
pub(super) struct Recording {
    /// The main agent's events.
    pub events: Vec<Event>,
    /// What the rest of the recording holds.
    pub others: Recorded,
}

/// What a recording holds besides the main agent's events: each sub-agent run's events
/// and every hook run, in order.
#[derive(Default)]
pub(super) struct Recorded {
    /// Each sub-agent run's events, by agent id.
    pub agent_events: BTreeMap<String, Vec<Event>>,
    /// The hook runs of every agent, in the order they were recorded: a replay answers
    /// each agent's hooks from them in turn.
    pub hook_events: Vec<Event>,
}

impl Recording {
    pub(super) fn read(
        path: &Path,
    ) -> Result<Recording, crate::record::transcript::TranscriptError> {
        let mut recording = Recording {
            events: Vec::new(),
            others: Recorded::default(),
        };
        for line in TranscriptReader::read_scoped(path)? {
            if matches!(line.event, Event::Hook { .. }) {
                recording.others.hook_events.push(line.event.clone());
            }
            match line.scope {
                Some(scope) => recording
                    .others
                    .agent_events
                    .entry(scope.agent_id)
                    .or_default()
                    .push(line.event),
                None => recording.events.push(line.event),
            }
        }
        Ok(recording)
    }
}

/// The artifacts directory the transcript was recorded into (`DIR/<task>/transcript.jsonl`
/// → `DIR`): the recorded run left it out of its workspace snapshot, so the restored
/// copy leaves it out too and the fingerprints can agree.
fn recorded_artifacts(transcript: &Path, task: &str) -> Option<PathBuf> {
    let task_dir = transcript.parent()?;
    (task_dir.file_name()? == task).then(|| artifacts_of(transcript))
}

/// The artifacts directory of `DIR/<task>/transcript.jsonl`: `DIR` (`.` when empty).
pub(super) fn artifacts_of(transcript: &Path) -> PathBuf {
    transcript
        .parent()
        .and_then(Path::parent)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// Whether `a` and `b` name the same existing file or directory.
pub(super) fn same_path(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}
