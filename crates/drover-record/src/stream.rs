//! What `--json` writes on stdout while a run goes on (README.md, "Events on stdout"):
//! every transcript line as it is written, framed with its task so a consumer can tell
//! the tasks of a batch apart, then one line with the run's result. The result is also
//! what `drover exec --output-format json` prints.

use std::path::Path;

use drover_message::Usage;
use serde::Serialize;
use serde_json::{Value, json};

use crate::report::{EndReason, RunReport, Status, TaskReport};

/// One event line: `{"type":"event","task":NAME,"event":LINE}`. LINE is the transcript
/// line as written, spliced in as text rather than parsed and serialized again, so its
/// bytes are the ones whose SHA-256 the next line's `prev` holds.
pub fn event_line(task: &str, line: &str) -> String {
    format!(
        "{{\"type\":\"event\",\"task\":{},\"event\":{line}}}",
        Value::from(task)
    )
}

/// The run's result: `type: "result"`, its `status` and `exit_code` (the process's),
/// the artifacts directory and each task's outcome and answer. With one task (always for
/// `drover exec`) it also carries `result`, `is_error`, `num_turns`, `total_cost_usd`
/// and `duration_ms`, the names `claude -p --output-format json` uses, so a workflow
/// reading those reads drover's. One line of JSON, its fields in this order.
pub fn run_result(report: &RunReport, artifacts: &Path, exit_code: i32) -> String {
    let status = match exit_code {
        0 => Status::Passed,
        1 => Status::Failed,
        _ => Status::Error,
    };
    let one = match report.tasks.as_slice() {
        [task] => Some(OneTask {
            result: answer(task),
            is_error: task.status != Status::Passed,
            num_turns: task.turns,
            total_cost_usd: task.cost_usd,
            duration_ms: duration_ms(task),
        }),
        _ => None,
    };
    let result = RunResult {
        kind: "result",
        status,
        exit_code,
        artifacts: artifacts.display().to_string(),
        tasks: report.tasks.iter().map(task_result).collect(),
        one,
    };
    serde_json::to_string(&result).unwrap_or_else(|error| {
        // Plain data serializes; should it ever not, the line still says how the run ended.
        json!({"type": "result", "status": status, "exit_code": exit_code, "error": error.to_string()})
            .to_string()
    })
}

#[derive(Serialize)]
struct RunResult<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    status: Status,
    exit_code: i32,
    artifacts: String,
    tasks: Vec<TaskResult<'a>>,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    one: Option<OneTask>,
}

/// A run of one task: its outcome under `claude -p`'s names.
#[derive(Serialize)]
struct OneTask {
    result: Value,
    is_error: bool,
    num_turns: u32,
    total_cost_usd: Option<f64>,
    duration_ms: u64,
}

/// One task's outcome in the result.
#[derive(Serialize)]
struct TaskResult<'a> {
    task: &'a str,
    status: Status,
    reason: EndReason,
    message: &'a str,
    turns: u32,
    usage: Usage,
    cost_usd: Option<f64>,
    duration_ms: u64,
    /// The model's last text.
    answer: &'a str,
    /// The valid final answer of a task with `output:`.
    output: Option<&'a Value>,
    files_changed: &'a [String],
    denied_calls: usize,
    artifacts: String,
}

fn task_result(task: &TaskReport) -> TaskResult<'_> {
    TaskResult {
        task: &task.name,
        status: task.status,
        reason: task.reason,
        message: &task.message,
        turns: task.turns,
        usage: task.usage,
        cost_usd: task.cost_usd,
        duration_ms: duration_ms(task),
        answer: &task.final_text,
        output: task.output.as_ref(),
        files_changed: &task.files_changed,
        denied_calls: task.denials.len(),
        artifacts: task.artifacts_dir.display().to_string(),
    }
}

/// The task's answer: its valid final answer when it has `output:` (a JSON value), else
/// the model's last text.
pub fn answer(task: &TaskReport) -> Value {
    match &task.output {
        Some(output) => output.clone(),
        None => Value::from(task.final_text.clone()),
    }
}

