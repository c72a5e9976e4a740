//! `drover replay`: the recorded run again, from its recorded starting workspace, with
//! the recorded model responses, through the same loop and tools.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::policy::RuleSet;
use crate::record::ReplayJudgement;
use crate::record::transcript::BorrowedRules;
use crate::record::{Event, StartCommit};
use crate::run::recording::{
    RecordedPatch, RecordedResults, Recording, Steering, answers, artifacts_of, recorded_results,
    same_path,
};
use crate::spec::Isolation;
use crate::tools::recorded::RecordedAnswers;

use super::plan_error::{PlanError, ReplayError};
use super::replay_inputs::RecordedSpec;
use super::replay_inputs::ReplayOptions;
use super::replay_inputs::{replay_servers, say_what_runs, source_spec, starting_workspace};
use super::replay_spec::{Granted, replay_spec, unreadable_in_replays};
use super::replay_start::{ReplayStart, replay_judgement, replay_start};
use super::spec_checks;
use super::spec_rules::add_recorded;
use super::task_plan::{
    DiffOnlyPlan, InstructionsPlan, LoopLimits, Mode, ModelSource, RecordedStart,
    ReplayConfinement, ReplayPlan, TaskPlan, WorkspacePlan,
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
    let recording = read_recording(&options.transcript)?;
    let Some(Event::RunStart {
        workspace,
        workspace_sha256,
        task,
        max_turns,
        output_schema,
        agents,
        settings,
        project,
        ..
    }) = recording.events.first().cloned()
    else {
        return Err(ReplayError::NoRunStart {
            transcript: options.transcript.clone(),
        }
        .into());
    };
    refuse_overwrite(options, &task)?;
    let recorded_spec = RecordedSpec::of(&recording.events[0]);
    let mut spec = source_spec(options, recorded_spec)?;
    say_what_runs(&spec, options);
    let granted = Granted {
        checks: options.checks,
        mcp: options.mcp,
        vouched: options.spec.is_some(),
    };
    // Which settings files the spec reads and where it worked, before the replay's
    // spec drops the keys.
    let sources = spec.spec.permissions_from.clone().map(|from| from.value);
    let recorded_isolation = spec.spec.isolation();
    spec.spec = replay_spec(spec.spec, &granted);
    let mcp_servers = if options.mcp {
        replay_servers(&spec, options)?
    } else {
        Default::default()
    };
    let recorded = (
        workspace.as_str(),
        workspace_sha256,
        settings.start.as_ref(),
    );
    let (origin, made, start) = replay_place(options, recorded, recorded_isolation)?;
    let mut confinement = confinement_of(&origin, granted.vouched);
    confinement.network = crate::network::RecordedNetwork::of(&recording.events);
    // Refused in this order: the rules, the masks, the recorded diff, the agents.
    let (rules, borrowed_rules) =
        replay_rules(&spec, &settings.permissions_from, sources, options)?;
    let masks = spec_checks::replay_masks_with(&spec, &options.ignore)?;
    let mode = replay_mode(options, &recording, &spec, start, confinement, masks)?;
    Ok(TaskPlan {
        limits: recorded_limits(&recording.events, max_turns, &spec.spec.limits),
        // A replay has no page model: its WebFetch calls fetch again and show the page.
        web_fetch_model: None,
        rules,
        borrowed_rules,
        mcp_servers,
        agents: recorded_agents(agents, &options.transcript)?,
        skills: recorded_skills(project.skills, &options.transcript)?,
        instructions: InstructionsPlan::Recorded(project.instructions),
        // Hooks are not run in a replay: their recorded answers are given again.
        hooks: Default::default(),
        output_schema: (!output_schema.is_null()).then_some(output_schema),
        mcp_vars: crate::mcp::VarSource::Only(options.mcp_env.iter().cloned().collect()),
        spec,
        workspace: replay_workspace(origin, options, &task, made),
        model: ModelSource::Recorded(Box::new(recording)),
        mode,
        // A replay reads no file by reference: its hooks and agents are the recording's.
        notes: Vec::new(),
    })
}

/// What the replay's tools may not read below `origin`: nothing more when `--spec`
/// vouches for the files on disk, else what a recording must not reach.
fn confinement_of(origin: &Path, vouched: bool) -> ReplayConfinement {
    ReplayConfinement {
        unreadable: if vouched {
            Vec::new()
        } else {
            unreadable_in_replays(origin)
        },
        network: None,
    }
}

