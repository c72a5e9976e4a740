//! Planning a run of specs: each spec, with the command line's overrides, becomes a
//! task plan, or every reason it cannot run is said at once, before any task starts.

use std::path::{Path, PathBuf};

use crate::model::remote::RemoteConfig;
use crate::run::recording::Recording;
use crate::spec::{Isolation, LoadedSpec, Position, Provider, SpecError, SpecFile};

use super::conflicts;
use super::plan_error::PlanError;
use super::spec_checks;
use super::spec_rules::rules_naming_nothing;
use super::task_plan::{InstructionsPlan, LoopLimits, Mode, ModelSource, TaskPlan, WorkspacePlan};

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
    /// `--repo-cache` (or `DROVER_REPO_CACHE`): the mirrors `repo:` tasks fetch through.
    pub repo_cache: Option<PathBuf>,
    /// `--repo-checkout auto` (the default): a checkout from the cache may be an overlay.
    pub repo_overlay: bool,
}

/// Turn spec files into runnable plans, or say every reason they cannot run, at once:
/// every problem of every file, file by file in the order given and by line and column
/// within a file, then what keeps the tasks from running together. A file's spec is
/// checked (rules, MCP servers, sub-agents, …) whatever its parser or its own checks
/// found, since those checks read other parts of it; it is planned (workspace, model
/// key) only when nothing but its task name (which another file took) was found, since
/// a plan needs the whole spec right.
pub(crate) fn plan_tasks(
    files: Vec<SpecFile>,
    overrides: &Overrides,
    jobs: usize,
) -> Result<Vec<TaskPlan>, Vec<PlanError>> {
    let mut plans = Vec::new();
    let mut errors = Vec::new();
    for file in files {
        let mut problems = file.errors;
        let mut other = Vec::new();
        // The tasks of a matrix share every part no value reaches: a problem there is
        // said once, not once per task.
        for spec in &file.specs {
            add_once(&mut problems, spec_checks::check_every(spec));
        }
        // A name another file took is no problem of this spec's parts.
        let plannable = problems
            .iter()
            .all(|problem| matches!(problem, SpecError::DuplicateName { .. }));
        for spec in file.specs.into_iter().filter(|_| plannable) {
            match plan_task(spec, overrides) {
                Ok(plan) => plans.push(plan),
                Err(PlanError::Spec { problems: found }) => add_once(&mut problems, found),
                Err(PlanError::Rules(found)) => add_once(&mut problems, vec![found]),
                Err(error) => {
                    if !other
                        .iter()
                        .any(|seen: &PlanError| seen.to_string() == error.to_string())
                    {
                        other.push(error);
                    }
                }
            }
        }
        problems.sort_by_key(|problem| place_in(&file.path, problem));
        errors.extend(problems.into_iter().map(PlanError::Rules));
        errors.extend(other);
    }
    errors.extend(
        conflicts::reserved_names(&plans)
            .into_iter()
            .chain(conflicts::shared_checkouts(&plans))
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

/// `found` added to `problems`, each that is not said there already.
fn add_once(problems: &mut Vec<SpecError>, found: Vec<SpecError>) {
    for problem in found {
        let said = problem.to_string();
        if !problems.iter().any(|seen| seen.to_string() == said) {
            problems.push(problem);
        }
    }
}

/// Where `problem` is in the spec at `path`, to report a file's problems in its order:
/// its line and column; a problem of another file it names (a settings file) after the
/// spec's own.
fn place_in(path: &Path, problem: &SpecError) -> (bool, u64, u64) {
    match problem {
        SpecError::Invalid { position, .. } => {
            (position.path != path, position.line, position.column)
        }
        SpecError::DuplicateName { second, .. } => (false, second.line, second.column),
        SpecError::Io { .. }
        | SpecError::NoSpecs { .. }
        | SpecError::TwoDefaults { .. }
        | SpecError::DefaultsNotATask { .. } => (false, 0, 0),
    }
}

/// Where the turns of a model with these settings come from; for a real provider its
/// key is read now, so a missing one stops the run before any task starts.
fn model_source(
    provider: Provider,
    name: Option<String>,
    model_spec: &crate::spec::ModelSpec,
    spec_path: &Path,
) -> Result<ModelSource, ModelSourceError> {
    match provider {
        Provider::Script => match model_spec.script.clone() {
            Some(turns) => Ok(ModelSource::Script { name, turns }),
            None => Err(ModelSourceError::NoScript),
        },
        Provider::Replay => match &model_spec.transcript {
            Some(transcript) => {
                let base = spec_path.parent().unwrap_or(Path::new("."));
                Recording::read(&base.join(transcript))
                    .map(|recording| ModelSource::Recorded(Box::new(recording)))
                    .map_err(ModelSourceError::Transcript)
            }
            None => Err(ModelSourceError::NoTranscript),
        },
        Provider::Anthropic | Provider::Openai => {
            RemoteConfig::resolve(provider, model_spec, name, |var| std::env::var(var).ok())
                .map(|config| ModelSource::Remote(Box::new(config)))
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
pub(crate) fn plan_task(
    mut spec: LoadedSpec,
    overrides: &Overrides,
) -> Result<TaskPlan, PlanError> {
    if let Some(timeout) = overrides.timeout {
        spec.spec.limits.timeout = Some(timeout);
    }
    let mut errors = Vec::new();
    let limits = loop_limits(&spec, overrides);
    let (model, web_fetch_model) = models(&spec, overrides, &limits, &mut errors);
    let (repo, cloned, origin) = task_origin(&spec, overrides, &mut errors);
    if !cloned {
        errors.extend(workspace_problem(&spec, overrides, &origin));
    }
    let Some(model) = model.filter(|_| errors.is_empty()) else {
        return Err(PlanError::Spec { problems: errors });
    };
    let task_rules = spec_checks::task_rules(&spec)?;
    let (mcp_servers, mut notes) = spec_checks::mcp_servers(&spec)?;
    notes.extend(task_rules.notes);
    let (hooks, hook_notes) = spec_checks::task_hooks(&spec)?;
    notes.extend(hook_notes);
    let output_schema = spec_checks::output_schema(&spec)?;
    let (agents, agent_notes) = spec_checks::task_agents(&spec)?;
    notes.extend(agent_notes);
    let (skills, skill_notes) = spec_checks::task_skills(&spec, &origin)?;
    notes.extend(skill_notes);
    notes.extend(spec_checks::agent_tools_naming_no_server(
        &agents,
        &mcp_servers.keys().map(String::as_str).collect::<Vec<_>>(),
    ));
    notes.extend(rules_naming_nothing(
        &task_rules.rules,
        &agents.keys().map(String::as_str).collect::<Vec<_>>(),
        &skills.keys().map(String::as_str).collect::<Vec<_>>(),
    ));
    if !cloned {
        spec_checks::missing_instructions(&spec, &origin)?;
    }
    notes.extend(spec.spec.network_notes());
    for note in &notes {
        crate::esay!("drover: note: {}: {note}", spec.name());
    }
    Ok(TaskPlan {
        web_fetch_model,
        rules: task_rules.rules,
        borrowed_rules: task_rules.borrowed,
        mcp_servers,
        hooks,
        agents,
        skills,
        instructions: InstructionsPlan::Read(spec_checks::wanted_instructions(&spec)),
        output_schema,
        mcp_vars: crate::mcp::VarSource::Environment,
        limits,
        workspace: WorkspacePlan {
            isolation: spec.spec.isolation(),
            origin,
            excluded: Vec::new(),
            own_outputs: Default::default(),
            saved_index: None,
            at_commit: None,
            repo,
        },
        spec,
        model,
        mode: Mode::Live,
        notes,
    })
}

/// Where the task starts: its clone (`repo:`), whether it has one, and its workspace
/// (`--workspace`, else the clone's `path:` or nothing until the clone is made, else
/// `workspace:`). `--workspace` replaces `repo:` too: the task works there, no clone.
fn task_origin(
    spec: &LoadedSpec,
    overrides: &Overrides,
    errors: &mut Vec<SpecError>,
) -> (Option<crate::workspace::repo::RepoRequest>, bool, PathBuf) {
    if let Some(cache) = &overrides.repo_cache {
        // Every repository's mirror is there: no task of the run may read it.
        crate::workspace::repo::keep_private(cache);
    }
    let repo = match overrides.workspace {
        Some(_) => None,
        None => super::repo_plan::repo_request(
            spec,
            overrides.repo_cache.as_deref(),
            overrides.repo_overlay,
        )
        .map_err(|found| errors.extend(found))
        .ok()
        .flatten(),
    };
    let cloned = spec.spec.repo.is_some() && overrides.workspace.is_none();
    let origin = match (&overrides.workspace, &repo) {
        (Some(dir), _) => dir.clone(),
        (None, Some(request)) => request.path.clone().unwrap_or_default(),
        (None, None) => spec.workspace_dir(),
    };
    (repo, cloned, origin)
}

/// Why the task cannot start from `origin`: not a directory, or no git repository for a
/// worktree; at `workspace:` and `isolation:` (at the top of the spec for
/// `--workspace` or a workspace left out).
fn workspace_problem(spec: &LoadedSpec, overrides: &Overrides, origin: &Path) -> Option<SpecError> {
    let written = spec.spec.workspace.as_ref().map(|w| w.referenced);
    if !origin.is_dir() {
        let fix = if overrides.workspace.is_some() {
            "give --workspace a directory"
        } else {
            "fix `workspace:` (relative to the spec file) or pass --workspace"
        };
        return Some(SpecError::Invalid {
            position: Position::at(
                &spec.path,
                written.filter(|_| overrides.workspace.is_none()),
            ),
            message: format!(
                "the workspace {} is not a directory; {fix}",
                origin.display()
            ),
        });
    }
    let isolation = spec.spec.isolation_spec.as_ref()?;
    if isolation.value != Isolation::Worktree {
        return None;
    }
    let error = crate::workspace::worktree::locate(origin).err()?;
    Some(SpecError::Invalid {
        // `isolation:` may be one the spec inherits from its defaults file.
        position: spec.position(Some(isolation.referenced)),
        message: error.to_string(),
    })
}

/// The loop's limits: the command line's, else the spec's.
fn loop_limits(spec: &LoadedSpec, overrides: &Overrides) -> LoopLimits {
    let limits = &spec.spec.limits;
    LoopLimits {
        max_turns: overrides
            .max_turns
            .or(limits.max_turns.as_ref().map(|l| l.value)),
        max_cost_usd: overrides
            .max_cost_usd
            .or(limits.max_cost_usd.as_ref().map(|l| l.value)),
        max_tokens: overrides
            .max_tokens
            .or(limits.max_tokens.as_ref().map(|l| l.value)),
    }
}

/// The task's model and WebFetch's page model; what keeps either from being set up is
/// added to `errors`, at `model:`, `limits.max_cost_usd` or the page model.
fn models(
    spec: &LoadedSpec,
    overrides: &Overrides,
    limits: &LoopLimits,
    errors: &mut Vec<SpecError>,
) -> (Option<ModelSource>, Option<ModelSource>) {
    // The model and the budget may be the defaults file's.
    let at = |location: Option<serde_saphyr::Location>, message: String| SpecError::Invalid {
        position: spec.position(location),
        message,
    };
    let at_model = Some(spec.spec.model.referenced);
    let model_spec = &spec.spec.model.value;
    let provider = overrides.provider.unwrap_or(model_spec.provider);
    let name = overrides.model.clone().or_else(|| model_spec.name.clone());
    // The spec was checked for a priced budget as written; --provider/--model (or
    // --max-cost-usd) may change that.
    if limits.max_cost_usd.is_some()
        && crate::model::pricing::resolve(
            provider.as_str(),
            name.as_deref().unwrap_or_default(),
            model_spec.pricing.as_ref(),
        )
        .is_none()
    {
        let budget = spec.spec.limits.max_cost_usd.as_ref().map(|l| l.referenced);
        errors.push(at(
            budget.or(at_model),
            format!(
                "limits.max_cost_usd needs the model's price, but drover has no price for model {:?}; add model.pricing",
                name.clone().unwrap_or_default()
            ),
        ));
    }
    let model = model_source(provider, name, model_spec, &spec.path)
        .map_err(|error| errors.push(at(at_model, error.to_string())))
        .ok();
    // The page model of WebFetch: its own provider, never replaced by --provider/--model.
    let page_model = spec
        .spec
        .tools
        .as_ref()
        .and_then(|t| t.value.web_fetch_model());
    let web_fetch_model = page_model.and_then(|page_model| {
        let m = &page_model.value;
        model_source(m.provider, m.name.clone(), m, &spec.path)
            .map_err(|error| {
                errors.push(at(
                    Some(page_model.referenced),
                    format!("tools.web_fetch.model: {error}"),
                ));
            })
            .ok()
    });
    (model, web_fetch_model)
}
