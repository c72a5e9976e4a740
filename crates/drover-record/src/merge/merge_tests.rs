// Test-only module: its parent includes it under #[cfg(test)].
use super::*;

/// A merge that refuses incomplete shard sets, as `report merge` does by default.
fn merge_all(dirs: &[PathBuf], out: &Path) -> Result<RunReport, MergeError> {
    merge(dirs, out, MergeOptions::default())
}
use crate::junit::tests::sample_run;
use crate::summary::summary_json;
use crate::{EndReason, Status, TaskReport};

/// A whole run's artifacts directory holding the given tasks, each with a transcript.
fn shard(root: &Path, name: &str, tasks: Vec<TaskReport>) -> PathBuf {
    artifacts(root, name, tasks, None)
}

/// The artifacts directory of `--shard index/count`.
fn shard_of(
    root: &Path,
    name: &str,
    tasks: Vec<TaskReport>,
    index: usize,
    count: usize,
) -> PathBuf {
    artifacts(root, name, tasks, Some(ShardId { index, count }))
}

fn artifacts(root: &Path, name: &str, tasks: Vec<TaskReport>, shard: Option<ShardId>) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    for task in &tasks {
        std::fs::create_dir_all(dir.join(&task.name).join("nested")).unwrap();
        std::fs::write(dir.join(&task.name).join("transcript.jsonl"), &task.name).unwrap();
        std::fs::write(dir.join(&task.name).join("nested/x"), "x").unwrap();
    }
    std::fs::write(
        dir.join("summary.json"),
        summary_json(&RunReport { tasks, shard }, "0.1.0"),
    )
    .unwrap();
    dir
}

#[test]
fn shards_merge_into_one_report_with_their_artifacts() {
    let root = tempfile::tempdir().unwrap();
    let mut tasks = sample_run().tasks;
    let second = tasks.split_off(2);
    let a = shard(root.path(), "a", tasks);
    let b = shard(root.path(), "b", second);
    let empty = shard(root.path(), "empty", Vec::new());
    let out = root.path().join("merged");
    let merged = merge_all(&[a, empty, b], &out).unwrap();
    let names: Vec<&str> = merged.tasks.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["fix-add", "refactor", "lint", "offline"]);
    assert_eq!(merged.status(), Status::Error);
    for task in &merged.tasks {
        assert_eq!(task.artifacts_dir, out.join(&task.name));
        let transcript = std::fs::read_to_string(out.join(&task.name).join("transcript.jsonl"));
        assert_eq!(transcript.unwrap(), task.name);
        assert!(out.join(&task.name).join("nested/x").is_file());
    }
    // Everything but where the artifacts are is as the shards reported it.
    let mut expected = sample_run();
    for task in &mut expected.tasks {
        task.artifacts_dir = out.join(&task.name);
    }
    assert_eq!(merged, expected);
}

#[test]
fn the_worst_status_decides() {
    let run = sample_run();
    let pick = |indices: &[usize]| RunReport {
        tasks: indices.iter().map(|&i| run.tasks[i].clone()).collect(),
        shard: None,
    };
    assert_eq!(pick(&[]).status().exit_code(), 0);
    assert_eq!(pick(&[0]).status().exit_code(), 0);
    assert_eq!(pick(&[0, 1]).status().exit_code(), 1);
    assert_eq!(pick(&[3, 0, 1]).status().exit_code(), 3);
    assert_eq!(pick(&[1, 3]).status().exit_code(), 3);
}

/// `task` as a run of it that started at `at` and ended for `reason`.
fn run_at(task: &TaskReport, at: &str, reason: EndReason) -> TaskReport {
    TaskReport {
        started_at: Some(at.to_string()),
        reason,
        status: reason.status(),
        message: format!("ended {}", reason.as_str()),
        ..task.clone()
    }
}

