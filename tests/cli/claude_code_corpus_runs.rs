//! The corpus's hook settings, agent files and `.mcp.json` files (fixtures/claude-code)
//! loaded as a spec loads them — `hooks_from:`, `agents_from:`, `mcp.config:` — and run in
//! scripted tasks, against fixtures/claude-code/expectations.json. The hook scripts those
//! files run are the repositories' code and are not in the corpus: the test puts a
//! stand-in at each path, which records the event it was given.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::claude_code_corpus::{corpus, expectations, section, text};
use crate::common::{self, drover, drover_without_proxy, events, transcript, write_spec};

fn executable(path: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, body).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The stand-ins: `.claude/hooks/session-start.sh` and each script a `bash PATH.sh`
/// command runs, in the workspace `ws`, and for each `${CLAUDE_PLUGIN_ROOT}/NAME.js` a
/// script in `plugin`. Each appends `{"script": …, "input": <its stdin>}` to the
/// workspace's `hook-log.jsonl`.
fn stand_ins(ws: &Path, plugin: &Path, commands: &[&str]) {
    let shell_stand_in = |name: &str| {
        format!(
            "#!/bin/bash\nprintf '{{\"script\":\"{name}\",\"input\":%s}}\\n' \"$(tr -d '\\n')\" >> \"$CLAUDE_PROJECT_DIR/hook-log.jsonl\"\n"
        )
    };
    executable(
        &ws.join(".claude/hooks/session-start.sh"),
        &shell_stand_in("session-start.sh"),
    );
    for command in commands {
        if let Some(script) = command.strip_prefix("bash ") {
            executable(&ws.join(script), &shell_stand_in(script));
            continue;
        }
        let Some(start) = command.find("${CLAUDE_PLUGIN_ROOT}/") else {
            continue;
        };
        let rest = &command[start + "${CLAUDE_PLUGIN_ROOT}/".len()..];
        let name = &rest[..rest.find(".js").expect("a .js script") + 3];
        let body = format!(
            "let s = '';\nprocess.stdin.on('data', d => s += d).on('end', () => require('fs').appendFileSync(\n  process.env.CLAUDE_PROJECT_DIR + '/hook-log.jsonl',\n  JSON.stringify({{ script: '{name}', input: JSON.parse(s) }}) + '\\n'));\n"
        );
        executable(&plugin.join(name), &body);
    }
}

/// The stand-ins' records, in order.
fn hook_log(ws: &Path) -> Vec<Value> {
    std::fs::read_to_string(ws.join("hook-log.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}")))
        .collect()
}

/// A task `name` in `dir/specs`, its workspace `dir/name`, whose model makes a Bash, a
/// Write and a Read call: every tool event the corpus's hooks match on.
fn hooked_task(dir: &Path, name: &str, settings: &Path) -> PathBuf {
    std::fs::create_dir_all(dir.join(name)).unwrap();
    std::fs::create_dir_all(dir.join("specs")).unwrap();
    write_spec(
        &dir.join("specs"),
        &format!("{name}.yaml"),
        &format!(
            "version: 1\nname: {name}\nprompt: p\nworkspace: ../{name}\nmodel:\n  provider: script\n  script:\n    - tool_calls: [{{ name: Bash, input: {{ command: \"echo hi\" }} }}, {{ name: Write, input: {{ file_path: notes.txt, content: \"x\\n\" }} }}, {{ name: Read, input: {{ file_path: notes.txt }} }}]\n    - text: done\npermissions:\n  allow: [Bash, Write]\nhooks_from: {}\n",
            serde_json::to_string(&settings.display().to_string()).unwrap()
        ),
    )
}

