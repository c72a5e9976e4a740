// Test-only module: its parent includes it under #[cfg(test)].
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration as StdDuration;

use serde_json::json;

use super::*;
use crate::{Denial, EndReason};
use drover_message::Usage;

pub(crate) fn task(name: &str, spec: &str, reason: EndReason, message: &str) -> TaskReport {
    TaskReport {
        name: name.to_string(),
        spec_path: PathBuf::from(spec),
        status: reason.status(),
        reason,
        message: message.to_string(),
        provider: "script".to_string(),
        model: "scripted".to_string(),
        turns: 3,
        usage: Usage {
            input_tokens: 1200,
            output_tokens: 345,
            ..Usage::default()
        },
        cost_usd: Some(0.01234),
        duration: StdDuration::from_millis(31_952),
        checks: Vec::new(),
        denials: Vec::new(),
        files_changed: Vec::new(),
        ignored_changes: 0,
        excluded_from_diff: None,
        network: None,
        setup: Vec::new(),
        final_text: String::new(),
        todos: Vec::new(),
        artifacts_dir: PathBuf::from("drover-artifacts").join(name),
        redacted: 0,
        mcp_servers: Vec::new(),
        attempts: 1,
        hook_runs: 0,
        output: None,
        agents: Vec::new(),
        agent_turns: 0,
        drift: None,
        start: None,
        replay: None,
        context: None,
        wrap_up: None,
        started_at: None,
        earlier_runs: Vec::new(),
    }
}

pub(crate) fn check(
    name: &str,
    exit_code: Option<i32>,
    timed_out: bool,
    tail: &str,
) -> CheckReport {
    CheckReport {
        name: name.to_string(),
        command: format!("run {name}"),
        exit_code,
        passed: exit_code == Some(0) && !timed_out,
        timed_out,
        duration_ms: 1_234,
        output_tail: tail.to_string(),
        expectation: false,
    }
}

/// Two spec files; one task passed with a passing check, one hit its turn limit, one
/// failed a check (with colour codes and `]]>` in its output), one hit a provider error.
pub(crate) fn sample_run() -> RunReport {
    let mut passed = task(
        "fix-add",
        "tasks/calc.yaml",
        EndReason::EndTurn,
        "the model ended its turn; all checks passed",
    );
    passed
        .checks
        .push(check("tests pass", Some(0), false, "ok\n"));
    passed.files_changed = vec!["src/lib.rs".to_string()];
    passed.final_text = "Fixed the off-by-one in add().".to_string();

    let mut limited = task(
        "refactor",
        "tasks/calc.yaml",
        EndReason::MaxTurns,
        "max_turns: stopped after 3 turns (limit 3)",
    );
    limited.denials.push(Denial {
        tool_use_id: "toolu_1".to_string(),
        tool: "Bash".to_string(),
        input: json!({"command": "git push origin main"}),
        rule: Some("Bash(git push *)".to_string()),
        reason: "denied by rule Bash(git push *)".to_string(),
    });
    limited.final_text = format!("{}THE END", "x".repeat(5000));
    limited.cost_usd = None;

    let mut checks_failed = task(
        "lint",
        "tasks/lint.yaml",
        EndReason::ChecksFailed,
        "checks_failed: 2 of 3 checks failed",
    );
    checks_failed.checks.push(check("fmt", Some(0), false, ""));
    checks_failed.checks.push(check(
        "clippy",
        Some(101),
        false,
        "\u{1b}[31merror\u{1b}[0m: unused variable\nwhat ]]> is this\u{7}\n",
    ));
    checks_failed
        .checks
        .push(check("slow", None, true, "still running\n"));
    checks_failed.files_changed = vec!["a.rs".to_string(), "b/c.rs".to_string()];

    let broken = task(
        "offline",
        "tasks/lint.yaml",
        EndReason::ProviderError,
        "provider_error: connection refused after 3 retries",
    );
    RunReport {
        tasks: vec![passed, limited, checks_failed, broken],
        shard: None,
    }
}