/// Where the replay starts: the starting workspace (`--workspace`, else the recorded
/// one here), how its workspace is made from it, and the recorded start (`recorded`:
/// `run_start`'s `workspace`, `workspace_sha256` and `start`) it is held to.
fn replay_place(
    options: &ReplayOptions,
    recorded: (&str, String, Option<&StartCommit>),
    recorded_isolation: Isolation,
) -> Result<(PathBuf, ReplayStart, RecordedStart), PlanError> {
    let (workspace, fingerprint, recorded_start) = recorded;
    let (origin, from_recording) = starting_workspace(options, workspace)?;
    let made = replay_start(recorded_start, recorded_isolation, &origin);
    let start = RecordedStart {
        fingerprint,
        from_recording,
        commit_problem: made.problem.clone(),
        commit: made.commit.clone(),
    };
    Ok((origin, made, start))
}

/// The replay's rules: the recorded spec's, and those the recorded run took from its
/// settings files (`run_start`'s `permissions_from`), with what of those applied.
fn replay_rules(
    spec: &crate::spec::LoadedSpec,
    recorded: &[BorrowedRules],
    sources: Option<crate::spec::PermissionsFrom>,
    options: &ReplayOptions,
) -> Result<(RuleSet, Vec<BorrowedRules>), PlanError> {
    let mut rules = spec_checks::rule_set(spec)?;
    let applied = add_recorded(&mut rules, recorded, sources.as_ref()).map_err(|source| {
        ReplayError::RecordedRule {
            transcript: options.transcript.clone(),
            source,
        }
    })?;
    Ok((rules, applied))
}

/// Where a replay works: a scratch copy of `origin`, the recorded artifacts left out,
/// or (a worktree run) a worktree of its repository at the recorded commit.
fn replay_workspace(
    origin: PathBuf,
    options: &ReplayOptions,
    task: &str,
    made: ReplayStart,
) -> WorkspacePlan {
    WorkspacePlan {
        origin,
        // A replay never touches the workspace it restores from.
        isolation: made.isolation,
        at_commit: made.at_commit,
        excluded: recorded_artifacts(&options.transcript, task)
            .into_iter()
            .collect(),
        own_outputs: Default::default(),
        saved_index: None,
        // A replay never clones (see `replay_spec`).
        repo: None,
    }
}

/// A replay writes its transcript where `--artifacts` says: never over the one it
/// replays.
fn refuse_overwrite(options: &ReplayOptions, task: &str) -> Result<(), PlanError> {
    let output = options.artifacts.join(task).join("transcript.jsonl");
    if same_path(&output, &options.transcript) {
        return Err(ReplayError::WouldOverwrite {
            transcript: options.transcript.clone(),
            artifacts: options.artifacts.clone(),
        }
        .into());
    }
    Ok(())
}

/// The recording, refused before anything of it runs when it is forged or damaged.
fn read_recording(transcript: &Path) -> Result<Recording, PlanError> {
    crate::record::chain::verify_file(transcript).map_err(|source| ReplayError::Forged {
        transcript: transcript.to_path_buf(),
        source,
    })?;
    Ok(Recording::read(transcript).map_err(ReplayError::from)?)
}

/// How the replay's outcome is told. `--checks` re-runs what the recording checked;
/// with nothing to run (no check, no expectation) the outcome stays the recorded one,
/// never a pass that nothing verified.
fn judged(
    options: &ReplayOptions,
    spec: &crate::spec::LoadedSpec,
    recording: &Recording,
) -> ReplayJudgement {
    let rerun = options.checks && (!spec.spec.checks.is_empty() || spec.spec.expect.is_some());
    replay_judgement(&recording.events, rerun)
}

/// The mode of the replay: the recorded loop again, or (`--diff-only`) the diff.patch
/// recorded beside the transcript.
fn replay_mode(
    options: &ReplayOptions,
    recording: &Recording,
    spec: &crate::spec::LoadedSpec,
    start: RecordedStart,
    confinement: ReplayConfinement,
    masks: crate::record::volatile::Masks,
) -> Result<Mode, PlanError> {
    let judgement = judged(options, spec, recording);
    if options.diff_only {
        let patch = options
            .transcript
            .parent()
            .unwrap_or(Path::new("."))
            .join("diff.patch");
        let patch = match RecordedPatch::read(&patch) {
            Ok(recorded) => recorded,
            Err(source) => return Err(ReplayError::NoRecordedDiff { patch, source }.into()),
        };
        return Ok(Mode::DiffOnly(Box::new(DiffOnlyPlan {
            patch,
            strict: options.strict,
            start,
            confinement,
            judgement,
        })));
    }
    let results = recorded_results(&recording.events);
    let answers = answers(&results, &recording.agent_events);
    Ok(Mode::Replay(Box::new(ReplayPlan {
        expectations: RecordedResults {
            results,
            strict: options.strict,
            masks: Arc::new(masks),
            handover: None,
            steering: Steering::of(&recording.events),
        },
        answers: Arc::new(RecordedAnswers::replay(answers)),
        // Without `--mcp` no server runs: the recording answers the MCP tools it used.
        replayed_mcp_tools: if options.mcp {
            Vec::new()
        } else {
            mcp_tools_used(&recording.events)
        },
        start,
        confinement,
        judgement,
    })))
}

