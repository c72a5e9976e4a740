//! `drover exec` with the defaults file of its workspace (`drover.yaml`): merged into
//! the spec the flags make by the rules of a spec file (a default deny is a floor under
//! the flags' allow list; a default limit applies unless a flag sets it) only with
//! `--defaults`: without it the workspace's file (often the repository under test's)
//! chooses nothing.

use crate::common;

use std::path::Path;
use std::process::Output;

use serde_json::Value;

use common::{drover_without_proxy, events, summary, transcript};

/// The workspace's defaults: a scripted model that asks to delete notes.txt, then to
/// list the workspace twice, then answers; `rm` denied; one turn at most; no sandbox
/// (the rule, not the sandbox, is what stops `rm`).
const DEFAULTS: &str = r#"version: 1
model:
  provider: script
  script:
    - tool_calls: [{ name: Bash, input: { command: "rm notes.txt" } }]
    - tool_calls: [{ name: Bash, input: { command: "ls" } }]
    - tool_calls: [{ name: Bash, input: { command: "ls" } }]
    - text: done
permissions:
  deny: ["Bash(rm *)"]
limits:
  max_turns: 1
sandbox: off
"#;

/// `dir/ws` holding notes.txt and the defaults.
fn workspace(dir: &Path) {
    std::fs::create_dir_all(dir.join("ws")).unwrap();
    std::fs::write(dir.join("ws/notes.txt"), "keep me\n").unwrap();
    std::fs::write(dir.join("ws/drover.yaml"), DEFAULTS).unwrap();
}

/// `drover exec ARGS` from `dir`, with no provider key in the environment: the model
/// is the defaults file's.
fn exec_in(dir: &Path, args: &[&str]) -> Output {
    drover_without_proxy()
        .current_dir(dir)
        .arg("exec")
        .args(args)
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Each Bash call's command and the decision on it.
fn bash_decisions(lines: &[Value]) -> Vec<(String, String)> {
    let commands: Vec<(Value, String)> = events(lines, "tool_call")
        .iter()
        .map(|e| {
            (
                e["id"].clone(),
                e["input"]["command"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            )
        })
        .collect();
    events(lines, "permission")
        .iter()
        .map(|e| {
            let command = commands
                .iter()
                .find(|(id, _)| *id == e["tool_use_id"])
                .map(|(_, command)| command.clone())
                .unwrap_or_default();
            (
                command,
                e["decision"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

#[test]
fn a_default_deny_holds_under_the_flags_allow_and_a_default_turn_limit_applies() {
    let dir = tempfile::tempdir().unwrap();
    workspace(dir.path());
    let output = exec_in(
        dir.path(),
        &[
            "tidy up",
            "--allow",
            "Bash(*)",
            "--workspace",
            "ws",
            "--defaults",
            "--artifacts",
            "out",
        ],
    );
    // One turn (the default's max_turns): the task stops there, failed.
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("with the defaults of ws/drover.yaml"),
        "{}",
        stderr(&output)
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("ws/notes.txt")).unwrap(),
        "keep me\n",
        "Bash(*) from the flag cannot run what the defaults deny"
    );
    let lines = transcript(&dir.path().join("out/exec/transcript.jsonl"));
    assert_eq!(
        bash_decisions(&lines),
        [("rm notes.txt".to_string(), "deny".to_string())]
    );
    let denied = events(&lines, "permission");
    assert_eq!(denied[0]["rule"], "Bash(rm *)");
    let start = &lines[0];
    assert_eq!(start["provider"], "script");
    assert_eq!(start["max_turns"], 1);
    assert_eq!(start["defaults"]["yaml"], DEFAULTS);
    let report = summary(&dir.path().join("out"));
    assert_eq!(report["tasks"][0]["reason"], "max_turns");

    // --max-turns wins over the default: the task runs to its answer, `ls` allowed by
    // the flag's Bash(*), `rm` still denied.
    let output = exec_in(
        dir.path(),
        &[
            "tidy up",
            "--allow",
            "Bash(*)",
            "--workspace",
            "ws",
            "--defaults",
            "--max-turns",
            "5",
            "--artifacts",
            "out2",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "done");
    let lines = transcript(&dir.path().join("out2/exec/transcript.jsonl"));
    assert_eq!(lines[0]["max_turns"], 5);
    assert_eq!(
        bash_decisions(&lines),
        [
            ("rm notes.txt".to_string(), "deny".to_string()),
            ("ls".to_string(), "allow".to_string()),
            ("ls".to_string(), "allow".to_string()),
        ]
    );
    assert!(dir.path().join("ws/notes.txt").exists());
}

#[test]
fn without_defaults_the_file_is_ignored_and_a_bad_one_or_one_linked_from_outside_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    workspace(dir.path());
    // Without --defaults the file chooses nothing: there is no model, and exec asks for one.
    let output = exec_in(
        dir.path(),
        &["tidy up", "--allow", "Read", "--workspace", "ws"],
    );
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("drover exec needs a model"),
        "{}",
        stderr(&output)
    );
    assert!(!stderr(&output).contains("with the defaults of"));
    let printed = exec_in(
        dir.path(),
        &[
            "tidy up",
            "--workspace",
            "ws",
            "--print-spec",
            "--provider",
            "anthropic",
        ],
    );
    assert!(String::from_utf8_lossy(&printed.stdout).contains("sandbox: on"));

    std::fs::write(
        dir.path().join("ws/drover.yaml"),
        "version: 1\nprompt: everyone\nlimits: { max_turns: 0 }\n",
    )
    .unwrap();
    let output = exec_in(dir.path(), &["tidy up", "--workspace", "ws", "--defaults"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(
        err.contains("ws/drover.yaml:2:1: unknown field `prompt`"),
        "{err}"
    );
    assert!(
        err.contains("ws/drover.yaml:3:22: limits.max_turns must be at least 1"),
        "{err}"
    );
    assert!(err.contains("leave out --defaults"), "{err}");
    assert!(!dir.path().join("out").exists());

    // A drover.yaml that links out of the workspace is refused before it is read.
    std::fs::write(dir.path().join("elsewhere.yaml"), DEFAULTS).unwrap();
    std::fs::remove_file(dir.path().join("ws/drover.yaml")).unwrap();
    std::os::unix::fs::symlink(
        dir.path().join("elsewhere.yaml"),
        dir.path().join("ws/drover.yaml"),
    )
    .unwrap();
    let output = exec_in(dir.path(), &["tidy up", "--workspace", "ws", "--defaults"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output)
            .contains("ws/drover.yaml: the defaults file is a symbolic link out of the workspace"),
        "{}",
        stderr(&output)
    );
}
