//! Real MCP servers from the registries, as repositories configure them, driven through
//! drover over stdio in the task's sandbox with real calls: the reference servers
//! `@modelcontextprotocol/server-filesystem` and `-memory` (npm, into .ci/node) and
//! `mcp-server-git` and `mcp-server-time` (PyPI, into .ci/venv), each installed by
//! .ci/run at a pinned version. Their tools are named, allowed and denied by drover's
//! rules (`mcp__filesystem__read_text_file`), their schemas are drover's to check, and
//! what they answer is what the model gets. `server-everything` is covered by mcp.rs.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::common::{self, drover, events, transcript, write_spec};
use crate::mcp::stderr;

/// The entry point of the npm package `@modelcontextprotocol/<package>` in .ci/node,
/// which the build found with node (`drover_has_node_servers`): if either is gone, the
/// test fails.
fn npm_server(package: &str) -> PathBuf {
    common::require_program("node");
    common::require_installed(&format!(
        ".ci/node/node_modules/@modelcontextprotocol/{package}/dist/index.js"
    ))
}

/// The console script `name` of a PyPI server in .ci/venv, which the build found
/// (`drover_has_python_servers`): if it is gone, the test fails.
fn venv_server(name: &str) -> PathBuf {
    common::require_installed(&format!(".ci/venv/bin/{name}"))
}

fn quoted(path: &Path) -> String {
    serde_json::to_string(&path.display().to_string()).unwrap()
}

/// A task in a fresh directory with its workspace `ws`, to be filled, then run.
struct Task {
    dir: tempfile::TempDir,
}

/// A task that ran: its output and transcript.
struct Ran {
    dir: tempfile::TempDir,
    output: Output,
    lines: Vec<Value>,
}

impl Task {
    fn new() -> Task {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("ws")).unwrap();
        Task { dir }
    }

    /// The workspace, as the servers see it (symbolic links resolved).
    fn ws(&self) -> PathBuf {
        self.dir.path().join("ws").canonicalize().unwrap()
    }

    /// Run it with the `mcp:` section `mcp`, the rules `permissions`, and a script of
    /// one turn per entry of `turns` (each a YAML list of calls); it must pass, and
    /// every server start with every tool it lists offered.
    fn run(self, mcp: &str, permissions: &str, turns: &[&str]) -> Ran {
        let mut script = String::new();
        for turn in turns {
            script.push_str(&format!("    - tool_calls: {turn}\n"));
        }
        let spec = format!(
            "version: 1\nname: t\nprompt: use the tools\nworkspace: ws\nmodel:\n  provider: script\n  script:\n{script}    - text: done\npermissions:\n{permissions}mcp:\n  timeouts: {{ startup: 60s, call: 30s }}\n{mcp}"
        );
        let spec = write_spec(self.dir.path(), "task.yaml", &spec);
        let output = common::drover_without_proxy()
            .arg("run")
            .arg(&spec)
            .arg("--artifacts")
            .arg(self.dir.path().join("out"))
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let lines = transcript(&self.dir.path().join("out/t/transcript.jsonl"));
        let started = events(&lines, "mcp_server");
        assert!(!started.is_empty());
        for server in &started {
            assert_eq!(server["status"], "started", "{server}");
            // None of its tools left out over its name or its schema.
            assert_eq!(
                server["left_out"].as_array().map_or(0, Vec::len),
                0,
                "{server}"
            );
        }
        assert!(!stderr(&output).contains("left out"), "{}", stderr(&output));
        Ran {
            dir: self.dir,
            output,
            lines,
        }
    }
}

