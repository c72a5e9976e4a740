//! The `<properties>` of a JUnit test suite: each task's model, turns, tokens, cost and
//! duration as name/value pairs, so dashboards that read JUnit can chart them. The
//! Surefire schema allows properties on suites only (not on test cases), and a suite holds
//! every task of one spec file, so each name is prefixed with its task: `fix-add.model`.

use std::fmt::Write as _;

use super::clean;
use crate::TaskReport;

/// The `<properties>` element for the tasks of one suite.
pub(super) fn suite_properties(tasks: &[&TaskReport]) -> String {
    let mut out = String::from("<properties>");
    for task in tasks {
        for (key, value) in task_properties(task) {
            let _ = write!(
                out,
                "<property name=\"{}\" value=\"{}\"/>",
                attribute(&format!("{}.{key}", task.name)),
                attribute(&value)
            );
        }
    }
    out.push_str("</properties>");
    out
}

/// The figures of one task, in a fixed order.
fn task_properties(task: &TaskReport) -> Vec<(&'static str, String)> {
    let mut properties = vec![
        ("status", super::status_str(task.status).to_string()),
        ("reason", task.reason.as_str().to_string()),
        ("provider", task.provider.clone()),
        ("model", task.model.clone()),
        ("turns", task.turns.to_string()),
        ("tokens.input", task.usage.input_tokens.to_string()),
        ("tokens.output", task.usage.output_tokens.to_string()),
        (
            "tokens.cache_read",
            task.usage.cache_read_input_tokens.to_string(),
        ),
        (
            "tokens.cache_creation",
            task.usage.cache_creation_input_tokens.to_string(),
        ),
        (
            "cost_usd",
            task.cost_usd
                .filter(|cost| cost.is_finite())
                .map_or_else(|| "n/a".to_string(), |cost| format!("{cost:.6}")),
        ),
        ("duration_s", format!("{:.3}", task.duration.as_secs_f64())),
        ("files_changed", task.files_changed.len().to_string()),
        ("denials", task.denials.len().to_string()),
        (
            "drift",
            task.drift
                .as_ref()
                .map_or(0, |drift| drift.count)
                .to_string(),
        ),
    ];
    if let Some(replay) = &task.replay {
        properties.push(("checks", value_of(&replay.checks)));
        properties.push(("outcome_from", value_of(&replay.outcome_from)));
    }
    if let Some(start) = &task.start {
        properties.push(("start.commit", start.commit.clone()));
        properties.push(("start.dirty", start.dirty.to_string()));
    }
    properties
}

/// A unit enum variant as summary.json spells it (`not_run`).
fn value_of(value: &impl serde::Serialize) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(text)) => text,
        _ => String::new(),
    }
}

/// An XML attribute value: cleaned of characters XML forbids, markup escaped, and
/// newlines/tabs as character references so attribute normalisation keeps them.
fn attribute(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in clean(text).chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            '\t' => out.push_str("&#9;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_escape_markup_and_keep_newlines() {
        assert_eq!(
            attribute("a<b>&\"c\"\nd\u{7}"),
            "a&lt;b&gt;&amp;&quot;c&quot;&#10;d\u{fffd}"
        );
    }
}
