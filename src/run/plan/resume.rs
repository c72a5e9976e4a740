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
use crate::record::{EndReason, Event, StartCommit, TranscriptReader};
use crate::run::recording::{
    Recording, answers, artifacts_of, recorded_results, same_path, transcript_of,
};
use crate::spec::{self, Isolation, LoadedSpec, Provider};
use crate::tools::recorded::RecordedAnswers;
use crate::workspace::start_commit::{check_commit, is_object_id};

use super::live::{Overrides, plan_task};
use super::plan_error::{PlanError, defaults_change};
use super::resume_error::ResumeError;
use super::resume_recorded::{guessed_outputs, narrow_to_recorded, recorded_settings};
use super::spec_checks;
use super::task_plan::{InstructionsPlan, Mode, ResumePlan, TaskPlan};

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
    let read = read_resumable(&options.task, &transcript).map_err(PlanError::Resume)?;
    let run = RecordedRun::of(&read.scoped).ok_or_else(|| {
        PlanError::Resume(Box::new(ResumeError::NoRunStart {
            transcript: transcript.clone(),
        }))
    })?;
    let point = resume_point(&read.scoped);
    if let Some(end) = &point.end
        && !resumable_reason(end.reason)
    {
        return Err(PlanError::Resume(Box::new(ResumeError::Finished {
            transcript,
            reason: end.reason,
            message: end.message.clone(),
        })));
    }
    let spec = resumed_spec(options, &transcript, &run).map_err(PlanError::Resume)?;
    let recorded = recorded_settings(&read.scoped, &point);
    let mut overrides =
        resume_overrides(options, &transcript, &run, &spec).map_err(PlanError::Resume)?;
    narrow_to_recorded(&mut overrides, &recorded, &spec.spec.limits);
    let mut plan = plan_task(spec, &overrides)?;
    plan.workspace.at_commit =
        resumed_commit(&plan, run.start.as_ref(), options.strict, &transcript)?;
    clone_at_recorded_commit(&mut plan, run.start.as_ref());
    // The recorded turns were made with the recorded prompt and skills: the resumed run
    // goes on with them (the workspace is the recorded one, its fingerprint checked, but
    // a file it ignores may have changed, and `skills_from:` lies outside it).
    plan.instructions = InstructionsPlan::Recorded(run.project.instructions.clone());
    plan.skills = super::replay::recorded_skills(run.project.skills.clone(), &transcript)?;
    if let Some(end) = &point.end {
        limits_raised(&plan, end, point.turns, &transcript).map_err(PlanError::Resume)?;
    }
    let masks = spec_checks::replay_masks_with(&plan.spec, &options.ignore)?;
    let ReadRecording {
        bytes,
        lines,
        cut_off,
        scoped,
    } = read;
    let Recording {
        events,
        agent_events,
        ..
    } = Recording::of(scoped.into_iter().take(point.kept));
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
        kept: lines[..point.kept].to_vec(),
        dropped: lines.len() - point.kept + usize::from(cut_off),
        events,
        agent_events,
        turns: point.turns,
        previous: point.end,
        results,
        answers,
        strict: options.strict,
        masks: Arc::new(masks),
        fingerprint: run.workspace_sha256,
        commit: run.start.filter(|start| is_object_id(&start.commit)),
        recorded_outputs,
        transcript,
    }));
    Ok(plan)
}

/// A resumed `repo:` task clones the recorded commit: the spec names the repository,
/// the recording only the commit, fetched by id from there (a commit it does not hold
/// ends the task `repo_refused`).
fn clone_at_recorded_commit(plan: &mut TaskPlan, recorded: Option<&StartCommit>) {
    if let Some(request) = plan.workspace.repo.as_mut() {
        request.at_commit = recorded
            .map(|start| start.commit.clone())
            .filter(|commit| is_object_id(commit));
    }
}