/// What is wrong with one task's hook events, given its table row.
fn hook_problems(row: &Value, lines: &[Value], log: &[Value]) -> Vec<String> {
    let source = text(row, "source");
    let runs = section(row, "runs");
    let hooks = events(lines, "hook");
    let mut problems = Vec::new();
    if hooks.len() != runs.len() {
        problems.push(format!(
            "{source}: {} hook runs, the table has {}: {hooks:?}",
            hooks.len(),
            runs.len()
        ));
    }
    let call_of = |tool: &str| -> Option<Value> {
        events(lines, "tool_call")
            .into_iter()
            .find(|call| call["name"] == tool)
            .map(|call| call["id"].clone())
    };
    for run in runs {
        let event = text(run, "event");
        let tool = run["tool"].as_str();
        let id = tool.map_or(Value::Null, |t| call_of(t).unwrap_or_default());
        let ran = hooks.iter().find(|hook| {
            hook["event"] == event && hook["command"] == run["command"] && hook["tool_use_id"] == id
        });
        let Some(ran) = ran else {
            problems.push(format!("{source}: no {event} hook for {tool:?}"));
            continue;
        };
        let stand_in = run["stand_in"].as_bool().unwrap_or(false);
        let recorded = log.iter().any(|entry| {
            entry["input"]["hook_event_name"] == event
                && tool.is_none_or(|t| entry["input"]["tool_name"] == t)
        });
        if stand_in && (ran["exit_code"] != 0 || !recorded) {
            problems.push(format!(
                "{source}: the stand-in did not record {event} {tool:?}: {ran}"
            ));
        }
        if !stand_in && ran["exit_code"] == 0 {
            problems.push(format!(
                "{source}: {event} ran a command that is not here: {ran}"
            ));
        }
    }
    let notes = events(lines, "run_start")[0]["notes"].to_string();
    for skipped in row["skipped"].as_array().into_iter().flatten() {
        let note = format!("{} hooks skipped", skipped.as_str().unwrap());
        if !notes.contains(&note) {
            problems.push(format!("{source}: no note {note:?} in {notes}"));
        }
    }
    problems
}

#[test]
#[cfg_attr(
    not(all(drover_has_sandbox, drover_has_node)),
    ignore = "needs node (which runs the plugins' stand-ins) and drover's sandbox (Landlock ABI 3+)"
)]
fn each_corpus_hook_config_loads_and_runs_its_events_in_a_scripted_task() {
    common::require_sandbox();
    common::require_program("node");
    let table = expectations();
    let rows = section(&table, "hooks");
    let dir = tempfile::tempdir().unwrap();
    let plugin = dir.path().join("plugin");
    let (running, refused): (Vec<_>, Vec<_>) = rows.iter().partition(|r| r["refused"].is_null());
    for (index, row) in running.iter().enumerate() {
        let name = format!("hooks{index}");
        hooked_task(dir.path(), &name, &corpus().join(text(row, "source")));
        let commands: Vec<&str> = section(row, "runs")
            .iter()
            .map(|r| text(r, "command"))
            .collect();
        stand_ins(&dir.path().join(&name), &plugin, &commands);
    }
    // Every task in one run.
    let artifacts = dir.path().join("out");
    let output = drover_without_proxy()
        .arg("run")
        .arg(dir.path().join("specs"))
        .arg("--artifacts")
        .arg(&artifacts)
        .env("CLAUDE_PLUGIN_ROOT", &plugin)
        .output()
        .unwrap();
    common::assert_exit(&output, 0);
    let mut problems = Vec::new();
    for (index, row) in running.iter().enumerate() {
        let name = format!("hooks{index}");
        let lines = transcript(&artifacts.join(&name).join("transcript.jsonl"));
        problems.extend(hook_problems(
            row,
            &lines,
            &hook_log(&dir.path().join(&name)),
        ));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));

    // A file drover refuses is refused at its own line and column (see its divergence).
    let bad = tempfile::tempdir().unwrap();
    for (index, row) in refused.iter().enumerate() {
        let source = text(row, "source");
        let spec = hooked_task(
            bad.path(),
            &format!("refused{index}"),
            &corpus().join(source),
        );
        let output = drover().arg("validate").arg(&spec).output().unwrap();
        assert_eq!(output.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&output.stderr);
        let at = format!("{source}:{}: ", text(&row["refused"], "at"));
        assert!(stderr.contains(&at), "{at}: {stderr}");
        assert!(stderr.contains(text(&row["refused"], "says")), "{stderr}");
    }
}

