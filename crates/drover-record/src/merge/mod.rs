//! `drover report merge`: the artifacts of sharded runs (each machine's `--artifacts`
//! directory) combined into one, so a sharded run reads like one run — one junit.xml,
//! one summary — and every task's transcript and diff sit side by side.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use serde::Deserialize;

use crate::{RunReport, ShardId, TaskReport};

mod copy;

use copy::Folder;

/// The part of `summary.json` a merge needs (other fields are recomputed).
#[derive(Deserialize)]
struct SummaryFile {
    tasks: Vec<TaskReport>,
    /// Which shard the run was; absent in summaries older than it and null for a run
    /// without `--shard`.
    #[serde(default)]
    shard: Option<ShardId>,
}

/// Why shards' artifacts cannot be merged (bad input, exit 2); each names the directory
/// and says what to do.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("--out {} is also an input; merge into a new directory", out.display())]
    OutIsInput { out: PathBuf },
    #[error(
        "--out {} is a symbolic link; merge into a new directory of its own (the merged artifacts would be written where the link points)",
        out.display()
    )]
    OutIsLink { out: PathBuf },
    #[error(
        "task {task:?} is in both {} and {}; each task must come from one shard (were the same shards merged twice, or different --shard counts used?)",
        first.display(),
        second.display()
    )]
    TaskTwice {
        task: String,
        first: PathBuf,
        second: PathBuf,
    },
    #[error("cannot create {}: {source}", out.display())]
    CreateOut {
        out: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot copy {} to {}: {source}", from.display(), to.display())]
    Copy {
        from: PathBuf,
        to: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "--out {} is not empty; merge into a new or empty directory (remove what an earlier merge left there)",
        out.display()
    )]
    OutNotEmpty { out: PathBuf },
    #[error(
        "--out {} cannot be used: {source}; merge into a new or empty directory",
        out.display()
    )]
    OutUnusable {
        out: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{} is a whole run (no --shard) but {} is shard {}/{}; merge either the shards of one run or whole runs",
        whole.display(),
        shard_dir.display(),
        shard.index,
        shard.count
    )]
    WholeAmongShards {
        whole: PathBuf,
        shard_dir: PathBuf,
        shard: ShardId,
    },
    #[error(
        "the inputs are shards of different counts: {} is shard {}/{}, {} is shard {}/{}; merge the shards of one run",
        first_dir.display(),
        first.index,
        first.count,
        other_dir.display(),
        other.index,
        other.count
    )]
    CountsDiffer {
        first_dir: PathBuf,
        first: ShardId,
        other_dir: PathBuf,
        other: ShardId,
    },
    #[error(
        "shard {}/{} is in both {} and {}; each shard must be merged once",
        shard.index,
        shard.count,
        first.display(),
        second.display()
    )]
    ShardTwice {
        shard: ShardId,
        first: PathBuf,
        second: PathBuf,
    },
    #[error(
        "shard{} {} {} missing: the inputs hold {present} of the {count} shards; pass every shard's artifacts directory (did a shard job fail before uploading?)",
        if missing.len() == 1 { "" } else { "s" },
        missing.join(", "),
        if missing.len() == 1 { "is" } else { "are" }
    )]
    ShardsMissing {
        missing: Vec<String>,
        present: usize,
        count: usize,
    },
    #[error(
        "cannot read {}: {source}; pass the --artifacts directories of `drover run`",
        path.display()
    )]
    UnreadableSummary {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{} is {what}, not a file; report merge follows no link out of its inputs: pass the --artifacts directories of `drover run`",
        path.display()
    )]
    SummaryNotAFile { path: PathBuf, what: &'static str },
    #[error("{}: not a drover summary.json: {source}", path.display())]
    NotASummary {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("{}: task name {task:?} is not a valid task name", path.display())]
    BadTaskName { path: PathBuf, task: String },
}

