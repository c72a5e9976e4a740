//! JUnit XML (`junit.xml`), the format CI systems already show: each task's agent run and
//! each of its checks becomes a test case, so a failed task reads like a failed test
//! with the reason, the figures and the check output right there.

mod properties;

use std::path::PathBuf;

use junit_report::{Duration, Report, TestCase, TestCaseBuilder, TestSuiteBuilder};

use crate::{CheckReport, RunReport, Status, TaskReport};

/// How much of the last assistant text goes into system-out.
const FINAL_TEXT_TAIL: usize = 2000;

/// The JUnit XML for a run: one `testsuite` per spec file, in the order tasks appear.
pub fn junit_xml(report: &RunReport) -> String {
    let mut suites: Vec<(PathBuf, Vec<&TaskReport>)> = Vec::new();
    for task in &report.tasks {
        match suites.iter_mut().find(|(path, _)| *path == task.spec_path) {
            Some((_, tasks)) => tasks.push(task),
            None => suites.push((task.spec_path.clone(), vec![task])),
        }
    }
    let mut junit = Report::new();
    let mut suite_properties = Vec::with_capacity(suites.len());
    for (spec_path, tasks) in suites {
        suite_properties.push(properties::suite_properties(&tasks));
        let name = clean(&spec_path.to_string_lossy());
        let mut suite = TestSuiteBuilder::new(&name);
        for task in tasks {
            suite.add_testcase(agent_case(task));
            for check in &task.checks {
                suite.add_testcase(check_case(task, check));
            }
        }
        junit.add_testsuite(suite.build());
    }
    let mut out = Vec::new();
    if let Err(error) = junit.write_xml(&mut out) {
        // Writing into memory only fails on a bug; still leave valid XML behind.
        let message = clean(&error.to_string());
        return format!(
            "<?xml version=\"1.0\" encoding=\"utf-8\"?><testsuites><testsuite name=\"drover\" \
             tests=\"1\" failures=\"0\" errors=\"1\"><testcase name=\"junit report\">\
             <error type=\"internal_error\" message=\"{}\"/></testcase></testsuite>\
             </testsuites>\n",
            message
                .replace('&', "&amp;")
                .replace('"', "&quot;")
                .replace('<', "&lt;")
        );
    }
    let mut xml = fix_times(&String::from_utf8_lossy(&out), &suite_properties);
    xml.push('\n');
    xml
}

/// The agent run of a task: success when the task passed, else its reason and message.
fn agent_case(task: &TaskReport) -> TestCase {
    let name = clean(&task.name);
    let time = millis(u64::try_from(task.duration.as_millis()).unwrap_or(u64::MAX));
    let reason = task.reason.as_str();
    let message = clean(&task.message);
    let mut builder = match task.status {
        Status::Passed => TestCaseBuilder::success(&name, time),
        Status::Failed => TestCaseBuilder::failure(&name, time, reason, &message),
        Status::Error => TestCaseBuilder::error(&name, time, reason, &message),
    };
    if task.status != Status::Passed {
        let artifacts = task.artifacts_dir.to_string_lossy();
        builder.set_trace(&cdata(&clean(&format!(
            "{message}\ntranscript and diff: {artifacts}"
        ))));
    }
    builder
        .set_classname(&name)
        .set_system_out(&cdata(&agent_output(task)));
    builder.build()
}

/// What people need next to the outcome: figures, files, denials, the model's last words.
fn agent_output(task: &TaskReport) -> String {
    let mut out = format!(
        "status: {} ({})\nprovider: {} model: {}\nturns: {}\ntokens: {} in, {} out\ncost: {}\n",
        status_str(task.status),
        task.reason.as_str(),
        task.provider,
        task.model,
        task.turns,
        task.usage.input_tokens,
        task.usage.output_tokens,
        task.cost_usd
            .map_or_else(|| "n/a".to_string(), |c| format!("${c:.4}")),
    );
    if let Some(replay) = &task.replay {
        out.push_str(&format!("replay: {}", replay.label_words()));
        if let Some(end) = &replay.recorded {
            out.push_str(&format!(
                " (the recorded run ended {}, {})",
                status_str(end.status),
                end.reason.as_str()
            ));
        }
        out.push('\n');
    }
    if let Some(start) = &task.start {
        out.push_str(&format!("start: {}\n", start.describe()));
    }
    if task.attempts > 1 {
        out.push_str(&format!("attempts: {}\n", task.attempts));
    }
    if task.hook_runs > 0 {
        out.push_str(&format!("hook runs: {}\n", task.hook_runs));
    }
    if let Some(value) = &task.output {
        out.push_str(&format!("output: {value}\n"));
    }
    out.push_str(&format!("files changed: {}\n", task.files_changed.len()));
    for path in &task.files_changed {
        out.push_str(&format!("  {path}\n"));
    }
    if !task.denials.is_empty() {
        out.push_str(&format!("denied tool calls: {}\n", task.denials.len()));
        for denial in &task.denials {
            let rule = denial.rule.as_deref().unwrap_or("no allow rule matched");
            out.push_str(&format!(
                "  {} {} — rule: {rule} — {}\n",
                denial.tool, denial.input, denial.reason
            ));
        }
    }
    if let Some(drift) = &task.drift {
        out.push_str(&format!(
            "replay drift: {} result(s) differ from the recording; the first at call {} ({} {}):\n{}",
            drift.count, drift.call, drift.tool, drift.tool_use_id, drift.diff
        ));
    }
    if !task.final_text.is_empty() {
        out.push_str("last assistant text:\n");
        out.push_str(tail(&task.final_text, FINAL_TEXT_TAIL));
        out.push('\n');
    }
    clean(&out)
}

