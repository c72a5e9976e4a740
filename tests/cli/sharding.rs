//! `--shard K/N`, `--shard auto`, `drover report merge` and the GitHub Actions reporting,
//! end to end: shards of a run together equal the run, and their merge reads like it.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{drover, write_spec};
use serde_json::Value;

/// Tasks t1..t9 in one directory; t3 and t7 fail their check, the others pass theirs.
fn specs() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    let specs = dir.path().join("specs");
    std::fs::create_dir(&specs).unwrap();
    for i in 1..=9 {
        let check = if i == 3 || i == 7 { "exit 1" } else { "true" };
        write_spec(
            &specs,
            &format!("t{i}.yaml"),
            &format!(
                "version: 1\nname: t{i}\nprompt: p\nworkspace: ../ws\nmodel:\n  provider: script\n  script:\n    - text: Task {i} done.\nchecks:\n  - name: check {i}\n    run: \"{check}\"\n"
            ),
        );
    }
    dir
}

/// `drover run specs/ --artifacts OUT ARGS…`, returning the exit code and stdout.
fn run(dir: &Path, out: &str, args: &[&str]) -> (i32, String) {
    let output = drover()
        .arg("run")
        .arg(dir.join("specs"))
        .arg("--artifacts")
        .arg(dir.join(out))
        .args(args)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    (
        output.status.code().unwrap_or(-1),
        format!("{stdout}{stderr}"),
    )
}

