//! Sub-agents end to end: the `Agent` tool runs a scripted sub-agent in the same
//! workspace, under the parent's policy, its events in the same transcript with its
//! `agent_id`, its tokens counted in the task's budget, its nesting bounded, and a
//! replay of the run reproducing it.

use crate::common;

use std::path::{Path, PathBuf};

use common::{assert_exit, drover, events, run_spec, summary, transcript, write_spec};
use serde_json::Value;

/// A workspace with one source file, and a spec whose main agent asks `reviewer` to
/// review it (`agents` is the YAML of `agents:`, `extra` more top-level keys).
fn review_task(dir: &Path, name: &str, agents: &str, extra: &str) -> PathBuf {
    std::fs::create_dir_all(dir.join("ws/src")).unwrap();
    std::fs::write(
        dir.join("ws/src/lib.rs"),
        "pub fn add(a: i32, b: i32) -> i32 { a - b }\n",
    )
    .unwrap();
    write_spec(
        dir,
        &format!("{name}.yaml"),
        &format!(
            r#"version: 1
name: {name}
prompt: Review src/lib.rs with the reviewer.
workspace: ws
isolation: copy
model:
  provider: script
  script:
    - text: Asking the reviewer.
      tool_calls:
        - name: Agent
          input: {{ description: review lib, prompt: Review src/lib.rs and list bugs., subagent_type: reviewer }}
      usage: {{ input_tokens: 10, output_tokens: 5 }}
    - text: The reviewer found the bug.
      usage: {{ input_tokens: 10, output_tokens: 5 }}
agents:
{agents}{extra}"#
        ),
    )
}

const READING_REVIEWER: &str = r#"  reviewer:
    description: Reviews code for bugs.
    prompt: You review code. Report bugs as a list.
    tools: [Read, Grep, Glob]
    max_turns: 5
    model:
      script:
        - tool_calls: [{ name: Read, input: { file_path: src/lib.rs } }]
          usage: { input_tokens: 100, output_tokens: 20 }
        - text: "- add subtracts instead of adding"
          usage: { input_tokens: 150, output_tokens: 30 }
"#;

fn agent_result(lines: &[Value]) -> &Value {
    events(lines, "tool_result")
        .into_iter()
        .find(|e| e.get("agent_id").is_none())
        .expect("the parent's Agent call has a result")
}

