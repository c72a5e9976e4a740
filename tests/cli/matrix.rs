//! `matrix:` end to end: one spec made into one task per entry, inline or from a file,
//! each run, listed, indexed, replayed and resumed as a task of its own, the values in
//! its name, prompt and checks (a value with a space and `;` one argument of a check).

use crate::common;
use crate::mock_server;
use crate::providers::{anthropic_end, anthropic_start, anthropic_text};

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;

use common::{drover, events, rechained, resume_with, transcript, write_spec};
use mock_server::{MockServer, Reply};
use serde_json::Value;

const INLINE: &str = "version: 1
name: bump-${{ matrix.service }}
matrix:
  - { service: billing, arg: \"a b; touch INJECTED\" }
  - { service: search, arg: \"it's $(touch INJECTED)\" }
  - { service: broken, arg: \"no\" }
prompt: Bump serde in services/${{ matrix.service }}.
workspace: ../ws
isolation: copy
sandbox: off
model: { provider: script, script: [ { text: done } ] }
checks:
  - name: one-word-${{ matrix.service }}
    run: sh -c 'test \"$#\" -eq 1 && test \"$1\" != no' x ${{ matrix.arg }}
";

const FROM: &str = "version: 1
name: svc-${{ matrix.service }}
matrix: { from: services.yaml }
prompt: Look at ${{ matrix.service }}.
workspace: ../ws
isolation: copy
sandbox: off
model: { provider: script, script: [ { text: done } ] }
";

const SERVICES: &str = "- service: alpha\n  port: 8080\n- service: beta\n  port: 9090\n";

/// The specs (`specs/inline.yaml`, `specs/from.yaml` and its `services.yaml`) and a
/// workspace (`ws`).
pub(crate) fn fleet() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    std::fs::write(dir.path().join("ws/README"), "fleet\n").unwrap();
    let specs = dir.path().join("specs");
    std::fs::create_dir(&specs).unwrap();
    write_spec(&specs, "inline.yaml", INLINE);
    write_spec(&specs, "from.yaml", FROM);
    write_spec(&specs, "services.yaml", SERVICES);
    dir
}

pub(crate) fn run(dir: &Path, out: &str, args: &[&str]) -> Output {
    drover()
        .current_dir(dir)
        .arg("run")
        .args(["specs/inline.yaml", "specs/from.yaml", "--artifacts", out])
        .args(args)
        .output()
        .unwrap()
}

pub(crate) fn said(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Task name → status, from an artifacts directory's summary.json.
fn statuses(artifacts: &Path) -> BTreeMap<String, String> {
    let summary = common::summary(artifacts);
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

fn run_start(task: &Path) -> Value {
    let lines = transcript(&task.join("transcript.jsonl"));
    events(&lines, "run_start")[0].clone()
}

#[test]
fn each_entry_is_a_task_with_its_own_name_values_and_checks() {
    let dir = fleet();
    let output = run(dir.path(), "out", &[]);
    assert_eq!(output.status.code(), Some(1), "{}", said(&output));
    let out = dir.path().join("out");
    let expected: BTreeMap<String, String> = [
        ("bump-billing", "passed"),
        ("bump-broken", "failed"),
        ("bump-search", "passed"),
        ("svc-alpha", "passed"),
        ("svc-beta", "passed"),
    ]
    .into_iter()
    .map(|(name, status)| (name.to_string(), status.to_string()))
    .collect();
    assert_eq!(statuses(&out), expected);
    // Each task records the entry it was made of, and checks named by its values.
    let start = run_start(&out.join("bump-billing"));
    assert_eq!(start["task"], "bump-billing");
    assert_eq!(start["matrix"]["arg"], "a b; touch INJECTED");
    assert_eq!(start["spec_yaml"], INLINE);
    let start = run_start(&out.join("svc-beta"));
    assert_eq!(start["matrix"]["port"], "9090");
    let lines = transcript(&out.join("bump-search/transcript.jsonl"));
    let checks = events(&lines, "check");
    assert_eq!(checks[0]["name"], "one-word-search");
    assert_eq!(checks[0]["passed"], true, "{:?}", checks[0]);
    // The value was one quoted word: nothing in it ran.
    let junit = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    assert!(junit.contains("bump-billing"), "{junit}");
    assert!(!dir.path().join("ws/INJECTED").exists());
}

#[test]
fn plan_lists_each_task_with_its_values_and_task_index_runs_each_once() {
    let dir = fleet();
    let output = drover()
        .current_dir(dir.path())
        .args(["plan", "specs/inline.yaml", "specs/from.yaml", "--json"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", said(&output));
    let plan: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(plan["count"], 5);
    let names: Vec<&str> = plan["names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|name| name.as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "bump-billing",
            "bump-broken",
            "bump-search",
            "svc-alpha",
            "svc-beta"
        ]
    );
    let alpha = &plan["tasks"][3];
    assert_eq!(alpha["index"], 3);
    assert_eq!(alpha["spec"], "specs/from.yaml");
    assert_eq!(
        alpha["matrix"],
        serde_json::json!({"service": "alpha", "port": "8080"})
    );

    let whole = run(dir.path(), "whole", &[]);
    assert_eq!(whole.status.code(), Some(1), "{}", said(&whole));
    let whole = statuses(&dir.path().join("whole"));
    let mut together = BTreeMap::new();
    for (index, name) in names.iter().enumerate() {
        let out = format!("item{index}");
        let output = run(dir.path(), &out, &["--task-index", &index.to_string()]);
        let ran = statuses(&dir.path().join(&out));
        assert_eq!(ran.keys().collect::<Vec<_>>(), [name], "{}", said(&output));
        assert!(
            dir.path()
                .join(&out)
                .join(name)
                .join("result.json")
                .is_file()
        );
        together.extend(ran);
    }
    assert_eq!(together, whole);
    // --only takes an expanded name.
    let output = run(dir.path(), "only", &["--only", "svc-beta"]);
    assert_eq!(output.status.code(), Some(0), "{}", said(&output));
    assert_eq!(statuses(&dir.path().join("only")).len(), 1);
}

#[test]
fn a_task_replays_from_its_recording_after_the_matrix_file_is_gone() {
    let dir = fleet();
    let output = run(
        dir.path(),
        "out",
        &["--only", "svc-alpha", "--only", "bump-billing"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", said(&output));
    std::fs::remove_file(dir.path().join("specs/services.yaml")).unwrap();
    for task in ["svc-alpha", "bump-billing"] {
        let output = drover()
            .current_dir(dir.path())
            .arg("replay")
            .arg(format!("out/{task}/transcript.jsonl"))
            .args(["--checks", "--artifacts", &format!("replayed-{task}")])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0), "{task}: {}", said(&output));
        let replayed = statuses(&dir.path().join(format!("replayed-{task}")));
        assert_eq!(replayed.keys().collect::<Vec<_>>(), [task]);
    }
    // The spec file (its text unchanged) names the recording's task with the recorded
    // entry too: the matrix file is not read.
    let output = drover()
        .current_dir(dir.path())
        .args([
            "replay",
            "out/svc-alpha/transcript.jsonl",
            "--spec",
            "specs/from.yaml",
        ])
        .args(["--artifacts", "replayed-spec"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", said(&output));
    // A recording of a matrix spec without its entry names no task: refused.
    let mut lines = transcript(&dir.path().join("out/svc-alpha/transcript.jsonl"));
    lines[0].as_object_mut().unwrap().remove("matrix");
    let edited = dir.path().join("edited.jsonl");
    std::fs::write(&edited, rechained(&lines)).unwrap();
    let output = drover()
        .current_dir(dir.path())
        .args(["replay", "edited.jsonl", "--artifacts", "refused"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", said(&output));
    assert!(
        said(&output).contains("the recording names no matrix entry"),
        "{}",
        said(&output)
    );
}

/// In `dir`: a matrix spec (`task.yaml`, entries from `list.json`: one, two) whose task
/// `w-two` is run with one turn, too few, so it stops at its turn limit (exit 1) with
/// its artifacts in `dir/out/w-two`: a task to resume.
pub(crate) fn stopped_matrix_task(dir: &Path) {
    std::fs::create_dir(dir.join("ws")).unwrap();
    write_spec(
        dir,
        "list.json",
        "[{\"name\": \"one\"}, {\"name\": \"two\"}]",
    );
    let spec = write_spec(
        dir,
        "task.yaml",
        "version: 1
name: w-${{ matrix.name }}
matrix: { from: list.json }
prompt: Write ${{ matrix.name }}.txt.
workspace: ws
isolation: copy
sandbox: off
limits: { max_turns: 1 }
model:
  provider: script
  script:
    - tool_calls: [ { name: Bash, input: { command: 'echo hi >> out.txt' } } ]
    - text: done
permissions:
  allow: [Bash]
",
    );
    let output = common::run_spec_with(&spec, &dir.join("out"), &["--only", "w-two"]);
    assert_eq!(output.status.code(), Some(1), "{}", said(&output));
}

#[test]
fn a_stopped_task_of_a_matrix_resumes_without_its_matrix_file() {
    let dir = tempfile::tempdir().unwrap();
    stopped_matrix_task(dir.path());
    std::fs::remove_file(dir.path().join("list.json")).unwrap();
    let task = dir.path().join("out/w-two");
    let output = resume_with(&task, &["--max-turns", "3"]);
    assert_eq!(output.status.code(), Some(0), "{}", said(&output));
    let lines = transcript(&task.join("transcript.jsonl"));
    assert_eq!(events(&lines, "resume").len(), 1);
    assert_eq!(
        lines.last().unwrap()["status"],
        "passed",
        "{:?}",
        lines.last()
    );
    let diff = std::fs::read_to_string(task.join("diff.patch")).unwrap();
    assert!(diff.contains("+hi"), "{diff}");
}

#[test]
fn the_model_is_sent_each_tasks_own_prompt() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    let reply = || {
        Reply::sse(
            &(anthropic_start(10, 0, 0)
                + &anthropic_text(0, "Done.")
                + &anthropic_end("end_turn", 5)),
        )
    };
    let server = MockServer::start(vec![reply(), reply(), reply()]);
    let spec = write_spec(
        dir.path(),
        "task.yaml",
        &format!(
            "version: 1
name: p-${{{{ matrix.dir }}}}
matrix:
  - {{ dir: a }}
  - {{ dir: b }}
  - {{ dir: c }}
prompt: \"Fix the tests in ${{{{ matrix.dir }}}}; it's $(not) ${{{{ matrix.other }}}} text.\"
workspace: ws
isolation: copy
sandbox: off
model:
  provider: anthropic
  name: claude-sonnet-4-5
  base_url: {}
  api_key_env: DROVER_TEST_MATRIX_KEY
  retry: {{ max_retries: 0 }}
",
            server.base_url
        ),
    );
    let output = common::drover_without_proxy()
        .env("DROVER_TEST_MATRIX_KEY", "key")
        .arg("run")
        .arg(&spec)
        .arg("--artifacts")
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    // `${{ matrix.other }}` is a key no entry has: refused before any task runs.
    assert_eq!(output.status.code(), Some(2), "{}", said(&output));
    assert!(
        said(&output).contains("has no key `other`"),
        "{}",
        said(&output)
    );
    assert!(server.requests().is_empty());
    let fixed = std::fs::read_to_string(&spec)
        .unwrap()
        .replace(" ${{ matrix.other }}", "");
    std::fs::write(&spec, fixed).unwrap();
    let output = common::drover_without_proxy()
        .env("DROVER_TEST_MATRIX_KEY", "key")
        .arg("run")
        .arg(&spec)
        .arg("--artifacts")
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", said(&output));
    let mut prompts: Vec<String> = server
        .requests()
        .iter()
        .map(|request| request.json()["messages"][0]["content"].to_string())
        .collect();
    prompts.sort();
    for (prompt, dir) in prompts.iter().zip(["a", "b", "c"]) {
        assert!(
            prompt.contains(&format!("Fix the tests in {dir}; it's $(not) text.")),
            "{prompt}"
        );
    }
}