/// A task whose model asks each agent of `names` for a report, with `agents_from: agents`.
fn agent_task(dir: &Path, names: &[&str]) -> PathBuf {
    let calls: String = names
        .iter()
        .map(|name| {
            format!("        - {{ name: Agent, input: {{ description: d, prompt: report, subagent_type: {name} }} }}\n")
        })
        .collect();
    let calls = if calls.is_empty() {
        String::new()
    } else {
        format!("    - tool_calls:\n{calls}")
    };
    std::fs::create_dir_all(dir.join("ws")).unwrap();
    write_spec(
        dir,
        "agents.yaml",
        &format!(
            "version: 1\nname: agents\nprompt: p\nworkspace: ws\nmodel:\n  provider: script\n  script:\n{calls}    - text: done\nagents_from: agents\n"
        ),
    )
}

/// The tools an agent of `row` must be offered: its list, or all its parent's but Agent.
fn offered(row: &Value, parent: &[Value]) -> Vec<Value> {
    match &row["tools"] {
        Value::String(all) if all == "all" => {
            parent.iter().filter(|t| *t != "Agent").cloned().collect()
        }
        list => list.as_array().expect("tools: a list or \"all\"").clone(),
    }
}

#[test]
fn each_corpus_agent_file_loads_and_runs_as_a_sub_agent_or_is_refused_at_its_position() {
    let table = expectations();
    let rows = section(&table, "agents");
    let (loading, refused): (Vec<_>, Vec<_>) = rows.iter().partition(|r| r["refused"].is_null());
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("agents")).unwrap();
    for row in &loading {
        let source = corpus().join(text(row, "source"));
        std::fs::copy(
            &source,
            dir.path().join("agents").join(source.file_name().unwrap()),
        )
        .unwrap();
    }
    let names: Vec<&str> = loading.iter().map(|r| text(r, "name")).collect();
    let spec = agent_task(dir.path(), &names);
    let artifacts = dir.path().join("out");
    let output = common::run_spec(&spec, &artifacts);
    common::assert_exit(&output, 0);
    let lines = transcript(&artifacts.join("agents/transcript.jsonl"));
    let start = events(&lines, "run_start")[0];
    let parent = start["tools"].as_array().unwrap();
    let notes = start["notes"].to_string();
    for row in &loading {
        let name = text(row, "name");
        let started = events(&lines, "agent_start")
            .into_iter()
            .find(|e| {
                e["agent_id"]
                    .as_str()
                    .unwrap()
                    .starts_with(&format!("{name}@"))
            })
            .unwrap_or_else(|| panic!("agent {name} never started"));
        let mut tools: Vec<Value> = started["tools"].as_array().unwrap().clone();
        let mut want = offered(row, parent);
        tools.sort_by_key(Value::to_string);
        want.sort_by_key(Value::to_string);
        assert_eq!(tools, want, "{name}");
        for note in section(row, "notes") {
            let note = note.as_str().unwrap();
            assert!(
                notes.contains(&note.replace('"', "\\\"")),
                "{name}: {note} not in {notes}"
            );
        }
    }
    for result in events(&lines, "tool_result") {
        assert_eq!(result["is_error"], false, "{result}");
    }
    refused_agents(&refused);
}

/// Each refused agent file, alone in its directory, is refused at its line and column.
fn refused_agents(rows: &[&Value]) {
    let dir = tempfile::tempdir().unwrap();
    for (index, row) in rows.iter().enumerate() {
        let case = dir.path().join(format!("case{index}"));
        std::fs::create_dir_all(case.join("agents")).unwrap();
        let source = corpus().join(text(row, "source"));
        let file = source.file_name().unwrap().to_str().unwrap();
        std::fs::copy(&source, case.join("agents").join(file)).unwrap();
        let spec = agent_task(&case, &[]);
        let output = drover().arg("validate").arg(&spec).output().unwrap();
        assert_eq!(output.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&output.stderr);
        let (line, column) = text(&row["refused"], "at").split_once(':').unwrap();
        let at = format!("agents/{file}: front matter at line {line} column {column}: ");
        assert!(stderr.contains(&at), "{at}: {stderr}");
        assert!(stderr.contains(text(&row["refused"], "says")), "{stderr}");
        assert!(
            stderr.contains("agents.yaml:"),
            "names the spec's line: {stderr}"
        );
    }
}

