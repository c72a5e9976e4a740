//! A fleet, end to end: one matrix spec over twelve repositories — ten served on
//! 127.0.0.1 by a real `git daemon`, two by `file://` — plus an entry naming a ref no
//! repository has and one naming a host that is down. Every task clones its own
//! repository and edits it in isolation; its diff applies to a fresh clone of its
//! repository at the commit it recorded; the two broken entries end with their own
//! reasons while the others pass; `--task-index` over the whole list, one pod at a time,
//! equals one run of the whole; and a merge of the pods with a retried task keeps the
//! retry and counts the attempts.

use crate::common;
use crate::repo::{Daemon, git, served_repo};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::drover;
use serde_json::Value;

const SERVED: usize = 10;
const LOCAL: usize = 2;

/// The matrix file and the spec, under `dir/specs`; the spec and every repository.
fn write_fleet(dir: &Path, daemon: &Daemon, served: &Path) -> (PathBuf, Vec<PathBuf>) {
    let mut entries = String::new();
    let mut repositories = Vec::new();
    for index in 0..SERVED + LOCAL {
        let name = format!("svc-{index:02}");
        let (bare, _, _) = served_repo(served, &name);
        repositories.push(bare.clone());
        let url = if index < SERVED {
            daemon.url(&name)
        } else {
            format!("file://{}", bare.display())
        };
        entries.push_str(&format!(
            "- {{ service: {name}, url: \"{url}\", ref: main }}\n"
        ));
    }
    entries.push_str(&format!(
        "- {{ service: ghost-ref, url: \"{}\", ref: no-such-branch }}\n",
        daemon.url("svc-00")
    ));
    // A port nothing listens on: the host is down.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    entries.push_str(&format!(
        "- {{ service: down, url: \"git://127.0.0.1:{closed}/svc-00.git\", ref: main }}\n"
    ));
    let specs = dir.join("specs");
    std::fs::create_dir_all(&specs).unwrap();
    std::fs::write(specs.join("services.yaml"), entries).unwrap();
    let spec = specs.join("fleet.yaml");
    std::fs::write(
        &spec,
        "version: 1\nname: fleet-${{ matrix.service }}\nmatrix: { from: services.yaml }\nprompt: Note that ${{ matrix.service }} was visited.\nrepo:\n  url: ${{ matrix.url }}\n  ref: ${{ matrix.ref }}\npermissions:\n  allow: [\"Write(NOTE.md)\"]\nmodel:\n  provider: script\n  script:\n    - tool_calls:\n        - { name: Write, input: { file_path: NOTE.md, content: \"visited by the fleet\\n\" } }\n    - text: done\nchecks:\n  - name: note-${{ matrix.service }}\n    run: test -f NOTE.md\n",
    )
    .unwrap();
    (spec, repositories)
}

fn run(spec: &Path, artifacts: &Path, extra: &[&str]) -> (i32, String) {
    let output = drover()
        .arg("run")
        .arg(spec)
        .arg("--artifacts")
        .arg(artifacts)
        .args(extra)
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

/// Task name → (status, reason) from an artifacts directory's summary.json.
fn outcomes(artifacts: &Path) -> BTreeMap<String, (String, String)> {
    let text = std::fs::read_to_string(artifacts.join("summary.json")).unwrap();
    let summary: Value = serde_json::from_str(&text).unwrap();
    summary["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|task| {
            (
                task["name"].as_str().unwrap().to_string(),
                (
                    task["status"].as_str().unwrap().to_string(),
                    task["reason"].as_str().unwrap().to_string(),
                ),
            )
        })
        .collect()
}

