//! Running tasks: planning every task before any starts (so bad input fails fast and
//! nothing half-runs), running them, and writing the run-wide reports.

mod checks;
mod prepare;
mod replay;
mod sandbox;
mod task;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use futures::StreamExt;

pub use prepare::missing_capability;
pub use replay::{ReplayOptions, plan_replay};
pub use task::{ModelSource, TaskPlan, run_task};

use crate::model::remote::RemoteConfig;
use crate::record::junit::junit_xml;
use crate::record::summary::{summary_json, summary_md};
use crate::record::{RunReport, TranscriptReader};
use crate::spec::{Isolation, LoadedSpec, Provider};
use crate::workspace::atomic::write_atomic;

/// Command-line settings that override every spec of a run.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub provider: Option<Provider>,
    pub model: Option<String>,
    pub max_turns: Option<u32>,
    pub workspace: Option<PathBuf>,
}

/// Turn loaded specs into runnable plans, or say (all at once) why they cannot run.
/// Every message names the spec file and what to do.
pub fn plan_tasks(
    specs: Vec<LoadedSpec>,
    overrides: &Overrides,
    jobs: usize,
) -> Result<Vec<TaskPlan>, Vec<String>> {
    let mut plans = Vec::new();
    let mut errors = Vec::new();
    for spec in specs {
        match plan_task(spec, overrides) {
            Ok(plan) => plans.push(plan),
            Err(error) => errors.push(error),
        }
    }
    if jobs > 1 {
        let mut in_place: HashMap<PathBuf, &str> = HashMap::new();
        for plan in plans.iter().filter(|plan| !plan.copy) {
            let key = plan
                .origin
                .canonicalize()
                .unwrap_or_else(|_| plan.origin.clone());
            if let Some(other) = in_place.insert(key, plan.spec.name()) {
                errors.push(format!(
                    "{}: tasks {other} and {} both edit the workspace {} in place (isolation: none) and would run concurrently with --jobs {jobs}; use isolation: copy or --jobs 1",
                    plan.spec.path.display(),
                    plan.spec.name(),
                    plan.origin.display()
                ));
            }
        }
    }
    if errors.is_empty() {
        Ok(plans)
    } else {
        Err(errors)
    }
}

fn plan_task(spec: LoadedSpec, overrides: &Overrides) -> Result<TaskPlan, String> {
    let model_spec = &spec.spec.model.value;
    let provider = overrides.provider.unwrap_or(model_spec.provider);
    if let Some(missing) = prepare::missing_capability(&spec, provider) {
        return Err(missing);
    }
    let name = overrides.model.clone().or_else(|| model_spec.name.clone());
    let model = match provider {
        Provider::Script => {
            let Some(turns) = model_spec.script.clone() else {
                return Err(format!(
                    "{}: --provider script needs the spec to have model.script",
                    spec.path.display()
                ));
            };
            ModelSource::Script { name, turns }
        }
        Provider::Replay => {
            let Some(transcript) = &model_spec.transcript else {
                return Err(format!(
                    "{}: --provider replay needs the spec to have model.transcript",
                    spec.path.display()
                ));
            };
            let base = spec.path.parent().unwrap_or(Path::new("."));
            let events = TranscriptReader::read(&base.join(transcript))
                .map_err(|e| format!("{}: model.transcript: {e}", spec.path.display()))?;
            ModelSource::Replay {
                events,
                expectations: None,
            }
        }
        Provider::Anthropic | Provider::Openai => {
            // The key is read now, so a missing one stops the run before any task starts.
            let config =
                RemoteConfig::resolve(provider, model_spec, name, |var| std::env::var(var).ok())
                    .map_err(|e| format!("{}: {e}", spec.path.display()))?;
            ModelSource::Remote(Box::new(config))
        }
    };
    let origin = overrides
        .workspace
        .clone()
        .unwrap_or_else(|| spec.workspace_dir());
    if !origin.is_dir() {
        return Err(format!(
            "{}: the workspace {} is not a directory; fix `workspace:` (relative to the spec file) or pass --workspace",
            spec.path.display(),
            origin.display()
        ));
    }
    Ok(TaskPlan {
        max_turns: overrides.max_turns.or(spec.spec.limits.max_turns),
        copy: spec.spec.isolation == Isolation::Copy,
        spec,
        model,
        origin,
        expected_fingerprint: None,
    })
}

/// Run every plan, `jobs` at a time, reports in plan order.
pub async fn run_plans(plans: Vec<TaskPlan>, artifacts: &Path, jobs: usize) -> RunReport {
    let tasks = futures::stream::iter(plans)
        .map(|plan| async move {
            let report = run_task(plan, artifacts).await;
            print_task_line(&report);
            report
        })
        .buffered(jobs.max(1))
        .collect()
        .await;
    RunReport { tasks }
}

fn print_task_line(report: &crate::record::TaskReport) {
    println!(
        "drover: {} {} ({}: {}) — {} turns, {} denied calls, {} files changed — {}",
        report.name,
        match report.status {
            crate::record::Status::Passed => "passed",
            crate::record::Status::Failed => "FAILED",
            crate::record::Status::Error => "ERROR",
        },
        report.reason.as_str(),
        report.message,
        report.turns,
        report.denials.len(),
        report.files_changed.len(),
        report.artifacts_dir.display()
    );
}

/// Write junit.xml, summary.json and summary.md into the artifacts directory.
pub fn write_reports(report: &RunReport, artifacts: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(artifacts)?;
    write_atomic(&artifacts.join("junit.xml"), junit_xml(report).as_bytes())?;
    write_atomic(
        &artifacts.join("summary.json"),
        summary_json(report).as_bytes(),
    )?;
    write_atomic(&artifacts.join("summary.md"), summary_md(report).as_bytes())?;
    Ok(())
}
