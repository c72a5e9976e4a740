//! Running tasks: planning every task before any starts (so bad input fails fast and
//! nothing half-runs), running them, and writing the run-wide reports.

mod artifacts_ledger;
mod artifacts_place;
mod attempts;
mod checks;
mod conflicts;
mod diff_only;
mod earlier_run;
mod expect;
pub(crate) mod interrupt;
mod orphaned_folders;
mod page_model;
mod plan_error;
mod prepare;
pub(crate) mod progress;
mod replay;
mod replay_inputs;
mod replay_spec;
mod resume;
mod resume_error;
mod resume_recorded;
mod runner_hint;
mod sandbox;
mod setup;
pub(crate) mod shard;
mod spec_agents;
pub(crate) mod spec_checks;
pub(crate) mod subagents;
mod task;
mod task_end;
mod task_error;
mod task_folder;
mod task_redaction;
mod task_start;
mod tool_listing;
mod worktree;

use std::path::{Path, PathBuf};

use conflicts::RUN_FILES;

use crate::workspace::baseline::IndexSnapshot;
use std::sync::Arc;

use futures::StreamExt;

pub(crate) use artifacts_ledger::{ArtifactsError, Sweep};
pub(crate) use earlier_run::clear_earlier_run;
pub(crate) use orphaned_folders::publish_orphaned_folders;
pub(crate) use plan_error::PlanError;
pub(crate) use replay::plan_replay;
pub(crate) use replay_inputs::ReplayOptions;
pub(crate) use resume::{
    ResumeOptions, check_workspace, default_artifacts, plan_resume, transcript_of,
};
pub(crate) use task::{ModelSource, TaskPlan, run_task, unfinished_report};
pub(crate) use tool_listing::{ListedTool, list_builtin_tools, list_tools};

use crate::model::remote::RemoteConfig;
use crate::record::junit::junit_xml;
use crate::record::summary::{summary_json, summary_md};
use crate::record::{EndReason, RunReport, TaskReport};
use crate::spec::{Isolation, LoadedSpec, Provider};

/// Command-line settings that override every spec of a run.
#[derive(Debug, Clone, Default)]
pub(crate) struct Overrides {
    pub provider: Option<Provider>,
    pub model: Option<String>,
    pub max_turns: Option<u32>,
    /// `--max-cost-usd`: every spec's `limits.max_cost_usd`.
    pub max_cost_usd: Option<f64>,
    /// `--max-tokens`: every spec's `limits.max_tokens`.
    pub max_tokens: Option<u64>,
    /// `--timeout`: every spec's `limits.timeout`.
    pub timeout: Option<crate::spec::TimeoutLimit>,
    pub workspace: Option<PathBuf>,
}

/// Turn loaded specs into runnable plans, or say (all at once) why they cannot run.
/// Every message names the spec file and what to do.
pub(crate) fn plan_tasks(
    specs: Vec<LoadedSpec>,
    overrides: &Overrides,
    jobs: usize,
) -> Result<Vec<TaskPlan>, Vec<PlanError>> {
    let mut plans = Vec::new();
    let mut errors = Vec::new();
    for spec in specs {
        match plan_task(spec, overrides) {
            Ok(plan) => plans.push(plan),
            Err(error) => errors.push(error),
        }
    }
    errors.extend(
        conflicts::reserved_names(&plans)
            .into_iter()
            .map(PlanError::Conflict),
    );
    if jobs > 1 {
        errors.extend(
            conflicts::shared_workspaces(&plans, jobs)
                .into_iter()
                .map(PlanError::Conflict),
        );
    }
    if errors.is_empty() {
        Ok(plans)
    } else {
        Err(errors)
    }
}

/// Where the turns of a model with these settings come from; for a real provider its
/// key is read now, so a missing one stops the run before any task starts.
fn model_source(
    provider: Provider,
    name: Option<String>,
    model_spec: &crate::spec::ModelSpec,
    spec_path: &Path,
) -> Result<(ModelSource, replay::Recorded), ModelSourceError> {
    match provider {
        Provider::Script => match model_spec.script.clone() {
            Some(turns) => Ok((
                ModelSource::Script { name, turns },
                replay::Recorded::default(),
            )),
            None => Err(ModelSourceError::NoScript),
        },
        Provider::Replay => match &model_spec.transcript {
            Some(transcript) => {
                let base = spec_path.parent().unwrap_or(Path::new("."));
                replay::Recording::read(&base.join(transcript))
                    .map(|recording| {
                        let source = ModelSource::Replay {
                            events: recording.events,
                            expectations: None,
                        };
                        (source, recording.others)
                    })
                    .map_err(ModelSourceError::Transcript)
            }
            None => Err(ModelSourceError::NoTranscript),
        },
        Provider::Anthropic | Provider::Openai => {
            RemoteConfig::resolve(provider, model_spec, name, |var| std::env::var(var).ok())
                .map(|config| {
                    (
                        ModelSource::Remote(Box::new(config)),
                        replay::Recorded::default(),
                    )
                })
                .map_err(ModelSourceError::Remote)
        }
    }
}

