//! `claude -p`'s flags given to `drover exec`: those drover honours do what Claude Code
//! means by them, so a workflow calling `claude -p` is a one-line change; the others
//! are refused (exit 2) saying what to write instead, before any request.

use crate::common::transcript;
use crate::exec_cli::{answer_turn, calls_turn, exec_in, scratch, stderr, stdout};
use crate::mock_server::{MockServer, Reply};

use serde_json::{Value, json};

#[test]
fn claude_p_flags_are_taken_as_claude_code_means_them() {
    let dir = scratch();
    let server = MockServer::start(vec![
        Reply::sse(&calls_turn(&[
            ("toolu_1", "Glob", json!({"pattern": "*.txt"})),
            (
                "toolu_2",
                "Bash",
                json!({"command": "git push origin main"}),
            ),
        ])),
        Reply::sse(&answer_turn("Voilà : notes.txt.")),
    ]);
    let output = exec_in(
        dir.path(),
        &server.base_url,
        &[
            "-p",
            "list the text files",
            "--allowedTools",
            "Read Glob,Bash(git status:*)",
            "Grep",
            "--disallowedTools",
            "Bash(git push:*)",
            "--max-turns",
            "3",
            "--model",
            "sonnet",
            "--output-format",
            "json",
            "--append-system-prompt",
            "Answer in French.",
            "--verbose",
            "--permission-mode",
            "dontAsk",
            "--workspace",
            "ws",
            "--sandbox",
            "off",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert_eq!(text.lines().count(), 1, "one JSON result: {text}");
    let result: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(result["type"], "result");
    assert_eq!(result["result"], "Voilà : notes.txt.");
    assert_eq!(result["is_error"], false);
    assert_eq!(result["num_turns"], 2);
    assert_eq!(result["exit_code"], 0);
    assert_eq!(result["tasks"][0]["denied_calls"], 1);
    let body = server.requests()[0].json();
    assert_eq!(body["model"], "claude-sonnet-4-5");
    assert!(
        body["system"].to_string().contains("Answer in French."),
        "{}",
        body["system"]
    );
    let lines = transcript(&dir.path().join("drover-artifacts/exec/transcript.jsonl"));
    let spec_yaml = lines[0]["spec_yaml"].as_str().unwrap();
    assert!(
        spec_yaml.contains("allow: [\"Read\", \"Glob\", \"Bash(git status:*)\", \"Grep\"]")
            && spec_yaml.contains("deny: [\"Bash(git push:*)\"]")
            && spec_yaml.contains("max_turns: 3"),
        "{spec_yaml}"
    );

    // --permission-mode plan offers only the read-only tools.
    let server = MockServer::start(vec![Reply::sse(&answer_turn("Looked."))]);
    let output = exec_in(
        dir.path(),
        &server.base_url,
        &[
            "look",
            "--permission-mode",
            "plan",
            "--allow",
            "Edit,Bash",
            "--workspace",
            "ws",
            "--sandbox",
            "off",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let tools: Vec<String> = server.requests()[0].json()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_string())
        .collect();
    assert!(tools.contains(&"Read".to_string()), "{tools:?}");
    for writer in ["Edit", "Write", "Bash"] {
        assert!(!tools.contains(&writer.to_string()), "{tools:?}");
    }
}

#[test]
fn claude_code_flags_drover_cannot_honour_are_refused_with_what_to_write() {
    let dir = scratch();
    let server = MockServer::start(Vec::new());
    let cases: &[(&[&str], &str)] = &[
        (&["--dangerously-skip-permissions"], "--allow"),
        (&["--allow-dangerously-skip-permissions"], "--allow"),
        (&["--permission-mode", "bypassPermissions"], "--allow"),
        (&["--permission-mode", "acceptEdits"], "--allow Edit"),
        (&["--permission-mode", "auto"], "not a mode drover knows"),
        (&["--continue"], "drover resume DIR/TASK"),
        (&["-c"], "drover resume DIR/TASK"),
        (&["-r"], "drover resume DIR/TASK"),
        (&["--resume", "4b1f"], "drover resume DIR/TASK"),
        (&["--session-id", "4b1f"], "drover resume DIR/TASK"),
        (&["--input-format", "stream-json"], "--prompt-file"),
        (&["--mcp-config", "mcp.json"], "mcp:"),
        (&["--strict-mcp-config"], "mcp:"),
        (
            &["--system-prompt", "You are a pirate."],
            "--append-system-prompt",
        ),
        (&["--system-prompt-file", "p.md"], "--append-system-prompt"),
        (
            &["--permission-prompt-tool", "mcp__auth__ask"],
            "--allow and --deny",
        ),
        (&["--fallback-model", "haiku"], "--model"),
        (&["--settings", ".claude/settings.json"], "permissions_from"),
        (&["--agents", "{}"], "agents:"),
        (&["--include-partial-messages"], "drop the flag"),
    ];
    for (flags, says) in cases {
        let mut args = vec!["fix it"];
        args.extend_from_slice(flags);
        let output = exec_in(dir.path(), &server.base_url, &args);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{flags:?}: {}",
            stderr(&output)
        );
        let err = stderr(&output);
        assert!(err.contains(says), "{flags:?}: {err}");
        assert!(
            err.contains("refused") || err.contains("not a mode"),
            "{flags:?}: {err}"
        );
        assert_eq!(stdout(&output), "", "{flags:?}");
    }
    assert!(
        server.requests().is_empty(),
        "nothing refused reaches the model"
    );
}