fn result(artifacts: &Path, task: &str) -> Value {
    let text = std::fs::read_to_string(artifacts.join(task).join("result.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
#[cfg_attr(
    not(drover_has_git_daemon),
    ignore = "needs git daemon (git's own program, in Debian's git package)"
)]
fn one_matrix_spec_runs_a_fleet_of_repositories() {
    let dir = tempfile::tempdir().unwrap();
    let served = dir.path().join("served");
    std::fs::create_dir_all(&served).unwrap();
    let daemon = Daemon::start(&served);
    let (spec, repositories) = write_fleet(dir.path(), &daemon, &served);

    // The plan: fourteen tasks, sorted by name.
    let output = drover()
        .arg("plan")
        .arg(&spec)
        .arg("--json")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let plan: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(plan["count"], SERVED + LOCAL + 2);

    // The whole fleet in one run: the two broken entries are errors (exit 3), every
    // other task passed.
    let whole = dir.path().join("whole");
    let (code, printed) = run(&spec, &whole, &["--jobs", "2"]);
    assert_eq!(code, 3, "{printed}");
    let all = outcomes(&whole);
    assert_eq!(all.len(), SERVED + LOCAL + 2);
    assert_eq!(
        all["fleet-ghost-ref"],
        ("error".to_string(), "repo_refused".to_string())
    );
    assert_eq!(
        all["fleet-down"],
        ("error".to_string(), "repo_unavailable".to_string())
    );
    // Every field and end reason of a fleet run is in the documented schema.
    let validator = crate::summary_schema::schema();
    crate::summary_schema::assert_valid(&validator, &whole);
    let ghost = result(&whole, "fleet-ghost-ref");
    assert_eq!(ghost["retryable"], false, "a missing ref stays missing");
    assert!(
        ghost["message"].as_str().unwrap().contains("svc-00"),
        "{ghost}"
    );
    assert_eq!(
        result(&whole, "fleet-down")["retryable"],
        true,
        "a host comes back"
    );
    for (index, bare) in repositories.iter().enumerate() {
        let task = format!("fleet-svc-{index:02}");
        assert_eq!(all[&task].0, "passed", "{task}: {printed}");
        // The diff applies to a fresh clone of the task's own repository at the commit
        // it started from, and makes the file the agent wrote.
        let started = result(&whole, &task);
        let commit = started["start"]["commit"].as_str().unwrap().to_string();
        let fresh = dir.path().join("fresh").join(&task);
        git(
            dir.path(),
            &[
                "clone",
                "-q",
                bare.to_str().unwrap(),
                fresh.to_str().unwrap(),
            ],
        );
        git(&fresh, &["checkout", "-q", &commit]);
        let patch = whole.join(&task).join("diff.patch");
        git(&fresh, &["apply", patch.to_str().unwrap()]);
        assert_eq!(
            std::fs::read_to_string(fresh.join("NOTE.md")).unwrap(),
            "visited by the fleet\n"
        );
        // Each task touched only its own repository.
        let diff = std::fs::read_to_string(&patch).unwrap();
        assert_eq!(diff.matches("+++ b/").count(), 1, "{task}: {diff}");
    }

    // One pod a task, in --task-index order: together they are the whole run.
    let mut pods = Vec::new();
    let mut together = BTreeMap::new();
    for index in 0..SERVED + LOCAL + 2 {
        let pod = dir.path().join(format!("pod-{index}"));
        run(&spec, &pod, &["--task-index", &index.to_string()]);
        let ran = outcomes(&pod);
        assert_eq!(ran.len(), 1);
        let (name, _) = ran.iter().next().unwrap();
        assert_eq!(name, plan["names"][index].as_str().unwrap());
        together.extend(ran);
        pods.push(pod);
    }
    assert_eq!(together, all);

    // svc-03's pod is retried (as an orchestrator would): the merge keeps the retry and
    // says there were two runs; the exit code is the fleet's.
    let retry = dir.path().join("pod-retry");
    let (code, printed) = run(&spec, &retry, &["--only", "fleet-svc-03"]);
    assert_eq!(code, 0, "{printed}");
    let mut inputs = pods.clone();
    inputs.push(retry.clone());
    let merged = dir.path().join("merged");
    let output = drover()
        .args(["report", "merge"])
        .args(&inputs)
        .arg("--out")
        .arg(&merged)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(3), "{output:?}");
    assert_eq!(outcomes(&merged), all);
    crate::summary_schema::assert_valid(&validator, &merged);
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(merged.join("summary.json")).unwrap())
            .unwrap();
    let svc03 = summary["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|task| task["name"] == "fleet-svc-03")
        .unwrap();
    assert_eq!(
        svc03["earlier_runs"].as_array().unwrap().len(),
        1,
        "{svc03}"
    );
    assert_eq!(
        svc03["artifacts_dir"].as_str().unwrap(),
        merged.join("fleet-svc-03").to_str().unwrap()
    );
}

#[test]
fn two_tasks_cloning_into_one_path_are_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("fleet.yaml");
    std::fs::write(
        &spec,
        "version: 1\nname: t-${{ matrix.id }}\nmatrix:\n  - { id: a }\n  - { id: b }\nprompt: p\nrepo: { url: \"file:///nonexistent/repo.git\", path: checkouts }\nmodel: { provider: script, script: [ { text: done } ] }\nisolation: copy\n",
    )
    .unwrap();
    let (code, printed) = run(&spec, &dir.path().join("out"), &["--jobs", "2"]);
    assert_eq!(code, 2, "{printed}");
    assert!(
        printed.contains("tasks t-a and t-b clone their repositories into"),
        "{printed}"
    );
    assert!(!dir.path().join("out/summary.json").exists());
}
