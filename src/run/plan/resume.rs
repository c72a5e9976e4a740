//! `drover resume DIR/TASK` (and `drover run SPEC --resume DIR/TASK`): a task stopped by
//! a signal, a kill, a limit or a provider failure is continued. Its starting workspace
//! is made again (and must match the recorded fingerprint), its whole recorded turns are
//! replayed without the model (tools run again, drift reported), and the live model goes
//! on from there, its transcript the recorded one continued on the same hash chain.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::record::chain;
use crate::record::resume_point::{RecordedEnd, resume_point};
use crate::record::transcript::ScopedEvent;
use crate::record::{EndReason, Event, TranscriptReader};
use crate::run::recording::{
    Recording, answers, artifacts_of, recorded_results, same_path, transcript_of,
};
use crate::spec::{self, Provider};
use crate::tools::recorded::RecordedAnswers;

use super::live::{Overrides, plan_task};
use super::plan_error::PlanError;
use super::resume_error::ResumeError;
use super::resume_recorded::{guessed_outputs, narrow_to_recorded, recorded_settings};
use super::spec_checks;
use super::task_plan::{Mode, ResumePlan, TaskPlan};

/// What the command line asks of a resume.
pub(crate) struct ResumeOptions {
    /// `DIR/TASK`, or its `transcript.jsonl`.
    pub task: PathBuf,
    /// The spec to resume (`drover run SPEC --resume`); default: the recorded spec path.
    pub spec: Option<PathBuf>,
    /// `--provider`, `--model`, `--max-turns`, `--max-cost-usd`, `--workspace`; each
    /// defaults to what the recorded run used.
    pub overrides: Overrides,
    /// End the run at the first drift of a replayed result (`--strict`).
    pub strict: bool,
    /// More volatile output to mask before comparing (`--ignore`).
    pub ignore: Vec<String>,
}

/// Read the recording and plan the resumed task. Every refusal is bad input (exit 2).
pub(crate) fn plan_resume(options: &ResumeOptions) -> Result<TaskPlan, PlanError> {
    let transcript = transcript_of(&options.task);
    let refuse = |error: ResumeError| PlanError::Resume(Box::new(error));
    let bytes = std::fs::read(&transcript).map_err(|_| {
        refuse(ResumeError::NoTranscript {
            path: options.task.clone(),
        })
    })?;
    let resumable = chain::verify_resumable(&bytes).map_err(|source| {
        refuse(ResumeError::Forged {
            transcript: transcript.clone(),
            source,
        })
    })?;
    let mut scoped = Vec::with_capacity(resumable.lines.len());
    for (index, line) in resumable.lines.iter().enumerate() {
        let event = TranscriptReader::parse_line(line).map_err(|e| {
            refuse(ResumeError::Unparsable {
                transcript: transcript.clone(),
                line: index + 1,
                message: e.to_string(),
            })
        })?;
        scoped.push(event);
    }
    let Some(ScopedEvent {
        event:
            Event::RunStart {
                task,
                spec_sha256,
                provider,
                model,
                spec_path,
                workspace,
                workspace_sha256,
                ..
            },
        ..
    }) = scoped.first().cloned()
    else {
        return Err(refuse(ResumeError::NoRunStart { transcript }));
    };
    let point = resume_point(&scoped);
    if let Some(end) = &point.end
        && !resumable_reason(end.reason)
    {
        return Err(refuse(ResumeError::Finished {
            transcript,
            reason: end.reason,
            message: end.message.clone(),
        }));
    }
    let spec_path = match &options.spec {
        Some(spec) => spec.clone(),
        None => {
            recorded_spec_here(&transcript, PathBuf::from(&spec_path)).map_err(PlanError::Resume)?
        }
    };
    let spec = spec::load(&spec_path).map_err(|source| {
        refuse(ResumeError::SpecUnreadable {
            spec: spec_path.clone(),
            source,
        })
    })?;
    if spec.sha256 != spec_sha256 {
        return Err(refuse(ResumeError::SpecChanged {
            spec: spec_path,
            recorded: spec_sha256,
            now: spec.sha256.clone(),
        }));
    }
    if spec.name() != task {
        return Err(refuse(ResumeError::OtherTask {
            transcript,
            spec: spec_path,
            recorded: task,
            given: spec.name().to_string(),
        }));
    }
    if provider_named(&provider).is_none() {
        return Err(refuse(ResumeError::NotARun {
            transcript,
            provider,
        }));
    }
    // The task's folder is named after it: a transcript elsewhere (or one put in
    // another task's folder) names nothing drover can trust to write back to.
    let folder = transcript
        .parent()
        .and_then(Path::file_name)
        .map(|name| name.to_string_lossy().into_owned());
    if folder.as_deref() != Some(task.as_str()) {
        return Err(refuse(ResumeError::NotInTaskFolder { transcript, task }));
    }
    let recorded = recorded_settings(&scoped, &point);
    let kept: Vec<ScopedEvent> = scoped.into_iter().take(point.kept).collect();
    // The spec on disk (its SHA-256 checked) and the command line decide what runs; the
    // recording's own settings may only narrow it: a model other than the spec's must be
    // asked for again, and its limits apply only where they are tighter.
    let mut overrides = options.overrides.clone();
    let recorded_provider = provider_named(&provider);
    let spec_model = &spec.spec.model.value;
    if overrides.provider.is_none() && recorded_provider != Some(spec_model.provider) {
        return Err(refuse(ResumeError::OtherModel {
            transcript,
            flag: format!("--provider {provider} --model {model}"),
            recorded: format!("provider {provider}"),
            spec: format!("provider {}", spec_model.provider.as_str()),
        }));
    }
    if overrides.provider.is_none() || overrides.provider == recorded_provider {
        // A scripted model's name is a label; any other is the model asked, with your key.
        let spec_name = match &spec_model.name {
            Some(name) => Some(name.as_str()),
            None if spec_model.provider == Provider::Script => Some(model.as_str()),
            None => None,
        };
        if overrides.model.is_none() && spec_name != Some(model.as_str()) {
            return Err(refuse(ResumeError::OtherModel {
                transcript,
                flag: format!("--model {model}"),
                recorded: format!("model {model}"),
                spec: spec_name.map_or_else(
                    || "model (it names none: the run was given --model)".to_string(),
                    |name| format!("model {name}"),
                ),
            }));
        }
        overrides.model = overrides.model.or(Some(model));
    }
    overrides.provider = overrides.provider.or(recorded_provider);
    narrow_to_recorded(&mut overrides, &recorded, &spec.spec.limits);
    // The workspace is the spec's (or --workspace): a recording does not choose where
    // a live run works. One recorded elsewhere (a run given --workspace) must be named.
    if overrides.workspace.is_none() && !same_path(&spec.workspace_dir(), Path::new(&workspace)) {
        return Err(refuse(ResumeError::OtherWorkspace {
            transcript,
            recorded: PathBuf::from(workspace),
            spec: spec.workspace_dir(),
        }));
    }
    let mut plan = plan_task(spec, &overrides)?;
    if let Some(end) = &point.end {
        limits_raised(&plan, end, &transcript).map_err(PlanError::Resume)?;
    }
    let masks = spec_checks::replay_masks_with(&plan.spec, &options.ignore)?;
    let Recording {
        events,
        agent_events,
        ..
    } = Recording::of(kept);
    let results = recorded_results(&events);
    let answers = Arc::new(RecordedAnswers::resume(answers(&results, &agent_events)));
    // drover's own outputs in the artifacts directory the run wrote were left out of
    // the recorded starting state. Only where they lie in the artifacts directory that
    // holds this task's folder: a recording does not choose which of the workspace's
    // files the resumed run leaves out of its copy and its diff.
    let here = artifacts_of(&transcript);
    let recorded_outputs = recorded
        .outputs
        .filter(|outputs| same_path(&outputs.artifacts, &here))
        .unwrap_or_else(|| guessed_outputs(&transcript));
    plan.mode = Mode::Resume(Box::new(ResumePlan {
        recording: bytes,
        spent_before: recorded.spent_before,
        kept: resumable.lines[..point.kept].to_vec(),
        dropped: resumable.lines.len() - point.kept + usize::from(resumable.cut_off),
        events,
        agent_events,
        turns: point.turns,
        previous: point.end,
        results,
        answers,
        strict: options.strict,
        masks: Arc::new(masks),
        fingerprint: workspace_sha256,
        recorded_outputs,
        transcript,
    }));
    Ok(plan)
}