/// Validate `xml` against the Surefire/Jenkins schema with xmllint, which the build found
/// here (`drover_has_xmllint`, see build.rs): a missing one fails the test.
fn validate_with_xmllint(xml: &str) {
    let version = Command::new("xmllint").arg("--version").output();
    assert!(
        version.is_ok_and(|version| version.status.success()),
        "drover_has_xmllint is set (the build found xmllint, or CI=true runs every test), but it does not run; apt-get install libxml2-utils (.ci/run does)"
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("junit.xml");
    std::fs::write(&file, xml).unwrap();
    // The Surefire/Jenkins schema (MIT), kept in the repository so the check never skips
    // (in the workspace's fixtures/, which tests/cli validates with too).
    let schema = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/schemas/junit-10.xsd");
    assert!(schema.exists(), "{} is missing", schema.display());
    let output = Command::new("xmllint")
        .arg("--noout")
        .arg("--schema")
        .arg(&schema)
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "schema validation failed: {}\n{xml}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn suite_tag<'a>(xml: &'a str, name: &str) -> &'a str {
    let start = xml.find("<testsuite id=").unwrap();
    let from_name = xml[start..]
        .find(&format!("name=\"{name}\""))
        .map(|i| start + i)
        .unwrap();
    let tag_start = xml[..from_name].rfind('<').unwrap();
    let tag_end = tag_start + xml[tag_start..].find('>').unwrap();
    &xml[tag_start..=tag_end]
}

#[test]
#[cfg_attr(
    not(drover_has_xmllint),
    ignore = "needs xmllint (apt-get install libxml2-utils; .ci/run installs it)"
)]
fn output_validates_against_the_junit_schema() {
    let xml = junit_xml(&sample_run());
    validate_with_xmllint(&xml);
    validate_with_xmllint(&junit_xml(&RunReport::default()));
    validate_with_xmllint(&junit_xml(&run_with_a_quoted_model()));
}

/// The sample run with cached tokens and a model name that XML must escape in a property.
fn run_with_a_quoted_model() -> RunReport {
    let mut run = sample_run();
    run.tasks[0].usage.cache_read_input_tokens = 77;
    run.tasks[0].model = "a\"b<c>".to_string();
    run
}

#[test]
fn one_suite_per_spec_with_right_counts() {
    let xml = junit_xml(&sample_run());
    assert_eq!(xml.matches("<testsuite ").count(), 2);
    let calc = suite_tag(&xml, "tasks/calc.yaml");
    assert!(calc.contains("tests=\"3\""), "{calc}");
    assert!(calc.contains("failures=\"1\""), "{calc}");
    assert!(calc.contains("errors=\"0\""), "{calc}");
    let lint = suite_tag(&xml, "tasks/lint.yaml");
    // lint: agent case (failure) + 3 checks (2 failed); offline: agent case (error).
    assert!(lint.contains("tests=\"5\""), "{lint}");
    assert!(lint.contains("failures=\"3\""), "{lint}");
    assert!(lint.contains("errors=\"1\""), "{lint}");
    // Suite times are sums printed with at most millisecond precision.
    assert!(calc.contains("time=\"65.138\""), "{calc}");
}

#[test]
fn failures_carry_reason_figures_and_check_output() {
    let xml = junit_xml(&sample_run());
    assert!(xml.contains(
        "<testcase name=\"refactor\" time=\"31.952\" classname=\"refactor\"><failure type=\"max_turns\" message=\"max_turns: stopped after 3 turns (limit 3)\""
    ));
    assert!(xml.contains(
        "<testcase name=\"fix-add: check tests pass\" time=\"1.234\" classname=\"fix-add\"/>"
    ));
    assert!(xml.contains("name=\"lint: check clippy\""));
    assert!(xml.contains("message=\"exited with code 101\""));
    assert!(xml.contains("message=\"timed out\""));
    assert!(
        xml.contains("error: unused variable"),
        "colour codes are stripped"
    );
    assert!(!xml.contains('\u{1b}'));
    assert!(!xml.contains('\u{7}'));
    assert!(xml.contains("what ]]]]><![CDATA[> is this"));
    assert!(xml.contains("<error type=\"provider_error\" message=\"provider_error: connection refused after 3 retries\""));
}