#[test]
fn a_reviewer_sub_agent_reads_and_reports_to_its_parent() {
    let dir = tempfile::tempdir().unwrap();
    let spec = review_task(dir.path(), "review", READING_REVIEWER, "");
    let artifacts = dir.path().join("out");
    let output = run_spec(&spec, &artifacts);
    assert_exit(&output, 0);
    let lines = transcript(&artifacts.join("review/transcript.jsonl"));

    // The parent's call gets the sub-agent's final text, then its figures.
    let result = agent_result(&lines);
    assert_eq!(result["is_error"], false);
    let content = result["content"].as_str().unwrap();
    assert!(
        content.starts_with("- add subtracts instead of adding"),
        "{content}"
    );
    assert!(
        content.contains("2 turns, 1 tool use, 300 tokens"),
        "{content}"
    );

    // The sub-agent's events are in the same file, marked with its id and the call.
    let call_id = result["tool_use_id"].as_str().unwrap();
    let agent_id = format!("reviewer@{call_id}");
    let sub: Vec<&Value> = lines
        .iter()
        .filter(|line| line.get("agent_id").is_some())
        .collect();
    assert!(sub.len() >= 6, "{sub:?}");
    for line in &sub {
        assert_eq!(line["agent_id"], agent_id.as_str());
        assert_eq!(line["parent_tool_use_id"], call_id);
    }
    assert_eq!(sub[0]["type"], "agent_start");
    assert_eq!(sub[0]["tools"], serde_json::json!(["Read", "Glob", "Grep"]));
    assert_eq!(sub.last().unwrap()["type"], "agent_end");
    assert_eq!(sub.last().unwrap()["reason"], "end_turn");
    let read = sub.iter().find(|l| l["type"] == "tool_result").unwrap();
    assert!(
        read["content"].as_str().unwrap().contains("a - b"),
        "{read}"
    );
    // Its ids never equal its parent's.
    let sub_call = sub.iter().find(|l| l["type"] == "tool_call").unwrap();
    assert_ne!(sub_call["id"], call_id);

    // summary.json: the task's usage includes the sub-agent's; each run is listed.
    let report = summary(&artifacts);
    let task = &report["tasks"][0];
    assert_eq!(task["turns"], 2, "the main agent's turns");
    assert_eq!(task["usage"]["input_tokens"], 270);
    let agents = task["agents"].as_array().unwrap();
    assert_eq!(agents.len(), 1);
    assert_eq!(agents[0]["agent_type"], "reviewer");
    assert_eq!(agents[0]["turns"], 2);
    assert_eq!(agents[0]["depth"], 1);
    assert_eq!(agents[0]["usage"]["input_tokens"], 250);
    let markdown = std::fs::read_to_string(artifacts.join("summary.md")).unwrap();
    assert!(
        markdown.contains(
            "Sub-agents (included in the figures above): `review` (1 sub-agent run, 2 turns"
        ),
        "{markdown}"
    );

    // One hash chain holds both agents' lines.
    let verified = drover()
        .args(["transcript", "verify"])
        .arg(artifacts.join("review/transcript.jsonl"))
        .output()
        .unwrap();
    assert_exit(&verified, 0);

    // A strict replay takes the same path, the sub-agent's turns included.
    let replayed = dir.path().join("replayed");
    let replay = drover()
        .current_dir(dir.path())
        .arg("replay")
        .arg(artifacts.join("review/transcript.jsonl"))
        .arg("--strict")
        .arg("--artifacts")
        .arg(&replayed)
        .output()
        .unwrap();
    assert_exit(&replay, 0);
    let again = transcript(&replayed.join("review/transcript.jsonl"));
    assert!(events(&again, "replay_drift").is_empty());
    let replayed_result = agent_result(&again);
    assert!(
        replayed_result["content"]
            .as_str()
            .unwrap()
            .starts_with("- add subtracts")
    );
    assert!(again.iter().any(|l| l["agent_id"] == agent_id.as_str()));
}

#[test]
fn a_sub_agent_has_only_its_tools_and_the_parents_policy() {
    let dir = tempfile::tempdir().unwrap();
    // The reviewer lists Bash, but the task's policy does not allow it; it does not
    // list Write, which the parent has.
    let agents = r#"  reviewer:
    description: Reviews.
    prompt: Review.
    tools: [Read, Bash]
    model:
      script:
        - tool_calls:
            - { name: Bash, input: { command: "touch pwned" } }
            - { name: Write, input: { file_path: planted, content: x } }
        - text: tried
"#;
    let spec = review_task(
        dir.path(),
        "narrow",
        agents,
        "permissions:\n  allow: [Write]\n",
    );
    let artifacts = dir.path().join("out");
    let output = run_spec(&spec, &artifacts);
    assert_exit(&output, 0);
    let lines = transcript(&artifacts.join("narrow/transcript.jsonl"));
    let sub_results: Vec<&Value> = events(&lines, "tool_result")
        .into_iter()
        .filter(|e| e.get("agent_id").is_some())
        .collect();
    assert_eq!(sub_results.len(), 2);
    assert_eq!(sub_results[0]["is_error"], true);
    assert!(
        sub_results[0]["content"]
            .as_str()
            .unwrap()
            .contains("Permission denied"),
        "{}",
        sub_results[0]
    );
    assert_eq!(sub_results[1]["is_error"], true);
    assert!(
        sub_results[1]["content"]
            .as_str()
            .unwrap()
            .contains("No such tool: Write"),
        "{}",
        sub_results[1]
    );
    let denial = events(&lines, "permission")
        .into_iter()
        .find(|e| e["decision"] == "deny")
        .unwrap();
    assert!(denial.get("agent_id").is_some());
    // The sub-agent's denial is the task's: summary.json lists it.
    let report = summary(&artifacts);
    let denials = report["tasks"][0]["denials"].as_array().unwrap();
    assert_eq!(denials.len(), 1, "{denials:?}");
    assert_eq!(denials[0]["tool"], "Bash");
    let patch = std::fs::read_to_string(artifacts.join("narrow/diff.patch")).unwrap();
    assert!(patch.is_empty(), "{patch}");
}

