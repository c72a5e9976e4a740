//! `permissions_from:`: the rules of a Claude Code settings file, applied as Claude Code
//! documents them as far as a file the repository controls may widen the policy, and
//! recorded so a replay decides by them without the file.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::common::{assert_exit, drover, events, rechained, run_spec, transcript, write_spec};

/// The settings file of the tests: every list, rules that apply and rules that would
/// widen the policy past the workspace or the sandbox.
const SETTINGS: &str = r#"{
  "permissions": {
    "allow": [
      "Bash(cat:*)",
      "Bash(git:*)",
      "Edit(./src/**)",
      "Read(//etc/**)",
      "WebFetch(domain:example.com)",
      "SlashCommand(/deploy)"
    ],
    "deny": [
      "Read(./.env)",
      "Read(./secrets/**)",
      "Write(./LOCKED.md)"
    ],
    "ask": ["Bash(git push:*)"],
    "additionalDirectories": ["../other"],
    "defaultMode": "acceptEdits"
  },
  "sandbox": {"enabled": true}
}
"#;

/// A scratch directory holding `ws/` (a workspace with a `.env`), `.claude/settings.json`
/// and a spec taking its permissions from it (`extra` added to the spec).
fn setup(settings: &str, from: &str, extra: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::create_dir_all(dir.path().join("other")).unwrap();
    std::fs::write(ws.join(".env"), "TOKEN=hunter2\n").unwrap();
    std::fs::write(ws.join("README.md"), "readme\n").unwrap();
    std::fs::create_dir_all(dir.path().join(".claude")).unwrap();
    std::fs::write(dir.path().join(".claude/settings.json"), settings).unwrap();
    let spec = write_spec(
        dir.path(),
        "task.yaml",
        &format!(
            "version: 1\nname: t\nprompt: p\nworkspace: ws\npermissions_from: {from}\n{extra}model:\n  provider: script\n  script: [{{text: hi}}]\n"
        ),
    );
    (dir, spec)
}

/// `drover policy check` for one call: the decision's JSON.
fn check(spec: &Path, tool: &str, input: Value) -> Value {
    let output = drover()
        .args(["policy", "check", "--tool", tool, "--input"])
        .arg(input.to_string())
        .arg("--spec")
        .arg(spec)
        .output()
        .unwrap();
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|_| panic!("no decision: {}", String::from_utf8_lossy(&output.stderr)))
}

fn decision(spec: &Path, tool: &str, input: Value) -> (String, String) {
    let decided = check(spec, tool, input);
    (
        decided["decision"].as_str().unwrap_or_default().to_string(),
        decided["rule"].as_str().unwrap_or_default().to_string(),
    )
}