/// The spec the recording names, when it lies in the current directory: a recording
/// does not choose which spec file of this machine runs (one of yours with `sandbox: off`,
/// say); a spec elsewhere is named with `--spec`.
fn recorded_spec_here(transcript: &Path, spec: PathBuf) -> Result<PathBuf, Box<ResumeError>> {
    let current = std::env::current_dir()
        .and_then(|dir| dir.canonicalize())
        .unwrap_or_default();
    match spec.canonicalize() {
        Ok(real) if real.starts_with(&current) && current.is_absolute() => Ok(spec),
        _ => Err(Box::new(ResumeError::SpecNotHere {
            transcript: transcript.to_path_buf(),
            spec,
            current,
        })),
    }
}

/// The reasons a run is resumed after: it was stopped, not finished.
fn resumable_reason(reason: EndReason) -> bool {
    matches!(
        reason,
        EndReason::Interrupted
            | EndReason::MaxTurns
            | EndReason::Timeout
            | EndReason::Budget
            | EndReason::ProviderError
            | EndReason::InternalError
            | EndReason::ReplayDrift
    )
}

/// A run stopped by a limit resumes only with that limit raised: it would stop again at
/// once.
fn limits_raised(
    plan: &TaskPlan,
    end: &RecordedEnd,
    transcript: &Path,
) -> Result<(), Box<ResumeError>> {
    match end.reason {
        EndReason::MaxTurns => match plan.limits.max_turns {
            Some(limit) if limit <= end.turns => Err(Box::new(ResumeError::TurnLimit {
                transcript: transcript.to_path_buf(),
                turns: end.turns,
            })),
            _ => Ok(()),
        },
        EndReason::Budget => {
            if let (Some(limit), Some(spent)) = (plan.limits.max_cost_usd, end.cost_usd)
                && spent >= limit
            {
                return Err(Box::new(ResumeError::CostLimit {
                    transcript: transcript.to_path_buf(),
                    spent,
                    limit,
                }));
            }
            match plan.limits.max_tokens {
                Some(limit) if end.usage.total() >= limit => {
                    Err(Box::new(ResumeError::TokenLimit {
                        transcript: transcript.to_path_buf(),
                        spent: end.usage.total(),
                        limit,
                    }))
                }
                _ => Ok(()),
            }
        }
        _ => Ok(()),
    }
}

/// The provider a recording names (`anthropic`, `openai`, `script`); None for another
/// (a recording of a replay).
fn provider_named(name: &str) -> Option<Provider> {
    [Provider::Anthropic, Provider::Openai, Provider::Script]
        .into_iter()
        .find(|provider| provider.as_str() == name)
}