#[test]
fn a_sub_agents_tokens_count_toward_the_tasks_budget() {
    let dir = tempfile::tempdir().unwrap();
    let agents = r#"  reviewer:
    description: Reviews.
    prompt: Review.
    tools: [Read]
    model:
      script:
        - tool_calls: [{ name: Read, input: { file_path: src/lib.rs } }]
          usage: { input_tokens: 400, output_tokens: 100 }
        - tool_calls: [{ name: Read, input: { file_path: src/lib.rs } }]
          usage: { input_tokens: 400, output_tokens: 100 }
        - text: never reached
"#;
    let spec = review_task(dir.path(), "budget", agents, "limits:\n  max_tokens: 300\n");
    let artifacts = dir.path().join("out");
    let output = run_spec(&spec, &artifacts);
    assert_exit(&output, 1);
    let report = summary(&artifacts);
    let task = &report["tasks"][0];
    assert_eq!(task["reason"], "budget", "{task}");
    let agents = task["agents"].as_array().unwrap();
    assert_eq!(agents[0]["reason"], "budget");
    assert_eq!(
        agents[0]["turns"], 1,
        "the sub-agent stopped after crossing the budget"
    );
    let lines = transcript(&artifacts.join("budget/transcript.jsonl"));
    let result = agent_result(&lines);
    assert_eq!(result["is_error"], true);
    assert!(
        result["content"].as_str().unwrap().contains("(budget)"),
        "{result}"
    );
}

#[test]
fn nesting_stops_at_max_agent_depth() {
    let dir = tempfile::tempdir().unwrap();
    let agents = r#"  reviewer:
    description: Reviews, and may delegate.
    prompt: Review.
    tools: [Read, Agent]
    model:
      script:
        - tool_calls:
            - name: Agent
              input: { description: deeper, prompt: go deeper, subagent_type: reviewer }
        - text: could not delegate
"#;
    let spec = review_task(
        dir.path(),
        "depth",
        agents,
        "limits:\n  max_agent_depth: 1\n",
    );
    let artifacts = dir.path().join("out");
    let output = run_spec(&spec, &artifacts);
    assert_exit(&output, 0);
    let lines = transcript(&artifacts.join("depth/transcript.jsonl"));
    let nested = events(&lines, "tool_result")
        .into_iter()
        .find(|e| e.get("agent_id").is_some())
        .unwrap();
    assert_eq!(nested["is_error"], true);
    assert!(
        nested["content"]
            .as_str()
            .unwrap()
            .contains("at most 1 deep"),
        "{nested}"
    );
    assert_eq!(events(&lines, "agent_start").len(), 1);
}

#[test]
fn agents_from_reads_claude_code_agent_files_and_task_is_an_alias() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("agents")).unwrap();
    std::fs::write(
        dir.path().join("agents/reviewer.md"),
        "---\nname: reviewer\ndescription: Reviews code.\ntools: Read, Glob, chrome-mcp\ncolor: green\n---\nYou review code.\n",
    )
    .unwrap();
    // A tool drover does not have leaves that tool out, not the file or the run.
    std::fs::write(
        dir.path().join("agents/browser.md"),
        "---\nname: browser\ndescription: Browses.\ntools: computer-use\n---\nYou browse.\n",
    )
    .unwrap();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    let spec = write_spec(
        dir.path(),
        "from.yaml",
        r#"version: 1
name: from
prompt: p
workspace: ws
isolation: copy
model:
  provider: script
  script:
    - tool_calls:
        - name: Task
          input: { description: review, prompt: review it, subagent_type: reviewer }
    - text: done
agents_from: agents
"#,
    );
    let artifacts = dir.path().join("out");
    let output = run_spec(&spec, &artifacts);
    assert_exit(&output, 0);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("`color` ignored"), "{stderr}");
    assert!(
        stderr.contains("tool \"chrome-mcp\" left out of agent reviewer"),
        "{stderr}"
    );
    assert!(
        stderr.contains("tool \"computer-use\" left out of agent browser"),
        "{stderr}"
    );
    let lines = transcript(&artifacts.join("from/transcript.jsonl"));
    let start = &events(&lines, "run_start")[0];
    // The notes are kept with the run, not only printed.
    let notes = start["notes"].to_string();
    assert!(notes.contains("left out of agent browser"), "{notes}");
    assert!(
        start["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "Agent")
    );
    let sub_start = &events(&lines, "agent_start")[0];
    assert_eq!(sub_start["tools"], serde_json::json!(["Read", "Glob"]));
    let result = agent_result(&lines);
    assert_eq!(result["is_error"], false, "{result}");
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .contains("the sub-agent ended without a report")
    );
}

