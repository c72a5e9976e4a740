//! The Claude Code parity tools (MultiEdit, LS, TodoWrite, background Bash with
//! BashOutput and KillShell), end to end through `drover run` with a scripted model.

use crate::common;

use std::time::{Duration, Instant};

use common::{drover, events, transcript, write_spec};

const SPEC: &str = r#"version: 1
name: tools
prompt: Use the tools.
workspace: ws
model:
  provider: script
  script:
    - tool_calls:
        - name: TodoWrite
          input:
            todos:
              - { content: Rename the words, status: in_progress, activeForm: Renaming the words }
              - { content: Check the result, status: pending, activeForm: Checking the result }
        - { name: LS, input: { path: "." } }
        - { name: Read, input: { file_path: words.txt } }
    - tool_calls:
        - name: MultiEdit
          input:
            file_path: words.txt
            edits:
              - { old_string: alpha, new_string: ALPHA }
              - { old_string: gamma, new_string: GAMMA }
    - tool_calls:
        - { name: Bash, input: { command: "echo started; touch started.flag; sleep 30", run_in_background: true } }
        - { name: Bash, input: { command: "read -r pid _ < /proc/self/stat; echo $pid > left.pid; exec sleep 30", run_in_background: true } }
    - tool_calls:
        - { name: Bash, input: { command: "for i in $(seq 200); do [ -f started.flag ] && [ -s left.pid ] && break; sleep 0.05; done; sleep 0.2" } }
        - { name: BashOutput, input: { bash_id: bash_1 } }
    - tool_calls:
        - { name: KillShell, input: { shell_id: bash_1 } }
        - { name: BashOutput, input: { bash_id: bash_1 } }
        - { name: BashOutput, input: { bash_id: bash_7 } }
    - text: Done.
permissions:
  allow: [Bash, BashOutput, KillShell, TodoWrite, MultiEdit]
checks:
  - name: edited
    run: grep -q ALPHA words.txt && grep -q GAMMA words.txt
"#;

#[test]
fn multi_edit_ls_todo_write_and_background_shells_work_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(ws.join("sub")).unwrap();
    std::fs::write(ws.join("words.txt"), "alpha\nbeta\ngamma\n").unwrap();
    let spec = write_spec(dir.path(), "tools.yaml", SPEC);
    let artifacts = dir.path().join("out");

    let started = Instant::now();
    drover()
        .arg("run")
        .arg(&spec)
        .arg("--artifacts")
        .arg(&artifacts)
        .timeout(Duration::from_secs(60))
        .assert()
        .code(0);
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "background shells must not hold the run open"
    );

    let lines = transcript(&artifacts.join("tools/transcript.jsonl"));
    let results = events(&lines, "tool_result");
    let content = |i: usize| results[i]["content"].as_str().unwrap().to_string();
    let is_error = |i: usize| results[i]["is_error"].as_bool().unwrap();
    assert_eq!(results.len(), 11, "{results:#?}");

    // The final plan is in run_end and in the summary for people.
    let todos = lines.last().unwrap()["todos"].as_array().unwrap().clone();
    assert_eq!(todos.len(), 2);
    assert_eq!(todos[0]["activeForm"], "Renaming the words");
    let md = std::fs::read_to_string(artifacts.join("summary.md")).unwrap();
    assert!(md.contains("### `tools`: todo list"), "{md}");
    assert!(md.contains("Check the result"), "{md}");

    // TodoWrite
    assert!(!is_error(0), "{}", content(0));
    assert!(
        content(0).contains("[>] Rename the words"),
        "{}",
        content(0)
    );
    assert!(
        content(0).contains("[ ] Check the result"),
        "{}",
        content(0)
    );
    // LS
    assert_eq!(content(1), "./\nsub/\nwords.txt");
    // MultiEdit
    assert!(!is_error(3), "{}", content(3));
    assert!(content(3).contains("2 edits"), "{}", content(3));
    assert_eq!(
        std::fs::read_to_string(ws.join("words.txt")).unwrap(),
        "ALPHA\nbeta\nGAMMA\n"
    );
    // Bash in the background
    assert!(content(4).contains("id bash_1"), "{}", content(4));
    assert!(content(5).contains("id bash_2"), "{}", content(5));
    assert!(!is_error(6), "{}", content(6));
    // BashOutput while running, KillShell, BashOutput after the kill
    assert!(content(7).contains("bash_1 is running"), "{}", content(7));
    assert_eq!(
        content(8),
        "Killed shell bash_1 and every process it started."
    );
    assert!(content(9).contains("bash_1 was killed"), "{}", content(9));
    assert!(
        format!("{}{}", content(7), content(9)).contains("started"),
        "the output reached BashOutput: {} / {}",
        content(7),
        content(9)
    );
    // An unknown id
    assert!(is_error(10));
    assert!(
        content(10).contains("Known shells: bash_1, bash_2"),
        "{}",
        content(10)
    );

    let check = events(&lines, "check")[0];
    assert_eq!(check["passed"], true);

    // bash_2 was never killed by the model: the run killed it when the loop ended.
    let pid: i32 = std::fs::read_to_string(ws.join("left.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !gone(pid) {
        assert!(
            Instant::now() < deadline,
            "background pid {pid} outlived the run"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether process `pid` is gone (a zombie waiting for a reaper counts as gone).
fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}