#[test]
fn a_task_run_more_than_once_counts_as_its_latest_run_and_says_how_many() {
    let root = tempfile::tempdir().unwrap();
    let tasks = sample_run().tasks;
    let refactor = &tasks[1];
    // The pods of an orchestrator: the first attempt failed at the provider, the retry
    // passed; the folder of the retry is given first, so order of arguments is not time.
    let first = run_at(
        refactor,
        "2026-11-28T01:00:00.000Z",
        EndReason::ProviderError,
    );
    let retry = run_at(refactor, "2026-11-28T01:05:00.000Z", EndReason::EndTurn);
    let pod_retry = shard(root.path(), "pod-1-retry", vec![retry.clone()]);
    let pod = shard(root.path(), "pod-1", vec![first.clone()]);
    let other = shard(root.path(), "pod-0", tasks[..1].to_vec());
    let out = root.path().join("merged");
    let merged = merge_all(&[pod_retry.clone(), other, pod.clone()], &out).unwrap();
    let names: Vec<&str> = merged.tasks.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["fix-add", "refactor"]);
    let kept = &merged.tasks[1];
    assert_eq!(kept.reason, EndReason::EndTurn, "the latest run wins");
    assert_eq!(kept.status, Status::Passed);
    assert_eq!(kept.earlier_runs.len(), 1, "two attempts: one earlier");
    assert_eq!(kept.earlier_runs[0].reason, EndReason::ProviderError);
    assert_eq!(kept.earlier_runs[0].from, pod);
    assert_eq!(merged.status(), Status::Passed);
    // The kept run's folder is the one copied.
    let transcript = std::fs::read_to_string(out.join("refactor/transcript.jsonl")).unwrap();
    assert_eq!(transcript, "refactor");
    assert_eq!(kept.artifacts_dir, out.join("refactor"));

    // A later failure beats an earlier pass: the latest is the truth, not the best.
    let third = run_at(
        refactor,
        "2026-11-28T02:00:00.000Z",
        EndReason::ChecksFailed,
    );
    let pod_third = shard(root.path(), "pod-1-third", vec![third]);
    let merged = merge_all(
        &[pod, pod_retry.clone(), pod_third],
        &root.path().join("m2"),
    )
    .unwrap();
    let kept = &merged.tasks[0];
    assert_eq!(kept.reason, EndReason::ChecksFailed);
    let earlier: Vec<EndReason> = kept.earlier_runs.iter().map(|r| r.reason).collect();
    assert_eq!(
        earlier,
        [EndReason::ProviderError, EndReason::EndTurn],
        "earliest first"
    );
    assert_eq!(merged.status().exit_code(), 1);

    // Runs that do not say when they started: the later argument is the later run.
    let mut undated_fail = first.clone();
    undated_fail.started_at = None;
    let mut undated_pass = retry;
    undated_pass.started_at = None;
    let a = shard(root.path(), "undated-a", vec![undated_pass]);
    let b = shard(root.path(), "undated-b", vec![undated_fail]);
    let merged = merge_all(&[a, b], &root.path().join("m3")).unwrap();
    assert_eq!(merged.tasks[0].reason, EndReason::ProviderError);
}

#[test]
fn a_merged_report_merged_again_keeps_every_earlier_run() {
    let root = tempfile::tempdir().unwrap();
    let task = &sample_run().tasks[1];
    let one = shard(
        root.path(),
        "one",
        vec![run_at(task, "2026-11-28T01:00:00Z", EndReason::Interrupted)],
    );
    let two = shard(
        root.path(),
        "two",
        vec![run_at(
            task,
            "2026-11-28T02:00:00Z",
            EndReason::ProviderError,
        )],
    );
    let first_merge = root.path().join("first");
    let merged = merge_all(&[one, two], &first_merge).unwrap();
    std::fs::write(
        first_merge.join("summary.json"),
        summary_json(&merged, "0.1.0"),
    )
    .unwrap();
    let three = shard(
        root.path(),
        "three",
        vec![run_at(task, "2026-11-28T03:00:00Z", EndReason::EndTurn)],
    );
    let merged = merge_all(&[three, first_merge], &root.path().join("second")).unwrap();
    let earlier: Vec<EndReason> = merged.tasks[0]
        .earlier_runs
        .iter()
        .map(|r| r.reason)
        .collect();
    assert_eq!(earlier, [EndReason::Interrupted, EndReason::ProviderError]);
    assert_eq!(merged.tasks[0].reason, EndReason::EndTurn);
}

#[test]
fn a_task_folder_is_an_input_of_its_own() {
    let root = tempfile::tempdir().unwrap();
    let tasks = sample_run().tasks;
    let shard_dir = shard_of(root.path(), "s1", tasks[..2].to_vec(), 1, 4);
    let out = root.path().join("merged");
    // One task folder of a shard: that task alone, and no shard completeness asked.
    let merged = merge_all(&[shard_dir.join("refactor")], &out).unwrap();
    let names: Vec<&str> = merged.tasks.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["refactor"]);
    assert!(out.join("refactor/nested/x").is_file());
    assert!(!out.join("fix-add").exists());
    // A folder its summary does not list is refused, saying so.
    std::fs::create_dir_all(shard_dir.join("stray")).unwrap();
    let error = merge_all(&[shard_dir.join("stray")], &root.path().join("o2"))
        .unwrap_err()
        .to_string();
    assert!(error.contains("lists no task of its name"), "{error}");
    // The same input twice is refused: it is not two attempts.
    let error = merge_all(
        &[shard_dir.clone(), shard_dir.clone()],
        &root.path().join("o3"),
    )
    .unwrap_err()
    .to_string();
    assert!(error.contains("is given twice"), "{error}");
}