#[test]
fn a_settings_files_rules_decide_calls_as_claude_code_documents_them() {
    let (dir, spec) = setup(SETTINGS, ".claude/settings.json", "");
    let ws = dir.path().join("ws");
    let read = |path: &str| json!({ "file_path": path });
    let bash = |command: &str| json!({ "command": command });
    let cases: Vec<(&str, Value, &str, &str)> = vec![
        // Deny rules, `./` anchored at the workspace root, for the file tools and the
        // Bash path checks alike.
        ("Read", read(".env"), "deny", "Read(./.env)"),
        ("Bash", bash("cat .env"), "deny", "Read(./.env)"),
        (
            "Bash",
            bash("cat ./secrets/key"),
            "deny",
            "Read(./secrets/**)",
        ),
        // A Write deny stops Edit on its path too.
        (
            "Edit",
            json!({"file_path": "LOCKED.md", "old_string": "a", "new_string": "b"}),
            "deny",
            "Write(./LOCKED.md)",
        ),
        // Allow rules inside the workspace apply.
        ("Bash", bash("cat README.md"), "allow", "Bash(cat:*)"),
        (
            "Edit",
            json!({"file_path": "src/main.rs", "old_string": "a", "new_string": "b"}),
            "allow",
            "Edit(./src/**)",
        ),
        ("Bash", bash("git status"), "allow", "Bash(git:*)"),
        // An ask rule denies: nobody can be asked.
        (
            "Bash",
            bash("git push origin main"),
            "deny",
            "Bash(git push:*)",
        ),
        // Allow rules that would reach past the workspace or the sandbox do not apply.
        ("Read", read("/etc/hostname"), "deny", ""),
        (
            "WebFetch",
            json!({"url": "https://example.com/", "prompt": "p"}),
            "deny",
            "",
        ),
        (
            "Write",
            json!({"file_path": "../other/x", "content": "x"}),
            "deny",
            "",
        ),
    ];
    for (tool, input, expected, rule) in cases {
        let (got, by) = decision(&spec, tool, input.clone());
        assert_eq!(
            (got.as_str(), by.as_str()),
            (expected, rule),
            "{tool} {input}"
        );
    }
    let asked = check(&spec, "Bash", bash("git push"));
    let reason = asked["reason"].as_str().unwrap();
    assert!(
        reason.contains("ask rule") && reason.contains("headless"),
        "{reason}"
    );
    // The spec's own rules still count, and its deny beats the file's allow.
    let (_dir2, spec2) = setup(
        SETTINGS,
        ".claude/settings.json",
        "permissions:\n  deny: [\"Bash(cat README.md)\"]\n",
    );
    assert_eq!(decision(&spec2, "Bash", bash("cat README.md")).0, "deny");
    let _ = ws;
}

#[test]
fn validate_names_every_entry_left_out_at_its_line_and_column() {
    let (dir, spec) = setup(SETTINGS, ".claude/settings.json", "");
    let output = drover().arg("validate").arg(&spec).output().unwrap();
    assert_exit(&output, 0);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let settings = dir.path().join(".claude/settings.json");
    let shown = settings.display();
    for expected in [
        format!("{shown}:7:7: allow rule Read(//etc/**) left out"),
        format!("{shown}:8:7: allow rule WebFetch(domain:example.com) left out"),
        format!("{shown}:9:7: allow rule SlashCommand(/deploy) left out"),
        format!("{shown}:17:31: additionalDirectories is not used"),
        format!("{shown}:18:20: defaultMode \"acceptEdits\" is not used"),
        "1 ask rule(s) deny".to_string(),
        "sandbox settings are not used".to_string(),
    ] {
        assert!(stderr.contains(&expected), "{expected:?} not in:\n{stderr}");
    }
}

#[test]
fn a_deny_rule_drover_cannot_apply_is_refused_at_its_line_and_column() {
    let settings = "{\n  \"permissions\": {\n    \"allow\": [\"Read(../up)\"],\n    \"deny\": [\"Bash(ok:*)\", \"Read(../up)\"]\n  }\n}\n";
    let (dir, spec) = setup(settings, ".claude/settings.json", "");
    let output = drover().arg("validate").arg(&spec).output().unwrap();
    assert_exit(&output, 2);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let at = format!(
        "{}:4:28:",
        dir.path().join(".claude/settings.json").display()
    );
    assert!(stderr.contains(&at), "{at} not in:\n{stderr}");
    assert!(stderr.contains("permissions.deny"), "{stderr}");
    // The same rule in allow only leaves itself out.
    let settings =
        "{\"permissions\": {\"allow\": [\"Read(../up)\"], \"deny\": [\"Read(./.env)\"]}}";
    let (_dir, spec) = setup(settings, ".claude/settings.json", "");
    let output = drover().arg("validate").arg(&spec).output().unwrap();
    assert_exit(&output, 0);
    assert!(String::from_utf8_lossy(&output.stderr).contains("allow rule Read(../up) left out"));
    let _ = dir;
}