#[test]
fn system_out_lists_denials_and_the_last_assistant_text() {
    let xml = junit_xml(&sample_run());
    assert!(xml.contains("Bash {\"command\":\"git push origin main\"} — rule: Bash(git push *) — denied by rule Bash(git push *)"));
    assert!(xml.contains("THE END"));
    assert!(
        !xml.contains(&"x".repeat(2001)),
        "only the tail of the final text"
    );
    assert!(xml.contains("Fixed the off-by-one in add()."));
    assert!(xml.contains("cost: n/a"));
    assert!(xml.contains("status: failed (max_turns)"));
    assert!(xml.contains("max_turns: stopped after 3 turns (limit 3)\ntranscript and diff: drover-artifacts/refactor]]>"));
    assert!(xml.contains("cost: $0.0123"));
}

#[test]
fn time_fixing_leaves_cdata_alone() {
    let xml = "<testsuite time=\"31.951999999999998\"><testcase name=\"a\" time=\"0.1\"/><![CDATA[<testcase time=\"1.23456\">]]></testsuite>";
    assert_eq!(
        fix_times(xml, &["<properties/>".to_string()]),
        "<testsuite time=\"31.952\"><properties/><testcase name=\"a\" time=\"0.100\"/><![CDATA[<testcase time=\"1.23456\">]]></testsuite>"
    );
}

#[test]
fn tail_respects_char_boundaries() {
    assert_eq!(tail("héllo", 4), "llo");
    assert_eq!(tail("abc", 10), "abc");
}

#[test]
fn suites_carry_each_tasks_figures_as_properties() {
    let xml = junit_xml(&run_with_a_quoted_model());
    assert_eq!(xml.matches("<properties>").count(), 2);
    let calc = &xml[xml.find("<testsuite id=\"0\"").unwrap()..];
    assert!(calc.contains(
        "<properties><property name=\"fix-add.status\" value=\"passed\"/><property name=\"fix-add.reason\" value=\"end_turn\"/><property name=\"fix-add.provider\" value=\"script\"/><property name=\"fix-add.model\" value=\"a&quot;b&lt;c&gt;\"/><property name=\"fix-add.turns\" value=\"3\"/><property name=\"fix-add.tokens.input\" value=\"1200\"/><property name=\"fix-add.tokens.output\" value=\"345\"/><property name=\"fix-add.tokens.cache_read\" value=\"77\"/><property name=\"fix-add.tokens.cache_creation\" value=\"0\"/><property name=\"fix-add.cost_usd\" value=\"0.012340\"/><property name=\"fix-add.duration_s\" value=\"31.952\"/>"
    ), "{calc}");
    assert!(xml.contains("<property name=\"refactor.cost_usd\" value=\"n/a\"/>"));
    assert!(xml.contains("<property name=\"refactor.denials\" value=\"1\"/>"));
    assert!(xml.contains("<property name=\"offline.reason\" value=\"provider_error\"/>"));
}

