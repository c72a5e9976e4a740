//! `drover report merge`: the artifacts of sharded runs (each machine's `--artifacts`
//! directory) combined into one, so a sharded run reads like one run — one junit.xml,
//! one summary — and every task's transcript and diff sit side by side.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::record::{RunReport, TaskReport};

/// The part of `summary.json` a merge needs (other fields are recomputed).
#[derive(Deserialize)]
struct SummaryFile {
    tasks: Vec<TaskReport>,
}

/// Read every directory's `summary.json`, refuse task names seen twice, and copy (hard
/// link where possible) each task's artifact directory into `out`. The returned report
/// has the tasks of all inputs in input order, with `artifacts_dir` pointing into `out`.
/// Errors are bad input (exit 2) and say which directory and what to do.
pub fn merge(dirs: &[PathBuf], out: &Path) -> Result<RunReport, String> {
    let out_key = out.canonicalize().ok();
    let mut inputs = Vec::new();
    for dir in dirs {
        if out_key.is_some() && dir.canonicalize().ok() == out_key {
            return Err(format!(
                "--out {} is also an input; merge into a new directory",
                out.display()
            ));
        }
        inputs.push((dir, read_summary(dir)?));
    }
    let mut seen: HashMap<&str, &Path> = HashMap::new();
    for (dir, tasks) in &inputs {
        for task in tasks {
            if let Some(first) = seen.insert(task.name.as_str(), dir.as_path()) {
                return Err(format!(
                    "task {:?} is in both {} and {}; each task must come from one shard (were the same shards merged twice, or different --shard counts used?)",
                    task.name,
                    first.display(),
                    dir.display()
                ));
            }
        }
    }
    std::fs::create_dir_all(out)
        .map_err(|error| format!("cannot create {}: {error}", out.display()))?;
    let mut merged = RunReport::default();
    for (dir, tasks) in inputs {
        for mut task in tasks {
            let from = dir.join(&task.name);
            let to = out.join(&task.name);
            if from.is_dir() {
                copy_tree(&from, &to).map_err(|error| {
                    format!(
                        "cannot copy {} to {}: {error}",
                        from.display(),
                        to.display()
                    )
                })?;
            } else {
                eprintln!(
                    "drover: note: {} has no artifact directory for task {} (it did not get to write one)",
                    dir.display(),
                    task.name
                );
            }
            task.artifacts_dir = to;
            merged.tasks.push(task);
        }
    }
    Ok(merged)
}

/// The task reports of one shard's artifacts directory.
fn read_summary(dir: &Path) -> Result<Vec<TaskReport>, String> {
    let path = dir.join("summary.json");
    let text = std::fs::read_to_string(&path).map_err(|error| {
        format!(
            "cannot read {}: {error}; pass the --artifacts directories of `drover run`",
            path.display()
        )
    })?;
    let summary: SummaryFile = serde_json::from_str(&text)
        .map_err(|error| format!("{}: not a drover summary.json: {error}", path.display()))?;
    // A task directory outside the input could be anything; names are checked at load.
    if let Some(task) = summary.tasks.iter().find(|task| !is_plain_name(&task.name)) {
        return Err(format!(
            "{}: task name {:?} is not a valid task name",
            path.display(),
            task.name
        ));
    }
    Ok(summary.tasks)
}

/// Task names as specs allow them (`[A-Za-z0-9._-]`, not `.`/`..`): safe as one path part.
fn is_plain_name(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// Copy a directory tree, hard-linking files when the file system allows (artifacts are
/// written once and never changed, so sharing them is safe). Symlinks are not followed.
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_file() {
            if target.exists() {
                std::fs::remove_file(&target)?;
            }
            if std::fs::hard_link(entry.path(), &target).is_err() {
                std::fs::copy(entry.path(), &target)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
