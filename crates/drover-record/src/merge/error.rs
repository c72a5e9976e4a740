//! Why artifacts cannot be merged.

use std::path::PathBuf;

use crate::ShardId;

/// Why artifacts cannot be merged (bad input, exit 2); each names the directory and
/// says what to do.
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
        "{} is given twice; name each artifacts directory or task folder once (a retried task's runs are separate directories)",
        input.display()
    )]
    InputTwice { input: PathBuf },
    #[error(
        "{} is a folder without a summary.json, and {} lists no task of its name; pass a `drover run --artifacts` directory or a task folder inside one",
        folder.display(),
        summary.display()
    )]
    NotATaskFolder { folder: PathBuf, summary: PathBuf },
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
        "shard{} {} {} missing: the inputs hold {present} of the {count} shards; pass every shard's artifacts directory (did a shard job fail before uploading?), or --partial to merge what is there",
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
        "cannot read {}: {source}; pass the --artifacts directories of `drover run`, or task folders inside them",
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