#[test]
fn bad_inputs_are_refused_with_the_path() {
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("merged");
    let missing = root.path().join("missing");
    let error = merge_all(std::slice::from_ref(&missing), &out)
        .unwrap_err()
        .to_string();
    assert!(error.contains("missing/summary.json"), "{error}");

    let broken = root.path().join("broken");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join("summary.json"), "{\"tasks\": [{}]}").unwrap();
    let error = merge_all(&[broken], &out).unwrap_err().to_string();
    assert!(error.contains("not a drover summary.json"), "{error}");

    let mut evil = sample_run().tasks[0].clone();
    evil.name = "../../etc".to_string();
    let evil_dir = root.path().join("evil");
    std::fs::create_dir_all(&evil_dir).unwrap();
    let text = summary_json(
        &RunReport {
            tasks: vec![evil],
            shard: None,
        },
        "0.1.0",
    );
    std::fs::write(evil_dir.join("summary.json"), text).unwrap();
    let evil = evil_dir;
    let error = merge_all(&[evil], &out).unwrap_err().to_string();
    assert!(error.contains("not a valid task name"), "{error}");

    let a = shard(root.path(), "a", Vec::new());
    let error = merge_all(std::slice::from_ref(&a), &a)
        .unwrap_err()
        .to_string();
    assert!(error.contains("is also an input"), "{error}");
}

#[test]
fn a_non_empty_out_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let a = shard(root.path(), "a", sample_run().tasks);
    let out = root.path().join("merged");
    std::fs::create_dir_all(out.join("stale-task")).unwrap();
    let error = merge_all(std::slice::from_ref(&a), &out)
        .unwrap_err()
        .to_string();
    assert!(error.contains("is not empty"), "{error}");
    assert!(
        !out.join("fix-add").exists(),
        "nothing is written on bad input"
    );
    // An empty directory is fine.
    std::fs::remove_dir(out.join("stale-task")).unwrap();
    assert_eq!(merge_all(&[a], &out).unwrap().tasks.len(), 4);
    // A file is not a directory to merge into.
    let file = root.path().join("file");
    std::fs::write(&file, "x").unwrap();
    let b = shard(root.path(), "b", Vec::new());
    assert!(merge_all(&[b], &file).is_err());
}

#[test]
fn a_missing_shard_is_refused_and_says_which() {
    let root = tempfile::tempdir().unwrap();
    let tasks = sample_run().tasks;
    let s1 = shard_of(root.path(), "s1", tasks[..1].to_vec(), 1, 4);
    let s2 = shard_of(root.path(), "s2", tasks[1..2].to_vec(), 2, 4);
    let s3 = shard_of(root.path(), "s3", tasks[2..3].to_vec(), 3, 4);
    let s4 = shard_of(root.path(), "s4", tasks[3..].to_vec(), 4, 4);
    let out = root.path().join("merged");

    let error = merge_all(&[s1.clone(), s3.clone(), s4.clone()], &out)
        .unwrap_err()
        .to_string();
    assert!(error.contains("shard 2/4 is missing"), "{error}");
    assert!(error.contains("3 of the 4 shards"), "{error}");
    let error = merge_all(std::slice::from_ref(&s3), &out)
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("shards 1/4, 2/4, 4/4 are missing"),
        "{error}"
    );
    assert!(!out.exists(), "nothing is written on bad input");

    // An empty shard counts as present (more shards than tasks).
    let empty = shard_of(root.path(), "empty", Vec::new(), 2, 4);
    let merged = merge_all(&[s4.clone(), empty.clone(), s1.clone(), s3.clone()], &out).unwrap();
    assert_eq!(merged.tasks.len(), 3);
    assert_eq!(merged.shard, None, "the merge is the whole run");

    // A shard run twice (a retried shard job) is two attempts of its tasks; shards of
    // different counts are refused.
    let again = shard_of(root.path(), "again", tasks[1..2].to_vec(), 2, 4);
    let merged = merge_all(
        &[s1.clone(), s2.clone(), s3.clone(), s4.clone(), again],
        &root.path().join("o2"),
    )
    .unwrap();
    let refactor = merged.tasks.iter().find(|t| t.name == "refactor").unwrap();
    assert_eq!(refactor.earlier_runs.len(), 1);
    let other = shard_of(root.path(), "other", Vec::new(), 2, 3);
    let error = merge_all(&[s1.clone(), other], &root.path().join("o3"))
        .unwrap_err()
        .to_string();
    assert!(error.contains("different counts"), "{error}");
    // A whole run (an `--only` retry of one task) may join the shards.
    let whole = shard(root.path(), "whole", tasks[..1].to_vec());
    let merged = merge_all(
        &[s1.clone(), s2, s3.clone(), s4.clone(), whole],
        &root.path().join("o4"),
    )
    .unwrap();
    assert_eq!(merged.tasks.len(), 4);
    // --partial merges what is there.
    let merged = merge(
        &[s1, s3, s4],
        &root.path().join("o5"),
        MergeOptions { partial: true },
    )
    .unwrap();
    assert_eq!(merged.tasks.len(), 3);
}

