//! A task run more than once among a merge's inputs (a retried pod, a re-run shard, an
//! `--only` run after a failure): the latest run is the task's report, and the others
//! are listed in it as `earlier_runs`, so the report says how many attempts there were
//! and how the earlier ones ended.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::SystemTime;

use super::inputs::Input;
use crate::{EarlierRun, TaskReport};

/// One run of a task, and the input it came from.
pub(super) struct Run<'a> {
    pub report: TaskReport,
    pub input: &'a Input,
    /// The input's position among the arguments: the later of two runs that started at
    /// the same time (or say nothing of when) is the later argument.
    position: usize,
}

/// Every task of `inputs` once: its latest run, whose `earlier_runs` list the others,
/// with those an input had already merged, earliest first.
pub(super) fn latest_runs(inputs: &[Input]) -> Vec<Run<'_>> {
    let mut by_name: BTreeMap<String, Vec<Run<'_>>> = BTreeMap::new();
    for (position, input) in inputs.iter().enumerate() {
        for report in &input.summary.tasks {
            by_name.entry(report.name.clone()).or_default().push(Run {
                report: report.clone(),
                input,
                position,
            });
        }
    }
    by_name
        .into_values()
        .filter_map(|mut runs| {
            runs.sort_by_key(|run| (started(&run.report), run.position));
            let mut latest = runs.pop()?;
            let mut earlier: Vec<EarlierRun> = Vec::new();
            for run in runs {
                earlier.extend(run.report.earlier_runs.iter().cloned());
                earlier.push(earlier_run(&run.report, &run.input.given));
            }
            earlier.append(&mut latest.report.earlier_runs);
            earlier.sort_by_key(|run| parse_time(run.started_at.as_deref()));
            latest.report.earlier_runs = earlier;
            Some(latest)
        })
        .collect()
}

/// When the run started; None (earliest) for a summary that does not say or a time
/// that does not parse.
fn started(report: &TaskReport) -> Option<SystemTime> {
    parse_time(report.started_at.as_deref())
}

fn parse_time(at: Option<&str>) -> Option<SystemTime> {
    at.and_then(|at| humantime::parse_rfc3339_weak(at).ok())
}

fn earlier_run(report: &TaskReport, from: &Path) -> EarlierRun {
    EarlierRun {
        status: report.status,
        reason: report.reason,
        message: report.message.clone(),
        started_at: report.started_at.clone(),
        from: from.to_path_buf(),
    }
}
