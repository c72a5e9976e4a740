//! The policy corpus (fixtures/claude-code/expectations.json, see claude_code_corpus.rs)
//! given to `drover exec` as flags: every rule decides as Claude Code says when written
//! with `--allow` and `--disallowedTools`, as when written in a spec, and in a real exec
//! run the calls of the groups that need no network or MCP server are decided so too.

use crate::claude_code_corpus::{
    Check, Places, Rules, decide, expectations, make_files, rules_of_group, section, text,
};
use crate::common;
use crate::exec_cli::{KEY, answer_turn, calls_turn, stderr, stdout};
use crate::mock_server::{MockServer, Reply};

use std::path::PathBuf;

use serde_json::Value;

/// The spec `drover exec` makes of `rules` (the allow rules as one comma-separated
/// `--allow`, the deny and ask rules as one blank-separated `--disallowedTools`), saved
/// as `exec{index}.yaml`.
fn exec_spec(places: &Places, index: usize, rules: &Rules) -> PathBuf {
    let mut args = vec!["exec".to_string(), "p".to_string()];
    if !rules.allow.is_empty() {
        args.extend(["--allow".to_string(), rules.allow.join(",")]);
    }
    if !rules.deny.is_empty() {
        args.extend(["--disallowedTools".to_string(), rules.deny.join(" ")]);
    }
    let output = common::drover()
        .args(&args)
        .args([
            "--workspace",
            "ws",
            "--provider",
            "anthropic",
            "--print-spec",
        ])
        .current_dir(&places.dir)
        .env("HOME", &places.home)
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{args:?}: {}",
        stderr(&output)
    );
    let path = places.dir.join(format!("exec{index}.yaml"));
    std::fs::write(&path, stdout(&output)).unwrap();
    path
}

/// The checks of every permission group against the spec exec made of its rules. The
/// rules are the user's own here, so each row decides as Claude Code does (`expect`),
/// also where a settings file's rule would be left out (`from_file`).
fn exec_checks(table: &Value, places: &Places) -> Vec<Check> {
    let mut checks = Vec::new();
    for (index, group) in section(table, "permissions").iter().enumerate() {
        let rules = rules_of_group(group, places);
        let spec = exec_spec(places, index, &rules);
        for row in section(group, "checks") {
            let matches = row["match"].as_bool().expect("match is true or false");
            checks.push(Check {
                group: text(group, "source").to_string(),
                spec: spec.clone(),
                rule: places.fill_str(text(row, "rule")),
                names: matches,
                matches,
                tool: text(row, "tool").to_string(),
                input: places.fill(&row["input"]),
                allow: text(row, "expect") == "allow",
            });
        }
    }
    checks
}

#[test]
fn every_rule_of_the_corpus_given_as_exec_flags_decides_as_claude_code_says() {
    let dir = tempfile::tempdir().unwrap();
    let places = Places::new(dir.path());
    let checks = exec_checks(&expectations(), &places);
    assert!(checks.len() >= 90, "{} checks", checks.len());
    make_files(&checks, &places);
    let problems: Vec<String> = checks.iter().filter_map(|c| decide(c, &places)).collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The tools a group's calls may use for it to run for real here: no network, no MCP
/// server.
const LOCAL_TOOLS: &[&str] = &["Read", "Write", "Edit", "Glob", "Grep", "LS", "Bash"];

/// Run `group`'s calls in one model turn of a `drover exec` given its rules, and say
/// each decision that is not the table's.
fn run_group(index: usize, group: &Value, places: &Places) -> Vec<String> {
    let rules = rules_of_group(group, places);
    let rows = section(group, "checks");
    let calls: Vec<(String, String, Value)> = rows
        .iter()
        .enumerate()
        .map(|(n, row)| {
            (
                format!("toolu_{n}"),
                text(row, "tool").to_string(),
                places.fill(&row["input"]),
            )
        })
        .collect();
    let borrowed: Vec<(&str, &str, Value)> = calls
        .iter()
        .map(|(id, tool, input)| (id.as_str(), tool.as_str(), input.clone()))
        .collect();
    let server = MockServer::start(vec![
        Reply::sse(&calls_turn(&borrowed)),
        Reply::sse(&answer_turn("done")),
    ]);
    let artifacts = format!("out{index}");
    let mut command = common::drover_without_proxy();
    command
        .current_dir(&places.dir)
        .args([
            "exec",
            "make the calls",
            "--workspace",
            "ws",
            "--artifacts",
            &artifacts,
        ])
        .env("HOME", &places.home)
        .env("ANTHROPIC_API_KEY", KEY)
        .env("ANTHROPIC_BASE_URL", &server.base_url);
    for rule in &rules.allow {
        command.args(["--allow", rule]);
    }
    for rule in &rules.deny {
        command.args(["--deny", rule]);
    }
    let output = command.output().unwrap();
    let source = text(group, "source");
    assert_eq!(
        output.status.code(),
        Some(0),
        "[{source}] {}",
        stderr(&output)
    );
    let lines = common::transcript(&places.dir.join(&artifacts).join("exec/transcript.jsonl"));
    let decided = |id: &str| {
        common::events(&lines, "permission")
            .into_iter()
            .find(|event| event["tool_use_id"] == id)
            .and_then(|event| event["decision"].as_str().map(str::to_string))
    };
    rows.iter()
        .zip(&calls)
        .filter_map(|(row, (id, tool, input))| {
            let expected = text(row, "expect");
            let found = decided(id);
            (found.as_deref() != Some(expected)).then(|| {
                format!("[{source}] {tool} {input}: expected {expected}, the run decided {found:?}")
            })
        })
        .collect()
}

#[test]
#[cfg_attr(
    not(drover_has_sandbox),
    ignore = "needs the Landlock sandbox (ABI 3 or later), which the corpus runs in"
)]
fn the_corpus_groups_that_run_here_are_decided_so_in_a_real_exec_run() {
    common::require_sandbox();
    let dir = tempfile::tempdir().unwrap();
    let places = Places::new(dir.path());
    let table = expectations();
    // The files the calls name, as the decision table has them.
    make_files(&exec_checks(&table, &places), &places);
    let mut ran = 0;
    let mut problems = Vec::new();
    for (index, group) in section(&table, "permissions").iter().enumerate() {
        let local = section(group, "checks")
            .iter()
            .all(|row| LOCAL_TOOLS.contains(&text(row, "tool")));
        if local {
            problems.extend(run_group(index, group, &places));
            ran += 1;
        }
    }
    assert!(ran >= 5, "{ran} groups ran");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