/// The artifacts directory the transcript was recorded into (`DIR/<task>/transcript.jsonl`
/// → `DIR`): the recorded run left it out of its workspace snapshot, so the restored
/// copy leaves it out too and the fingerprints can agree.
fn recorded_artifacts(transcript: &Path, task: &str) -> Option<PathBuf> {
    let task_dir = transcript.parent()?;
    (task_dir.file_name()? == task).then(|| artifacts_of(transcript))
}

/// The recorded agents (their scripts were never recorded: the recording answers).
fn recorded_agents(
    agents: serde_json::Value,
    transcript: &Path,
) -> Result<BTreeMap<String, crate::spec::AgentSpec>, PlanError> {
    if agents.is_null() {
        return Ok(BTreeMap::new());
    }
    serde_json::from_value(agents).map_err(|e| {
        ReplayError::AgentsUnreadable {
            transcript: transcript.to_path_buf(),
            message: e.to_string(),
        }
        .into()
    })
}

/// The recorded skills (the catalog and the bodies `Skill` calls return).
pub(super) fn recorded_skills(
    skills: serde_json::Value,
    transcript: &Path,
) -> Result<BTreeMap<String, crate::spec::SkillSpec>, PlanError> {
    if skills.is_null() {
        return Ok(BTreeMap::new());
    }
    let unreadable = |message: String| -> PlanError {
        ReplayError::SkillsUnreadable {
            transcript: transcript.to_path_buf(),
            message,
        }
        .into()
    };
    let skills: BTreeMap<String, crate::spec::SkillSpec> =
        serde_json::from_value(skills).map_err(|e| unreadable(e.to_string()))?;
    // A recording may come from anyone: its skills are held to what `skills_from:` reads.
    if skills.len() > super::spec_skills::MAX_SKILLS {
        return Err(unreadable(format!(
            "{} skills, over the {} a task offers",
            skills.len(),
            super::spec_skills::MAX_SKILLS
        )));
    }
    for (name, skill) in &skills {
        if let Some(problem) = crate::spec::skill_name_problem(name) {
            return Err(unreadable(format!("a skill's name: {problem}")));
        }
        // A directory no longer than a path can be (what `${CLAUDE_SKILL_DIR}` becomes).
        if skill.body.len() as u64 > crate::spec::MAX_SKILL_FILE_BYTES
            || skill.description.chars().count() > crate::spec::MAX_SKILL_DESCRIPTION
            || skill.dir.len() > 4096
        {
            return Err(unreadable(format!(
                "skill {name} is longer than a SKILL.md may be"
            )));
        }
    }
    Ok(skills)
}

/// The limits the recorded run ran under: its `run_start`'s, or those its last resume
/// set, the spec's where the recording names none.
fn recorded_limits(
    events: &[Event],
    max_turns: Option<u32>,
    spec_limits: &crate::spec::Limits,
) -> LoopLimits {
    let spec_cost = spec_limits.max_cost_usd.as_ref().map(|l| l.value);
    let resumed = events.iter().rev().find_map(|event| match event {
        Event::Resume {
            max_turns,
            max_cost_usd,
            ..
        } => Some((*max_turns, *max_cost_usd)),
        _ => None,
    });
    let max_tokens = events
        .iter()
        .rev()
        .find_map(|event| match event {
            Event::Resume { max_tokens, .. } => Some(*max_tokens),
            Event::RunStart { settings, .. } => Some(settings.max_tokens),
            _ => None,
        })
        .flatten()
        .or(spec_limits.max_tokens.as_ref().map(|l| l.value));
    let (max_turns, max_cost_usd) = match resumed {
        Some((turns, cost)) => (turns, cost.or(spec_cost)),
        None => (max_turns, spec_cost),
    };
    LoopLimits {
        max_turns,
        max_cost_usd,
        max_tokens,
    }
}
