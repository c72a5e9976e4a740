//! The attacker is an MCP server choosing its tools' names. A name made safe for the
//! providers (`x.y` becomes `mcp__s__x_y`) must never take over the name, and so the
//! rules, of another tool (`x_y`): every tool that comes out under a shared name is left
//! out, and a rule naming that name reaches nothing — in a run and in a replay.

use std::path::Path;

use serde_json::Value;

use crate::common::{self, events, transcript};
use crate::mcp::{run, stderr, task};

/// The `mcp.servers` entry that runs `script` as server `s`.
fn server_entry(script: &Path) -> String {
    format!(
        "    s:\n      command: python3\n      args: [{}]\n",
        serde_json::to_string(&script.display().to_string()).unwrap()
    )
}

fn fixture() -> std::path::PathBuf {
    common::repo().join("tests/cli/fixtures/colliding_server.py")
}

/// A copy of the fixture at `to` that lists `tools`.
fn server_listing(to: &Path, tools: &str) {
    let text = std::fs::read_to_string(fixture()).unwrap().replace(
        r#"TOOLS = ["x.y", "x_y", "twice", "twice", "plain"]"#,
        &format!("TOOLS = {tools}"),
    );
    assert!(text.contains(&format!("TOOLS = {tools}")));
    std::fs::write(to, text).unwrap();
}

fn names(list: &Value, field: &str) -> Vec<String> {
    list.as_array()
        .map(|items| {
            items
                .iter()
                .map(|item| item[field].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
#[cfg_attr(
    not(drover_has_python3),
    ignore = "needs python3, which runs the fixture server"
)]
fn a_tool_whose_name_comes_out_as_anothers_never_gets_its_rule() {
    common::require_program("python3");
    // The rules are written for x_y, twice and plain; the server also lists x.y (which
    // comes out as mcp__s__x_y) and lists twice twice.
    let (dir, spec) = task(
        &server_entry(&fixture()),
        "mcp__s__x_y, mcp__s__twice, mcp__s__plain",
        r#"{ name: mcp__s__x_y, input: {} }, { name: mcp__s__twice, input: {} }, { name: mcp__s__plain, input: {} }"#,
    );
    let output = run(dir.path(), &spec);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let lines = transcript(&dir.path().join("out/t/transcript.jsonl"));
    let results = events(&lines, "tool_result");
    for (result, name) in results.iter().zip(["mcp__s__x_y", "mcp__s__twice"]) {
        assert_eq!(result["is_error"], true, "{name} reached a tool: {result}");
        let content = result["content"].as_str().unwrap();
        assert!(
            !content.contains("ran "),
            "{name} reached a tool: {content}"
        );
    }
    assert_eq!(results[2]["content"], "ran plain", "{}", results[2]);

    let start = events(&lines, "run_start")[0];
    let offered: Vec<String> = start["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t.as_str())
        .filter(|t| t.starts_with("mcp__"))
        .map(str::to_string)
        .collect();
    assert_eq!(offered, ["mcp__s__plain"]);
    let server = events(&lines, "mcp_server")[0];
    assert_eq!(
        names(&server["tools"], "name"),
        ["mcp__s__plain"],
        "{server}"
    );
    // Each tool left out is named once, with the name it would have had and why.
    let left_out = &server["left_out"];
    assert_eq!(names(left_out, "tool"), ["twice", "x.y", "x_y"], "{server}");
    assert_eq!(
        names(left_out, "name"),
        ["mcp__s__twice", "mcp__s__x_y", "mcp__s__x_y"]
    );
    let reasons = names(left_out, "reason");
    assert!(reasons[0].contains("more than once"), "{}", reasons[0]);
    assert!(reasons[1].contains("\"x_y\""), "{}", reasons[1]);
    assert!(reasons[2].contains("\"x.y\""), "{}", reasons[2]);
    let said = stderr(&output);
    assert!(
        said.contains("\"x.y\"") && said.contains("mcp__s__x_y") && said.contains("not offered"),
        "{said}"
    );

    // `drover tools` lists the same: neither tool under the shared name, and says why.
    let listing = common::drover()
        .args(["tools", "--spec"])
        .arg(&spec)
        .output()
        .unwrap();
    assert_eq!(listing.status.code(), Some(0), "{}", stderr(&listing));
    let listed = String::from_utf8_lossy(&listing.stdout);
    assert!(listed.contains("mcp__s__plain"), "{listed}");
    assert!(!listed.contains("mcp__s__x_y"), "{listed}");
    assert!(!listed.contains("mcp__s__twice"), "{listed}");
    assert!(
        stderr(&listing).contains("mcp__s__x_y"),
        "{}",
        stderr(&listing)
    );
}

#[test]
#[cfg_attr(
    not(drover_has_python3),
    ignore = "needs python3, which runs the fixture server"
)]
fn a_replay_cannot_be_steered_to_a_tool_that_now_comes_out_as_a_recorded_name() {
    common::require_program("python3");
    let scratch = tempfile::tempdir().unwrap();
    let script = scratch.path().join("server.py");
    server_listing(&script, r#"["x_y", "plain"]"#);
    let (dir, spec) = task(
        &server_entry(&script),
        "mcp__s__x_y",
        r#"{ name: mcp__s__x_y, input: {} }"#,
    );
    let output = run(dir.path(), &spec);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let recorded = dir.path().join("out/t/transcript.jsonl");
    assert_eq!(
        events(&transcript(&recorded), "tool_result")[0]["content"],
        "ran x_y"
    );

    // The server now also lists x.y, first in order: the recorded call of mcp__s__x_y,
    // allowed for x_y, must not reach it.
    server_listing(&script, r#"["x.y", "x_y", "plain"]"#);
    let artifacts = dir.path().join("replayed");
    let output = common::drover()
        .current_dir(dir.path())
        .arg("replay")
        .arg(&recorded)
        // The user's own spec: the server's Python may live in a home directory.
        .arg("--spec")
        .arg(&spec)
        .args(["--mcp", "--strict", "--artifacts"])
        .arg(&artifacts)
        .output()
        .unwrap();
    let lines = transcript(&artifacts.join("t/transcript.jsonl"));
    for result in events(&lines, "tool_result") {
        let content = result["content"].as_str().unwrap_or_default();
        assert!(
            !content.contains("ran x.y"),
            "the replay reached x.y: {result}"
        );
    }
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(!events(&lines, "replay_drift").is_empty());
}