/// A task `name` in `dir/specs` reading `config`, with the network when `network`.
fn mcp_task(dir: &Path, name: &str, config: &Path, network: bool) -> PathBuf {
    std::fs::create_dir_all(dir.join(name)).unwrap();
    std::fs::create_dir_all(dir.join("specs")).unwrap();
    let sandbox = if network {
        "sandbox: { network: true }\n"
    } else {
        ""
    };
    write_spec(
        &dir.join("specs"),
        &format!("{name}.yaml"),
        &format!(
            "version: 1\nname: {name}\nprompt: p\nworkspace: ../{name}\n{sandbox}model: {{ provider: script, script: [ {{ text: done }} ] }}\nmcp:\n  timeouts: {{ startup: 1s }}\n  config: {}\n",
            serde_json::to_string(&config.display().to_string()).unwrap()
        ),
    )
}

#[test]
fn each_corpus_mcp_config_loads_the_servers_it_declares_and_names_what_it_leaves_out() {
    let table = expectations();
    let rows = section(&table, "mcp");
    let dir = tempfile::tempdir().unwrap();
    // Every file is valid: a server drover cannot use is left out with a note, the rest
    // of the file is used.
    for (index, row) in rows.iter().enumerate() {
        let config = corpus().join(text(row, "source"));
        let network = row["network"].as_bool().unwrap_or(false);
        let spec = mcp_task(dir.path(), &format!("check{index}"), &config, network);
        let output = drover().arg("validate").arg(&spec).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "{}: {stderr}", row["source"]);
        for note in row["notes"].as_array().into_iter().flatten() {
            let note = note.as_str().unwrap();
            assert!(stderr.contains(note), "{note:?} not in {stderr}");
        }
    }
}

/// None of the corpus's servers is installed here (each row's `run` says why), so a run
/// of each `.mcp.json` shows which servers drover read from the file and tried to start
/// (in their sandboxes), and the notes on what it left out.
#[test]
#[cfg_attr(
    not(drover_has_sandbox),
    ignore = "needs drover's sandbox (Landlock ABI 3+, Linux 6.2)"
)]
fn each_corpus_mcp_config_starts_the_servers_it_declares_in_a_run() {
    common::require_sandbox();
    let table = expectations();
    let rows = section(&table, "mcp");
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let offline: Vec<&Value> = rows.iter().filter(|row| row["network"] != true).collect();
    for (index, row) in offline.iter().enumerate() {
        let config = corpus().join(text(row, "source"));
        mcp_task(&runs, &format!("mcp{index}"), &config, false);
    }
    let artifacts = runs.join("out");
    let output = drover_without_proxy()
        .arg("run")
        .arg(runs.join("specs"))
        .arg("--artifacts")
        .arg(&artifacts)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    for (index, row) in offline.iter().enumerate() {
        let lines = transcript(&artifacts.join(format!("mcp{index}/transcript.jsonl")));
        let started: Vec<&Value> = events(&lines, "mcp_server")
            .into_iter()
            .map(|e| &e["server"])
            .collect();
        let declared: Vec<&Value> = section(row, "servers").iter().collect();
        assert_eq!(started, declared, "{}: {stderr}", row["source"]);
        let notes = events(&lines, "run_start")[0]["notes"].to_string();
        for note in row["notes"].as_array().into_iter().flatten() {
            let note = note.as_str().unwrap();
            assert!(notes.contains(note), "{note:?} not in {notes}");
        }
    }
}
