//! The Claude Code parity scenario (docs/claude-code-reference.md): a scripted run of
//! Read, Grep, Glob, Edit, a failing Edit, Read of an empty file, Read past the end,
//! Read of a missing file, Bash, Write and an invalid regex. It asserts which calls are
//! errors, what the model is told, and the exact diff left behind.

use crate::common;

use common::{drover, events, transcript, write_spec};

const APP: &str = "def greet(name):\n    return \"Hello, \" + name\n\n\ndef shout(name):\n    return greet(name).upper()\n";

const SPEC: &str = r#"version: 1
name: parity
prompt: Rename the greeting and leave a note.
workspace: ws
model:
  provider: script
  script:
    - tool_calls:
        - { name: Read, input: { file_path: src/app.py } }
        - { name: Grep, input: { pattern: "def \\w+", output_mode: content, "-n": true } }
        - { name: Glob, input: { pattern: "**/*.py" } }
    - tool_calls:
        - name: Edit
          input: { file_path: src/app.py, old_string: "\"Hello, \"", new_string: "\"Hi, \"" }
    - tool_calls:
        - name: Edit
          input: { file_path: src/app.py, old_string: "return 'Hello'", new_string: "x" }
    - tool_calls:
        - { name: Read, input: { file_path: notes/empty.txt } }
        - { name: Read, input: { file_path: src/app.py, offset: 50 } }
        - { name: Read, input: { file_path: missing.txt } }
    - tool_calls:
        - { name: Bash, input: { command: wc -l src/app.py } }
    - tool_calls:
        - { name: Write, input: { file_path: notes/todo.txt, content: "check shout()\n" } }
    - tool_calls:
        - { name: Grep, input: { pattern: "greet(" } }
    - text: Done.
permissions:
  allow: ["Edit(src/**)", "Edit(notes/**)", "Bash(wc *)"]
"#;

const EXPECTED_DIFF: &str = r#"diff --git a/notes/todo.txt b/notes/todo.txt
new file mode 100644
index 0000000000000000000000000000000000000000..ee84c1760536766ebdcc0929ee2a032d094f4ae3
--- /dev/null
+++ b/notes/todo.txt
@@ -0,0 +1 @@
+check shout()
diff --git a/src/app.py b/src/app.py
index 1bfa0f4115dd4361c2c660ae22d54c7fff83b1ca..62b75136d25d1d68cfeff3136d0d59c725ebce9a 100644
--- a/src/app.py
+++ b/src/app.py
@@ -1,5 +1,5 @@
 def greet(name):
-    return "Hello, " + name
+    return "Hi, " + name
 
 
 def shout(name):
"#;

#[test]
fn the_reference_scenario_errors_where_claude_code_does_and_leaves_the_exact_diff() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::create_dir_all(ws.join("notes")).unwrap();
    std::fs::write(ws.join("src/app.py"), APP).unwrap();
    std::fs::write(ws.join("notes/empty.txt"), "").unwrap();
    let spec = write_spec(dir.path(), "parity.yaml", SPEC);
    let artifacts = dir.path().join("out");
    drover()
        .arg("run")
        .arg(&spec)
        .arg("--artifacts")
        .arg(&artifacts)
        .assert()
        .code(0);

    let lines = transcript(&artifacts.join("parity/transcript.jsonl"));
    let results = events(&lines, "tool_result");
    let errors: Vec<bool> = results.iter().map(|r| r["is_error"] == true).collect();
    assert_eq!(
        errors,
        vec![
            false, false, false, // Read, Grep, Glob
            false, // Edit
            true,  // Edit: old_string not found
            false, false, true,  // empty file, past the end (notices), missing file
            false, // Bash
            false, // Write
            true,  // invalid regex
        ]
    );
    let text = |i: usize| results[i]["content"].as_str().unwrap().to_string();
    assert!(
        text(0).starts_with("1\tdef greet(name):\n2\t"),
        "{}",
        text(0)
    );
    assert!(
        text(1).contains("src/app.py:1:def greet(name):"),
        "{}",
        text(1)
    );
    assert!(
        text(1).contains("src/app.py:5:def shout(name):"),
        "{}",
        text(1)
    );
    assert_eq!(text(2), "src/app.py");
    assert!(text(4).contains("not found"), "{}", text(4));
    assert!(text(5).contains("empty"), "{}", text(5));
    // Like Claude Code, a final newline counts as a last, empty line.
    assert!(
        text(6).contains("only 7 lines"),
        "past the end names the line count: {}",
        text(6)
    );
    assert!(text(7).contains("does not exist"), "{}", text(7));
    assert!(text(8).starts_with("6 src/app.py"), "{}", text(8));
    assert!(text(9).contains("notes/todo.txt"), "{}", text(9));
    assert!(text(10).to_lowercase().contains("regex"), "{}", text(10));
    assert!(
        text(10).contains("unclosed group"),
        "the parser's message: {}",
        text(10)
    );

    let diff = std::fs::read_to_string(artifacts.join("parity/diff.patch")).unwrap();
    assert_eq!(diff, EXPECTED_DIFF);
}
