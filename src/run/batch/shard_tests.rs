// Test-only module: its parent includes it under #[cfg(test)].
use std::collections::HashMap;

use super::*;

fn no_env(_: &str) -> Option<String> {
    None
}

fn names(count: usize) -> Vec<String> {
    (0..count).map(|i| format!("task-{i:03}")).collect()
}

#[test]
fn k_of_n_parses_and_bad_values_are_refused() {
    assert_eq!(
        Shard::parse("2/3", &no_env),
        Ok(Shard { index: 2, count: 3 })
    );
    assert_eq!(
        Shard::parse("1/1", &no_env),
        Ok(Shard { index: 1, count: 1 })
    );
    for bad in [
        "0/3", "4/3", "1/0", "3", "a/b", "1/2/3", "-1/2", "", "/", "2/",
    ] {
        let error = Shard::parse(bad, &no_env).unwrap_err().to_string();
        assert!(error.contains("expected K/N"), "{bad}: {error}");
    }
    assert_eq!(Shard { index: 2, count: 5 }.to_string(), "2/5");
}

#[test]
fn auto_reads_the_indexed_job_variables() {
    let env = |vars: &'static [(&'static str, &'static str)]| {
        move |name: &str| {
            vars.iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| (*value).to_string())
        }
    };
    let shard = Shard::parse(
        "auto",
        &env(&[("JOB_COMPLETION_INDEX", "0"), ("DROVER_SHARD_COUNT", "4")]),
    );
    assert_eq!(shard, Ok(Shard { index: 1, count: 4 }));
    let shard = Shard::parse(
        "auto",
        &env(&[("JOB_COMPLETION_INDEX", "2"), ("JOB_COMPLETIONS", "3")]),
    );
    assert_eq!(shard, Ok(Shard { index: 3, count: 3 }));
    // DROVER_SHARD_COUNT wins over JOB_COMPLETIONS.
    let shard = Shard::parse(
        "auto",
        &env(&[
            ("JOB_COMPLETION_INDEX", "1"),
            ("JOB_COMPLETIONS", "9"),
            ("DROVER_SHARD_COUNT", "2"),
        ]),
    );
    assert_eq!(shard, Ok(Shard { index: 2, count: 2 }));

    let error = Shard::parse("auto", &no_env).unwrap_err().to_string();
    assert!(error.contains("JOB_COMPLETION_INDEX is not set"), "{error}");
    let error = Shard::parse("auto", &env(&[("JOB_COMPLETION_INDEX", "0")]))
        .unwrap_err()
        .to_string();
    assert!(error.contains("set DROVER_SHARD_COUNT"), "{error}");
    let error = Shard::parse(
        "auto",
        &env(&[("JOB_COMPLETION_INDEX", "3"), ("DROVER_SHARD_COUNT", "3")]),
    )
    .unwrap_err()
    .to_string();
    assert!(
        error.contains("must be below DROVER_SHARD_COUNT=3"),
        "{error}"
    );
    let error = Shard::parse(
        "auto",
        &env(&[("JOB_COMPLETION_INDEX", "x"), ("DROVER_SHARD_COUNT", "3")]),
    )
    .unwrap_err()
    .to_string();
    assert!(error.contains("not a whole number"), "{error}");
}

#[test]
fn shards_together_cover_every_task_once_and_are_balanced() {
    for total in [0, 1, 2, 5, 9, 10, 37, 100] {
        let all = names(total);
        for count in 1..=12 {
            let mut seen: HashMap<String, usize> = HashMap::new();
            let mut sizes = Vec::new();
            for index in 1..=count {
                let share = Shard { index, count }.select(all.clone(), |name| name.as_str());
                sizes.push(share.len());
                for name in share {
                    *seen.entry(name).or_default() += 1;
                }
            }
            assert_eq!(seen.len(), total, "{total} tasks, {count} shards");
            assert!(seen.values().all(|&times| times == 1));
            let (min, max) = (sizes.iter().min(), sizes.iter().max());
            assert_eq!(min, Some(&(total / count)), "{total}/{count}: {sizes:?}");
            assert_eq!(
                max,
                Some(&total.div_ceil(count)),
                "{total}/{count}: {sizes:?}"
            );
        }
    }
}

#[test]
fn selection_keeps_the_original_order_and_is_deterministic() {
    let all = names(20);
    let first = Shard { index: 2, count: 3 }.select(all.clone(), |name| name.as_str());
    let again = Shard { index: 2, count: 3 }.select(all.clone(), |name| name.as_str());
    assert_eq!(first, again);
    let mut sorted = first.clone();
    sorted.sort();
    assert_eq!(first, sorted, "plan order is kept");
}

#[test]
fn the_assignment_is_stable_across_machines_and_versions() {
    // Written down once: if this changes, shards of one run on machines with different
    // drover versions would overlap or miss tasks.
    let names = [
        "fix-add",
        "fix-sub",
        "refactor-io",
        "docs-typos",
        "bump-deps",
        "lint",
        "rename-api",
        "split-module",
        "add-tests",
    ];
    assert_eq!(assign(&names, 3), vec![1, 1, 1, 2, 3, 3, 2, 3, 2]);
    assert_eq!(assign(&names, 1), vec![1; 9]);
}