/// The commit a resumed `isolation: worktree` task's worktree is made at: the one the
/// recorded run started from, when it passes every check (`check_commit`). When it does
/// not, the worktree is made at HEAD, said on stderr (and the fingerprint check still
/// decides), or under `--strict` the resume is refused before anything runs.
fn resumed_commit(
    plan: &TaskPlan,
    recorded: Option<&StartCommit>,
    strict: bool,
    transcript: &Path,
) -> Result<Option<String>, PlanError> {
    let Some(start) = recorded else {
        return Ok(None);
    };
    // A `repo:` task's checkout is cloned at the recorded commit (`RepoRequest`).
    if plan.workspace.isolation != Isolation::Worktree || plan.workspace.repo.is_some() {
        return Ok(None);
    }
    match check_commit(&plan.workspace.origin, start) {
        Ok(id) => Ok(Some(id)),
        Err(source) if strict => Err(PlanError::Resume(Box::new(ResumeError::StartCommit {
            transcript: transcript.to_path_buf(),
            source,
        }))),
        Err(why) => {
            crate::esay!(
                "drover: warning: {}: {why}; the worktree is made at HEAD instead",
                plan.spec.name()
            );
            Ok(None)
        }
    }
}

/// A recording as a resume reads it: its bytes (kept beside the new transcript), its
/// whole lines, and their events.
struct ReadRecording {
    bytes: Vec<u8>,
    lines: Vec<String>,
    /// The last line was cut short by a kill and left out.
    cut_off: bool,
    scoped: Vec<ScopedEvent>,
}

/// Read the transcript, its hash chain verified (a forged or edited one is refused)
/// and every whole line parsed.
fn read_resumable(task: &Path, transcript: &Path) -> Result<ReadRecording, Box<ResumeError>> {
    let bytes = std::fs::read(transcript).map_err(|_| ResumeError::NoTranscript {
        path: task.to_path_buf(),
    })?;
    let resumable = chain::verify_resumable(&bytes).map_err(|source| ResumeError::Forged {
        transcript: transcript.to_path_buf(),
        source,
    })?;
    let mut scoped = Vec::with_capacity(resumable.lines.len());
    for (index, line) in resumable.lines.iter().enumerate() {
        let event = TranscriptReader::parse_line(line).map_err(|e| ResumeError::Unparsable {
            transcript: transcript.to_path_buf(),
            line: index + 1,
            message: e.to_string(),
        })?;
        scoped.push(event);
    }
    Ok(ReadRecording {
        bytes,
        lines: resumable.lines,
        cut_off: resumable.cut_off,
        scoped,
    })
}

/// What the recording's `run_start` says the run was.
struct RecordedRun {
    task: String,
    spec_sha256: String,
    /// The defaults file merged into the spec, if any.
    defaults: Option<crate::record::transcript::RunDefaults>,
    /// The matrix entry the task was expanded from, if any.
    matrix: Option<spec::MatrixValues>,
    provider: String,
    model: String,
    spec_path: String,
    workspace: String,
    workspace_sha256: String,
    start: Option<StartCommit>,
    project: crate::record::transcript::RunProject,
}

impl RecordedRun {
    fn of(scoped: &[ScopedEvent]) -> Option<RecordedRun> {
        let Some(ScopedEvent {
            event:
                Event::RunStart {
                    task,
                    spec_sha256,
                    defaults,
                    matrix,
                    provider,
                    model,
                    spec_path,
                    workspace,
                    workspace_sha256,
                    settings,
                    project,
                    ..
                },
            ..
        }) = scoped.first()
        else {
            return None;
        };
        Some(RecordedRun {
            task: task.clone(),
            spec_sha256: spec_sha256.clone(),
            defaults: defaults.as_deref().cloned(),
            matrix: matrix.as_deref().cloned(),
            provider: provider.clone(),
            model: model.clone(),
            spec_path: spec_path.clone(),
            workspace: workspace.clone(),
            workspace_sha256: workspace_sha256.clone(),
            start: settings.start.clone(),
            project: project.as_ref().clone(),
        })
    }
}