#[test]
fn a_failure_replayed_as_recorded_is_a_failure_that_says_so() {
    let mut run = sample_run();
    let lint = &mut run.tasks[2];
    let mut judgement = crate::ReplayJudgement::new(
        crate::ChecksRun::NotRun,
        Some(crate::RecordedOutcome::from_run_end(
            EndReason::ChecksFailed,
            "check \"clippy\" failed",
        )),
    );
    let (reason, message) = judgement.settle((EndReason::EndTurn, "done".into()));
    lint.reason = reason;
    lint.status = reason.status();
    lint.message = message;
    lint.checks.clear();
    lint.replay = Some(judgement);
    lint.start = Some(crate::StartCommit {
        commit: "a".repeat(40),
        dirty: false,
        repository: None,
    });
    let xml = junit_xml(&run);
    validate_with_xmllint(&xml);
    assert!(
        xml.contains("<failure type=\"checks_failed\" message=\"as recorded; checks not re-run: check &quot;clippy&quot; failed\""),
        "{xml}"
    );
    assert!(xml.contains("<property name=\"lint.checks\" value=\"not_run\"/>"));
    assert!(xml.contains("<property name=\"lint.outcome_from\" value=\"recording\"/>"));
    assert!(xml.contains(&format!(
        "<property name=\"lint.start.commit\" value=\"{}\"/>",
        "a".repeat(40)
    )));
    assert!(xml.contains(
        "replay: as recorded; checks not re-run (the recorded run ended failed, checks_failed)"
    ));
    assert!(
        !xml.contains("fix-add.checks"),
        "a run has no replay properties"
    );
}

/// What Python's junitparser (used by GitHub test-report actions) reads from a file:
/// per suite, the counts it reports and the counts of its test cases' results.
fn read_with_junitparser(xml: &str) -> serde_json::Value {
    const SCRIPT: &str = r#"
import json, sys
from junitparser import JUnitXml, Failure, Error
xml = JUnitXml.fromfile(sys.argv[1])
suites = []
for suite in xml:
    cases = list(suite)
    results = [type(r).__name__ for case in cases for r in case.result]
    suites.append({"name": suite.name, "tests": suite.tests, "failures": suite.failures,
                   "errors": suite.errors, "cases": len(cases),
                   "case_failures": results.count("Failure"), "case_errors": results.count("Error"),
                   "properties": len(list(suite.properties()))})
xml.update_statistics()
print(json.dumps({"tests": xml.tests, "failures": xml.failures, "errors": xml.errors, "suites": suites}))
"#;
    // .ci/venv's Python, where .ci/run installs junitparser and the build found it
    // (`drover_has_junitparser`, see build.rs): a missing one fails the test.
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.ci/venv/bin/python");
    let available = Command::new(&python)
        .args(["-c", "import junitparser"])
        .output()
        .is_ok_and(|output| output.status.success());
    assert!(
        available,
        "drover_has_junitparser is set (the build found junitparser in .ci/venv, or CI=true runs every test), but {} cannot import it; run .ci/run",
        python.display()
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("junit.xml");
    std::fs::write(&file, xml).unwrap();
    let output = Command::new(&python)
        .arg("-c")
        .arg(SCRIPT)
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "junitparser failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
#[cfg_attr(
    not(drover_has_junitparser),
    ignore = "needs Python's junitparser in .ci/venv: .ci/run installs it"
)]
fn junitparser_reads_the_right_counts() {
    let read = read_with_junitparser(&junit_xml(&sample_run()));
    // calc: fix-add + its check + refactor (failure); lint: lint (failure) + 3 checks
    // (2 failures) + offline (error).
    assert_eq!(read["tests"], 8, "{read}");
    assert_eq!(read["failures"], 4, "{read}");
    assert_eq!(read["errors"], 1, "{read}");
    let suites = read["suites"].as_array().unwrap();
    assert_eq!(suites.len(), 2);
    for suite in suites {
        assert_eq!(suite["tests"], suite["cases"], "{suite}");
        assert_eq!(suite["failures"], suite["case_failures"], "{suite}");
        assert_eq!(suite["errors"], suite["case_errors"], "{suite}");
    }
    assert_eq!(suites[0]["name"], "tasks/calc.yaml");
    assert_eq!(suites[0]["properties"], 28, "14 per task");
    assert_eq!(suites[1]["case_errors"], 1);
    let empty = read_with_junitparser(&junit_xml(&RunReport::default()));
    assert_eq!(empty["tests"], 0);
}