/// One check of a task: success, or a failure naming the exit code and its output tail.
fn check_case(task: &TaskReport, check: &CheckReport) -> TestCase {
    let name = if check.expectation {
        // `expect: files_changed.max` → `TASK: expect files_changed.max`
        let what = check.name.strip_prefix("expect: ").unwrap_or(&check.name);
        clean(&format!("{}: expect {what}", task.name))
    } else {
        clean(&format!("{}: check {}", task.name, check.name))
    };
    let time = millis(check.duration_ms);
    let mut builder = if check.passed {
        TestCaseBuilder::success(&name, time)
    } else if check.expectation {
        // An expectation ran no command: what was expected, and what changed.
        let message = check_failure(check);
        let mut failure = TestCaseBuilder::failure(&name, time, "expectation_failed", &message);
        failure.set_trace(&cdata(&clean(&format!(
            "expected: {}\nfound: {}",
            check.command, check.output_tail
        ))));
        failure
    } else {
        let message = check_failure(check);
        let mut failure = TestCaseBuilder::failure(&name, time, "check_failed", &message);
        failure.set_trace(&cdata(&clean(&format!(
            "$ {}\n{message}\n{}",
            check.command, check.output_tail
        ))));
        failure
    };
    builder.set_classname(&clean(&task.name));
    builder.build()
}

/// The status as the transcript and summary.json spell it.
pub(crate) fn status_str(status: Status) -> &'static str {
    match status {
        Status::Passed => "passed",
        Status::Failed => "failed",
        Status::Error => "error",
    }
}

/// Why a check failed, in a few words; an expectation, what was expected and found.
pub(crate) fn check_failure(check: &CheckReport) -> String {
    if check.expectation {
        return format!("expected {}, but {}", check.command, check.output_tail);
    }
    match (check.timed_out, check.exit_code) {
        (true, _) => "timed out".to_string(),
        (false, Some(code)) => format!("exited with code {code}"),
        (false, None) => "did not run to completion (killed or could not start)".to_string(),
    }
}

fn millis(ms: u64) -> Duration {
    Duration::milliseconds(i64::try_from(ms).unwrap_or(i64::MAX))
}

/// The last `max` bytes of `text`, starting on a char boundary.
pub fn tail(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

/// Text XML 1.0 can hold: terminal colour codes removed, other characters XML forbids
/// (control characters, U+FFFE/U+FFFF) replaced, since check output carries both.
pub fn clean(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            // A CSI sequence: parameters up to a final byte in '@'..='~'.
            chars.next();
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    break;
                }
            }
            continue;
        }
        let allowed =
            matches!(c, '\t' | '\n' | '\r') || (c >= ' ' && c != '\u{fffe}' && c != '\u{ffff}');
        out.push(if allowed { c } else { '\u{fffd}' });
    }
    out
}

/// Text for a CDATA section: the library writes it raw, so a `]]>` inside would end the
/// section early; split it across two sections instead.
fn cdata(text: &str) -> String {
    text.replace("]]>", "]]]]><![CDATA[>")
}

/// junit-report prints times as raw f64 (`31.951999999999998`), which the JUnit schema's
/// suite `time` pattern rejects; rewrite every `time` attribute of `testsuite` and
/// `testcase` tags to milliseconds precision. CDATA sections are skipped untouched.
/// It cannot write `<properties>` either: the n-th entry of `suite_properties` goes right
/// after the n-th `<testsuite>` opening tag (the schema allows properties on suites only).
fn fix_times(xml: &str, suite_properties: &[String]) -> String {
    let mut suites = suite_properties.iter();
    let mut out = String::with_capacity(xml.len());
    let mut rest = xml;
    while let Some(start) = rest.find('<') {
        out.push_str(&rest[..start]);
        rest = &rest[start..];
        if let Some(after) = rest.strip_prefix("<![CDATA[") {
            let end = after.find("]]>").map_or(after.len(), |i| i + 3);
            out.push_str("<![CDATA[");
            out.push_str(&after[..end]);
            rest = &after[end..];
            continue;
        }
        let end = rest.find('>').map_or(rest.len(), |i| i + 1);
        let tag = &rest[..end];
        if tag.starts_with("<testsuite ") {
            out.push_str(&fix_time_attribute(tag));
            let properties = suites.next();
            if let Some(properties) = properties.filter(|_| !tag.ends_with("/>")) {
                out.push_str(properties);
            }
        } else if tag.starts_with("<testcase ") {
            out.push_str(&fix_time_attribute(tag));
        } else {
            out.push_str(tag);
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

fn fix_time_attribute(tag: &str) -> String {
    const KEY: &str = " time=\"";
    let Some(at) = tag.find(KEY) else {
        return tag.to_string();
    };
    let value_start = at + KEY.len();
    let Some(len) = tag[value_start..].find('"') else {
        return tag.to_string();
    };
    let value = &tag[value_start..value_start + len];
    match value.parse::<f64>() {
        Ok(seconds) if seconds.is_finite() && seconds >= 0.0 => format!(
            "{}{seconds:.3}{}",
            &tag[..value_start],
            &tag[value_start + len..]
        ),
        _ => tag.to_string(),
    }
}

#[cfg(test)]
#[path = "junit_tests.rs"]
pub(crate) mod tests;