/// The spec the resumed task runs: `--spec`, else the recorded one if it lies here; it
/// must be the very file the run used (its SHA-256), of the same task, and the
/// transcript must lie in that task's folder.
fn resumed_spec(
    options: &ResumeOptions,
    transcript: &Path,
    run: &RecordedRun,
) -> Result<LoadedSpec, Box<ResumeError>> {
    let spec_path = match &options.spec {
        Some(spec) => spec.clone(),
        None => recorded_spec_here(transcript, PathBuf::from(&run.spec_path))?,
    };
    // The spec file is the user's: the task is made of its own entry (the recorded one
    // must be it), of the recorded one only when the matrix's file is gone.
    let expansion = spec::Expansion::Vouched(spec::RecordedTask {
        name: &run.task,
        entry: run.matrix.as_ref(),
    });
    let spec = spec::load_recorded(&spec_path, expansion).map_err(|source| {
        ResumeError::SpecUnreadable {
            spec: spec_path.clone(),
            source,
        }
    })?;
    if spec.sha256 != run.spec_sha256 {
        return Err(Box::new(ResumeError::SpecChanged {
            spec: spec_path,
            recorded: run.spec_sha256.clone(),
            now: spec.sha256.clone(),
        }));
    }
    // The defaults merged in must be the recorded ones too, read from the file beside
    // the spec: a recording does not choose a live run's settings, so its copy of the
    // defaults is never taken in their place.
    if let Some(change) = defaults_change(run.defaults.as_ref(), spec.defaults.as_ref()) {
        return Err(Box::new(ResumeError::DefaultsChanged {
            spec: spec_path,
            change,
        }));
    }
    if spec.name() != run.task {
        return Err(Box::new(ResumeError::OtherTask {
            transcript: transcript.to_path_buf(),
            spec: spec_path,
            recorded: run.task.clone(),
            given: spec.name().to_string(),
        }));
    }
    if provider_named(&run.provider).is_none() {
        return Err(Box::new(ResumeError::NotARun {
            transcript: transcript.to_path_buf(),
            provider: run.provider.clone(),
        }));
    }
    // The task's folder is named after it: a transcript elsewhere (or one put in
    // another task's folder) names nothing drover can trust to write back to.
    let folder = transcript
        .parent()
        .and_then(Path::file_name)
        .map(|name| name.to_string_lossy().into_owned());
    if folder.as_deref() != Some(run.task.as_str()) {
        return Err(Box::new(ResumeError::NotInTaskFolder {
            transcript: transcript.to_path_buf(),
            task: run.task.clone(),
        }));
    }
    Ok(spec)
}

/// What the resumed task runs with. The spec on disk (its SHA-256 checked) and the
/// command line decide; the recording may not: a model other than the spec's must be
/// asked for again, and a workspace other than the spec's named.
fn resume_overrides(
    options: &ResumeOptions,
    transcript: &Path,
    run: &RecordedRun,
    spec: &LoadedSpec,
) -> Result<Overrides, Box<ResumeError>> {
    let RecordedRun {
        provider, model, ..
    } = run;
    let mut overrides = options.overrides.clone();
    let recorded_provider = provider_named(provider);
    let spec_model = &spec.spec.model.value;
    if overrides.provider.is_none() && recorded_provider != Some(spec_model.provider) {
        return Err(Box::new(ResumeError::OtherModel {
            transcript: transcript.to_path_buf(),
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
            return Err(Box::new(ResumeError::OtherModel {
                transcript: transcript.to_path_buf(),
                flag: format!("--model {model}"),
                recorded: format!("model {model}"),
                spec: spec_name.map_or_else(
                    || "model (it names none: the run was given --model)".to_string(),
                    |name| format!("model {name}"),
                ),
            }));
        }
        overrides.model = overrides.model.or(Some(model.clone()));
    }
    overrides.provider = overrides.provider.or(recorded_provider);
    // The workspace is the spec's (or --workspace): a recording does not choose where
    // a live run works. One recorded elsewhere (a run given --workspace) must be named.
    // A `repo:` task's is cloned again, at the recorded commit.
    let cloned = spec.spec.repo.is_some();
    if overrides.workspace.is_none()
        && !cloned
        && !same_path(&spec.workspace_dir(), Path::new(&run.workspace))
    {
        return Err(Box::new(ResumeError::OtherWorkspace {
            transcript: transcript.to_path_buf(),
            recorded: PathBuf::from(&run.workspace),
            spec: spec.workspace_dir(),
        }));
    }
    Ok(overrides)
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
    replayed: u32,
    transcript: &Path,
) -> Result<(), Box<ResumeError>> {
    match end.reason {
        // The working turns: a wrap-up turn after them is asked again as one.
        EndReason::MaxTurns => match plan.limits.max_turns {
            Some(limit) if limit <= replayed => Err(Box::new(ResumeError::TurnLimit {
                transcript: transcript.to_path_buf(),
                turns: replayed,
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