#[test]
fn a_settings_file_that_is_missing_or_not_json_is_a_spec_error() {
    let (dir, spec) = setup(
        "{\n  \"permissions\": {\"deny\": [1]}\n}",
        ".claude/settings.json",
        "",
    );
    let output = drover().arg("validate").arg(&spec).output().unwrap();
    assert_exit(&output, 2);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("settings.json:2:"), "{stderr}");
    let (_dir2, spec) = setup("{}", ".claude/nothing.json", "");
    let output = drover().arg("validate").arg(&spec).output().unwrap();
    assert_exit(&output, 2);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("task.yaml:5:") && stderr.contains("nothing.json"),
        "{stderr}"
    );
    let _ = dir;
}

#[test]
fn allow_false_takes_only_what_narrows_the_policy() {
    let (_dir, spec) = setup(
        SETTINGS,
        "{file: .claude/settings.json, allow: false}",
        "permissions:\n  allow: [\"Bash(git status)\"]\n",
    );
    assert_eq!(
        decision(&spec, "Bash", json!({"command": "cat README.md"})).0,
        "deny"
    );
    assert_eq!(
        decision(&spec, "Bash", json!({"command": "git status"})).0,
        "allow"
    );
    assert_eq!(
        decision(&spec, "Read", json!({"file_path": ".env"})),
        ("deny".to_string(), "Read(./.env)".to_string())
    );
}

/// The script of the recorded run: a denied read of `.env`, an allowed `cat`.
const SCRIPT: &str = "model:\n  provider: script\n  script:\n    - tool_calls:\n        - { name: Read, input: { file_path: .env } }\n        - { name: Bash, input: { command: cat README.md } }\n    - text: done\n";

fn recorded_run() -> (tempfile::TempDir, PathBuf) {
    let (dir, _) = setup(SETTINGS, ".claude/settings.json", "");
    let spec = write_spec(
        dir.path(),
        "task.yaml",
        &format!(
            "version: 1\nname: t\nprompt: p\nworkspace: ws\npermissions_from: .claude/settings.json\n{SCRIPT}"
        ),
    );
    let output = run_spec(&spec, &dir.path().join("out"));
    assert_exit(&output, 0);
    (dir, spec)
}