/// Task name → status from an artifacts directory's summary.json.
fn statuses(artifacts: &Path) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(artifacts.join("summary.json")).unwrap();
    let summary: Value = serde_json::from_str(&text).unwrap();
    summary["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|task| {
            (
                task["name"].as_str().unwrap().to_string(),
                task["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn merge(dirs: &[PathBuf], out: &Path) -> (i32, String) {
    let output = drover()
        .args(["report", "merge"])
        .args(dirs)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
    )
}

/// Validate `file` against the Surefire/Jenkins schema with xmllint, which the build
/// found (`drover_has_xmllint`): if it is gone, the test fails.
fn validate_with_xmllint(file: &Path) {
    common::require_program("xmllint");
    // The Surefire/Jenkins schema (MIT), kept in the repository so the check never skips.
    let schema = common::repo().join("fixtures/schemas/junit-10.xsd");
    assert!(schema.exists(), "{} is missing", schema.display());
    let output = Command::new("xmllint")
        .arg("--noout")
        .arg("--schema")
        .arg(&schema)
        .arg(file)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn shards_together_equal_the_unsharded_run_and_merge_into_one_report() {
    let dir = specs();
    let (code, _) = run(dir.path(), "all", &[]);
    assert_eq!(code, 1, "two tasks fail their check");
    let all = statuses(&dir.path().join("all"));
    assert_eq!(all.len(), 9);

    let mut union = BTreeMap::new();
    let mut shard_dirs = Vec::new();
    for k in 1..=3 {
        let out = format!("shard{k}");
        let (code, stdout) = run(dir.path(), &out, &["--shard", &format!("{k}/3")]);
        assert!(
            stdout.contains(&format!("shard {k}/3: 3 of 9 tasks")),
            "{stdout}"
        );
        let share = statuses(&dir.path().join(&out));
        assert_eq!(share.len(), 3, "balanced: {share:?}");
        let expected = if share.values().any(|s| s == "failed") {
            1
        } else {
            0
        };
        assert_eq!(code, expected, "{share:?}");
        for (name, status) in share {
            assert!(
                union.insert(name, status).is_none(),
                "a task ran in two shards"
            );
        }
        shard_dirs.push(dir.path().join(out));
    }
    assert_eq!(union, all, "the shards together ran every task once, alike");

    let merged = dir.path().join("merged");
    let (code, said) = merge(&shard_dirs, &merged);
    assert_eq!(code, 1, "{said}");
    assert!(
        said.contains("drover: 9 tasks: 7 passed, 2 failed, 0 errors — exit 1: a task failed: t3 (checks_failed) and 1 more"),
        "the merge says its outcome and why it exits 1: {said}"
    );
    assert_eq!(statuses(&merged), all);
    let junit = merged.join("junit.xml");
    let xml = std::fs::read_to_string(&junit).unwrap();
    let unsharded = std::fs::read_to_string(dir.path().join("all/junit.xml")).unwrap();
    assert_eq!(
        xml.matches("<testcase ").count(),
        18,
        "9 agent runs and 9 checks"
    );
    assert_eq!(
        xml.matches("<testcase ").count(),
        unsharded.matches("<testcase ").count()
    );
    for i in 1..=9 {
        assert_eq!(xml.matches(&format!("<testcase name=\"t{i}\"")).count(), 1);
        let transcript = merged.join(format!("t{i}/transcript.jsonl"));
        assert!(transcript.is_file(), "{}", transcript.display());
    }
    assert_eq!(
        xml.matches("<failure ").count(),
        4,
        "t3, t7 and their checks"
    );
    let md = std::fs::read_to_string(merged.join("summary.md")).unwrap();
    assert!(
        md.starts_with("## drover: 7 passed, 2 failed, 0 errors\n"),
        "{md}"
    );

    // Each shard's summary says which shard it was; the whole run and the merge say null.
    for (k, shard_dir) in shard_dirs.iter().enumerate() {
        let summary: Value =
            serde_json::from_str(&std::fs::read_to_string(shard_dir.join("summary.json")).unwrap())
                .unwrap();
        assert_eq!(
            summary["shard"],
            serde_json::json!({"index": k + 1, "count": 3})
        );
    }
    let names = |dir: &Path| -> Vec<String> {
        let summary: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap())
                .unwrap();
        assert!(summary["shard"].is_null());
        summary["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|task| task["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        names(&merged),
        names(&dir.path().join("all")),
        "merged tasks are listed as the unsharded run lists them"
    );

    // A missing shard is named; a non-empty --out is refused.
    let (code, stderr) = merge(
        &[shard_dirs[0].clone(), shard_dirs[2].clone()],
        &dir.path().join("partial"),
    );
    assert_eq!(code, 2);
    assert!(stderr.contains("shard 2/3 is missing"), "{stderr}");
    assert!(!dir.path().join("partial").exists());
    let (code, stderr) = merge(&shard_dirs, &merged);
    assert_eq!(code, 2, "merging again into the same --out");
    assert!(stderr.contains("is not empty"), "{stderr}");

    // The same directory twice is refused (it is not a retry); so is a directory that
    // is not drover's.
    let twice = [shard_dirs[0].clone(), shard_dirs[0].clone()];
    let (code, stderr) = merge(&twice, &dir.path().join("twice"));
    assert_eq!(code, 2);
    assert!(stderr.contains("is given twice"), "{stderr}");
    let (code, stderr) = merge(&[dir.path().join("specs")], &dir.path().join("bad"));
    assert_eq!(code, 2);
    assert!(stderr.contains("summary.json"), "{stderr}");

    // A shard whose task could not run (status error) makes the merge exit 3.
    let summary_path = shard_dirs[1].join("summary.json");
    let mut summary: Value =
        serde_json::from_str(&std::fs::read_to_string(&summary_path).unwrap()).unwrap();
    summary["tasks"][0]["status"] = "error".into();
    summary["tasks"][0]["reason"] = "provider_error".into();
    std::fs::write(&summary_path, summary.to_string()).unwrap();
    let (code, stderr) = merge(&shard_dirs, &dir.path().join("with-error"));
    assert_eq!(code, 3, "{stderr}");
    let xml = std::fs::read_to_string(dir.path().join("with-error/junit.xml")).unwrap();
    assert!(xml.contains("<error type=\"provider_error\""));
}

#[test]
fn shard_auto_reads_the_indexed_job_variables() {
    let dir = specs();
    run(dir.path(), "explicit", &["--shard", "2/3"]);
    let output = drover()
        .arg("run")
        .arg(dir.path().join("specs"))
        .arg("--artifacts")
        .arg(dir.path().join("auto"))
        .args(["--shard", "auto"])
        .env("JOB_COMPLETION_INDEX", "1")
        .env("DROVER_SHARD_COUNT", "3")
        .output()
        .unwrap();
    assert!(output.status.code() == Some(0) || output.status.code() == Some(1));
    assert_eq!(
        statuses(&dir.path().join("auto")),
        statuses(&dir.path().join("explicit"))
    );

    let output = drover()
        .arg("run")
        .arg(dir.path().join("specs"))
        .args(["--shard", "auto"])
        .env("JOB_COMPLETION_INDEX", "1")
        .env_remove("DROVER_SHARD_COUNT")
        .env_remove("JOB_COMPLETIONS")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("set DROVER_SHARD_COUNT"), "{stderr}");
}

/// The junit.xml of a merge, and of a shard that got no task, are valid JUnit (the
/// Surefire/Jenkins schema, as the unsharded run's is: drover-record's tests).
#[test]
#[cfg_attr(
    not(drover_has_xmllint),
    ignore = "needs xmllint (apt-get install libxml2-utils; .ci/run installs it)"
)]
fn merged_and_empty_shard_reports_validate_against_the_junit_schema() {
    common::require_program("xmllint");
    let dir = specs();
    let shards: Vec<PathBuf> = (1..=3)
        .map(|k| {
            let out = format!("shard{k}");
            run(dir.path(), &out, &["--shard", &format!("{k}/3")]);
            dir.path().join(out)
        })
        .collect();
    let merged = dir.path().join("merged");
    merge(&shards, &merged);
    validate_with_xmllint(&merged.join("junit.xml"));
    // 9 tasks over 10 shards: one shard is empty.
    let empty = (1..=10)
        .map(|k| {
            let out = dir.path().join(format!("s{k}"));
            run(
                dir.path(),
                &format!("s{k}"),
                &["--shard", &format!("{k}/10")],
            );
            out
        })
        .find(|out| statuses(out).is_empty())
        .expect("one of 10 shards of 9 tasks is empty");
    validate_with_xmllint(&empty.join("junit.xml"));
}