impl Ran {
    fn results(&self) -> Vec<(bool, String)> {
        events(&self.lines, "tool_result")
            .iter()
            .map(|r| {
                (
                    r["is_error"].as_bool().unwrap(),
                    r["content"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    }

    fn ok(&self, i: usize) -> String {
        let (is_error, content) = &self.results()[i];
        assert!(!is_error, "result {i} is an error: {content}");
        content.clone()
    }

    fn error(&self, i: usize) -> String {
        let (is_error, content) = &self.results()[i];
        assert!(is_error, "result {i} is not an error: {content}");
        content.clone()
    }

    /// A file of the task's artifacts.
    fn artifact(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.path().join("out/t").join(name)).unwrap()
    }
}

/// The offered names of the first server's tools, as `run_start` lists them.
fn offered(ran: &Ran) -> Vec<String> {
    events(&ran.lines, "run_start")[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t.as_str().map(str::to_string))
        .filter(|t| t.starts_with("mcp__"))
        .collect()
}

#[test]
#[cfg_attr(
    not(drover_has_node_servers),
    ignore = "needs node and the MCP servers in .ci/node: .ci/run installs them"
)]
fn the_filesystem_server_from_a_mcp_json_reads_and_writes_the_workspace_and_nothing_outside() {
    let server = npm_server("server-filesystem");
    let calls = [
        r#"[{ name: mcp__filesystem__list_directory, input: { path: . } }, { name: mcp__filesystem__read_text_file, input: { path: src/lib.txt } }]"#,
        r#"[{ name: mcp__filesystem__read_text_file, input: { path: ../outside.txt } }]"#,
        r#"[{ name: mcp__filesystem__write_file, input: { path: notes.md, content: "written by the filesystem server\n" } }]"#,
        r#"[{ name: mcp__filesystem__write_file, input: { path: ../escaped.txt, content: "x" } }]"#,
        // Allowed by no rule: denied by drover, never sent to the server.
        r#"[{ name: mcp__filesystem__move_file, input: { source: notes.md, destination: moved.md } }]"#,
        // Not what its schema says: drover refuses it before the server sees it.
        r#"[{ name: mcp__filesystem__read_text_file, input: { file: src/lib.txt } }]"#,
    ];
    let task = Task::new();
    let ws = task.ws();
    std::fs::create_dir(ws.join("src")).unwrap();
    std::fs::write(ws.join("src/lib.txt"), "fn main() {}\n").unwrap();
    std::fs::write(ws.parent().unwrap().join("outside.txt"), "not yours").unwrap();
    // As repositories write it (with npx), rooted at the project.
    let config = serde_json::json!({"mcpServers": {"filesystem": {
        "command": "node",
        "args": [server.display().to_string(), "."],
    }}});
    std::fs::write(ws.join(".mcp.json"), config.to_string()).unwrap();
    let ran = task.run(
        "  config: ws/.mcp.json\n",
        "  allow: [mcp__filesystem__list_directory, mcp__filesystem__read_text_file, mcp__filesystem__write_file]\n",
        &calls,
    );
    let offered = offered(&ran);
    for tool in [
        "read_text_file",
        "write_file",
        "edit_file",
        "directory_tree",
    ] {
        assert!(
            offered.contains(&format!("mcp__filesystem__{tool}")),
            "{offered:?}"
        );
    }
    let listing = ran.ok(0);
    assert!(listing.contains("[DIR] src"), "{listing}");
    assert!(listing.contains("[FILE] .mcp.json"), "{listing}");
    assert_eq!(ran.ok(1), "fn main() {}\n");
    // The server refuses a path outside its root itself.
    assert!(
        ran.error(2).contains("outside allowed directories"),
        "{}",
        ran.error(2)
    );
    assert!(ran.ok(3).contains("Successfully wrote"), "{}", ran.ok(3));
    assert!(
        ran.error(4).contains("outside allowed directories"),
        "{}",
        ran.error(4)
    );
    assert!(
        ran.error(5).contains("Permission denied"),
        "{}",
        ran.error(5)
    );
    let invalid = ran.error(6);
    assert!(
        invalid.contains("\"path\" is a required property"),
        "{invalid}"
    );
    let permission = events(&ran.lines, "permission");
    assert!(
        permission.iter().any(|p| p["decision"] == "deny"
            && p["reason"]
                .as_str()
                .unwrap()
                .starts_with("mcp__filesystem__move_file ")),
        "{permission:?}"
    );
    // What it wrote is the task's change; nothing landed outside.
    let patch = ran.artifact("diff.patch");
    assert!(patch.contains("+++ b/notes.md"), "{patch}");
    assert!(
        patch.contains("+written by the filesystem server"),
        "{patch}"
    );
    assert!(!patch.contains("moved.md"), "{patch}");
    assert!(!ran.dir.path().join("escaped.txt").exists());
    // Only the allowed calls reached the server: two reads, a listing, two writes.
    let summary = common::summary(&ran.dir.path().join("out"));
    assert_eq!(
        summary["tasks"][0]["mcp_servers"][0]["calls"], 5,
        "{summary}"
    );

    // `policy check` names the same decisions without starting the server.
    let check = |tool: &str| {
        drover()
            .args(["policy", "check", "--spec"])
            .arg(ran.dir.path().join("task.yaml"))
            .args(["--tool", tool, "--input", r#"{"path": "src/lib.txt"}"#])
            .output()
            .unwrap()
            .status
            .code()
    };
    assert_eq!(check("mcp__filesystem__read_text_file"), Some(0));
    assert_eq!(check("mcp__filesystem__edit_file"), Some(1));
}

#[test]
#[cfg_attr(
    not(drover_has_node_servers),
    ignore = "needs node and the MCP servers in .ci/node: .ci/run installs them"
)]
fn the_memory_server_keeps_the_entities_and_relations_a_task_creates() {
    let server = npm_server("server-memory");
    let calls = [
        r#"[{ name: mcp__memory__create_entities, input: { entities: [ { name: drover, entityType: tool, observations: ["runs coding agents in CI"] }, { name: ci, entityType: system, observations: [] } ] } }]"#,
        r#"[{ name: mcp__memory__create_relations, input: { relations: [ { from: drover, to: ci, relationType: runs_in } ] } }]"#,
        r#"[{ name: mcp__memory__add_observations, input: { observations: [ { entityName: drover, contents: ["records a transcript"] } ] } }]"#,
        r#"[{ name: mcp__memory__read_graph, input: {} }, { name: mcp__memory__search_nodes, input: { query: transcript } }]"#,
        // An entity without the observations its schema requires: drover refuses it.
        r#"[{ name: mcp__memory__create_entities, input: { entities: [ { name: x, entityType: y } ] } }]"#,
    ];
    let task = Task::new();
    // The server keeps its graph in a file: in the workspace, it is the task's change.
    let mcp = format!(
        "  servers:\n    memory:\n      command: node\n      args: [{}]\n      env: {{ MEMORY_FILE_PATH: {} }}\n",
        quoted(&server),
        quoted(&task.ws().join("memory.jsonl"))
    );
    let ran = task.run(&mcp, "  allow: [mcp__memory]\n", &calls);
    let created: Value = serde_json::from_str(&ran.ok(0)).unwrap();
    assert_eq!(created.as_array().unwrap().len(), 2, "{created}");
    ran.ok(1);
    ran.ok(2);
    let graph: Value = serde_json::from_str(&ran.ok(3)).unwrap();
    let entity = graph["entities"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "drover")
        .unwrap();
    assert_eq!(
        entity["observations"],
        serde_json::json!(["runs coding agents in CI", "records a transcript"])
    );
    assert_eq!(
        graph["relations"],
        serde_json::json!([{ "from": "drover", "to": "ci", "relationType": "runs_in" }])
    );
    let found: Value = serde_json::from_str(&ran.ok(4)).unwrap();
    assert_eq!(found["entities"][0]["name"], "drover", "{found}");
    let refused = ran.error(5);
    assert!(refused.contains("observations"), "{refused}");
    // The refused call never reached the server: four creating calls, two reads.
    let summary = common::summary(&ran.dir.path().join("out"));
    assert_eq!(
        summary["tasks"][0]["mcp_servers"][0]["calls"], 5,
        "{summary}"
    );
    let patch = ran.artifact("diff.patch");
    assert!(patch.contains("+++ b/memory.jsonl"), "{patch}");
    assert!(patch.contains("runs_in"), "{patch}");
}

/// `git` in `dir` with a fixed identity; it must succeed.
fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.name=Test", "-c", "user.email=test@example.com"])
        .args(args)
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

#[test]
#[cfg_attr(
    not(drover_has_python_servers),
    ignore = "needs mcp-server-git and mcp-server-time in .ci/venv: .ci/run installs them"
)]
fn the_git_server_reports_the_status_log_and_diff_of_the_task_repository() {
    let server = venv_server("mcp-server-git");
    let task = Task::new();
    let ws = task.ws();
    std::fs::write(ws.join("lib.txt"), "one\n").unwrap();
    git(&ws, &["init", "-q", "-b", "main"]);
    git(&ws, &["add", "lib.txt"]);
    git(
        &ws,
        &["commit", "-q", "-m", "the first commit from the test"],
    );
    std::fs::write(ws.join("lib.txt"), "one\ntwo\n").unwrap();
    std::fs::write(ws.join("new.txt"), "new\n").unwrap();
    let calls = [
        r#"[{ name: mcp__git__git_status, input: { repo_path: . } }, { name: mcp__git__git_log, input: { repo_path: ., max_count: 5 } }, { name: mcp__git__git_diff_unstaged, input: { repo_path: . } }]"#,
        // A repository outside the one it was started for: the server refuses it.
        r#"[{ name: mcp__git__git_status, input: { repo_path: /tmp } }]"#,
        // Not allowed: denied by drover, never run.
        r#"[{ name: mcp__git__git_commit, input: { repo_path: ., message: sneaky } }]"#,
    ];
    let mcp = format!(
        "  servers:\n    git:\n      command: {}\n      args: [--repository, .]\n",
        quoted(&server)
    );
    let ran = task.run(
        &mcp,
        "  allow: [mcp__git__git_status, mcp__git__git_log, mcp__git__git_diff_unstaged]\n",
        &calls,
    );
    let status = ran.ok(0);
    assert!(status.contains("On branch main"), "{status}");
    assert!(status.contains("modified:   lib.txt"), "{status}");
    assert!(status.contains("new.txt"), "{status}");
    let log = ran.ok(1);
    assert!(log.contains("the first commit from the test"), "{log}");
    assert!(log.contains("Author: Test"), "{log}");
    let diff = ran.ok(2);
    assert!(diff.contains("+two"), "{diff}");
    let outside = ran.error(3);
    assert!(
        outside.contains("outside the allowed repository"),
        "{outside}"
    );
    assert!(
        ran.error(4).contains("Permission denied"),
        "{}",
        ran.error(4)
    );
    let summary = common::summary(&ran.dir.path().join("out"));
    assert_eq!(
        summary["tasks"][0]["mcp_servers"][0]["calls"], 4,
        "{summary}"
    );
}