fn decisions(transcript_path: &Path) -> Vec<(String, String)> {
    let lines = transcript(transcript_path);
    events(&lines, "permission")
        .iter()
        .map(|event| {
            (
                event["decision"].as_str().unwrap().to_string(),
                event["rule"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

#[test]
fn a_run_records_the_rules_it_borrowed_and_a_replay_decides_by_them_without_the_file() {
    let (dir, _spec) = recorded_run();
    let recorded = dir.path().join("out/t/transcript.jsonl");
    let lines = transcript(&recorded);
    let start = &lines[0];
    assert_eq!(
        start["permissions_from"],
        json!([{
            "file": ".claude/settings.json",
            "allow": ["Bash(cat:*)", "Bash(git:*)", "Edit(./src/**)"],
            "deny": ["Read(./.env)", "Read(./secrets/**)", "Write(./LOCKED.md)"],
            "ask": ["Bash(git push:*)"]
        }])
    );
    let notes = start["notes"].to_string();
    assert!(notes.contains("Read(//etc/**) left out"), "{notes}");
    assert_eq!(
        decisions(&recorded),
        vec![
            ("deny".to_string(), "Read(./.env)".to_string()),
            ("allow".to_string(), "Bash(cat:*)".to_string())
        ]
    );
    // The file goes; the replay needs none of it.
    std::fs::remove_file(dir.path().join(".claude/settings.json")).unwrap();
    let replayed = dir.path().join("replayed");
    let output = drover()
        .current_dir(dir.path())
        .arg("replay")
        .arg(&recorded)
        .arg("--strict")
        .arg("--artifacts")
        .arg(&replayed)
        .output()
        .unwrap();
    assert_exit(&output, 0);
    let again = replayed.join("t/transcript.jsonl");
    assert_eq!(decisions(&again), decisions(&recorded));
    assert_eq!(
        transcript(&again)[0]["permissions_from"],
        start["permissions_from"]
    );
}

#[test]
fn a_recording_cannot_give_a_replay_an_allow_rule_a_settings_file_could_not() {
    let (dir, _spec) = recorded_run();
    let recorded = dir.path().join("out/t/transcript.jsonl");
    let mut lines = transcript(&recorded);
    // The forger's recording allows every read of the machine and WebFetch anywhere.
    lines[0]["permissions_from"][0]["allow"] =
        json!(["Read(//**)", "Read(~/**)", "WebFetch", "Bash(cat:*)"]);
    lines[0]["permissions_from"][0]["deny"] = json!([]);
    let forged = dir.path().join("forged.jsonl");
    std::fs::write(&forged, rechained(&lines)).unwrap();
    drover()
        .args(["transcript", "verify"])
        .arg(&forged)
        .assert()
        .code(0);
    let replayed = dir.path().join("replayed");
    let output = drover()
        .current_dir(dir.path())
        .arg("replay")
        .arg(&forged)
        .arg("--workspace")
        .arg(dir.path().join("ws"))
        .arg("--artifacts")
        .arg(&replayed)
        .output()
        .unwrap();
    let again = transcript(&replayed.join("t/transcript.jsonl"));
    let start = &again[0];
    assert_eq!(
        start["permissions_from"][0]["allow"],
        json!(["Bash(cat:*)"]),
        "only what a settings file may allow is recorded again"
    );
    // `.env` is no longer denied by the forged recording, but `Read(//**)` did not
    // apply: the read of `.env` is the workspace default, and nothing outside it was
    // allowed by the recording.
    let forged_rules: Vec<String> = decisions(&replayed.join("t/transcript.jsonl"))
        .into_iter()
        .map(|(_, rule)| rule)
        .collect();
    assert!(
        !forged_rules
            .iter()
            .any(|rule| rule.contains("//**") || rule.contains("~/")),
        "{forged_rules:?} ({})",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn a_recording_with_a_deny_rule_that_does_not_parse_is_not_replayed() {
    let (dir, _spec) = recorded_run();
    let recorded = dir.path().join("out/t/transcript.jsonl");
    let mut lines = transcript(&recorded);
    lines[0]["permissions_from"][0]["deny"] = json!(["Read(../x)"]);
    let forged = dir.path().join("forged.jsonl");
    std::fs::write(&forged, rechained(&lines)).unwrap();
    let output = drover()
        .current_dir(dir.path())
        .arg("replay")
        .arg(&forged)
        .arg("--artifacts")
        .arg(dir.path().join("replayed"))
        .output()
        .unwrap();
    assert_exit(&output, 2);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("permissions_from rule \"Read(../x)\""),
        "{stderr}"
    );
}

#[test]
fn a_vouched_replay_takes_recorded_rules_only_from_the_files_its_spec_reads() {
    let (dir, spec) = recorded_run();
    let recorded = dir.path().join("out/t/transcript.jsonl");
    let replay = |forged: &Path, out: &str| {
        drover()
            .current_dir(dir.path())
            .arg("replay")
            .arg(forged)
            .arg("--spec")
            .arg(&spec)
            .arg("--artifacts")
            .arg(dir.path().join(out))
            .output()
            .unwrap()
    };
    // A file the spec does not name.
    let mut lines = transcript(&recorded);
    lines[0]["permissions_from"][0]["file"] = json!("elsewhere.json");
    lines[0]["permissions_from"][0]["allow"] = json!(["Bash"]);
    let forged = dir.path().join("forged1.jsonl");
    std::fs::write(&forged, rechained(&lines)).unwrap();
    let output = replay(&forged, "r1");
    assert_exit(&output, 2);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("does not name this file"), "{stderr}");
    // Allow rules from a file the spec takes with allow: false.
    let text = std::fs::read_to_string(&spec).unwrap().replace(
        "permissions_from: .claude/settings.json",
        "permissions_from: {file: .claude/settings.json, allow: false}",
    );
    std::fs::write(&spec, text).unwrap();
    let output = crate::common::run_spec(&spec, &dir.path().join("out2"));
    assert_exit(&output, 0);
    let mut lines = transcript(&dir.path().join("out2/t/transcript.jsonl"));
    assert!(lines[0]["permissions_from"][0].get("allow").is_none());
    lines[0]["permissions_from"][0]["allow"] = json!(["Bash"]);
    let forged = dir.path().join("forged2.jsonl");
    std::fs::write(&forged, rechained(&lines)).unwrap();
    let output = replay(&forged, "r2");
    assert_exit(&output, 2);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("allow: false"), "{stderr}");
}

#[test]
fn what_a_settings_file_may_not_allow_is_left_out() {
    let settings = r#"{"permissions": {"allow": ["Bash(cat:*)", "mcp__docs", "mcp__docs__get_*", "ReadMcpResource", "Edit(.git/hooks/**)", "Agent(Reviewer)"]}}"#;
    let (_dir, spec) = setup(
        settings,
        ".claude/settings.json",
        "sandbox: off\nagents:\n  reviewer: {description: d, prompt: p}\n",
    );
    let output = drover().arg("validate").arg(&spec).output().unwrap();
    assert_exit(&output, 0);
    let stderr = String::from_utf8_lossy(&output.stderr);
    for expected in [
        "allow rule Bash(cat:*) left out: the task's sandbox is off",
        "allow rule mcp__docs left out: MCP servers run with what the spec gives them",
        "allow rule mcp__docs__get_* left out",
        "allow rule ReadMcpResource left out",
        "allow rule Edit(.git/hooks/**) left out: it names .git",
        "allow rule Agent(Reviewer) names no sub-agent of this task (names are exact; it has: reviewer)",
    ] {
        assert!(stderr.contains(expected), "{expected:?} not in:\n{stderr}");
    }
    assert_eq!(
        decision(&spec, "Bash", json!({"command": "cat README.md"})).0,
        "deny"
    );
    assert_eq!(decision(&spec, "mcp__docs__get_x", json!({})).0, "deny");
}

#[test]
fn a_settings_file_that_is_a_link_or_not_a_file_is_refused_without_its_contents() {
    let (dir, spec) = setup("{}", ".claude/settings.json", "");
    let secret = dir.path().join("secret.json");
    std::fs::write(&secret, "\"ghp_NOT_FOR_LOGS\"").unwrap();
    let settings = dir.path().join(".claude/settings.json");
    std::fs::remove_file(&settings).unwrap();
    std::os::unix::fs::symlink(&secret, &settings).unwrap();
    let output = drover().arg("validate").arg(&spec).output().unwrap();
    assert_exit(&output, 2);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("settings.json is a symbolic link:"),
        "{stderr}"
    );
    assert!(!stderr.contains("ghp_NOT_FOR_LOGS"), "{stderr}");
    // A directory on the way linked out of the spec's directory.
    std::fs::remove_file(&settings).unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::write(elsewhere.path().join("settings.json"), "{}").unwrap();
    let claude = dir.path().join(".claude");
    std::fs::rename(&claude, dir.path().join("claude-real")).unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), &claude).unwrap();
    let output = drover().arg("validate").arg(&spec).output().unwrap();
    assert_exit(&output, 2);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(".claude is a symbolic link on the way to"),
        "{stderr}"
    );
    std::fs::remove_file(&claude).unwrap();
    std::fs::rename(dir.path().join("claude-real"), &claude).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &settings).unwrap();
    assert_exit(&drover().arg("validate").arg(&spec).output().unwrap(), 2);
    // A file whose JSON is a bare string: named by its kind, never quoted.
    std::fs::remove_file(&settings).unwrap();
    std::fs::copy(&secret, &settings).unwrap();
    let output = drover().arg("validate").arg(&spec).output().unwrap();
    assert_exit(&output, 2);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("invalid type: string"), "{stderr}");
    assert!(!stderr.contains("ghp_NOT_FOR_LOGS"), "{stderr}");
}