#[test]
fn a_bad_agent_definition_is_a_spec_error_at_its_place() {
    let dir = tempfile::tempdir().unwrap();
    let agents = "  reviewer:\n    description: d\n    prompt: p\n    tools: [Raed]\n";
    let spec = review_task(dir.path(), "bad", agents, "");
    let output = drover().arg("validate").arg(&spec).output().unwrap();
    assert_exit(&output, 2);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("\"Raed\" is not a tool name"), "{stderr}");
    assert!(stderr.contains("bad.yaml:"), "{stderr}");
}

#[test]
fn the_agent_tool_is_listed_judged_and_withheld_like_any_tool() {
    let dir = tempfile::tempdir().unwrap();
    let spec = review_task(dir.path(), "listed", READING_REVIEWER, "");
    let listing = drover()
        .args(["tools", "--json", "--spec"])
        .arg(&spec)
        .output()
        .unwrap();
    assert_exit(&listing, 0);
    let tools: Value = serde_json::from_slice(&listing.stdout).unwrap();
    let agent = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "Agent")
        .expect("the Agent tool is listed");
    assert!(
        agent["description"]
            .as_str()
            .unwrap()
            .contains("- reviewer: Reviews code for bugs."),
        "{agent}"
    );
    // Allowed by default (its sub-agent's calls are judged one by one), under its old
    // name too.
    let check = |spec: &Path, tool: &str| {
        drover()
            .args(["policy", "check", "--spec"])
            .arg(spec)
            .args(["--tool", tool, "--input"])
            .arg(r#"{"description":"d","prompt":"p","subagent_type":"reviewer"}"#)
            .output()
            .unwrap()
    };
    assert_exit(&check(&spec, "Agent"), 0);
    assert_exit(&check(&spec, "Task"), 0);
    // `deny: [Task]` withholds it: not offered, and a call is denied.
    let denied = review_task(
        dir.path(),
        "denied",
        READING_REVIEWER,
        "permissions:\n  deny: [Task]\n",
    );
    assert_exit(&check(&denied, "Agent"), 1);
    let artifacts = dir.path().join("out");
    let output = run_spec(&denied, &artifacts);
    assert_exit(&output, 0);
    let lines = transcript(&artifacts.join("denied/transcript.jsonl"));
    let start = &events(&lines, "run_start")[0];
    assert!(
        !start["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "Agent")
    );
    assert!(events(&lines, "agent_start").is_empty());
}

#[test]
fn a_sub_agent_on_a_real_provider_gets_its_own_prompt_tools_and_requested_model() {
    use crate::mock_server::{MockServer, Reply};
    use crate::providers::{KEY, anthropic_end, anthropic_start, anthropic_text, run, sse, task};
    use serde_json::json;

    let call = anthropic_start(100, 0, 0)
        + &sse(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_parent", "name": "Agent", "input": {"description": "review", "prompt": "Review notes.txt.", "subagent_type": "reviewer", "model": "haiku"}}}),
        )
        + &sse(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        )
        + &anthropic_end("tool_use", 20);
    let report = anthropic_start(40, 0, 0)
        + &anthropic_text(0, "notes.txt looks fine")
        + &anthropic_end("end_turn", 5);
    let done =
        anthropic_start(60, 0, 0) + &anthropic_text(0, "done") + &anthropic_end("end_turn", 3);
    let server = MockServer::start(vec![
        Reply::sse(&call),
        Reply::sse(&report),
        Reply::sse(&done),
    ]);
    let (dir, spec) = task(
        "anthropic",
        &server.base_url,
        "  pricing: { input: 1, output: 2 }\n",
    );
    let text = std::fs::read_to_string(&spec).unwrap()
        + "agents:\n  reviewer:\n    description: Reviews.\n    prompt: You are the REVIEWER.\n    tools: [Read]\n";
    std::fs::write(&spec, text).unwrap();
    let artifacts = dir.path().join("out");
    let output = run(&spec, &artifacts, Some(KEY));
    assert_exit(&output, 0);
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let parent = requests[0].json();
    assert_eq!(parent["model"], "test-model");
    let sub = requests[1].json();
    assert_eq!(sub["model"], "claude-haiku-4-5", "the call's model alias");
    assert!(
        sub["system"][0]["text"]
            .as_str()
            .unwrap()
            .contains("You are the REVIEWER.")
    );
    let tools: Vec<&str> = sub["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, vec!["Read"]);
    assert_eq!(
        sub["messages"][0]["content"][0]["text"],
        "Review notes.txt."
    );
    let back = requests[2].json();
    let result = &back["messages"][2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert!(
        result["content"]
            .to_string()
            .contains("notes.txt looks fine"),
        "{result}"
    );
    // The key never reaches an artifact, the sub-agent's lines included.
    let lines = std::fs::read_to_string(artifacts.join("t/transcript.jsonl")).unwrap();
    assert!(!lines.contains(KEY));
}

#[test]
fn a_hook_on_agent_also_sees_calls_named_task() {
    let dir = tempfile::tempdir().unwrap();
    let spec = review_task(
        dir.path(),
        "hooked",
        READING_REVIEWER,
        "hooks:\n  PreToolUse:\n    - matcher: Agent\n      hooks: [{ type: command, command: \"echo no agents here >&2; exit 2\", sandbox: off }]\n",
    );
    let text = std::fs::read_to_string(&spec)
        .unwrap()
        .replace("        - name: Agent\n", "        - name: Task\n");
    std::fs::write(&spec, text).unwrap();
    let artifacts = dir.path().join("out");
    let output = run_spec(&spec, &artifacts);
    assert_exit(&output, 0);
    let lines = transcript(&artifacts.join("hooked/transcript.jsonl"));
    let permission = &events(&lines, "permission")[0];
    assert_eq!(permission["decision"], "deny", "{permission}");
    assert_eq!(permission["rule"], "hook:PreToolUse");
    assert!(events(&lines, "agent_start").is_empty());
}

#[test]
fn a_nested_agent_never_has_more_tools_than_the_agent_that_starts_it() {
    let dir = tempfile::tempdir().unwrap();
    let agents = r#"  reviewer:
    description: Reads, and may delegate.
    prompt: Review.
    tools: [Read, Agent]
    model:
      script:
        - tool_calls:
            - name: Agent
              input: { description: run it, prompt: run it, subagent_type: runner }
        - text: delegated
  runner:
    description: Runs commands.
    prompt: Run.
    tools: [Bash]
    model:
      script:
        - tool_calls: [{ name: Bash, input: { command: "touch escalated" } }]
        - text: ran
"#;
    let spec = review_task(
        dir.path(),
        "nested",
        agents,
        "permissions:\n  allow: [\"Bash(touch *)\"]\n",
    );
    let artifacts = dir.path().join("out");
    let output = run_spec(&spec, &artifacts);
    assert_exit(&output, 0);
    let lines = transcript(&artifacts.join("nested/transcript.jsonl"));
    let starts = events(&lines, "agent_start");
    assert_eq!(starts.len(), 2);
    assert_eq!(starts[1]["agent_type"], "runner");
    assert_eq!(
        starts[1]["tools"],
        serde_json::json!([]),
        "Bash is not the reviewer's"
    );
    let patch = std::fs::read_to_string(artifacts.join("nested/diff.patch")).unwrap();
    assert!(!patch.contains("escalated"), "{patch}");
}

#[test]
fn the_tasks_turn_limit_bounds_every_agent() {
    let dir = tempfile::tempdir().unwrap();
    let agents = r#"  reviewer:
    description: Reads a lot.
    prompt: Review.
    tools: [Read]
    max_turns: 100
    model:
      script:
        - tool_calls: [{ name: Read, input: { file_path: src/lib.rs } }]
        - tool_calls: [{ name: Read, input: { file_path: src/lib.rs } }]
        - tool_calls: [{ name: Read, input: { file_path: src/lib.rs } }]
        - text: never
"#;
    let spec = review_task(dir.path(), "turns", agents, "limits:\n  max_turns: 2\n");
    let artifacts = dir.path().join("out");
    let output = run_spec(&spec, &artifacts);
    assert_exit(&output, 0);
    let report = summary(&artifacts);
    let task = &report["tasks"][0];
    assert_eq!(task["agents"][0]["reason"], "max_turns");
    assert_eq!(task["agents"][0]["turns"], 2);
    assert_eq!(task["agent_turns"], 2);
    let lines = transcript(&artifacts.join("turns/transcript.jsonl"));
    assert_eq!(lines.last().unwrap()["agent_turns"], 2);
}

#[test]
fn unsafe_agent_settings_are_spec_errors() {
    let dir = tempfile::tempdir().unwrap();
    let validate = |spec: &Path| {
        let output = drover().arg("validate").arg(spec).output().unwrap();
        assert_exit(&output, 2);
        String::from_utf8_lossy(&output.stderr).to_string()
    };
    let deep = review_task(
        dir.path(),
        "deep",
        READING_REVIEWER,
        "limits:\n  max_agent_depth: 100000\n",
    );
    assert!(validate(&deep).contains("max_agent_depth is 100000"));
    let hot = review_task(
        dir.path(),
        "hot",
        "  reviewer:\n    description: d\n    prompt: p\n    model: { temperature: 99 }\n",
        "",
    );
    assert!(validate(&hot).contains("temperature 99"));

    // An agent file that is a link (here to a secret) is refused, never read or echoed.
    std::fs::create_dir_all(dir.path().join("agents")).unwrap();
    std::fs::write(dir.path().join("secret.txt"), "TOP-SECRET-VALUE: x\n").unwrap();
    std::os::unix::fs::symlink(
        dir.path().join("secret.txt"),
        dir.path().join("agents/evil.md"),
    )
    .unwrap();
    let linked = review_task(
        dir.path(),
        "linked",
        READING_REVIEWER,
        "agents_from: agents\n",
    );
    let stderr = validate(&linked);
    assert!(stderr.contains("not a regular file"), "{stderr}");
    assert!(!stderr.contains("TOP-SECRET"), "{stderr}");

    // Two files defining one agent.
    std::fs::remove_file(dir.path().join("agents/evil.md")).unwrap();
    for file in ["a.md", "b.md"] {
        std::fs::write(
            dir.path().join("agents").join(file),
            "---\nname: twin\ndescription: d\n---\nprompt\n",
        )
        .unwrap();
    }
    let stderr = validate(&linked);
    assert!(stderr.contains("both define the agent twin"), "{stderr}");
}

#[test]
fn a_replay_answers_a_sub_agents_web_fetch_from_the_recording() {
    use crate::mock_server::{MockServer, Reply};
    let server = MockServer::start(vec![
        Reply::status(200, "<p>The answer is 42.</p>")
            .with_header("Content-Type", "text/html; charset=utf-8"),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let agents = format!(
        "  reviewer:\n    description: Looks things up.\n    prompt: Look it up.\n    tools: [WebFetch]\n    model:\n      script:\n        - tool_calls: [{{ name: WebFetch, input: {{ url: \"{}/\", prompt: \"What?\" }} }}]\n        - text: it says 42\n",
        server.base_url
    );
    let spec = review_task(
        dir.path(),
        "fetching",
        &agents,
        "permissions:\n  allow: [\"WebFetch(domain:127.0.0.1)\"]\n",
    );
    let artifacts = dir.path().join("out");
    assert_exit(&run_spec(&spec, &artifacts), 0);
    let lines = transcript(&artifacts.join("fetching/transcript.jsonl"));
    let fetched = events(&lines, "tool_result")
        .into_iter()
        .find(|e| e.get("agent_id").is_some())
        .unwrap();
    assert!(
        fetched["content"].as_str().unwrap().contains("42"),
        "{fetched}"
    );
    assert_eq!(server.requests().len(), 1);

    let replayed = dir.path().join("replayed");
    let output = drover()
        .current_dir(dir.path())
        .arg("replay")
        .arg(artifacts.join("fetching/transcript.jsonl"))
        .arg("--strict")
        .arg("--artifacts")
        .arg(&replayed)
        .output()
        .unwrap();
    assert_exit(&output, 0);
    assert_eq!(server.requests().len(), 1, "the replay fetched nothing");
    let again = transcript(&replayed.join("fetching/transcript.jsonl"));
    assert!(events(&again, "replay_drift").is_empty());
}