/// Read every directory's `summary.json`, refuse task names seen twice and incomplete
/// sets of shards, and copy (hard link where possible) each task's artifact directory
/// into `out`, which must not exist or be empty. The returned report has the tasks in the
/// order one unsharded run would list them (by spec path, then name), with
/// `artifacts_dir` pointing into `out`. Errors are bad input (exit 2) and say which
/// directory and what to do.
pub fn merge(dirs: &[PathBuf], out: &Path) -> Result<RunReport, MergeError> {
    if std::fs::symlink_metadata(out).is_ok_and(|meta| meta.file_type().is_symlink()) {
        return Err(MergeError::OutIsLink {
            out: out.to_path_buf(),
        });
    }
    let out_key = out.canonicalize().ok();
    let mut inputs = Vec::new();
    for dir in dirs {
        if out_key.is_some() && dir.canonicalize().ok() == out_key {
            return Err(MergeError::OutIsInput {
                out: out.to_path_buf(),
            });
        }
        inputs.push((dir, read_summary(dir)?));
    }
    check_out_is_empty(out)?;
    let mut seen: HashMap<&str, &Path> = HashMap::new();
    for (dir, summary) in &inputs {
        for task in &summary.tasks {
            if let Some(first) = seen.insert(task.name.as_str(), dir.as_path()) {
                return Err(MergeError::TaskTwice {
                    task: task.name.clone(),
                    first: first.to_path_buf(),
                    second: dir.to_path_buf(),
                });
            }
        }
    }
    check_shards(&inputs)?;
    std::fs::create_dir_all(out).map_err(|source| MergeError::CreateOut {
        out: out.to_path_buf(),
        source,
    })?;
    let mut merged = RunReport::default();
    for (dir, summary) in inputs {
        for mut task in summary.tasks {
            let from = dir.join(&task.name);
            let to = out.join(&task.name);
            match copy::copy_folder(&from, &to) {
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
                    "drover: note: {} has no artifact directory for task {} (it did not get to write one)",
                    dir.display(),
                    task.name
                ),
                Ok(Folder::Other(what)) => drover_output::esay!(
                    "drover: warning: {} (the folder of task {}) is {what}, not a directory; not copied into --out",
                    from.display(),
                    task.name
                ),
                Err(source) => return Err(MergeError::Copy { from, to, source }),
            }
            task.artifacts_dir = to;
            merged.tasks.push(task);
        }
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

/// When the inputs are shards (their summaries name `--shard K/N`), they must be all N
/// shards of one N, each once: a shard missing from the merge would otherwise go unnoticed,
/// its tasks simply absent from the report. Inputs that are all whole runs are not checked.
fn check_shards(inputs: &[(&PathBuf, SummaryFile)]) -> Result<(), MergeError> {
    let sharded: Vec<(&Path, ShardId)> = inputs
        .iter()
        .filter_map(|(dir, summary)| summary.shard.map(|shard| (dir.as_path(), shard)))
        .collect();
    let Some(&(first_dir, first)) = sharded.first() else {
        return Ok(());
    };
    if let Some((dir, _)) = inputs.iter().find(|(_, summary)| summary.shard.is_none()) {
        return Err(MergeError::WholeAmongShards {
            whole: dir.to_path_buf(),
            shard_dir: first_dir.to_path_buf(),
            shard: first,
        });
    }
    if let Some((dir, other)) = sharded.iter().find(|(_, s)| s.count != first.count) {
        return Err(MergeError::CountsDiffer {
            first_dir: first_dir.to_path_buf(),
            first,
            other_dir: dir.to_path_buf(),
            other: *other,
        });
    }
    let mut by_index: BTreeMap<usize, &Path> = BTreeMap::new();
    for (dir, shard) in &sharded {
        if let Some(earlier) = by_index.insert(shard.index, dir) {
            return Err(MergeError::ShardTwice {
                shard: *shard,
                first: earlier.to_path_buf(),
                second: dir.to_path_buf(),
            });
        }
    }
    let missing: Vec<String> = (1..=first.count)
        .filter(|index| !by_index.contains_key(index))
        .map(|index| format!("{index}/{}", first.count))
        .collect();
    if !missing.is_empty() {
        return Err(MergeError::ShardsMissing {
            missing,
            present: by_index.len(),
            count: first.count,
        });
    }
    Ok(())
}

/// The tasks the summary.json in `dir` lists (plain names only); none without one.
pub fn earlier_task_names(dir: &Path) -> Vec<String> {
    read_summary(dir).map_or_else(
        |_| Vec::new(),
        |summary| summary.tasks.into_iter().map(|task| task.name).collect(),
    )
}

/// A resumed task in the run it belongs to: `report`'s tasks take the place of the
/// same-named ones in the run whose summary.json is in `dir` (its other tasks, and
/// its shard, stay as they were). Without a readable summary there, `report` alone.
pub fn into_earlier_run(report: RunReport, dir: &Path) -> RunReport {
    let Ok(earlier) = read_summary(dir) else {
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

/// The summary of one shard's artifacts directory: a regular file, read without
/// following a symbolic link (it could point at any file drover can read).
fn read_summary(dir: &Path) -> Result<SummaryFile, MergeError> {
    let path = dir.join("summary.json");
    let unreadable = |source: std::io::Error| MergeError::UnreadableSummary {
        path: path.clone(),
        source,
    };
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let file = match rustix::fs::open(&path, flags, Mode::empty()) {
        Ok(fd) => std::fs::File::from(fd),
        Err(Errno::LOOP) => {
            return Err(MergeError::SummaryNotAFile {
                path,
                what: "a symbolic link",
            });
        }
        Err(errno) => return Err(unreadable(errno.into())),
    };
    let kind = file.metadata().map_err(unreadable)?.file_type();
    if !kind.is_file() {
        let what = if kind.is_dir() {
            "a directory"
        } else {
            "a FIFO, socket or device"
        };
        return Err(MergeError::SummaryNotAFile { path, what });
    }
    let mut text = String::new();
    std::io::Read::read_to_string(&mut &file, &mut text).map_err(unreadable)?;
    let mut summary: SummaryFile =
        serde_json::from_str(&text).map_err(|source| MergeError::NotASummary {
            path: path.clone(),
            source,
        })?;
    // A status its reason contradicts (`passed` with `checks_failed`) is read as the
    // worse of the two: an edited summary cannot turn a failure into a pass.
    for task in &mut summary.tasks {
        task.status = task.status.max(task.reason.status());
    }
    // A task directory outside the input could be anything; names are checked at load.
    if let Some(task) = summary.tasks.iter().find(|task| !is_plain_name(&task.name)) {
        return Err(MergeError::BadTaskName {
            path,
            task: task.name.clone(),
        });
    }
    Ok(summary)
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

#[cfg(test)]
#[path = "merge_tests.rs"]
mod tests;