#[test]
fn bad_shards_exit_2_and_an_empty_shard_passes_with_empty_reports() {
    let dir = specs();
    for bad in ["0/3", "4/3", "x"] {
        let (code, output) = run(dir.path(), "bad", &["--shard", bad]);
        assert_eq!(code, 2, "{bad}: {output}");
        assert!(output.contains("expected K/N"), "{output}");
    }
    // 9 tasks over 10 shards: exactly one shard is empty.
    let mut empty = 0;
    for k in 1..=10 {
        let out = format!("s{k}");
        let (code, output) = run(dir.path(), &out, &["--shard", &format!("{k}/10")]);
        let share = statuses(&dir.path().join(&out));
        if share.is_empty() {
            empty += 1;
            assert_eq!(code, 0, "{output}");
            let xml = std::fs::read_to_string(dir.path().join(&out).join("junit.xml")).unwrap();
            assert!(!xml.contains("<testcase"));
        }
    }
    assert_eq!(empty, 1);

    // A broken spec fails every shard, whichever shard its task would have gone to.
    write_spec(
        &dir.path().join("specs"),
        "broken.yaml",
        "version: 1\nname: [\n",
    );
    for k in 1..=3 {
        let (code, _) = run(dir.path(), "broken", &["--shard", &format!("{k}/3")]);
        assert_eq!(code, 2, "shard {k}");
    }
}

