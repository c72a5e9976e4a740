//! `drover.yaml` beside specs: the model, permissions, limits, sandbox and isolation
//! every spec of its directory inherits, the spec's own value winning; a deny list that
//! is a floor; errors at the defaults file's own line and column; recorded in `run_start`
//! so a replay needs no defaults file.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

use common::{drover, events, summary, transcript, write_spec};

/// The defaults of the specs in `tasks/`: a scripted model of three tool turns (reading
/// notes.txt, then secret.txt, then a Glob) and an answer, a deny rule for secret.txt,
/// two turns at most, and a scratch copy with no sandbox.
const DEFAULTS: &str = r#"version: 1
model:
  provider: script
  script:
    - tool_calls: [{ name: Read, input: { file_path: notes.txt } }]
    - tool_calls: [{ name: Read, input: { file_path: secret.txt } }]
    - tool_calls: [{ name: Glob, input: { pattern: "*.txt" } }]
    - text: done
permissions:
  allow: [Read, Glob]
  deny: ["Read(secret.txt)"]
limits:
  max_turns: 2
  timeout: 5m
sandbox: off
isolation: copy
"#;

/// `dir/tasks/` with the defaults, `capped.yaml` (no limits of its own) and
/// `longer.yaml` (ten turns, and an allow list and an empty deny list of its own), and
/// their workspace `dir/ws`.
fn tasks(dir: &Path) -> PathBuf {
    let tasks = dir.join("tasks");
    std::fs::create_dir_all(&tasks).unwrap();
    std::fs::create_dir_all(dir.join("ws")).unwrap();
    std::fs::write(dir.join("ws/notes.txt"), "notes\n").unwrap();
    std::fs::write(dir.join("ws/secret.txt"), "hunter2\n").unwrap();
    write_spec(&tasks, "drover.yaml", DEFAULTS);
    write_spec(
        &tasks,
        "capped.yaml",
        "version: 1\nname: capped\nprompt: p\nworkspace: ../ws\n",
    );
    write_spec(
        &tasks,
        "longer.yaml",
        "version: 1\nname: longer\nprompt: p\nworkspace: ../ws\npermissions:\n  allow: [Read, Glob]\n  deny: []\nlimits:\n  max_turns: 10\n",
    );
    tasks
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// `drover ARGS…` from `dir`.
fn drover_in(dir: &Path, args: &[&str]) -> Output {
    drover().current_dir(dir).args(args).output().unwrap()
}

/// The permission events of a transcript: (tool_use_id, decision, rule).
fn decisions(lines: &[Value]) -> Vec<(Value, Value, Value)> {
    events(lines, "permission")
        .iter()
        .map(|e| {
            (
                e["tool_use_id"].clone(),
                e["decision"].clone(),
                e["rule"].clone(),
            )
        })
        .collect()
}

#[test]
fn the_specs_of_a_directory_run_with_its_defaults_and_their_own_limits() {
    let dir = tempfile::tempdir().unwrap();
    tasks(dir.path());
    let output = drover_in(dir.path(), &["run", "tasks", "--artifacts", "out"]);
    // capped stops at the default's two turns: a failed task.
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let report = summary(&dir.path().join("out"));
    let mut tasks: Vec<(String, String)> = report["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_string(),
                t["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    tasks.sort();
    // drover.yaml is no task of the run.
    assert_eq!(
        tasks,
        vec![
            ("capped".to_string(), "max_turns".to_string()),
            ("longer".to_string(), "end_turn".to_string())
        ]
    );
    let drover_yaml = dir.path().join("tasks/drover.yaml").canonicalize().unwrap();
    let start_of = |task: &str| {
        let lines = transcript(&dir.path().join(format!("out/{task}/transcript.jsonl")));
        lines[0].clone()
    };
    let (capped, longer) = (start_of("capped"), start_of("longer"));
    // Neither spec has a model: both ran the default's scripted one.
    for start in [&capped, &longer] {
        assert_eq!(start["provider"], "script");
        assert_eq!(start["timeout"], "5m", "the default's timeout applies");
        assert_eq!(start["defaults"]["path"], drover_yaml.display().to_string());
        assert_eq!(start["defaults"]["yaml"], DEFAULTS);
        assert_eq!(start["defaults"]["sha256"].as_str().unwrap().len(), 64);
    }
    assert_eq!(capped["max_turns"], 2, "the default's max_turns");
    assert_eq!(longer["max_turns"], 10, "the spec's own max_turns wins");
    // The spec's own recorded text is the file's: the defaults are recorded beside it.
    assert!(!longer["spec_yaml"].as_str().unwrap().contains("model"));

    // The default's deny stands though longer.yaml allows Read and writes `deny: []`.
    let lines = transcript(&dir.path().join("out/longer/transcript.jsonl"));
    let denied: Vec<&Value> = events(&lines, "permission")
        .into_iter()
        .filter(|e| e["decision"] == "deny")
        .collect();
    assert_eq!(denied.len(), 1, "{denied:?}");
    assert_eq!(denied[0]["rule"], "Read(secret.txt)");
    let results = events(&lines, "tool_result");
    assert!(
        results
            .iter()
            .all(|r| !r["content"].to_string().contains("hunter2")),
        "{results:?}"
    );
}

#[test]
fn policy_check_and_tools_take_the_defaults_too() {
    let dir = tempfile::tempdir().unwrap();
    let tasks = tasks(dir.path());
    let spec = tasks.join("longer.yaml");
    let check = |input: &str| {
        drover()
            .args([
                "policy", "check", "--tool", "Read", "--input", input, "--spec",
            ])
            .arg(&spec)
            .output()
            .unwrap()
    };
    let denied = check(r#"{"file_path": "secret.txt"}"#);
    assert_eq!(denied.status.code(), Some(1), "{}", stderr(&denied));
    let answer: Value = serde_json::from_str(&stdout(&denied)).unwrap();
    assert_eq!(answer["decision"], "deny");
    assert_eq!(answer["rule"], "Read(secret.txt)");
    let allowed = check(r#"{"file_path": "notes.txt"}"#);
    assert_eq!(allowed.status.code(), Some(0), "{}", stderr(&allowed));

    let names = |spec: &Path| -> Vec<String> {
        let output = drover()
            .args(["tools", "--json", "--spec"])
            .arg(spec)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let tools: Value = serde_json::from_str(&stdout(&output)).unwrap();
        tools
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(names(&spec).contains(&"WebFetch".to_string()));
    std::fs::write(
        tasks.join("drover.yaml"),
        DEFAULTS.replace(
            "deny: [\"Read(secret.txt)\"]",
            "deny: [\"Read(secret.txt)\", WebFetch]",
        ),
    )
    .unwrap();
    assert!(!names(&spec).contains(&"WebFetch".to_string()));
}

#[test]
fn an_error_in_drover_yaml_is_reported_at_its_own_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let tasks = tasks(dir.path());
    let defaults = tasks.join("drover.yaml");
    let refused = |text: &str| {
        std::fs::write(&defaults, text).unwrap();
        let output = drover_in(dir.path(), &["validate", "tasks"]);
        assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
        let output_run = drover_in(dir.path(), &["run", "tasks", "--artifacts", "out"]);
        assert_eq!(output_run.status.code(), Some(2), "{}", stderr(&output_run));
        assert!(!dir.path().join("out/capped").exists());
        stderr(&output)
    };
    // A value the spec layer refuses.
    let error = refused(&DEFAULTS.replace("max_turns: 2", "max_turns: 0"));
    assert!(
        error.contains("tasks/drover.yaml:13:14: limits.max_turns must be at least 1"),
        "{error}"
    );
    assert_eq!(
        error.matches("max_turns must be").count(),
        1,
        "once: {error}"
    );
    // A rule the policy refuses, found while checking a spec that inherits it.
    let error = refused(&DEFAULTS.replace("\"Read(secret.txt)\"", "\"Read(secret.txt\""));
    assert!(error.contains("tasks/drover.yaml:11:10: "), "{error}");
    assert!(!error.contains("capped.yaml:11:10"), "{error}");
    // A key a defaults file does not hold.
    let error = refused(&format!("{DEFAULTS}checks: []\n"));
    assert!(
        error.contains("tasks/drover.yaml:17:1: unknown field `checks`"),
        "{error}"
    );
    // Two defaults files.
    std::fs::write(&defaults, DEFAULTS).unwrap();
    std::fs::create_dir(tasks.join(".drover")).unwrap();
    write_spec(&tasks, ".drover/defaults.yaml", "version: 1\n");
    let error = refused(DEFAULTS);
    assert!(error.contains("drover.yaml is there too"), "{error}");
}

#[test]
fn drover_yaml_is_never_run_as_a_task() {
    let dir = tempfile::tempdir().unwrap();
    tasks(dir.path());
    let output = drover_in(
        dir.path(),
        &["run", "tasks/drover.yaml", "--artifacts", "out"],
    );
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains(
            "tasks/drover.yaml:1:1: this is the defaults file of the specs in its directory"
        ),
        "{}",
        stderr(&output)
    );
    let output = drover_in(dir.path(), &["validate", "tasks"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        stdout(&output),
        "ok: tasks/capped.yaml (task capped)\nok: tasks/longer.yaml (task longer)\n"
    );
    assert!(
        !stderr(&output).contains("drover.yaml"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_replay_without_drover_yaml_makes_the_same_decisions() {
    let dir = tempfile::tempdir().unwrap();
    let tasks = tasks(dir.path());
    let output = drover_in(
        dir.path(),
        &["run", "tasks/longer.yaml", "--artifacts", "out"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let recorded = transcript(&dir.path().join("out/longer/transcript.jsonl"));
    std::fs::remove_file(tasks.join("drover.yaml")).unwrap();

    let output = drover_in(
        dir.path(),
        &[
            "replay",
            "--strict",
            "out/longer/transcript.jsonl",
            "--artifacts",
            "replayed",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let replayed = transcript(&dir.path().join("replayed/longer/transcript.jsonl"));
    assert_eq!(decisions(&replayed), decisions(&recorded));
    assert!(decisions(&recorded).iter().any(|(_, d, _)| d == "deny"));
    assert_eq!(replayed[0]["defaults"], recorded[0]["defaults"]);
    assert_eq!(replayed[0]["max_turns"], 10);

    // `--spec` vouches for files on disk: the defaults beside it must be the recorded.
    let with_spec = |out: &str| {
        drover_in(
            dir.path(),
            &[
                "replay",
                "out/longer/transcript.jsonl",
                "--spec",
                "tasks/longer.yaml",
                "--artifacts",
                out,
            ],
        )
    };
    let output = with_spec("again");
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("tasks/longer.yaml:1:1: missing field `model`"),
        "{}",
        stderr(&output)
    );
    write_spec(&tasks, "drover.yaml", &DEFAULTS.replace("5m", "6m"));
    let output = with_spec("again");
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("the defaults merged into it are not those"),
        "{}",
        stderr(&output)
    );
    write_spec(&tasks, "drover.yaml", DEFAULTS);
    let output = with_spec("again");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
}

#[test]
fn a_resume_needs_the_recorded_defaults_file_beside_the_spec() {
    let dir = tempfile::tempdir().unwrap();
    let tasks = tasks(dir.path());
    let output = drover_in(
        dir.path(),
        &["run", "tasks/capped.yaml", "--artifacts", "out"],
    );
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let resume = || drover_in(dir.path(), &["resume", "out/capped", "--max-turns", "6"]);
    std::fs::write(
        tasks.join("drover.yaml"),
        DEFAULTS.replace("timeout: 5m", "timeout: 6m"),
    )
    .unwrap();
    let refused = resume();
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        stderr(&refused).contains(
            "tasks/capped.yaml changed since the recorded run: the run used the defaults file"
        ),
        "{}",
        stderr(&refused)
    );
    std::fs::remove_file(tasks.join("drover.yaml")).unwrap();
    let refused = resume();
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        stderr(&refused).contains("capped.yaml:1:1: missing field `model`"),
        "{}",
        stderr(&refused)
    );
    write_spec(&tasks, "drover.yaml", DEFAULTS);
    let output = resume();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines = transcript(&dir.path().join("out/capped/transcript.jsonl"));
    assert_eq!(lines.last().unwrap()["reason"], "end_turn");
}

#[test]
fn validate_show_merged_names_where_each_setting_comes_from() {
    let dir = tempfile::tempdir().unwrap();
    tasks(dir.path());
    let output = drover_in(
        dir.path(),
        &["validate", "--show-merged", "tasks/longer.yaml"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let shown = stdout(&output);
    let lines: Vec<&str> = shown.lines().collect();
    assert_eq!(
        lines[0],
        "tasks/longer.yaml: task longer, with the defaults of tasks/drover.yaml"
    );
    let line = |start: &str| -> &str {
        lines
            .iter()
            .find(|line| line.trim_start().starts_with(start))
            .unwrap_or_else(|| panic!("no {start:?} in\n{shown}"))
    };
    let from = |start: &str, at: &str| {
        let found = line(start);
        assert!(found.ends_with(&format!("({at})")), "{found}\n{shown}");
    };
    from("name: longer", "tasks/longer.yaml:2:1");
    from("max_turns: 10", "tasks/longer.yaml:9:3");
    from("timeout: 5m", "tasks/drover.yaml:14:3");
    from("model:", "tasks/drover.yaml:2:1");
    from("provider: script", "tasks/drover.yaml:3:3");
    from("- \"Read(secret.txt)\"", "tasks/drover.yaml:11:10");
    from("allow:", "tasks/longer.yaml:6:3");
    from("sandbox: off", "tasks/drover.yaml:15:1");
    from("isolation: copy", "tasks/drover.yaml:16:1");
    assert_eq!(
        *lines.last().unwrap(),
        "ok: tasks/longer.yaml (task longer)"
    );
}