/// Why a task's model cannot be set up.
#[derive(Debug, thiserror::Error)]
enum ModelSourceError {
    #[error("--provider script needs the spec to have model.script")]
    NoScript,
    #[error("--provider replay needs the spec to have model.transcript")]
    NoTranscript,
    #[error("model.transcript: {0}")]
    Transcript(crate::record::transcript::TranscriptError),
    #[error(transparent)]
    Remote(crate::model::remote::RemoteConfigError),
}

/// Plan one task, or every reason (all of them, not only the first) it cannot run.
pub(super) fn plan_task(
    mut spec: LoadedSpec,
    overrides: &Overrides,
) -> Result<TaskPlan, PlanError> {
    if let Some(timeout) = overrides.timeout {
        spec.spec.limits.timeout = Some(timeout);
    }
    let mut errors = Vec::new();
    let model_spec = &spec.spec.model.value;
    let provider = overrides.provider.unwrap_or(model_spec.provider);
    let name = overrides.model.clone().or_else(|| model_spec.name.clone());
    let max_cost_usd = overrides.max_cost_usd.or(spec
        .spec
        .limits
        .max_cost_usd
        .as_ref()
        .map(|limit| limit.value));
    // The spec was checked for a priced budget as written; --provider/--model (or
    // --max-cost-usd) may change that.
    if max_cost_usd.is_some()
        && crate::model::pricing::resolve(
            provider.as_str(),
            name.as_deref().unwrap_or_default(),
            model_spec.pricing.as_ref(),
        )
        .is_none()
    {
        errors.push(format!(
            "limits.max_cost_usd needs the model's price, but drover has no price for model {:?}; add model.pricing",
            name.clone().unwrap_or_default()
        ));
    }
    // A recording's sub-agent runs and hook runs (`provider: replay`).
    let mut recorded = replay::Recorded::default();
    let model = match model_source(provider, name, model_spec, &spec.path) {
        Ok((model, extras)) => {
            recorded = extras;
            Some(model)
        }
        Err(error) => {
            errors.push(error.to_string());
            None
        }
    };
    // The page model of WebFetch: its own provider, never replaced by --provider/--model.
    let web_fetch_model = match spec
        .spec
        .tools
        .as_ref()
        .and_then(|t| t.value.web_fetch_model())
    {
        Some(page_model) => {
            let m = &page_model.value;
            match model_source(m.provider, m.name.clone(), m, &spec.path) {
                Ok((source, _)) => Some(source),
                Err(error) => {
                    errors.push(format!("tools.web_fetch.model: {error}"));
                    None
                }
            }
        }
        None => None,
    };
    let origin = overrides
        .workspace
        .clone()
        .unwrap_or_else(|| spec.workspace_dir());
    if !origin.is_dir() {
        errors.push(format!(
            "the workspace {} is not a directory; fix `workspace:` (relative to the spec file) or pass --workspace",
            origin.display()
        ));
    } else if spec.spec.isolation == Isolation::Worktree
        && let Err(e) = worktree::locate(&origin)
    {
        errors.push(e.to_string());
    }
    let Some(model) = model.filter(|_| errors.is_empty()) else {
        return Err(PlanError::Spec {
            spec: spec.path.clone(),
            problems: errors,
        });
    };
    let rules = spec_checks::rule_set(&spec)?;
    let mcp_servers = spec_checks::mcp_servers(&spec)?;
    let (hooks, notes) = spec_checks::task_hooks(&spec)?;
    for note in notes {
        crate::esay!("drover: note: {}: {note}", spec.name());
    }
    let output_schema = spec_checks::output_schema(&spec)?;
    let (agents, notes) = spec_checks::task_agents(&spec)?;
    for note in notes {
        crate::esay!("drover: note: {}: {note}", spec.name());
    }
    Ok(TaskPlan {
        web_fetch_model,
        rules,
        mcp_servers,
        hooks,
        agents,
        agent_events: recorded.agent_events,
        hook_events: recorded.hook_events,
        recorded_patch: None,
        output_schema,
        replayed_mcp_tools: Vec::new(),
        mcp_vars: crate::mcp::VarSource::Environment,
        max_turns: overrides
            .max_turns
            .or(spec.spec.limits.max_turns.as_ref().map(|l| l.value)),
        max_cost_usd,
        max_tokens: overrides
            .max_tokens
            .or(spec.spec.limits.max_tokens.as_ref().map(|l| l.value)),
        answers: None,
        resume: None,
        isolation: spec.spec.isolation,
        spec,
        model,
        origin,
        expected_fingerprint: None,
        workspace_from_recording: false,
        fixed_environment: false,
        unreadable: Vec::new(),
        excluded: Vec::new(),
        own_outputs: Default::default(),
        recorded_outputs: None,
        saved_index: None,
    })
}

