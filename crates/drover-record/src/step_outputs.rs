//! The GitHub Action's step outputs, taken from the summary.json drover wrote (`drover
//! report outputs DIR`). The Action never looks for answers in the artifacts directory
//! itself: a file there is only drover's if drover says so, and summary.json — written
//! last, after the directory was swept of everything drover did not write — is where
//! drover says it.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

/// The part of summary.json the outputs come from.
#[derive(Deserialize)]
struct Summary {
    tasks: Vec<Task>,
}

#[derive(Deserialize)]
struct Task {
    #[serde(default)]
    name: String,
    #[serde(default)]
    output: Option<Value>,
    #[serde(default)]
    wrap_up: Option<String>,
}

/// Why there are no outputs to give (bad input, exit 2).
#[derive(Debug, thiserror::Error)]
pub enum StepOutputsError {
    #[error(
        "{} is not a summary.json drover wrote: {source}",
        path.display()
    )]
    NotASummary {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error(
        "the artifacts directory {} has a line break in its name, which a $GITHUB_OUTPUT line cannot hold; use another directory",
        dir.display()
    )]
    LineBreak { dir: PathBuf },
}

/// What a reader of `$GITHUB_OUTPUT` might take for the end of a line.
const LINE_BREAKS: [char; 5] = ['\n', '\r', '\u{85}', '\u{2028}', '\u{2029}'];

/// Compact JSON with the line breaks JSON leaves raw (they can only be inside a string)
/// written as escapes: the same value, on one line for any reader.
fn one_line(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if LINE_BREAKS.contains(&c) {
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

/// The `$GITHUB_OUTPUT` lines for a run whose artifacts directory is `dir` and whose
/// summary.json holds `summary`: `output=` and the final answer of the run's one task
/// with `output.schema`, as one line of JSON; `dir` when several tasks have answers
/// (each is in `TASK/output.json`, and in summary.json); nothing after `=` when none
/// has. The answer is written on one line, every line break in it escaped, so it can
/// never add a line (an output) of its own.
pub fn step_outputs(summary: &[u8], dir: &Path) -> Result<String, StepOutputsError> {
    let path = dir.join("summary.json");
    let summary: Summary = serde_json::from_slice(summary)
        .map_err(|source| StepOutputsError::NotASummary { path, source })?;
    let answers: Vec<&Value> = summary
        .tasks
        .iter()
        .filter_map(|task| task.output.as_ref())
        .filter(|output| !output.is_null())
        .collect();
    let value = match answers.as_slice() {
        [] => String::new(),
        [answer] => one_line(&answer.to_string()),
        _ => {
            let text = dir.display().to_string();
            if text.contains(LINE_BREAKS) {
                return Err(StepOutputsError::LineBreak {
                    dir: dir.to_path_buf(),
                });
            }
            text
        }
    };
    Ok(format!(
        "output={value}\nwrap-up={}\n",
        wrap_ups(&summary.tasks)
    ))
}

/// `wrap-up=`: each wrap-up by task name, as one line of JSON; empty when no limit gave
/// a task one.
fn wrap_ups(tasks: &[Task]) -> String {
    let by_task: serde_json::Map<String, Value> = tasks
        .iter()
        .filter_map(|task| Some((task.name.clone(), Value::from(task.wrap_up.clone()?))))
        .collect();
    if by_task.is_empty() {
        return String::new();
    }
    one_line(&Value::Object(by_task).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(outputs: &[Option<Value>]) -> Vec<u8> {
        let tasks: Vec<Value> = outputs
            .iter()
            .enumerate()
            .map(|(i, output)| {
                let mut task = serde_json::json!({ "name": format!("t{i}"), "status": "passed" });
                if let Some(output) = output {
                    task["output"] = output.clone();
                }
                task
            })
            .collect();
        serde_json::to_vec_pretty(&serde_json::json!({ "status": "passed", "tasks": tasks }))
            .unwrap()
    }

    #[test]
    fn one_answer_is_one_line_of_json() {
        let answer = serde_json::json!({ "verdict": "approve", "note": "line\nsneaky=1" });
        let lines =
            step_outputs(&summary(&[None, Some(answer.clone())]), Path::new("out")).unwrap();
        assert_eq!(lines.lines().count(), 2, "{lines}");
        let first = lines.lines().next().unwrap();
        let value: Value = serde_json::from_str(first.strip_prefix("output=").unwrap()).unwrap();
        assert_eq!(value, answer);
    }

    #[test]
    fn an_answer_with_unicode_line_separators_stays_on_one_line() {
        let answer = serde_json::json!({ "note": "a\u{2028}b\u{2029}c\u{85}d" });
        let lines = step_outputs(&summary(&[Some(answer.clone())]), Path::new("out")).unwrap();
        let first = lines.split('\n').next().unwrap();
        assert!(!first.contains(LINE_BREAKS), "{lines:?}");
        let value: Value = serde_json::from_str(first.strip_prefix("output=").unwrap()).unwrap();
        assert_eq!(value, answer);
    }

    #[test]
    fn several_answers_give_the_directory_and_none_an_empty_value() {
        let two = summary(&[Some(Value::from(1)), Some(Value::from(2))]);
        assert_eq!(
            step_outputs(&two, Path::new("/tmp/out")).unwrap(),
            "output=/tmp/out\nwrap-up=\n"
        );
        let none = summary(&[None, Some(Value::Null)]);
        assert_eq!(
            step_outputs(&none, Path::new("out")).unwrap(),
            "output=\nwrap-up=\n"
        );
        let error = step_outputs(&two, Path::new("a\nb")).unwrap_err();
        assert!(error.to_string().contains("line break"), "{error}");
    }

    #[test]
    fn wrap_ups_are_one_line_of_json_by_task() {
        let summary = serde_json::json!({ "status": "failed", "tasks": [
            { "name": "a", "status": "failed", "wrap_up": "done: x\nleft: y\u{2028}z" },
            { "name": "b", "status": "passed" },
        ]});
        let lines = step_outputs(&serde_json::to_vec(&summary).unwrap(), Path::new("out")).unwrap();
        let lines: Vec<&str> = lines.split('\n').collect();
        assert_eq!(lines.len(), 3, "{lines:?}");
        let wrap_up = lines[1].strip_prefix("wrap-up=").unwrap();
        assert!(!wrap_up.contains(LINE_BREAKS), "{wrap_up:?}");
        let value: Value = serde_json::from_str(wrap_up).unwrap();
        assert_eq!(
            value,
            serde_json::json!({ "a": "done: x\nleft: y\u{2028}z" })
        );
    }

    #[test]
    fn what_is_no_summary_is_refused() {
        let error = step_outputs(b"{\"verdict\": \"approve\"}", Path::new("out")).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("out/summary.json is not a summary.json"),
            "{error}"
        );
    }
}