fn duration_ms(task: &TaskReport) -> u64 {
    u64::try_from(task.duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::time::Duration;

    use super::*;

    fn task(name: &str, status: Status) -> TaskReport {
        TaskReport {
            name: name.to_string(),
            spec_path: PathBuf::from("drover-exec.yaml"),
            status,
            reason: if status == Status::Passed {
                EndReason::EndTurn
            } else {
                EndReason::ChecksFailed
            },
            message: "m".to_string(),
            provider: "anthropic".to_string(),
            model: "claude-sonnet-4-5".to_string(),
            turns: 2,
            usage: drover_message::Usage::default(),
            cost_usd: Some(0.5),
            duration: Duration::from_millis(1500),
            checks: Vec::new(),
            setup: Vec::new(),
            denials: Vec::new(),
            files_changed: vec!["src/lib.rs".to_string()],
            ignored_changes: 0,
            excluded_from_diff: None,
            network: None,
            replay: None,
            context: None,
            wrap_up: None,
            started_at: None,
            earlier_runs: Vec::new(),
            start: None,
            final_text: "Fixed.".to_string(),
            todos: Vec::new(),
            artifacts_dir: PathBuf::from("out").join(name),
            redacted: 0,
            mcp_servers: Vec::new(),
            attempts: 1,
            hook_runs: 0,
            output: None,
            agents: Vec::new(),
            agent_turns: 0,
            drift: None,
        }
    }

    #[test]
    fn an_event_line_holds_the_transcript_line_byte_for_byte() {
        let line = r#"{"prev":"ab","type":"user_message","ts":"t","text":"caf\u00e9 ü"}"#;
        let framed = event_line("fix-it", line);
        let value: Value = serde_json::from_str(&framed).unwrap();
        assert_eq!(value["type"], "event");
        assert_eq!(value["task"], "fix-it");
        assert_eq!(value["event"], serde_json::from_str::<Value>(line).unwrap());
        assert!(framed.contains(line), "{framed}");
    }

    #[test]
    fn one_task_carries_claude_codes_names_and_several_do_not() {
        let report = RunReport {
            tasks: vec![task("exec", Status::Passed)],
            shard: None,
        };
        let line = run_result(&report, Path::new("out"), 0);
        assert!(
            line.starts_with("{\"type\":\"result\",\"status\":\"passed\""),
            "{line}"
        );
        let result: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(result["status"], "passed");
        assert_eq!(result["result"], "Fixed.");
        assert_eq!(result["is_error"], false);
        assert_eq!(result["num_turns"], 2);
        assert_eq!(result["total_cost_usd"], 0.5);
        assert_eq!(result["duration_ms"], 1500);
        assert_eq!(result["tasks"][0]["files_changed"][0], "src/lib.rs");
        assert_eq!(result["tasks"][0]["artifacts"], "out/exec");

        let report = RunReport {
            tasks: vec![task("a", Status::Passed), task("b", Status::Failed)],
            shard: None,
        };
        let result: Value =
            serde_json::from_str(&run_result(&report, Path::new("out"), 1)).unwrap();
        assert_eq!(result["status"], "failed");
        assert_eq!(result["exit_code"], 1);
        assert!(result.get("result").is_none(), "{result}");
        assert_eq!(result["tasks"][1]["reason"], "checks_failed");
    }

    #[test]
    fn the_exit_code_decides_the_status_even_when_every_task_passed() {
        let report = RunReport {
            tasks: vec![task("exec", Status::Passed)],
            shard: None,
        };
        // The artifacts directory could not be vouched for after the run: exit 3.
        let result: Value =
            serde_json::from_str(&run_result(&report, Path::new("out"), 3)).unwrap();
        assert_eq!(result["status"], "error");
    }

    #[test]
    fn a_structured_answer_is_the_answer() {
        let mut done = task("review", Status::Passed);
        done.output = Some(json!({"verdict": "approve"}));
        assert_eq!(answer(&done), json!({"verdict": "approve"}));
    }
}
