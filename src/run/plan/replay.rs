//! `drover replay`: the recorded run again, from its recorded starting workspace, with
//! the recorded model responses, through the same loop and tools.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::agent::ReplayExpectations;
use crate::record::Event;
use crate::run::recording::{
    RecordedPatch, Recording, answers, artifacts_of, recorded_results, same_path,
};
use crate::spec::Isolation;
use crate::tools::recorded::RecordedAnswers;

use super::plan_error::{PlanError, ReplayError};
use super::replay_inputs::ReplayOptions;
use super::replay_inputs::{replay_servers, say_what_runs, source_spec, starting_workspace};
use super::replay_spec::{Granted, replay_spec, unreadable_in_replays};
use super::spec_checks;
use super::task_plan::{
    DiffOnlyPlan, LoopLimits, Mode, ModelSource, RecordedStart, ReplayConfinement, ReplayPlan,
    TaskPlan, WorkspacePlan,
};

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
    let recording = Recording::read(&options.transcript).map_err(ReplayError::from)?;
    let events = &recording.events;
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
    }) = recording.events.first().cloned()
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
    let rules = spec_checks::rule_set(&spec)?;
    let masks = spec_checks::replay_masks_with(&spec, &options.ignore)?;
    // `--diff-only`: the diff.patch recorded beside the transcript.
    let recorded_patch = if options.diff_only {
        let patch = options
            .transcript
            .parent()
            .unwrap_or(Path::new("."))
            .join("diff.patch");
        match RecordedPatch::read(&patch) {
            Ok(recorded) => Some(recorded),
            Err(source) => return Err(ReplayError::NoRecordedDiff { patch, source }.into()),
        }
    } else {
        None
    };
    let replayed_mcp_tools = if options.mcp {
        Vec::new()
    } else {
        mcp_tools_used(events)
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
    let start = RecordedStart {
        fingerprint: workspace_sha256,
        from_recording: workspace_from_recording,
    };
    let confinement = ReplayConfinement { unreadable };
    let mode = match recorded_patch {
        Some(patch) => Mode::DiffOnly(Box::new(DiffOnlyPlan {
            patch,
            strict: options.strict,
            start,
            confinement,
        })),
        None => {
            let results = recorded_results(events);
            let answers = answers(&results, &recording.agent_events);
            Mode::Replay(Box::new(ReplayPlan {
                expectations: ReplayExpectations {
                    results,
                    strict: options.strict,
                    masks: Arc::new(masks),
                    handover: None,
                },
                answers: Arc::new(RecordedAnswers::replay(answers)),
                replayed_mcp_tools,
                start,
                confinement,
            }))
        }
    };
    Ok(TaskPlan {
        limits: LoopLimits {
            max_turns,
            max_cost_usd,
            max_tokens: max_tokens_limit,
        },
        // A replay has no page model: its WebFetch calls fetch again and show the page.
        web_fetch_model: None,
        rules,
        mcp_servers,
        agents,
        // Hooks are not run in a replay: their recorded answers are given again.
        hooks: Default::default(),
        output_schema: (!output_schema.is_null()).then_some(output_schema),
        mcp_vars: crate::mcp::VarSource::Only(options.mcp_env.iter().cloned().collect()),
        spec,
        workspace: WorkspacePlan {
            origin,
            // A replay never touches the workspace it restores from.
            isolation: Isolation::Copy,
            excluded: recorded_artifacts(&options.transcript, &task)
                .into_iter()
                .collect(),
            own_outputs: Default::default(),
            saved_index: None,
        },
        model: ModelSource::Recorded(Box::new(recording)),
        mode,
    })
}

/// The artifacts directory the transcript was recorded into (`DIR/<task>/transcript.jsonl`
/// → `DIR`): the recorded run left it out of its workspace snapshot, so the restored
/// copy leaves it out too and the fingerprints can agree.
fn recorded_artifacts(transcript: &Path, task: &str) -> Option<PathBuf> {
    let task_dir = transcript.parent()?;
    (task_dir.file_name()? == task).then(|| artifacts_of(transcript))
}
