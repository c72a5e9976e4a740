//! Limits end to end: scripted turns that report token usage, priced with
//! `model.pricing`, run through the binary until a limit stops them.

use crate::common;

use std::path::{Path, PathBuf};

use common::{drover, events, transcript, write_spec};
use serde_json::Value;

/// One scripted turn that calls Glob and reports 1,000 input, 200 output, 2,000 cache
/// write and 10,000 cache read tokens: 13,200 tokens. At the prices below (USD per
/// million tokens) it costs (1000×3 + 200×15 + 2000×3.75 + 10000×0.30) / 1e6
/// = (3000 + 3000 + 7500 + 3000) / 1e6 = 16500 / 1e6 = $0.0165.
const TURN: &str = "    - text: working\n      tool_calls: [{ name: Glob, input: { pattern: '*' } }]\n      usage: { input_tokens: 1000, output_tokens: 200, cache_creation_input_tokens: 2000, cache_read_input_tokens: 10000 }\n";
const TURN_COST: f64 = 0.0165;
const TURN_TOKENS: u64 = 13_200;
const PRICING: &str =
    "  pricing: { input: 3.0, output: 15.0, cache_write: 3.75, cache_read: 0.30 }\n";

/// A spec with `turns` priced scripted turns and the given `limits:` body.
fn spec(dir: &Path, name: &str, turns: usize, limits: &str) -> PathBuf {
    std::fs::create_dir_all(dir.join("ws")).unwrap();
    let mut text = format!(
        "version: 1\nname: {name}\nprompt: p\nworkspace: ws\nsandbox: off\nmodel:\n  provider: script\n{PRICING}  script:\n"
    );
    for _ in 0..turns {
        text.push_str(TURN);
    }
    text.push_str("    - text: done\n");
    text.push_str(&format!("limits:\n{limits}"));
    write_spec(dir, &format!("{name}.yaml"), &text)
}

struct Outcome {
    code: Option<i32>,
    lines: Vec<Value>,
    junit: String,
}

fn run(spec: &Path, name: &str) -> Outcome {
    let artifacts = spec.parent().unwrap().join("out");
    let output = drover()
        .arg("run")
        .arg(spec)
        .arg("--artifacts")
        .arg(&artifacts)
        .output()
        .unwrap();
    Outcome {
        code: output.status.code(),
        lines: transcript(&artifacts.join(name).join("transcript.jsonl")),
        junit: std::fs::read_to_string(artifacts.join("junit.xml")).unwrap(),
    }
}