#[test]
#[cfg_attr(
    not(drover_has_python_servers),
    ignore = "needs mcp-server-git and mcp-server-time in .ci/venv: .ci/run installs them"
)]
fn the_time_server_tells_the_time_in_a_zone_and_converts_between_zones() {
    let server = venv_server("mcp-server-time");
    let calls = [
        r#"[{ name: mcp__time__get_current_time, input: { timezone: Asia/Tokyo } }, { name: mcp__time__convert_time, input: { source_timezone: UTC, time: "12:00", target_timezone: Asia/Kolkata } }, { name: mcp__time__get_current_time, input: { timezone: Mars/Olympus_Mons } }]"#,
    ];
    let mcp = format!(
        "  servers:\n    time:\n      command: {}\n      args: [--local-timezone, UTC]\n",
        quoted(&server)
    );
    let ran = Task::new().run(&mcp, "  allow: [mcp__time]\n", &calls);
    let now: Value = serde_json::from_str(&ran.ok(0)).unwrap();
    assert_eq!(now["timezone"], "Asia/Tokyo", "{now}");
    assert!(
        now["datetime"].as_str().unwrap().ends_with("+09:00"),
        "{now}"
    );
    let converted: Value = serde_json::from_str(&ran.ok(1)).unwrap();
    assert_eq!(converted["source"]["timezone"], "UTC", "{converted}");
    let target = converted["target"]["datetime"].as_str().unwrap();
    assert!(target.ends_with("T17:30:00+05:30"), "{converted}");
    assert_eq!(converted["time_difference"], "+5.5h", "{converted}");
    let unknown = ran.error(2);
    assert!(unknown.contains("Invalid timezone"), "{unknown}");
    assert!(
        stderr(&ran.output).contains("passed"),
        "{}",
        stderr(&ran.output)
    );
}