#[test]
fn on_github_actions_drover_annotates_and_appends_the_step_summary() {
    let dir = specs();
    let step_summary = dir.path().join("step-summary.md");
    std::fs::write(&step_summary, "earlier step\n").unwrap();
    let output = drover()
        .arg("run")
        .arg(dir.path().join("specs"))
        .arg("--artifacts")
        .arg(dir.path().join("gh"))
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_STEP_SUMMARY", &step_summary)
        .env("GITHUB_WORKSPACE", dir.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains(
            "::error file=specs/t3.yaml,title=drover%3A task t3 failed (checks_failed)::"
        ),
        "{stdout}"
    );
    assert!(stdout.contains(
        "::error file=specs/t7.yaml,title=drover%3A task t7%3A check check 7 failed::$ exit 1%0Aexited with code 1"
    ), "{stdout}");
    assert_eq!(stdout.matches("::error ").count(), 4, "{stdout}");
    let summary = std::fs::read_to_string(&step_summary).unwrap();
    let md = std::fs::read_to_string(dir.path().join("gh/summary.md")).unwrap();
    assert_eq!(summary, format!("earlier step\n{md}"));

    // `report merge` on GitHub writes the step summary but no annotations: the shard
    // jobs already annotated their tasks.
    let mut shard_dirs = Vec::new();
    for k in 1..=2 {
        let out = format!("gh-shard{k}");
        run(dir.path(), &out, &["--shard", &format!("{k}/2")]);
        shard_dirs.push(dir.path().join(out));
    }
    let merge_summary = dir.path().join("merge-step-summary.md");
    let output = drover()
        .args(["report", "merge"])
        .args(&shard_dirs)
        .arg("--out")
        .arg(dir.path().join("gh-merged"))
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_STEP_SUMMARY", &merge_summary)
        .env("GITHUB_WORKSPACE", dir.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        !stdout.contains("::error") && !stdout.contains("::warning"),
        "{stdout}"
    );
    let merged_md = std::fs::read_to_string(dir.path().join("gh-merged/summary.md")).unwrap();
    assert_eq!(std::fs::read_to_string(&merge_summary).unwrap(), merged_md);

    // Off GitHub Actions: no workflow commands, no step summary.
    let output = drover()
        .arg("run")
        .arg(dir.path().join("specs"))
        .arg("--artifacts")
        .arg(dir.path().join("plain"))
        .env("GITHUB_STEP_SUMMARY", &step_summary)
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&output.stdout).contains("::error"));
    assert_eq!(
        std::fs::read_to_string(&step_summary).unwrap(),
        format!("earlier step\n{md}")
    );
}

#[test]
fn shard_help_mentions_auto() {
    let output = drover().args(["run", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&output.stdout);
    assert!(help.contains("--shard <K/N|auto>"), "{help}");
    assert!(help.contains("JOB_COMPLETION_INDEX"), "{help}");
}

#[test]
fn each_task_index_runs_one_task_and_together_they_are_the_run() {
    let dir = specs();
    let (_, _) = run(dir.path(), "whole", &[]);
    let whole = statuses(&dir.path().join("whole"));
    let mut together = BTreeMap::new();
    for index in 0..9 {
        let out = format!("item{index}");
        let (code, printed) = run(dir.path(), &out, &["--task-index", &index.to_string()]);
        let ran = statuses(&dir.path().join(&out));
        assert_eq!(ran.len(), 1, "{printed}");
        let (name, status) = ran.into_iter().next().unwrap();
        // The tasks sorted by name: t1 … t9.
        assert_eq!(name, format!("t{}", index + 1));
        assert_eq!(code, if status == "passed" { 0 } else { 1 }, "{printed}");
        together.insert(name, status);
    }
    assert_eq!(together, whole);
    // Out of range, or not a number: bad input, nothing run.
    let (code, printed) = run(dir.path(), "beyond", &["--task-index", "9"]);
    assert_eq!(code, 2, "{printed}");
    assert!(
        printed.contains("--task-index 9: the specs hold 9 tasks, so the index runs from 0 to 8"),
        "{printed}"
    );
    assert!(!dir.path().join("beyond/summary.json").exists());
    let (code, _) = run(dir.path(), "bad", &["--task-index", "two"]);
    assert_eq!(code, 2);
    // `auto`: a Kubernetes Indexed Job's pod index.
    let output = drover()
        .arg("run")
        .arg(dir.path().join("specs"))
        .args(["--artifacts"])
        .arg(dir.path().join("pod"))
        .args(["--task-index", "auto"])
        .env("JOB_COMPLETION_INDEX", "6")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "t7 fails its check");
    let ran = statuses(&dir.path().join("pod"));
    assert_eq!(ran.keys().collect::<Vec<_>>(), ["t7"]);
}