fn run_end(lines: &[Value]) -> &Value {
    let end = lines.last().unwrap();
    assert_eq!(end["type"], "run_end");
    end
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn max_cost_usd_stops_before_the_request_after_the_budget_is_spent() {
    let dir = tempfile::tempdir().unwrap();
    // Spent after turn n: 0.0165 n. 3 turns: $0.0495 < $0.05; 4 turns: $0.066 ≥ $0.05.
    let spec = spec(dir.path(), "cost", 6, "  max_cost_usd: 0.05\n");
    let out = run(&spec, "cost");
    assert_eq!(out.code, Some(1));
    let responses = events(&out.lines, "model_response");
    assert_eq!(
        responses.len(),
        4,
        "no request after the budget was reached"
    );
    for response in &responses {
        assert!(close(response["cost_usd"].as_f64().unwrap(), TURN_COST));
    }
    let end = run_end(&out.lines);
    assert_eq!(end["reason"], "budget");
    assert_eq!(end["status"], "failed");
    assert_eq!(end["turns"], 4);
    let spent = end["cost_usd"].as_f64().unwrap();
    assert!(close(spent, 4.0 * TURN_COST), "{spent}");
    let sum: f64 = responses
        .iter()
        .map(|r| r["cost_usd"].as_f64().unwrap())
        .sum();
    assert!(close(spent, sum), "{spent} vs {sum}");
    let message = end["message"].as_str().unwrap();
    assert!(
        message.starts_with("spent $0.0660 of limits.max_cost_usd $0.05 after 4 turns"),
        "{message}"
    );
    assert!(
        out.junit.contains("<failure type=\"budget\""),
        "{}",
        out.junit
    );
    assert!(
        out.junit
            .contains("spent $0.0660 of limits.max_cost_usd $0.05"),
        "{}",
        out.junit
    );
}

#[test]
fn max_tokens_stops_before_the_request_after_the_tokens_are_used() {
    let dir = tempfile::tempdir().unwrap();
    // Used after turn n: 13,200 n. 2 turns: 26,400 < 30,000; 3 turns: 39,600 ≥ 30,000.
    let spec = spec(dir.path(), "tokens", 6, "  max_tokens: 30000\n");
    let out = run(&spec, "tokens");
    assert_eq!(out.code, Some(1));
    assert_eq!(events(&out.lines, "model_response").len(), 3);
    let end = run_end(&out.lines);
    assert_eq!(end["reason"], "budget");
    let usage = &end["usage"];
    assert_eq!(usage["input_tokens"], 3000);
    assert_eq!(usage["output_tokens"], 600);
    assert_eq!(usage["cache_creation_input_tokens"], 6000);
    assert_eq!(usage["cache_read_input_tokens"], 30000);
    assert_eq!(3 * TURN_TOKENS, 39_600);
    assert!(close(end["cost_usd"].as_f64().unwrap(), 3.0 * TURN_COST));
    let message = end["message"].as_str().unwrap();
    assert!(
        message.starts_with("used 39,600 tokens of limits.max_tokens 30,000 after 3 turns"),
        "{message}"
    );
    assert!(
        out.junit.contains("<failure type=\"budget\""),
        "{}",
        out.junit
    );
    assert!(
        out.junit.contains("limits.max_tokens 30,000"),
        "{}",
        out.junit
    );
}

#[test]
fn max_turns_names_the_limit_and_the_turns() {
    let dir = tempfile::tempdir().unwrap();
    let spec = spec(
        dir.path(),
        "turns",
        6,
        "  max_turns: 2\n  max_cost_usd: 10\n",
    );
    let out = run(&spec, "turns");
    assert_eq!(out.code, Some(1));
    assert_eq!(events(&out.lines, "model_response").len(), 2);
    let end = run_end(&out.lines);
    assert_eq!(end["reason"], "max_turns");
    assert!(close(end["cost_usd"].as_f64().unwrap(), 2.0 * TURN_COST));
    let message = end["message"].as_str().unwrap();
    assert!(
        message.starts_with("used 2 turns of max_turns 2"),
        "{message}"
    );
    assert!(
        out.junit.contains("<failure type=\"max_turns\""),
        "{}",
        out.junit
    );
    assert!(
        out.junit.contains("used 2 turns of max_turns 2"),
        "{}",
        out.junit
    );
}

#[test]
fn timeout_names_the_limit_and_stops_the_requests() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    let text = format!(
        "version: 1\nname: slow\nprompt: p\nworkspace: ws\nsandbox: off\nmodel:\n  provider: script\n{PRICING}  script:\n    - tool_calls: [{{ name: Bash, input: {{ command: sleep 30 }} }}]\n      usage: {{ input_tokens: 100 }}\n{TURN}permissions:\n  allow: [Bash]\nlimits:\n  timeout: 1s\n"
    );
    let spec = write_spec(dir.path(), "slow.yaml", &text);
    let out = run(&spec, "slow");
    assert_eq!(out.code, Some(1));
    assert_eq!(events(&out.lines, "model_response").len(), 1);
    let end = run_end(&out.lines);
    assert_eq!(end["reason"], "timeout");
    // 100 input tokens at $3 per million.
    assert!(close(end["cost_usd"].as_f64().unwrap(), 100.0 * 3.0 / 1e6));
    let message = end["message"].as_str().unwrap();
    assert!(
        message.contains("of limits.timeout 1s after 1 turn"),
        "{message}"
    );
    assert!(
        out.junit.contains("<failure type=\"timeout\""),
        "{}",
        out.junit
    );
    assert!(out.junit.contains("limits.timeout 1s"), "{}", out.junit);
}

#[test]
fn the_request_in_flight_may_cross_a_limit_but_none_follows_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    // Turn 1 spends $0.0165 (< $0.04, so turn 2 is requested); turn 2 ends the run and
    // spends 2000 × $15 / 1e6 = $0.03, crossing the budget: $0.0465 in all. No request
    // follows, so the run ends normally and reports what it spent.
    let text = format!(
        "version: 1\nname: fits\nprompt: p\nworkspace: ws\nmodel:\n  provider: script\n{PRICING}  script:\n{TURN}    - text: done\n      usage: {{ output_tokens: 2000 }}\nlimits:\n  max_cost_usd: 0.04\n"
    );
    let spec = write_spec(dir.path(), "fits.yaml", &text);
    let out = run(&spec, "fits");
    assert_eq!(out.code, Some(0), "{:?}", run_end(&out.lines));
    let end = run_end(&out.lines);
    assert_eq!(end["reason"], "end_turn");
    assert_eq!(events(&out.lines, "model_response").len(), 2);
    assert!(close(end["cost_usd"].as_f64().unwrap(), TURN_COST + 0.03));
}