/// A run's tasks as they ended, and what the artifacts directory's sweep did.
pub(crate) struct Finished {
    pub report: RunReport,
    /// The entries of the artifacts directory drover did not write, removed (or not)
    /// once every task was over; an error when the directory itself cannot be vouched
    /// for. Nothing may be reported from the directory before this is dealt with.
    pub swept: Result<Sweep, ArtifactsError>,
}

/// Run every plan, `jobs` at a time, reports in plan order. Each task runs on its own
/// (a task that errors, even one that panics, ends with its own error report and the
/// others go on); `quiet` leaves only the final per-task lines. When all are over, the
/// artifacts directory is swept of what drover did not write (see `artifacts_ledger`).
pub(crate) async fn run_plans(
    mut plans: Vec<TaskPlan>,
    artifacts: &Path,
    jobs: usize,
    quiet: bool,
    interrupt: task::Interrupt,
) -> Finished {
    settle_outputs(&mut plans, artifacts);
    // Each repository a task edits in place has its index saved now, before any agent
    // can rewrite `.git`: the baselines of later tasks trust only this copy.
    save_indexes(&mut plans);
    // What a drover killed with SIGKILL left in the temp directory goes first: the
    // task folders it staged are published, the rest removed.
    let temp = std::env::temp_dir();
    announce_orphans(&temp);
    let removed = crate::workspace::leftovers::remove_stale_temp_dirs(&temp);
    if !removed.is_empty() {
        crate::esay!(
            "drover: removed {} leftover director{} of killed drover runs from {}",
            removed.len(),
            if removed.len() == 1 { "y" } else { "ies" },
            temp.display()
        );
    }
    // What the artifacts directory holds now, before any agent runs, is all it may hold
    // at the end besides what drover publishes.
    let opened = artifacts_ledger::Ledger::open(artifacts).and_then(|ledger| {
        artifacts_place::holds_no_workspace(&plans, ledger.root()).map(|()| ledger)
    });
    let ledger = match opened {
        Ok(ledger) => Arc::new(ledger),
        Err(error) => {
            let tasks = plans
                .iter()
                .map(|plan| {
                    let mut report = unfinished_report(plan, artifacts);
                    report.message = format!("not started: {error}");
                    report
                })
                .collect();
            return Finished {
                report: RunReport { tasks, shard: None },
                swept: Err(error),
            };
        }
    };
    let exposed = artifacts_place::exposed(&plans, ledger.root());
    // Should a second signal end drover at once, the reports still exist: every task
    // as far as it is known (finished, or interrupted).
    let so_far: Arc<std::sync::Mutex<Vec<TaskReport>>> = Arc::new(std::sync::Mutex::new(
        plans
            .iter()
            .map(|plan| {
                let mut report = unfinished_report(plan, artifacts);
                report.reason = EndReason::Interrupted;
                report.status = EndReason::Interrupted.status();
                report.message = "drover was stopped by a second signal".to_string();
                report
            })
            .collect(),
    ));
    {
        let so_far = Arc::clone(&so_far);
        let artifacts = artifacts.to_path_buf();
        interrupt::on_second_signal(move || {
            let tasks = so_far.lock().unwrap_or_else(|e| e.into_inner()).clone();
            let _ = write_reports(&RunReport { tasks, shard: None }, &artifacts);
        });
    }
    let style = progress::Style::detect(quiet);
    let progress = progress::Progress::new(style, plans.len(), progress::colors_enabled());
    let mut finished: Vec<(usize, TaskReport)> =
        futures::stream::iter(plans.into_iter().enumerate())
            .map(|(index, plan)| {
                let progress = Arc::clone(&progress);
                let artifacts = artifacts.to_path_buf();
                let interrupt = interrupt.clone();
                let so_far = Arc::clone(&so_far);
                let ledger = Arc::clone(&ledger);
                async move {
                    let mut fallback = unfinished_report(&plan, &artifacts);
                    if interrupt.is_cancelled() {
                        // Interrupted before this task's turn came: it never starts.
                        fallback.reason = EndReason::Interrupted;
                        fallback.status = EndReason::Interrupted.status();
                        fallback.message = "not started: drover was interrupted".to_string();
                        progress.task_finished(&fallback);
                        return (index, fallback);
                    }
                    let observer = progress.observer(plan.spec.name());
                    let handle = tokio::spawn(async move {
                        run_task(plan, &artifacts, &ledger, exposed, observer, interrupt).await
                    });
                    let report = match handle.await {
                        Ok(report) => report,
                        Err(error) => {
                            fallback.message = format!("the task's runner failed: {error}");
                            fallback
                        }
                    };
                    progress.task_finished(&report);
                    if let Some(slot) = so_far
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .get_mut(index)
                    {
                        *slot = report.clone();
                    }
                    (index, report)
                }
            })
            // Unordered, so a slow task does not hold the slots of those finished after it.
            .buffer_unordered(jobs.max(1))
            .collect()
            .await;
    progress.finish();
    finished.sort_by_key(|(index, _)| *index);
    Finished {
        report: RunReport {
            tasks: finished.into_iter().map(|(_, report)| report).collect(),
            shard: None,
        },
        swept: interrupt::holding_last_words(|| ledger.sweep()),
    }
}

