//! `drover report merge`: the artifacts of several runs — the shards of one run, the
//! one-task runs of an orchestrator's pods (`--only`, `--task-index`), a retry of one
//! task — combined into one, so they read like one run: one junit.xml, one summary, and
//! every task's transcript and diff side by side. A task run more than once counts as
//! its latest run (see `attempts`).

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use crate::{RunReport, ShardId};

mod attempts;
mod copy;
mod error;
mod inputs;

use copy::Folder;
pub use error::MergeError;
use inputs::Input;

/// How strict a merge is about what its inputs leave out.
#[derive(Debug, Clone, Copy, Default)]
pub struct MergeOptions {
    /// Merge shards of a run even when some of its shards are not among the inputs
    /// (their tasks are then absent from the report; a warning names them).
    pub partial: bool,
}

/// Read every input (an artifacts directory, or a task folder inside one), keep each
/// task's latest run (the others listed in its `earlier_runs`), refuse incomplete sets
/// of shards unless `options.partial`, and copy (hard link where possible) each kept
/// run's task folder into `out`, which must not exist or be empty. The returned report
/// has the tasks in the order one unsharded run would list them (by spec path, then
/// name), with `artifacts_dir` pointing into `out`. Errors are bad input (exit 2) and
/// say which directory and what to do.
pub fn merge(dirs: &[PathBuf], out: &Path, options: MergeOptions) -> Result<RunReport, MergeError> {
    if std::fs::symlink_metadata(out).is_ok_and(|meta| meta.file_type().is_symlink()) {
        return Err(MergeError::OutIsLink {
            out: out.to_path_buf(),
        });
    }
    let out_key = out.canonicalize().ok();
    let mut seen = HashSet::new();
    let mut inputs = Vec::new();
    for dir in dirs {
        let key = dir.canonicalize().ok();
        if out_key.is_some() && key == out_key {
            return Err(MergeError::OutIsInput {
                out: out.to_path_buf(),
            });
        }
        if !seen.insert(key.unwrap_or_else(|| dir.clone())) {
            return Err(MergeError::InputTwice { input: dir.clone() });
        }
        inputs.push(inputs::read_input(dir)?);
    }
    check_out_is_empty(out)?;
    check_shards(&inputs, options)?;
    std::fs::create_dir_all(out).map_err(|source| MergeError::CreateOut {
        out: out.to_path_buf(),
        source,
    })?;
    let mut merged = RunReport::default();
    for run in attempts::latest_runs(&inputs) {
        let mut task = run.report;
        let to = out.join(&task.name);
        copy_task_folder(&run.input.artifacts, &task.name, &to)?;
        task.artifacts_dir = to;
        merged.tasks.push(task);
    }
    // An unsharded run lists its tasks in spec path order (one task per spec; the sort
    // is stable, so tasks of one spec keep their order).
    merged.tasks.sort_by(|a, b| {
        a.spec_path
            .cmp(&b.spec_path)
            .then_with(|| a.name.cmp(&b.name))
    });
    Ok(merged)
}

/// Copy the folder of task `name` from the artifacts directory `from` to `to`, saying
/// on stderr what was not copied and why.
fn copy_task_folder(artifacts: &Path, name: &str, to: &Path) -> Result<(), MergeError> {
    let from = artifacts.join(name);
    match copy::copy_folder(&from, to) {
        Ok(Folder::Copied(skipped)) => {
            for entry in skipped {
                drover_output::esay!(
                    "drover: warning: {}: {} is {}; not copied into --out (report merge copies regular files and directories only, and follows no link)",
                    from.display(),
                    entry.path.display(),
                    entry.what
                );
            }
        }
        Ok(Folder::Missing) => drover_output::esay!(
            "drover: note: {} has no artifact directory for task {name} (it did not get to write one)",
            artifacts.display(),
        ),
        Ok(Folder::Other(what)) => drover_output::esay!(
            "drover: warning: {} (the folder of task {name}) is {what}, not a directory; not copied into --out",
            from.display(),
        ),
        Err(source) => {
            return Err(MergeError::Copy {
                from,
                to: to.to_path_buf(),
                source,
            });
        }
    }
    Ok(())
}

/// `--out` must be new or empty: task directories left there by an earlier merge (or
/// anything else) would sit beside the merged ones as if they belonged to this run.
fn check_out_is_empty(out: &Path) -> Result<(), MergeError> {
    match std::fs::read_dir(out) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                return Err(MergeError::OutNotEmpty {
                    out: out.to_path_buf(),
                });
            }
            Ok(())
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(MergeError::OutUnusable {
            out: out.to_path_buf(),
            source,
        }),
    }
}

/// When some inputs are shards (their summaries name `--shard K/N`), every one of the N
/// shards of that one N must be among them (a shard run twice, retried, counts once):
/// a shard missing from the merge would otherwise go unnoticed, its tasks simply absent
/// from the report. With `options.partial` a missing shard is a warning instead. Whole
/// runs (no `--shard`: an `--only` retry, a `--task-index` pod) and task folders may
/// join any set.
fn check_shards(inputs: &[Input], options: MergeOptions) -> Result<(), MergeError> {
    let sharded: Vec<(&Path, ShardId)> = inputs
        .iter()
        .filter_map(|input| {
            input
                .summary
                .shard
                .map(|shard| (input.given.as_path(), shard))
        })
        .collect();
    let Some(&(first_dir, first)) = sharded.first() else {
        return Ok(());
    };
    if let Some((dir, other)) = sharded.iter().find(|(_, s)| s.count != first.count) {
        return Err(MergeError::CountsDiffer {
            first_dir: first_dir.to_path_buf(),
            first,
            other_dir: dir.to_path_buf(),
            other: *other,
        });
    }
    let present: BTreeMap<usize, &Path> = sharded
        .iter()
        .map(|(dir, shard)| (shard.index, *dir))
        .collect();
    let missing: Vec<String> = (1..=first.count)
        .filter(|index| !present.contains_key(index))
        .map(|index| format!("{index}/{}", first.count))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    if options.partial {
        drover_output::esay!(
            "drover: warning: --partial: shard{} {} not among the inputs; {} tasks are not in the merged report",
            if missing.len() == 1 { "" } else { "s" },
            missing.join(", "),
            if missing.len() == 1 { "its" } else { "their" }
        );
        return Ok(());
    }
    Err(MergeError::ShardsMissing {
        missing,
        present: present.len(),
        count: first.count,
    })
}

/// The tasks the summary.json in `dir` lists (plain names only); none without one.
pub fn earlier_task_names(dir: &Path) -> Vec<String> {
    inputs::read_summary(dir).map_or_else(
        |_| Vec::new(),
        |summary| summary.tasks.into_iter().map(|task| task.name).collect(),
    )
}

/// A resumed task in the run it belongs to: `report`'s tasks take the place of the
/// same-named ones in the run whose summary.json is in `dir` (its other tasks, and
/// its shard, stay as they were). Without a readable summary there, `report` alone.
pub fn into_earlier_run(report: RunReport, dir: &Path) -> RunReport {
    let Ok(earlier) = inputs::read_summary(dir) else {
        return report;
    };
    let mut tasks = earlier.tasks;
    for task in report.tasks {
        match tasks.iter_mut().find(|earlier| earlier.name == task.name) {
            Some(slot) => *slot = task,
            None => tasks.push(task),
        }
    }
    RunReport {
        tasks,
        shard: earlier.shard,
    }
}

#[cfg(test)]
#[path = "merge_tests.rs"]
mod tests;
