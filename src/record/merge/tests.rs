// Test-only module: its parent includes it under #[cfg(test)].
use super::*;
use crate::record::Status;
use crate::record::junit::tests::sample_run;
use crate::record::summary::summary_json;

/// A shard's artifacts directory holding the given tasks, each with a transcript.
fn shard(root: &Path, name: &str, tasks: Vec<TaskReport>) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    for task in &tasks {
        std::fs::create_dir_all(dir.join(&task.name).join("nested")).unwrap();
        std::fs::write(dir.join(&task.name).join("transcript.jsonl"), &task.name).unwrap();
        std::fs::write(dir.join(&task.name).join("nested/x"), "x").unwrap();
    }
    std::fs::write(dir.join("summary.json"), summary_json(&RunReport { tasks })).unwrap();
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
    let merged = merge(&[a, empty, b], &out).unwrap();
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
    };
    assert_eq!(pick(&[]).status().exit_code(), 0);
    assert_eq!(pick(&[0]).status().exit_code(), 0);
    assert_eq!(pick(&[0, 1]).status().exit_code(), 1);
    assert_eq!(pick(&[3, 0, 1]).status().exit_code(), 3);
    assert_eq!(pick(&[1, 3]).status().exit_code(), 3);
}

#[test]
fn a_task_in_two_shards_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let tasks = sample_run().tasks;
    let a = shard(root.path(), "a", tasks[..2].to_vec());
    let b = shard(root.path(), "b", tasks[1..3].to_vec());
    let out = root.path().join("merged");
    let error = merge(&[a, b], &out).unwrap_err();
    assert!(error.contains("task \"refactor\" is in both"), "{error}");
    assert!(!out.exists(), "nothing is written on bad input");
}

#[test]
fn bad_inputs_are_refused_with_the_path() {
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("merged");
    let missing = root.path().join("missing");
    let error = merge(std::slice::from_ref(&missing), &out).unwrap_err();
    assert!(error.contains("missing/summary.json"), "{error}");

    let broken = root.path().join("broken");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join("summary.json"), "{\"tasks\": [{}]}").unwrap();
    let error = merge(&[broken], &out).unwrap_err();
    assert!(error.contains("not a drover summary.json"), "{error}");

    let mut evil = sample_run().tasks[0].clone();
    evil.name = "../../etc".to_string();
    let evil_dir = root.path().join("evil");
    std::fs::create_dir_all(&evil_dir).unwrap();
    let text = summary_json(&RunReport { tasks: vec![evil] });
    std::fs::write(evil_dir.join("summary.json"), text).unwrap();
    let evil = evil_dir;
    let error = merge(&[evil], &out).unwrap_err();
    assert!(error.contains("not a valid task name"), "{error}");

    let a = shard(root.path(), "a", Vec::new());
    let error = merge(std::slice::from_ref(&a), &a).unwrap_err();
    assert!(error.contains("is also an input"), "{error}");
}
