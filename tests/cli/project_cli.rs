//! What a repository keeps for agents, end to end: `CLAUDE.md` / `AGENTS.md` (and what
//! they import) reach the model's system prompt, sub-agents' too; Agent Skills are listed
//! up front and their instructions come back from a `Skill` call; both are recorded, so
//! a replay gives the model the same, whatever the files say by then; and a file of the
//! repository never reaches the model from outside the workspace.

use crate::common;
use crate::mock_server::{MockServer, Reply};
use crate::providers::{KEY, anthropic_end, anthropic_start, anthropic_text, run, sse, task};

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Output;

use common::{assert_exit, drover, events, run_spec, transcript, write_spec};
use serde_json::{Value, json};

/// A streamed Anthropic turn that calls `name` with `input`.
fn tool_turn(id: &str, name: &str, input: Value) -> String {
    anthropic_start(100, 0, 0)
        + &sse(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": id, "name": name, "input": input}}),
        )
        + &sse(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        )
        + &anthropic_end("tool_use", 20)
}

fn final_turn(text: &str) -> String {
    anthropic_start(50, 0, 0) + &anthropic_text(0, text) + &anthropic_end("end_turn", 5)
}

/// The system prompt of a request the mock received.
fn system_of(request: &crate::mock_server::Request) -> String {
    request.json()["system"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn write(dir: &Path, path: &str, text: &str) {
    let file = dir.join(path);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(file, text).unwrap();
}

fn append(spec: &Path, text: &str) {
    let whole = std::fs::read_to_string(spec).unwrap() + text;
    std::fs::write(spec, whole).unwrap();
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn run_start(lines: &[Value]) -> &Value {
    let first = &lines[0];
    assert_eq!(first["type"], "run_start");
    first
}

/// A workspace's instruction files: CLAUDE.md importing docs/style.md, AGENTS.md, and a
/// `.claude/CLAUDE.md` that is a link to a file outside the workspace.
fn instruction_files(ws: &Path, outside: &Path) {
    write(
        ws,
        "CLAUDE.md",
        "Always run make lint. Style: @docs/style.md\n",
    );
    write(ws, "docs/style.md", "Use tabs for indentation.\n");
    write(ws, "AGENTS.md", "Codex-style note: keep commits small.\n");
    write(outside, "secret.md", "OUTSIDE-SECRET-7f3a\n");
    std::fs::create_dir_all(ws.join(".claude")).unwrap();
    symlink(outside.join("secret.md"), ws.join(".claude/CLAUDE.md")).unwrap();
}

#[test]
fn claude_md_agents_md_and_their_imports_reach_the_system_prompt_and_nothing_outside() {
    let server = MockServer::start(vec![Reply::sse(&final_turn("done"))]);
    let (dir, spec) = task("anthropic", &server.base_url, "");
    let ws = dir.path().join("ws");
    let outside = tempfile::tempdir().unwrap();
    instruction_files(&ws, outside.path());
    let artifacts = dir.path().join("out");
    let output = run(&spec, &artifacts, Some(KEY));
    assert_exit(&output, 0);
    let system = system_of(&server.requests()[0]);
    assert!(system.contains("# Project instructions"), "{system}");
    let claude = system
        .find("## CLAUDE.md\n\nAlways run make lint.")
        .expect(&system);
    let style = system
        .find("## docs/style.md (imported by CLAUDE.md)\n\nUse tabs for indentation.")
        .expect(&system);
    let agents = system
        .find("## AGENTS.md\n\nCodex-style note: keep commits small.")
        .expect(&system);
    assert!(claude < style && style < agents, "in order: {system}");
    // The link out of the workspace is named, never read.
    let body = String::from_utf8_lossy(&server.requests()[0].body).into_owned();
    assert!(!body.contains("OUTSIDE-SECRET"), "{body}");
    let note = ".claude/CLAUDE.md not read: it is a symbolic link that leads out of the workspace";
    assert!(stderr(&output).contains(note), "{}", stderr(&output));
    let lines = transcript(&artifacts.join("t/transcript.jsonl"));
    let start = run_start(&lines);
    let recorded: Vec<(&str, Option<&str>)> = start["instructions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["path"].as_str().unwrap(), f["imported_by"].as_str()))
        .collect();
    assert_eq!(
        recorded,
        [
            ("CLAUDE.md", None),
            ("docs/style.md", Some("CLAUDE.md")),
            ("AGENTS.md", None)
        ]
    );
    assert!(
        start["notes"].to_string().contains(note),
        "{}",
        start["notes"]
    );
    let whole = std::fs::read_to_string(artifacts.join("t/transcript.jsonl")).unwrap();
    assert!(!whole.contains("OUTSIDE-SECRET"));
}

#[test]
fn instructions_none_gives_the_model_none() {
    let server = MockServer::start(vec![Reply::sse(&final_turn("done"))]);
    let (dir, spec) = task("anthropic", &server.base_url, "");
    write(
        &dir.path().join("ws"),
        "CLAUDE.md",
        "Always run make lint.\n",
    );
    append(&spec, "instructions: none\n");
    let artifacts = dir.path().join("out");
    assert_exit(&run(&spec, &artifacts, Some(KEY)), 0);
    let system = system_of(&server.requests()[0]);
    assert!(!system.contains("make lint"), "{system}");
    assert!(!system.contains("# Project instructions"), "{system}");
    let lines = transcript(&artifacts.join("t/transcript.jsonl"));
    assert!(run_start(&lines).get("instructions").is_none());
}

#[test]
fn a_named_file_is_read_in_its_place_and_a_missing_one_is_an_error_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    write(&ws, "docs/agents.md", "Named instructions.\n");
    write(&ws, "CLAUDE.md", "Not asked for.\n");
    let spec = write_spec(
        dir.path(),
        "task.yaml",
        "version: 1\nname: t\nprompt: p\nworkspace: ws\nsandbox: off\nmodel: { provider: script, script: [{ text: done }] }\ninstructions:\n  - docs/agents.md\n  - docs/missing.md\n",
    );
    let output = run_spec(&spec, &dir.path().join("out"));
    assert_exit(&output, 2);
    let error = stderr(&output);
    assert!(error.contains("task.yaml:9:5"), "{error}");
    assert!(
        error.contains("docs/missing.md is not a file of the workspace"),
        "{error}"
    );
    let text = std::fs::read_to_string(&spec)
        .unwrap()
        .replace("  - docs/missing.md\n", "");
    std::fs::write(&spec, text).unwrap();
    let artifacts = dir.path().join("out");
    assert_exit(&run_spec(&spec, &artifacts), 0);
    let lines = transcript(&artifacts.join("t/transcript.jsonl"));
    let files = &run_start(&lines)["instructions"];
    assert_eq!(files.as_array().unwrap().len(), 1, "{files}");
    assert_eq!(files[0]["path"], "docs/agents.md");
    assert_eq!(files[0]["text"], "Named instructions.\n");
}

#[test]
fn a_named_file_the_tasks_copy_does_not_hold_stops_the_task_before_its_loop() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    // Ignored files are not copied: the task's own workspace has no local.md.
    write(&ws, ".gitignore", "local.md\n");
    write(&ws, "local.md", "Only on this machine.\n");
    let spec = write_spec(
        dir.path(),
        "task.yaml",
        "version: 1\nname: t\nprompt: p\nworkspace: ws\nisolation: copy\nsandbox: off\nmodel: { provider: script, script: [{ text: done }] }\ninstructions: [local.md]\n",
    );
    let artifacts = dir.path().join("out");
    let output = run_spec(&spec, &artifacts);
    assert_exit(&output, 3);
    let lines = transcript(&artifacts.join("t/transcript.jsonl"));
    let end = lines.last().unwrap();
    assert_eq!(end["reason"], "setup_failed", "{end}");
    let message = end["message"].as_str().unwrap();
    assert!(message.contains("task.yaml:8:16"), "{message}");
    assert!(message.contains("local.md does not exist"), "{message}");
    assert!(events(&lines, "model_response").is_empty());
}

/// A workspace with two skills, and a spec whose script loads one of them.
fn skills_task(dir: &Path, extra: &str) -> PathBuf {
    let ws = dir.join("ws");
    write(
        &ws,
        ".claude/skills/pdf-forms/SKILL.md",
        "---\nname: pdf-forms\ndescription: Fills PDF forms. Use it when a form must be filled.\nlicense: Apache-2.0\nallowed-tools: Bash(python *)\n---\n\n# Filling forms\n\nRun python ${CLAUDE_SKILL_DIR}/fill.py $ARGUMENTS, then check the output.\n",
    );
    write(&ws, ".claude/skills/pdf-forms/fill.py", "print('filled')\n");
    write(
        &ws,
        ".claude/skills/deploy/SKILL.md",
        "---\nname: deploy\ndescription: Deploys the site.\n---\nRun make deploy.\n",
    );
    write(&ws, "CLAUDE.md", "Original project instructions.\n");
    write_spec(
        dir,
        "task.yaml",
        &format!(
            "version: 1\nname: t\nprompt: Fill form.pdf.\nworkspace: ws\nisolation: copy\nskills_from: ws/.claude/skills\nmodel:\n  provider: script\n  script:\n    - tool_calls: [{{ name: Skill, input: {{ skill: pdf-forms, args: form.pdf }} }}]\n    - tool_calls: [{{ name: Read, input: {{ file_path: .claude/skills/pdf-forms/fill.py }} }}]\n    - text: done\n{extra}"
        ),
    )
}

fn tool_results(lines: &[Value]) -> Vec<&Value> {
    events(lines, "tool_result")
}

#[test]
fn a_skill_call_returns_its_instructions_and_a_replay_answers_from_the_recording() {
    let dir = tempfile::tempdir().unwrap();
    let spec = skills_task(dir.path(), "");
    let artifacts = dir.path().join("recorded");
    let output = run_spec(&spec, &artifacts);
    assert_exit(&output, 0);
    assert!(
        stderr(&output).contains("`allowed-tools` ignored: a skill grants no permission"),
        "{}",
        stderr(&output)
    );
    let recording = artifacts.join("t/transcript.jsonl");
    let lines = transcript(&recording);
    let start = run_start(&lines);
    assert!(
        start["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "Skill")
    );
    assert_eq!(
        start["skills"]["pdf-forms"]["description"],
        "Fills PDF forms. Use it when a form must be filled."
    );
    assert_eq!(
        start["skills"]["pdf-forms"]["dir"],
        ".claude/skills/pdf-forms"
    );
    let results = tool_results(&lines);
    let loaded = results[0]["content"].as_str().unwrap();
    assert_eq!(results[0]["is_error"], false);
    assert!(
        loaded.starts_with("Skill pdf-forms. Its directory (the files its instructions name lie there): .claude/skills/pdf-forms\n\n# Filling forms"),
        "{loaded}"
    );
    assert!(
        loaded.contains("/.claude/skills/pdf-forms/fill.py form.pdf, then check"),
        "${{CLAUDE_SKILL_DIR}} and $ARGUMENTS filled in: {loaded}"
    );
    assert!(
        results[1]["content"]
            .as_str()
            .unwrap()
            .contains("print('filled')"),
        "the skill's other files are read with Read"
    );
    // The repository changes its skills and instructions: a replay still gives the
    // model what the recorded run gave it.
    let ws = dir.path().join("ws");
    write(
        &ws,
        ".claude/skills/pdf-forms/SKILL.md",
        "---\nname: pdf-forms\ndescription: Changed.\n---\nChanged instructions.\n",
    );
    write(&ws, "CLAUDE.md", "Changed project instructions.\n");
    let replayed = dir.path().join("replayed");
    let output = drover()
        .current_dir(dir.path())
        .arg("replay")
        .arg(&recording)
        .args(["--workspace", "ws", "--artifacts"])
        .arg(&replayed)
        .output()
        .unwrap();
    assert_exit(&output, 0);
    let again = transcript(&replayed.join("t/transcript.jsonl"));
    assert!(events(&again, "replay_drift").is_empty(), "{again:?}");
    let start = run_start(&again);
    assert_eq!(
        start["instructions"][0]["text"], "Original project instructions.\n",
        "the recorded instructions, not the workspace's"
    );
    assert_eq!(
        start["skills"]["pdf-forms"]["description"],
        "Fills PDF forms. Use it when a form must be filled."
    );
    assert!(
        tool_results(&again)[0]["content"]
            .as_str()
            .unwrap()
            .contains("# Filling forms")
    );
}

#[test]
fn skill_deny_rules_withhold_the_tool_or_refuse_one_skill() {
    let dir = tempfile::tempdir().unwrap();
    let spec = skills_task(
        dir.path(),
        "permissions:\n  deny: [\"Skill(pdf-forms *)\"]\n",
    );
    let artifacts = dir.path().join("out");
    assert_exit(&run_spec(&spec, &artifacts), 0);
    let lines = transcript(&artifacts.join("t/transcript.jsonl"));
    let permission = events(&lines, "permission")[0];
    assert_eq!(permission["decision"], "deny");
    assert_eq!(permission["rule"], "Skill(pdf-forms *)");
    assert_eq!(tool_results(&lines)[0]["is_error"], true);
    let check = |input: &str| {
        drover()
            .args(["policy", "check", "--spec"])
            .arg(&spec)
            .args(["--tool", "Skill", "--input", input])
            .output()
            .unwrap()
    };
    assert_exit(&check(r#"{"skill": "pdf-forms", "args": "x"}"#), 1);
    assert_exit(&check(r#"{"skill": "deploy"}"#), 0);
    // `deny: [Skill]`: the tool is not offered at all.
    let text = std::fs::read_to_string(&spec)
        .unwrap()
        .replace("\"Skill(pdf-forms *)\"", "Skill");
    std::fs::write(&spec, text).unwrap();
    let artifacts = dir.path().join("withheld");
    assert_exit(&run_spec(&spec, &artifacts), 0);
    let lines = transcript(&artifacts.join("t/transcript.jsonl"));
    let tools = run_start(&lines)["tools"].as_array().unwrap().clone();
    assert!(!tools.iter().any(|t| t == "Skill"), "{tools:?}");
}

#[test]
fn the_catalog_and_the_instructions_reach_the_model_and_its_sub_agents() {
    let server = MockServer::start(vec![
        Reply::sse(&tool_turn(
            "toolu_parent",
            "Agent",
            json!({"description": "review", "prompt": "Review notes.txt.", "subagent_type": "reviewer"}),
        )),
        Reply::sse(&final_turn("notes.txt looks fine")),
        Reply::sse(&final_turn("done")),
    ]);
    let (dir, spec) = task("anthropic", &server.base_url, "");
    let ws = dir.path().join("ws");
    write(&ws, "CLAUDE.md", "Always run make lint.\n");
    write(
        &ws,
        "skills/pdf/SKILL.md",
        "---\nname: pdf\ndescription: Fills PDF\n  forms.\n---\nFill it.\n",
    );
    write(
        &ws,
        "skills/deploy/SKILL.md",
        "---\nname: deploy\ndescription: Deploys.\n---\nDeploy.\n",
    );
    append(
        &spec,
        "skills_from: ws/skills\npermissions:\n  deny: [\"Skill(deploy)\"]\nagents:\n  reviewer:\n    description: Reviews.\n    prompt: You are the REVIEWER.\n    tools: [Read, Skill]\n",
    );
    let artifacts = dir.path().join("out");
    assert_exit(&run(&spec, &artifacts, Some(KEY)), 0);
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    for (who, request) in [("the model", &requests[0]), ("its sub-agent", &requests[1])] {
        let system = system_of(request);
        assert!(
            system.contains("## CLAUDE.md\n\nAlways run make lint."),
            "{who}: {system}"
        );
        assert!(
            system.contains("# Skills\n") && system.contains("\n- pdf: Fills PDF forms."),
            "{who}: {system}"
        );
        assert!(
            !system.contains("deploy"),
            "a denied skill is not listed: {system}"
        );
        let tools = request.json()["tools"].to_string();
        assert!(tools.contains("\"Skill\""), "{who}: {tools}");
    }
    let sub = system_of(&requests[1]);
    assert!(
        sub.find("# Skills").unwrap() < sub.find("You are the REVIEWER.").unwrap(),
        "the agent's own prompt comes last: {sub}"
    );
}

#[test]
fn a_resumed_run_goes_on_with_the_recorded_instructions() {
    const KEY_ENV: &str = "DROVER_TEST_PROJECT_KEY";
    let server = MockServer::start(vec![
        Reply::sse(&tool_turn(
            "toolu_read",
            "Read",
            json!({"file_path": "notes.txt"}),
        )),
        Reply::sse(&final_turn("done")),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    write(&ws, "notes.txt", "hello\n");
    // A file the workspace's fingerprint leaves out: it may change before the resume.
    write(&ws, ".gitignore", "CLAUDE.local.md\n");
    write(&ws, "CLAUDE.local.md", "ORIGINAL-LOCAL instructions.\n");
    let spec = write_spec(
        dir.path(),
        "task.yaml",
        &format!(
            "version: 1\nname: t\nprompt: Read notes.txt.\nworkspace: ws\nsandbox: off\ninstructions: [CLAUDE.local.md]\nmodel:\n  provider: anthropic\n  name: claude-sonnet-4-5\n  base_url: {}\n  api_key_env: {KEY_ENV}\n  retry: {{ max_retries: 0 }}\nlimits:\n  max_turns: 1\n",
            server.base_url
        ),
    );
    let artifacts = dir.path().join("out");
    let output = common::drover_without_proxy()
        .arg("run")
        .arg(&spec)
        .arg("--artifacts")
        .arg(&artifacts)
        .env(KEY_ENV, KEY)
        .output()
        .unwrap();
    assert_exit(&output, 1);
    write(&ws, "CLAUDE.local.md", "CHANGED-LOCAL instructions.\n");
    let output = common::drover_without_proxy()
        .current_dir(dir.path())
        .args(["resume", "out/t", "--max-turns", "3"])
        .env(KEY_ENV, KEY)
        .output()
        .unwrap();
    assert_exit(&output, 0);
    let requests = server.requests();
    assert_eq!(
        requests.len(),
        2,
        "the first turn is replayed, not asked again"
    );
    let system = system_of(&requests[1]);
    assert!(system.contains("ORIGINAL-LOCAL"), "{system}");
    assert!(!system.contains("CHANGED-LOCAL"), "{system}");
}
