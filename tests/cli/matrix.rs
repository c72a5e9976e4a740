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
fn fleet() -> tempfile::TempDir {
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

fn run(dir: &Path, out: &str, args: &[&str]) -> Output {
    drover()
        .current_dir(dir)
        .arg("run")
        .args(["specs/inline.yaml", "specs/from.yaml", "--artifacts", out])
        .args(args)
        .output()
        .unwrap()
}

fn said(output: &Output) -> String {
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

#[test]
fn a_stopped_task_of_a_matrix_resumes_without_its_matrix_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    write_spec(
        dir.path(),
        "list.json",
        "[{\"name\": \"one\"}, {\"name\": \"two\"}]",
    );
    let spec = write_spec(
        dir.path(),
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
    let output = common::run_spec_with(&spec, &dir.path().join("out"), &["--only", "w-two"]);
    assert_eq!(output.status.code(), Some(1), "{}", said(&output));
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

/// The attacker's shapes of issue 37, each a check of a task whose value tries to run
/// `touch INJECTED`: a heredoc, a comment, an apostrophe in a comment before a quoted
/// reference, backticks, `$'…'`. The command's text holds drover's `"${DROVER_MATRIX_x}"`,
/// never the value, so none runs; the value reaches setup and checks intact, in their
/// environment, and not the agent's commands.
const PROBES: &str = r#"version: 1
name: probe-${{ matrix.id }}
matrix:
  - id: quote
    x: "'; touch @OUT@/INJECTED #"
  - id: subst
    x: "$(touch @OUT@/INJECTED)`touch @OUT@/INJECTED`"
  - id: heredoc
    x: "a\nEOF\ntouch @OUT@/INJECTED\ncat <<EOF"
  - id: newline
    x: "x\"\ntouch @OUT@/INJECTED\n#'"
prompt: Look at ${{ matrix.id }}.
workspace: ../ws
isolation: copy
sandbox: off
model:
  provider: script
  script:
    - tool_calls: [ { name: Bash, input: { command: 'env > agent-env' } } ]
    - text: done
permissions:
  allow: [Bash]
setup:
  - name: keep
    run: printf '%s' ${{ matrix.x }} > @OUT@/setup-${{ matrix.id }}
checks:
  - name: heredoc
    run: |
      cat <<EOF > /dev/null
      ${{ matrix.x }}
      EOF
  - name: comment
    run: "true # ${{ matrix.x }}"
  - name: apostrophe-in-comment
    run: |
      # it's a trap
      echo '${{ matrix.x }}' > /dev/null
  - name: backticks
    run: echo `printf '%s' ${{ matrix.x }}` > /dev/null
  - name: dollar-quote
    run: echo $'\'' x' ${{ matrix.x }} ' > /dev/null
  - name: exact
    run: printf '%s' ${{ matrix.x }} > @OUT@/check-${{ matrix.id }}
"#;

#[test]
fn no_value_runs_as_code_in_any_shell_context_and_setup_and_checks_get_it_intact() {
    let dir = tempfile::tempdir().unwrap();
    let marks = dir.path().join("marks");
    std::fs::create_dir(&marks).unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    let specs = dir.path().join("specs");
    std::fs::create_dir(&specs).unwrap();
    let text = PROBES.replace("@OUT@", marks.to_str().unwrap());
    let spec = write_spec(&specs, "probes.yaml", &text);
    let output = common::run_spec(&spec, &dir.path().join("out"));
    assert_eq!(output.status.code(), Some(0), "{}", said(&output));
    assert!(!marks.join("INJECTED").exists(), "a value ran as code");
    let expected = [
        ("quote", format!("'; touch {}/INJECTED #", marks.display())),
        (
            "subst",
            format!("$(touch {0}/INJECTED)`touch {0}/INJECTED`", marks.display()),
        ),
        (
            "heredoc",
            format!("a\nEOF\ntouch {}/INJECTED\ncat <<EOF", marks.display()),
        ),
        (
            "newline",
            format!("x\"\ntouch {}/INJECTED\n#'", marks.display()),
        ),
    ];
    for (id, value) in &expected {
        for phase in ["setup", "check"] {
            let got = std::fs::read_to_string(marks.join(format!("{phase}-{id}"))).unwrap();
            assert_eq!(&got, value, "{phase} of {id}");
        }
        // The report shows the command as it ran: drover's variable, not the value.
        let lines = transcript(&dir.path().join(format!("out/probe-{id}/transcript.jsonl")));
        let exact = events(&lines, "check")
            .into_iter()
            .find(|check| check["name"] == "exact")
            .cloned()
            .unwrap();
        assert_eq!(exact["passed"], true, "{exact:?}");
    }
    // The agent's command wrote its environment into the workspace: no matrix variable.
    let diff = std::fs::read_to_string(dir.path().join("out/probe-quote/diff.patch")).unwrap();
    assert!(diff.contains("+PATH="), "{diff}");
    assert!(!diff.contains("DROVER_MATRIX_"), "{diff}");
}

/// `drover validate` on a spec of one probe: exit 2, and what it says.
fn refused(dir: &Path, name: &str, text: &str) -> String {
    let spec = write_spec(dir, name, text);
    let output = drover().arg("validate").arg(&spec).output().unwrap();
    assert_eq!(output.status.code(), Some(2), "{name}: {}", said(&output));
    said(&output)
}

#[test]
fn validate_refuses_each_probe_at_its_place_saying_what_to_write() {
    let dir = tempfile::tempdir().unwrap();
    let head = "version: 1\nmodel: { provider: script, script: [ { text: done } ] }\nprompt: p\n";
    let one = |body: &str| format!("{head}name: t-${{{{ matrix.a }}}}\n{body}");
    let cases: Vec<(&str, String, Vec<&str>)> = vec![
        (
            "backslash.yaml",
            one("matrix: [ { a: x } ]\nchecks:\n  - name: c\n    run: echo \\${{ matrix.a }}\n"),
            vec!["backslash.yaml:8:", "follows a `\\`"],
        ),
        (
            "quoted.yaml",
            one(
                "matrix: [ { a: x } ]\nchecks:\n  - name: c\n    run: |\n      cd x\n      echo \"${{ matrix.a }}\"\n",
            ),
            vec!["quoted.yaml:10:13:", "inside quotes"],
        ),
        (
            "absolute.yaml",
            one("matrix: [ { a: x, dir: /etc } ]\nworkspace: ${{ matrix.dir }}\n"),
            vec!["absolute.yaml:6:", "\"/etc\"", "relative path without `..`"],
        ),
        (
            "parent.yaml",
            one("matrix: [ { a: x, dir: ../../etc } ]\nworkspace: ws/${{ matrix.dir }}\n"),
            vec!["\"../../etc\"", "relative path without `..`"],
        ),
        (
            "norway.yaml",
            one("matrix: [ { a: x, country: NO } ]\n"),
            vec!["norway.yaml:5:", "plain word NO", "quote it"],
        ),
        (
            "tilde.yaml",
            one("matrix: [ { a: x, b: ~ } ]\n"),
            vec!["tilde.yaml:5:", "quote it"],
        ),
        (
            "nul.yaml",
            one("matrix: [ { a: x, b: \"one\\0two\" } ]\n"),
            vec!["nul.yaml:5:", "NUL"],
        ),
        (
            "huge.yaml",
            one(&format!(
                "matrix: [ {{ a: x, b: {} }} ]\n",
                "y".repeat(33_000)
            )),
            vec!["huge.yaml:5:", "33000 bytes, more than the 32768"],
        ),
        (
            "case.yaml",
            one("matrix: [ { a: Billing }, { a: billing } ]\n"),
            vec!["case.yaml:4:", "differ only in case"],
        ),
        (
            "keys.yaml",
            one("matrix: [ { a: x, b-c: 1, b_c: 2 } ]\n"),
            vec!["keys.yaml:5:", "DROVER_MATRIX_b_c"],
        ),
        (
            "elsewhere.yaml",
            one("matrix: [ { a: x } ]\nenv: { pass: [\"${{ matrix.a }}\"] }\n"),
            vec!["env.pass[0]: ${{ matrix.a }} is not substituted here"],
        ),
        (
            "from-syntax.yaml",
            one("matrix: { from: broken.yaml }\n"),
            vec!["from-syntax.yaml:5:17: matrix.from: ", "broken.yaml:"],
        ),
        (
            "from-dir.yaml",
            one("matrix: { from: adir }\n"),
            vec!["from-dir.yaml:5:17: matrix.from: ", "is a directory"],
        ),
    ];
    std::fs::write(dir.path().join("broken.yaml"), "- { a: x\n").unwrap();
    std::fs::create_dir(dir.path().join("adir")).unwrap();
    for (name, text, says) in cases {
        let said = refused(dir.path(), name, &text);
        for part in says {
            assert!(said.contains(part), "{name}: {part:?} not in {said}");
        }
    }
}

/// The recording at `from` with its `run_start`'s matrix entry changed by `edit`,
/// written (with a valid hash chain) to `to`.
fn forged(from: &Path, to: &Path, edit: impl Fn(&mut Value)) {
    let mut lines = transcript(from);
    edit(&mut lines[0]["matrix"]);
    std::fs::write(to, rechained(&lines)).unwrap();
}

#[test]
fn a_forged_matrix_entry_is_refused_by_replay_and_resume() {
    let dir = fleet();
    let output = run(
        dir.path(),
        "out",
        &["--only", "bump-billing", "--only", "svc-alpha"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", said(&output));
    let replay = |args: &[&str]| {
        drover()
            .current_dir(dir.path())
            .arg("replay")
            .args(args)
            .output()
            .unwrap()
    };
    // The spec the user names holds the entry: a recording's other value is refused.
    forged(
        &dir.path().join("out/bump-billing/transcript.jsonl"),
        &dir.path().join("forged.jsonl"),
        |entry| entry["arg"] = "$(touch INJECTED)".into(),
    );
    let output = replay(&[
        "forged.jsonl",
        "--spec",
        "specs/inline.yaml",
        "--checks",
        "--artifacts",
        "r1",
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", said(&output));
    assert!(
        said(&output).contains("the recording's matrix entry is not the spec's")
            && said(&output).contains("differs in `arg`"),
        "{}",
        said(&output)
    );
    // The recorded text alone: the entry must make the recorded task.
    forged(
        &dir.path().join("out/svc-alpha/transcript.jsonl"),
        &dir.path().join("renamed.jsonl"),
        |entry| entry["service"] = "beta".into(),
    );
    let output = replay(&["renamed.jsonl", "--artifacts", "r2"]);
    assert_eq!(output.status.code(), Some(2), "{}", said(&output));
    assert!(
        said(&output)
            .contains("makes the task \"svc-beta\", not the recording's task \"svc-alpha\""),
        "{}",
        said(&output)
    );
    // ... and be an entry a matrix can hold.
    forged(
        &dir.path().join("out/svc-alpha/transcript.jsonl"),
        &dir.path().join("nul.jsonl"),
        |entry| entry["port"] = "80\u{0}80".into(),
    );
    let output = replay(&["nul.jsonl", "--artifacts", "r3"]);
    assert_eq!(output.status.code(), Some(2), "{}", said(&output));
    assert!(said(&output).contains("NUL"), "{}", said(&output));
    assert!(!dir.path().join("ws/INJECTED").exists());
}

#[test]
fn resume_takes_the_spec_files_entry_and_refuses_a_forged_one() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    write_spec(
        dir.path(),
        "list.json",
        "[{\"name\": \"one\"}, {\"name\": \"two\"}]",
    );
    let spec = write_spec(
        dir.path(),
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
    let output = common::run_spec_with(&spec, &dir.path().join("out"), &["--only", "w-two"]);
    assert_eq!(output.status.code(), Some(1), "{}", said(&output));
    let recording = dir.path().join("out/w-two/transcript.jsonl");
    let honest = std::fs::read_to_string(&recording).unwrap();
    forged(&recording, &recording, |entry| {
        entry["name"] = "two".into();
        entry["extra"] = "x".into();
    });
    let output = resume_with(&dir.path().join("out/w-two"), &["--max-turns", "3"]);
    assert_eq!(output.status.code(), Some(2), "{}", said(&output));
    assert!(
        said(&output).contains("the recording's matrix entry is not the spec's")
            && said(&output).contains("differs in `extra`"),
        "{}",
        said(&output)
    );
    // The honest recording resumes, its task made of the file's entry.
    std::fs::write(&recording, honest).unwrap();
    let output = resume_with(&dir.path().join("out/w-two"), &["--max-turns", "3"]);
    assert_eq!(output.status.code(), Some(0), "{}", said(&output));
}