/// What drover writes in the artifacts directory, and the directories no task's files
/// include, as absolute paths resolved now: before any agent has run, so a symlink an
/// agent plants later at one of them redirects nothing.
pub(super) fn settle_outputs(plans: &mut [TaskPlan], artifacts: &Path) {
    let resolved = |path: &Path| {
        let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        crate::workspace::paths::canonicalize_for_write(&absolute).unwrap_or(absolute)
    };
    let artifacts_dir = resolved(artifacts);
    let own_outputs = task::OwnOutputs {
        artifacts: artifacts_dir.clone(),
        folders: plans
            .iter()
            .map(|plan| artifacts_dir.join(plan.spec.name()))
            .collect(),
        files: RUN_FILES
            .iter()
            .map(|file| artifacts_dir.join(file))
            .collect(),
    };
    for plan in plans {
        plan.own_outputs.clone_from(&own_outputs);
        plan.excluded = plan.excluded.iter().map(|path| resolved(path)).collect();
    }
}

/// Save the index of each repository a task edits in place (see [`IndexSnapshot`]).
pub(super) fn save_indexes(plans: &mut [TaskPlan]) {
    let mut saved: Vec<Arc<IndexSnapshot>> = Vec::new();
    for plan in plans
        .iter_mut()
        .filter(|plan| plan.isolation == Isolation::None)
    {
        let origin = plan
            .origin
            .canonicalize()
            .unwrap_or_else(|_| plan.origin.clone());
        let Some(top) = crate::workspace::baseline::repository_top(&origin) else {
            continue;
        };
        plan.saved_index = match saved.iter().find(|index| index.top() == top) {
            Some(index) => Some(Arc::clone(index)),
            None => IndexSnapshot::take(&origin).map(Arc::new).inspect(|index| {
                saved.push(Arc::clone(index));
            }),
        };
    }
}

/// Publish the task folders killed drovers staged in `temp`, saying so.
pub(crate) fn announce_orphans(temp: &Path) {
    for folder in publish_orphaned_folders(temp) {
        crate::esay!(
            "drover: published {}, which a killed drover had left unpublished in {}",
            folder.display(),
            temp.display()
        );
    }
}

/// Write junit.xml, summary.json and summary.md into the artifacts directory.
///
/// The files are written beneath a handle on the directory and follow no symlink: an
/// agent that planted `summary.md -> ../somewhere` (the directory is often inside its
/// workspace) gets its link replaced, not followed. A directory that became a symlink
/// itself is refused.
pub(crate) fn write_reports(report: &RunReport, artifacts: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(artifacts)?;
    if std::fs::symlink_metadata(artifacts)?
        .file_type()
        .is_symlink()
    {
        return Err(std::io::Error::other(format!(
            "{} is a symlink now (was it planted by an agent?); point --artifacts at a real directory",
            artifacts.display()
        )));
    }
    let root = artifacts.canonicalize()?;
    let roots = crate::workspace::Roots::new(std::slice::from_ref(&root));
    let files = [
        ("junit.xml", junit_xml(report)),
        ("summary.json", summary_json(report)),
        ("summary.md", summary_md(report)),
    ];
    for (name, content) in files {
        let path = root.join(name);
        match roots.symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => roots.remove_file(&path)?,
            // A directory planted at a report's name is emptied (beneath the handle,
            // following no link) and removed: the report takes its place.
            Ok(meta) if meta.file_type().is_dir() => {
                roots.clear_dir(&path)?;
                std::fs::remove_dir(&path)?;
            }
            _ => {}
        }
        roots.write_atomic(&path, content.as_bytes())?;
    }
    Ok(())
}
