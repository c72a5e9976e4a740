//! Splitting a run's tasks across machines (`--shard K/N`): every machine loads the same
//! specs and picks its share by a stable hash of the task names, so N machines that know
//! only K and N together run every task exactly once, with no coordinator.
//!
//! The assignment: sort the tasks by (sha256 of the name, name) and deal them round-robin
//! to shards 1..=N. Each shard gets ⌊n/N⌋ or ⌈n/N⌉ tasks, and a task's shard depends only
//! on the set of names (sha256 is the same on every machine and Rust version, unlike
//! `DefaultHasher`).

use sha2::{Digest, Sha256};

/// The environment variable holding the number of shards for `--shard auto`.
pub(crate) const SHARD_COUNT_VAR: &str = "DROVER_SHARD_COUNT";
/// Kubernetes sets this in every pod of an Indexed Job: the pod's 0-based index.
pub(crate) const COMPLETION_INDEX_VAR: &str = "JOB_COMPLETION_INDEX";
/// Accepted as the shard count when `DROVER_SHARD_COUNT` is not set.
pub(crate) const COMPLETIONS_VAR: &str = "JOB_COMPLETIONS";

/// One shard of N: `index` is 1-based, as on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Shard {
    pub index: usize,
    pub count: usize,
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// A `--shard` that cannot be used; each says what to pass instead.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ShardError {
    #[error("--shard {text:?}: expected K/N with 1 <= K <= N (e.g. 2/4), or auto")]
    Usage { text: String },
    #[error(
        "--shard auto: {COMPLETION_INDEX_VAR} is not set; it is set by a Kubernetes Indexed Job (completionMode: Indexed) — elsewhere pass --shard K/N"
    )]
    NoIndex,
    #[error(
        "--shard auto: set {SHARD_COUNT_VAR} to the number of shards (the Job's spec.completions)"
    )]
    NoCount,
    #[error("--shard auto: {variable}={value:?} is not a whole number")]
    NotWhole {
        variable: &'static str,
        value: String,
    },
    #[error("--shard auto: {COMPLETION_INDEX_VAR}={index} must be below {count_variable}={count}")]
    IndexTooLarge {
        index: usize,
        count_variable: &'static str,
        count: usize,
    },
}

impl Shard {
    /// Parse `--shard`: `K/N` with 1 ≤ K ≤ N, or `auto` (read from the environment with
    /// `env`, which is `std::env::var` outside tests).
    pub(crate) fn parse(
        text: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Shard, ShardError> {
        if text.trim() == "auto" {
            return Shard::from_env(env);
        }
        let usage = || ShardError::Usage {
            text: text.to_string(),
        };
        let (k, n) = text.split_once('/').ok_or_else(usage)?;
        let index: usize = k.trim().parse().map_err(|_| usage())?;
        let count: usize = n.trim().parse().map_err(|_| usage())?;
        if index == 0 || count == 0 || index > count {
            return Err(usage());
        }
        Ok(Shard { index, count })
    }

    /// `--shard auto`: a Kubernetes Indexed Job's pod index (`JOB_COMPLETION_INDEX`,
    /// 0-based) and the number of shards (`DROVER_SHARD_COUNT`, else `JOB_COMPLETIONS`).
    pub(crate) fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Result<Shard, ShardError> {
        let get = |name: &str| env(name).filter(|value| !value.trim().is_empty());
        let Some(index) = get(COMPLETION_INDEX_VAR) else {
            return Err(ShardError::NoIndex);
        };
        let Some((count_var, count)) = get(SHARD_COUNT_VAR)
            .map(|count| (SHARD_COUNT_VAR, count))
            .or_else(|| get(COMPLETIONS_VAR).map(|count| (COMPLETIONS_VAR, count)))
        else {
            return Err(ShardError::NoCount);
        };
        let index: usize = index.trim().parse().map_err(|_| ShardError::NotWhole {
            variable: COMPLETION_INDEX_VAR,
            value: index.clone(),
        })?;
        let count: usize = count.trim().parse().map_err(|_| ShardError::NotWhole {
            variable: count_var,
            value: count.clone(),
        })?;
        if count == 0 || index >= count {
            return Err(ShardError::IndexTooLarge {
                index,
                count_variable: count_var,
                count,
            });
        }
        Ok(Shard {
            index: index + 1,
            count,
        })
    }

    /// The items of this shard, in their original order. `name` gives each item's task
    /// name; names are unique within a run.
    pub(crate) fn select<T>(&self, items: Vec<T>, name: impl Fn(&T) -> &str) -> Vec<T> {
        let shards = assign(&items.iter().map(&name).collect::<Vec<_>>(), self.count);
        items
            .into_iter()
            .zip(shards)
            .filter(|(_, shard)| *shard == self.index)
            .map(|(item, _)| item)
            .collect()
    }
}

/// The 1-based shard of each name (same order as `names`) when split `count` ways.
pub(crate) fn assign(names: &[&str], count: usize) -> Vec<usize> {
    let count = count.max(1);
    let mut order: Vec<([u8; 32], &str, usize)> = names
        .iter()
        .enumerate()
        .map(|(position, name)| (Sha256::digest(name.as_bytes()).into(), *name, position))
        .collect();
    order.sort();
    let mut shards = vec![0; names.len()];
    for (rank, (_, _, position)) in order.into_iter().enumerate() {
        shards[position] = rank % count + 1;
    }
    shards
}

#[cfg(test)]
#[path = "shard_tests.rs"]
mod tests;