#[test]
fn script_runs_cost_nothing_without_pricing() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    let text = format!(
        "version: 1\nname: free\nprompt: p\nworkspace: ws\nmodel:\n  provider: script\n  script:\n{TURN}    - text: done\nlimits:\n  max_cost_usd: 0.01\n"
    );
    let spec = write_spec(dir.path(), "free.yaml", &text);
    let out = run(&spec, "free");
    assert_eq!(out.code, Some(0));
    let responses = events(&out.lines, "model_response");
    assert_eq!(responses[0]["cost_usd"], 0.0);
    assert_eq!(responses[0]["usage"]["cache_read_input_tokens"], 10000);
    assert_eq!(run_end(&out.lines)["cost_usd"], 0.0);
}

#[test]
fn a_budget_for_a_model_without_a_price_is_a_spec_error() {
    let dir = tempfile::tempdir().unwrap();
    let spec = write_spec(
        dir.path(),
        "unpriced.yaml",
        "version: 1\nname: unpriced\nprompt: p\nmodel:\n  provider: openai\n  name: my-local-llama\nlimits:\n  max_cost_usd: 1\n",
    );
    let output = drover().arg("validate").arg(&spec).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("unpriced.yaml:8:17"), "{stderr}");
    assert!(
        stderr.contains("limits.max_cost_usd needs the model's price"),
        "{stderr}"
    );
    assert!(stderr.contains("my-local-llama"), "{stderr}");
}

#[test]
fn absurd_token_counts_saturate_and_still_stop_the_run() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    // 2^63 + 2^63 wraps to 0 in u64: a server sending it must not switch the limit off.
    let turn = "    - text: working\n      tool_calls: [{ name: Glob, input: { pattern: '*' } }]\n      usage: { input_tokens: 9223372036854775808, output_tokens: 9223372036854775808 }\n";
    let text = format!(
        "version: 1\nname: huge\nprompt: p\nworkspace: ws\nsandbox: off\nmodel:\n  provider: script\n{PRICING}  script:\n{turn}{turn}{turn}    - text: done\nlimits:\n  max_tokens: 1000\n"
    );
    let spec = write_spec(dir.path(), "huge.yaml", &text);
    let out = run(&spec, "huge");
    assert_eq!(out.code, Some(1));
    let end = run_end(&out.lines);
    assert_eq!(end["reason"], "budget", "{end}");
    assert_eq!(end["turns"], 1);
    assert!(
        end["message"]
            .as_str()
            .unwrap()
            .starts_with("used 18,446,744,073,709,551,615 tokens of limits.max_tokens 1,000"),
        "{end}"
    );
    assert_eq!(end["usage"]["input_tokens"].as_u64(), Some(1 << 63));
}

/// `limits.timeout` is the task's clock, `setup:` included: a setup step still running
/// when it passes is stopped and the task ends `timeout`, before any model request.
#[test]
fn the_task_timeout_counts_setup_and_stops_a_step_that_outlasts_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    let text = format!(
        "version: 1\nname: slow-setup\nprompt: p\nworkspace: ws\nsandbox: off\nmodel:\n  provider: script\n{PRICING}  script:\n{TURN}    - text: done\nsetup:\n  - name: fetch\n    run: sleep 30\nlimits:\n  timeout: 1s\n"
    );
    let spec = write_spec(dir.path(), "slow-setup.yaml", &text);
    let outcome = run(&spec, "slow-setup");
    assert_eq!(outcome.code, Some(1), "{:?}", outcome.lines);
    let end = run_end(&outcome.lines);
    assert_eq!(end["reason"], "timeout", "{end}");
    let message = end["message"].as_str().unwrap();
    assert!(
        message.contains("setup step \"fetch\"") && message.contains("limits.timeout 1s"),
        "{message}"
    );
    assert!(events(&outcome.lines, "model_response").is_empty());
    assert!(
        outcome.junit.contains("type=\"timeout\""),
        "{}",
        outcome.junit
    );
}
