//! `matrix:` against the attacks of issue 37: no value is shell text in any context of
//! a `run:`, what load refuses (each at its place), and a recording's matrix entry that
//! is not the spec's, or does not make its task, refused by replay and resume.

use crate::common;
use crate::matrix::{fleet, run, said};

use std::path::Path;

use common::{drover, events, rechained, resume_with, transcript, write_spec};
use serde_json::Value;

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
    crate::matrix::stopped_matrix_task(dir.path());
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