#[test]
fn merged_tasks_are_in_the_order_of_an_unsharded_run() {
    let root = tempfile::tempdir().unwrap();
    let tasks = sample_run().tasks;
    // Shard 1 holds the later specs, shard 2 the earlier ones.
    let s1 = shard_of(
        root.path(),
        "s1",
        vec![tasks[3].clone(), tasks[1].clone()],
        1,
        2,
    );
    let s2 = shard_of(
        root.path(),
        "s2",
        vec![tasks[2].clone(), tasks[0].clone()],
        2,
        2,
    );
    let merged = merge_all(&[s1, s2], &root.path().join("merged")).unwrap();
    let names: Vec<&str> = merged.tasks.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["fix-add", "refactor", "lint", "offline"]);
}

#[test]
fn linked_summaries_and_a_linked_out_are_refused() {
    use std::os::unix::fs::symlink;
    let root = tempfile::tempdir().unwrap();
    // summary.json a link to another run's summary (any file drover can read, really).
    let real = shard(root.path(), "real", sample_run().tasks);
    let linked = root.path().join("linked");
    std::fs::create_dir_all(&linked).unwrap();
    symlink(real.join("summary.json"), linked.join("summary.json")).unwrap();
    let out = root.path().join("merged");
    let error = merge_all(std::slice::from_ref(&linked), &out)
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("linked/summary.json is a symbolic link"),
        "{error}"
    );
    assert!(!out.exists(), "nothing is written on bad input");
    let fifo_dir = root.path().join("fifo");
    std::fs::create_dir_all(&fifo_dir).unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        fifo_dir.join("summary.json"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    let error = merge_all(&[fifo_dir], &out).unwrap_err().to_string();
    assert!(error.contains("is a FIFO, socket or device"), "{error}");
    // --out a link to an empty directory elsewhere.
    let elsewhere = root.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let out_link = root.path().join("out-link");
    symlink(&elsewhere, &out_link).unwrap();
    let error = merge_all(std::slice::from_ref(&real), &out_link)
        .unwrap_err()
        .to_string();
    assert!(error.contains("is a symbolic link"), "{error}");
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
}

#[test]
fn a_linked_task_folder_is_not_copied() {
    use std::os::unix::fs::symlink;
    let root = tempfile::tempdir().unwrap();
    let private = root.path().join("private");
    std::fs::create_dir_all(&private).unwrap();
    std::fs::write(private.join("id_rsa"), "PRIVATE KEY").unwrap();
    let a = shard(root.path(), "a", sample_run().tasks);
    std::fs::remove_dir_all(a.join("refactor")).unwrap();
    symlink(&private, a.join("refactor")).unwrap();
    let out = root.path().join("merged");
    let merged = merge_all(&[a], &out).unwrap();
    assert_eq!(merged.tasks.len(), 4);
    assert!(std::fs::symlink_metadata(out.join("refactor")).is_err());
    assert!(out.join("lint/transcript.jsonl").is_file());
}

#[test]
fn a_status_its_reason_contradicts_is_read_as_the_worse() {
    let root = tempfile::tempdir().unwrap();
    let mut tasks = sample_run().tasks;
    // An edited summary: a failed task claims to have passed.
    let failed = tasks
        .iter_mut()
        .find(|task| task.status == Status::Failed)
        .unwrap();
    assert_ne!(failed.reason.status(), Status::Passed);
    failed.status = Status::Passed;
    let name = failed.name.clone();
    let a = shard(root.path(), "a", tasks);
    let merged = merge_all(&[a], &root.path().join("merged")).unwrap();
    let task = merged.tasks.iter().find(|task| task.name == name).unwrap();
    assert_eq!(task.status, Status::Failed);
    assert_ne!(merged.status(), Status::Passed);
}