#[test]
fn only_runs_the_named_tasks_and_an_unknown_name_is_bad_input() {
    let dir = specs();
    let (code, printed) = run(dir.path(), "two", &["--only", "t2,t9"]);
    assert_eq!(code, 0, "{printed}");
    let ran = statuses(&dir.path().join("two"));
    assert_eq!(ran.keys().collect::<Vec<_>>(), ["t2", "t9"]);
    let (code, _) = run(dir.path(), "again", &["--only", "t3", "--only", "t4"]);
    assert_eq!(code, 1, "t3 fails its check");
    assert_eq!(
        statuses(&dir.path().join("again"))
            .keys()
            .collect::<Vec<_>>(),
        ["t3", "t4"]
    );
    let (code, printed) = run(dir.path(), "typo", &["--only", "t2,tt9"]);
    assert_eq!(code, 2, "{printed}");
    assert!(
        printed.contains("--only tt9: no task has that name; the tasks are t1, t2"),
        "{printed}"
    );
    assert!(!dir.path().join("typo/summary.json").exists());
    // One way of choosing at a time.
    let (code, printed) = run(dir.path(), "both", &["--only", "t2", "--shard", "1/2"]);
    assert_eq!(code, 2, "{printed}");
}

#[test]
fn each_task_folder_has_a_result_json_an_orchestrator_can_act_on() {
    let dir = specs();
    let (code, printed) = run(dir.path(), "out", &["--only", "t2,t3"]);
    assert_eq!(code, 1, "{printed}");
    let result = |task: &str| -> Value {
        let text =
            std::fs::read_to_string(dir.path().join("out").join(task).join("result.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    };
    let passed = result("t2");
    assert_eq!(passed["task"], "t2");
    assert_eq!(passed["status"], "passed");
    assert_eq!(passed["reason"], "end_turn");
    assert_eq!(passed["exit_code"], 0);
    assert_eq!(passed["retryable"], false);
    assert_eq!(passed["attempts"], 1);
    let failed = result("t3");
    assert_eq!(failed["status"], "failed");
    assert_eq!(failed["reason"], "checks_failed");
    assert_eq!(failed["exit_code"], 1);
    assert_eq!(failed["retryable"], false, "failed checks fail again");
    assert!(failed["duration_ms"].is_u64());
    assert!(
        failed["message"].as_str().unwrap().contains("check 3"),
        "{failed}"
    );
}

#[test]
fn plan_lists_the_tasks_in_task_index_order_without_running_them() {
    let dir = specs();
    let output = drover()
        .arg("plan")
        .arg(dir.path().join("specs"))
        .arg("--json")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    let plan: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(plan["count"], 9);
    let names: Vec<String> = (1..=9).map(|i| format!("t{i}")).collect();
    assert_eq!(plan["names"], serde_json::json!(names));
    assert_eq!(plan["tasks"][3]["index"], 3);
    assert_eq!(plan["tasks"][3]["name"], "t4");
    assert!(
        plan["tasks"][3]["spec"]
            .as_str()
            .unwrap()
            .ends_with("t4.yaml"),
        "{plan}"
    );
    // The task --task-index 3 runs is the one the plan puts at 3.
    let (_, printed) = run(dir.path(), "third", &["--task-index", "3"]);
    let ran = statuses(&dir.path().join("third"));
    assert_eq!(ran.keys().collect::<Vec<_>>(), ["t4"], "{printed}");
    assert!(!dir.path().join("plan-ran").exists());

    // Two specs naming one task, or a spec with an error: bad input.
    write_spec(
        &dir.path().join("specs"),
        "again.yaml",
        "version: 1\nname: t4\nprompt: p\nworkspace: ../ws\nmodel: { provider: script, script: [{ text: hi }] }\n",
    );
    let output = drover()
        .arg("plan")
        .arg(dir.path().join("specs"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("task name \"t4\" is already used by"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn merge_of_retried_pods_keeps_each_task_latest_run_and_counts_the_attempts() {
    let dir = specs();
    // One pod per task, as a Kubernetes Indexed Job runs them.
    let mut pods = Vec::new();
    for index in 0..9 {
        let out = format!("pod{index}");
        run(dir.path(), &out, &["--task-index", &index.to_string()]);
        pods.push(dir.path().join(out));
    }
    // t3 failed; it is fixed and only it is run again.
    write_spec(
        &dir.path().join("specs"),
        "t3.yaml",
        "version: 1\nname: t3\nprompt: p\nworkspace: ../ws\nmodel:\n  provider: script\n  script:\n    - text: Task 3 done.\nchecks:\n  - name: check 3\n    run: \"true\"\n",
    );
    let (code, printed) = run(dir.path(), "retry-t3", &["--only", "t3"]);
    assert_eq!(code, 0, "{printed}");
    // The retry is named first: which run is latest is when it started, not the order.
    let mut inputs = vec![dir.path().join("retry-t3")];
    inputs.extend(pods.iter().cloned());
    let out = dir.path().join("merged");
    let (code, printed) = merge(&inputs, &out);
    // t7 still fails; t3's retry passed.
    assert_eq!(code, 1, "{printed}");
    let merged = statuses(&out);
    assert_eq!(merged.len(), 9);
    assert_eq!(merged["t3"], "passed");
    assert_eq!(merged["t7"], "failed");
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let t3 = summary["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|task| task["name"] == "t3")
        .unwrap();
    let earlier = t3["earlier_runs"].as_array().unwrap();
    assert_eq!(earlier.len(), 1, "{t3}");
    assert_eq!(earlier[0]["reason"], "checks_failed");
    assert!(
        earlier[0]["from"].as_str().unwrap().ends_with("pod2"),
        "{t3}"
    );
    let markdown = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        markdown.contains("`t3` (2 runs; earlier: checks_failed)"),
        "{markdown}"
    );
    // The kept folder is the retry's: its result.json says passed.
    let result = std::fs::read_to_string(out.join("t3/result.json")).unwrap();
    assert!(result.contains("\"status\": \"passed\""), "{result}");

    // Task folders are inputs too: two tasks picked out of two pods.
    let picked = dir.path().join("picked");
    let (code, printed) = merge(&[pods[0].join("t1"), pods[6].join("t7")], &picked);
    assert_eq!(code, 1, "{printed}");
    assert_eq!(statuses(&picked).keys().collect::<Vec<_>>(), ["t1", "t7"]);
}

#[test]
fn merge_of_an_incomplete_shard_set_needs_partial() {
    let dir = specs();
    run(dir.path(), "s1", &["--shard", "1/3"]);
    run(dir.path(), "s3", &["--shard", "3/3"]);
    let inputs = [dir.path().join("s1"), dir.path().join("s3")];
    let (code, printed) = merge(&inputs, &dir.path().join("m"));
    assert_eq!(code, 2, "{printed}");
    assert!(printed.contains("shard 2/3 is missing"), "{printed}");
    assert!(printed.contains("--partial"), "{printed}");
    let output = drover()
        .args(["report", "merge", "--partial"])
        .args(&inputs)
        .arg("--out")
        .arg(dir.path().join("p"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("shard 2/3 not among the inputs"),
        "{stderr}"
    );
    assert_eq!(statuses(&dir.path().join("p")).len(), 6);
}
