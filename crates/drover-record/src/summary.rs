//! The run's outcome for machines (`summary.json`) and for people (`summary.md`, written
//! to `$GITHUB_STEP_SUMMARY` by the Action): one place to see every task at a glance.

use drover_output::counted;
use std::fmt::Write as _;

use serde::Serialize;

use crate::junit::{check_failure, status_str, tail};
use crate::markdown::{cell, code, fenced};
use crate::{ChecksRun, OutcomeFrom, RunReport, ShardId, Status, TaskReport, TodoStatus};

/// Lines of check output shown per failed check in the Markdown summary.
const OUTPUT_LINES: usize = 20;
/// Bytes of check output considered before taking the last lines.
const OUTPUT_BYTES: usize = 4000;

#[derive(Serialize)]
struct Summary<'a> {
    drover_version: &'a str,
    status: &'static str,
    exit_code: i32,
    counts: Counts,
    /// `{"index": K, "count": N}` for a `--shard K/N` run, null otherwise: `report merge`
    /// checks that no shard is missing.
    shard: Option<ShardId>,
    tasks: &'a [TaskReport],
}

/// How many tasks ended in each status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub(crate) struct Counts {
    pub passed: usize,
    pub failed: usize,
    pub error: usize,
}

impl Counts {
    /// Count the tasks of a run by status.
    pub(crate) fn of(report: &RunReport) -> Counts {
        let mut counts = Counts::default();
        for task in &report.tasks {
            match task.status {
                Status::Passed => counts.passed += 1,
                Status::Failed => counts.failed += 1,
                Status::Error => counts.error += 1,
            }
        }
        counts
    }
}

/// `summary.json`: the overall status and exit code (the worst task decides), counts,
/// and every task report, pretty-printed with a trailing newline. `drover_version` is the
/// version of the drover that writes it.
pub fn summary_json(report: &RunReport, drover_version: &str) -> String {
    let status = report.status();
    let summary = Summary {
        drover_version,
        status: status_str(status),
        exit_code: status.exit_code(),
        counts: Counts::of(report),
        shard: report.shard,
        tasks: &report.tasks,
    };
    match serde_json::to_string_pretty(&summary) {
        Ok(mut json) => {
            json.push('\n');
            json
        }
        // Plain data serializes; should it ever not, still say the run did not pass.
        Err(error) => format!(
            "{{\n  \"drover_version\": {},\n  \"status\": \"error\",\n  \"exit_code\": 3,\n  \"error\": {}\n}}\n",
            serde_json::Value::from(drover_version),
            serde_json::Value::from(error.to_string()),
        ),
    }
}

/// `summary.md`: a table with one row per task, then for each task that did not pass
/// its message, failed checks with their last output lines, denials and changed files,
/// then the denied calls of each task that passed with some.
/// Every text a model, a tool, a check or a shard's `summary.json` chose is in a code
/// span or a fenced block (see [`markdown`](crate::markdown)): none of it can
/// start a heading, end a list or be read as HTML.
pub fn summary_md(report: &RunReport) -> String {
    let counts = Counts::of(report);
    let mut out = format!(
        "## drover: {} passed, {} failed, {}\n\n",
        counts.passed,
        counts.failed,
        counted(counts.error as u64, "error", "errors")
    );
    if report.tasks.is_empty() {
        out.push_str("No tasks ran.\n");
        return out;
    }
    task_table(&mut out, &report.tasks);
    notes_after_table(&mut out, &report.tasks);
    for task in report.tasks.iter().filter(|t| t.status != Status::Passed) {
        failed_section(&mut out, task);
    }
    // After every task that did not pass, so a step summary cut at GitHub's limit loses
    // these first.
    for task in report
        .tasks
        .iter()
        .filter(|t| t.status == Status::Passed && !t.denials.is_empty())
    {
        passed_denials_section(&mut out, task);
    }
    drift_sections(&mut out, &report.tasks);
    for task in &report.tasks {
        excluded_from_diff_section(&mut out, task);
    }
    for task in &report.tasks {
        crate::network::summary_section(&mut out, task);
    }
    context_lines(&mut out, &report.tasks);
    wrap_up_sections(&mut out, &report.tasks);
    for task in &report.tasks {
        if let Some(value) = &task.output {
            let text = serde_json::to_string_pretty(value).unwrap_or_default();
            let shown: String = text.chars().take(4000).collect();
            let _ = write!(
                out,
                "\n### {}: output\n\n{}",
                code(&task.name),
                fenced(&shown, "json", "")
            );
        }
    }
    for task in report.tasks.iter().filter(|t| !t.todos.is_empty()) {
        todo_section(&mut out, task);
    }
    let redacted: Vec<String> = report
        .tasks
        .iter()
        .filter(|t| t.redacted > 0)
        .map(|t| format!("{} ({})", code(&t.name), t.redacted))
        .collect();
    if !redacted.is_empty() {
        let _ = writeln!(
            out,
            "\nSecret values were replaced by `[redacted]` in the artifacts of: {}.",
            redacted.join(", ")
        );
    }
    out
}

/// One row per task: outcome, reason and figures.
fn task_table(out: &mut String, tasks: &[TaskReport]) {
    out.push_str("| Task | Outcome | Reason | Turns | Tokens | Cost | Files changed | Denials |\n");
    out.push_str("|---|---|---|---:|---:|---:|---:|---:|\n");
    for task in tasks {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            cell(&task.name),
            outcome_cell(task),
            task.reason.as_str(),
            task.turns,
            task.usage.shown(),
            cost(task.cost_usd),
            task.files_changed.len(),
            task.denials.len(),
        );
    }
}

/// A task's outcome as the table shows it: an outcome a replay took from its recording
/// says so, and a recorded pass nothing verified gets no ✅.
fn outcome_cell(task: &TaskReport) -> String {
    let status = status_str(task.status);
    match &task.replay {
        Some(replay) if replay.outcome_from == OutcomeFrom::Recording => {
            let icon = match task.status {
                Status::Passed => "↺",
                other => outcome_icon(other),
            };
            format!("{icon} {status} (as recorded)")
        }
        _ => format!("{} {status}", outcome_icon(task.status)),
    }
}

/// What the table leaves out, for the tasks it concerns: where cloned tasks started,
/// whose outcome a replay shows, retries and sub-agents.
fn notes_after_table(out: &mut String, tasks: &[TaskReport]) {
    repositories(out, tasks);
    replayed_outcomes(out, tasks);
    retries_and_agents(out, tasks);
    earlier_runs_line(out, tasks);
}

/// For each task cloned from a repository (`repo:`): the repository and the commit it
/// started from, so a reader can fetch that commit and apply the task's diff.
fn repositories(out: &mut String, tasks: &[TaskReport]) {
    for task in tasks {
        let Some(start) = &task.start else {
            continue;
        };
        let Some(repository) = &start.repository else {
            continue;
        };
        let asked = repository.git_ref.as_deref().map_or_else(
            || " (the remote's HEAD)".to_string(),
            |r| format!(" (ref {})", code(r)),
        );
        let _ = write!(
            out,
            "\n{} started from {} at commit {}{asked}.\n",
            code(&task.name),
            code(&repository.url),
            code(&start.commit)
        );
    }
}

/// For each replayed task: whether its checks ran, and whose outcome the table shows.
fn replayed_outcomes(out: &mut String, tasks: &[TaskReport]) {
    for task in tasks {
        let Some(replay) = &task.replay else {
            continue;
        };
        let checks = match replay.checks {
            ChecksRun::NotRun => "checks not run",
            ChecksRun::Rerun => "checks re-run on the replayed result",
        };
        let whose = match replay.outcome_from {
            OutcomeFrom::Recording => "outcome as recorded",
            OutcomeFrom::Replay => "outcome of the replay",
        };
        let recorded = replay.recorded.as_ref().map_or_else(String::new, |end| {
            format!(
                " (the recorded run ended {}, {})",
                status_str(end.status),
                end.reason.as_str()
            )
        });
        let _ = write!(
            out,
            "\nReplay of {}: {checks}: {whose}{recorded}.\n",
            code(&task.name)
        );
    }
}

/// The tasks sent back to work, and those whose figures include sub-agents' runs.
fn retries_and_agents(out: &mut String, tasks: &[TaskReport]) {
    let retried: Vec<String> = tasks
        .iter()
        .filter(|t| t.attempts > 1)
        .map(|t| format!("{} ({} attempts)", code(&t.name), t.attempts))
        .collect();
    if !retried.is_empty() {
        let _ = writeln!(
            out,
            "\nSent back to work after failed checks: {}.",
            retried.join(", ")
        );
    }
    let with_agents: Vec<String> = tasks
        .iter()
        .filter(|t| !t.agents.is_empty())
        .map(|t| {
            let cost_of = t
                .agents
                .iter()
                .try_fold(0.0, |sum, run| run.cost_usd.map(|c| sum + c));
            format!(
                "{} ({}, {}, {})",
                code(&t.name),
                counted(t.agents.len() as u64, "sub-agent run", "sub-agent runs"),
                counted(t.agent_turns, "turn", "turns"),
                cost(cost_of)
            )
        })
        .collect();
    if !with_agents.is_empty() {
        let _ = writeln!(
            out,
            "\nSub-agents (included in the figures above): {}.",
            with_agents.join(", ")
        );
    }
}

/// Each replayed task whose results differed from the recording: how many, and the first.
fn drift_sections(out: &mut String, tasks: &[TaskReport]) {
    for task in tasks {
        if let Some(drift) = &task.drift {
            let _ = write!(
                out,
                "\n### {}: replay drift\n\n{} result{} differed from the recording (volatile output masked); the first at call {} ({} {}):\n\n{}",
                code(&task.name),
                drift.count,
                if drift.count == 1 { "" } else { "s" },
                drift.call,
                code(&drift.tool),
                code(&drift.tool_use_id),
                fenced(&drift.diff, "diff", "")
            );
        }
    }
}

/// The tasks `report merge` found more than once (a retried pod or shard): how many
/// runs, and how the earlier ones ended; the table shows the latest.
fn earlier_runs_line(out: &mut String, tasks: &[TaskReport]) {
    let rerun: Vec<String> = tasks
        .iter()
        .filter(|t| !t.earlier_runs.is_empty())
        .map(|t| {
            let earlier: Vec<&str> = t.earlier_runs.iter().map(|r| r.reason.as_str()).collect();
            format!(
                "{} ({} runs; earlier: {})",
                code(&t.name),
                t.earlier_runs.len() + 1,
                earlier.join(", ")
            )
        })
        .collect();
    if !rerun.is_empty() {
        let _ = writeln!(
            out,
            "\nRun more than once (the table shows each task's latest run): {}.",
            rerun.join(", ")
        );
    }
}

/// What the model wrote in each wrap-up turn.
fn wrap_up_sections(out: &mut String, tasks: &[TaskReport]) {
    for task in tasks {
        if let Some(text) = &task.wrap_up {
            let shown: String = text.chars().take(4000).collect();
            let _ = write!(
                out,
                "\n### {}: where the work stands (wrap-up)\n\n{}",
                code(&task.name),
                fenced(&shown, "text", "")
            );
        }
    }
}

/// How each task that had to compact its conversation did it, one line a task.
fn context_lines(out: &mut String, tasks: &[TaskReport]) {
    let lines: Vec<String> = tasks
        .iter()
        .filter_map(|task| {
            let tally = task.context.as_ref()?;
            Some(format!(
                "- {}: {}",
                code(&task.name),
                tally.summary_section()
            ))
        })
        .collect();
    if !lines.is_empty() {
        let _ = write!(out, "\n### Context\n\n{}\n", lines.join("\n"));
    }
}

/// The model's plan as a checklist, so a reader sees what it meant to do and got done.
fn todo_section(out: &mut String, task: &TaskReport) {
    let _ = write!(out, "\n### {}: todo list\n\n", code(&task.name));
    for todo in &task.todos {
        let text = code(&todo.content);
        let _ = match todo.status {
            TodoStatus::Completed => writeln!(out, "- [x] {text}"),
            TodoStatus::InProgress => writeln!(out, "- [ ] {text} (in progress)"),
            TodoStatus::Pending => writeln!(out, "- [ ] {text}"),
        };
    }
}

/// What a reader needs of a task that did not pass: its message, unmet expectations and
/// failed checks with their last output lines, denials and changed files.
fn failed_section(out: &mut String, task: &TaskReport) {
    let _ = write!(
        out,
        "\n### {} {} — {}\n\n{}",
        outcome_icon(task.status),
        code(&task.name),
        task.reason.as_str(),
        fenced(&task.message, "text", ""),
    );
    checks_section(out, task);
    if !task.denials.is_empty() {
        out.push_str("\n**Denied tool calls**\n\n");
        denial_list(out, task);
    }
    if !task.files_changed.is_empty() {
        out.push_str("\n**Files changed**\n\n");
        for path in &task.files_changed {
            let _ = writeln!(out, "- {}", code(path));
        }
    }
    if task.ignored_changes > 0 {
        let _ = writeln!(
            out,
            "\n{} {} changed where the workspace's ignore rules or build trees keep {} out of the diff.",
            task.ignored_changes,
            if task.ignored_changes == 1 {
                "file"
            } else {
                "files"
            },
            if task.ignored_changes == 1 {
                "it"
            } else {
                "them"
            },
        );
    }
}

/// The paths `diff.exclude` left out, for every task (passed ones too), so a reader sees
/// what the diff does not show.
fn excluded_from_diff_section(out: &mut String, task: &TaskReport) {
    let Some(excluded) = &task.excluded_from_diff else {
        return;
    };
    let named: Vec<String> = excluded.paths.iter().map(|path| code(path)).collect();
    let more = excluded.count.saturating_sub(excluded.paths.len());
    let _ = writeln!(
        out,
        "\n### {}: left out of the diff\n\nBy the spec's `diff.exclude` ({} {}): {}{}.",
        code(&task.name),
        excluded.count,
        if excluded.count == 1 { "file" } else { "files" },
        named.join(", "),
        if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        }
    );
}

/// The calls a task that passed was denied: a pass does not mean the agent never tried
/// something the policy refused, and a reviewer wants to see what.
fn passed_denials_section(out: &mut String, task: &TaskReport) {
    let _ = write!(
        out,
        "\n### {} {}: denied tool calls\n\n",
        outcome_icon(task.status),
        code(&task.name)
    );
    denial_list(out, task);
}

/// One line per denied call: the tool, the reason and the rule (or the default).
fn denial_list(out: &mut String, task: &TaskReport) {
    for denial in &task.denials {
        let rule = denial
            .rule
            .as_deref()
            .map_or_else(|| "no allow rule matched".to_string(), code);
        let _ = writeln!(
            out,
            "- {}: {} ({rule})",
            code(&denial.tool),
            code(&denial.reason)
        );
    }
}

/// A task's unmet expectations, then its failed checks with their last output lines.
fn checks_section(out: &mut String, task: &TaskReport) {
    let unmet: Vec<_> = task
        .checks
        .iter()
        .filter(|c| !c.passed && c.expectation)
        .collect();
    if !unmet.is_empty() {
        out.push_str("\n**Unmet expectations**\n\n");
        for check in unmet {
            let _ = writeln!(
                out,
                "- {}: expected {}, but {}",
                code(check.name.strip_prefix("expect: ").unwrap_or(&check.name)),
                code(&check.command),
                code(&check.output_tail)
            );
        }
    }
    let failed: Vec<_> = task
        .checks
        .iter()
        .filter(|c| !c.passed && !c.expectation)
        .collect();
    if !failed.is_empty() {
        out.push_str("\n**Failed checks**\n");
        for check in failed {
            let _ = writeln!(
                out,
                "\n- {} ({}): {}",
                code(&check.name),
                code(&check.command),
                check_failure(check)
            );
            let lines = last_lines(&check.output_tail, OUTPUT_LINES);
            if !lines.is_empty() {
                let _ = write!(out, "\n{}", fenced(&lines, "text", "  "));
            }
        }
    }
}

fn outcome_icon(status: Status) -> &'static str {
    match status {
        Status::Passed => "✅",
        Status::Failed => "❌",
        Status::Error => "⚠️",
    }
}

fn cost(cost_usd: Option<f64>) -> String {
    match cost_usd {
        Some(cost) if cost.is_finite() => format!("${cost:.4}"),
        _ => "n/a".to_string(),
    }
}

/// The last `count` lines of `text` (any line break counts: see
/// [`fenced`]), without trailing blank lines.
fn last_lines(text: &str, count: usize) -> String {
    let text = tail(text, OUTPUT_BYTES).trim_end();
    let lines: Vec<&str> = text
        .split("\r\n")
        .flat_map(|line| line.split(['\r', '\n']))
        .collect();
    let start = lines.len().saturating_sub(count);
    lines[start..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::EndReason;
    use crate::junit::tests::{sample_run, task};

    #[test]
    fn json_has_status_exit_code_counts_and_tasks() {
        let json = summary_json(&sample_run(), "1.2.3");
        assert!(json.ends_with("}\n"));
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(value["drover_version"], "1.2.3");
        assert_eq!(value["status"], "error");
        assert_eq!(value["exit_code"], 3);
        assert_eq!(
            value["counts"],
            serde_json::json!({"passed": 1, "failed": 2, "error": 1})
        );
        let tasks = value["tasks"].as_array().unwrap();
        assert_eq!(tasks.len(), 4);
        assert_eq!(tasks[1]["name"], "refactor");
        assert_eq!(tasks[1]["reason"], "max_turns");
        assert_eq!(tasks[1]["duration_ms"], 31_952);
        assert!(tasks[1]["cost_usd"].is_null());
        // Task reports read back as they were written.
        let back: Vec<TaskReport> = serde_json::from_value(value["tasks"].clone()).unwrap();
        assert_eq!(back, sample_run().tasks);
    }

    #[test]
    fn json_of_an_empty_run_passes() {
        let value: serde_json::Value =
            serde_json::from_str(&summary_json(&RunReport::default(), "1.2.3")).unwrap();
        assert_eq!(value["status"], "passed");
        assert_eq!(value["exit_code"], 0);
        assert!(value["shard"].is_null());
    }

    #[test]
    fn json_names_the_shard_of_a_sharded_run() {
        let run = RunReport {
            shard: Some(ShardId { index: 2, count: 4 }),
            ..sample_run()
        };
        let value: serde_json::Value = serde_json::from_str(&summary_json(&run, "1.2.3")).unwrap();
        assert_eq!(value["shard"], serde_json::json!({"index": 2, "count": 4}));
    }

    #[test]
    fn markdown_table_has_a_row_per_task() {
        let md = summary_md(&sample_run());
        assert!(
            md.starts_with("## drover: 1 passed, 2 failed, 1 error\n"),
            "{md}"
        );
        assert!(md.contains("| `fix-add` | ✅ passed | end_turn | 3 | 1545 | $0.0123 | 1 | 0 |"));
        assert!(md.contains("| `refactor` | ❌ failed | max_turns | 3 | 1545 | n/a | 0 | 1 |"));
        assert!(md.contains("| `lint` | ❌ failed | checks_failed | 3 | 1545 | $0.0123 | 2 | 0 |"));
        assert!(md.contains("| `offline` | ⚠️ error | provider_error |"));
    }

    #[test]
    fn markdown_explains_each_failed_task() {
        let md = summary_md(&sample_run());
        assert!(!md.contains("### ✅"), "passed tasks get no section");
        assert!(md.contains(
            "### ❌ `refactor` — max_turns\n\n```text\nmax_turns: stopped after 3 turns (limit 3)\n```\n"
        ), "{md}");
        assert!(
            md.contains("- `Bash`: `denied by rule Bash(git push *)` (`Bash(git push *)`)"),
            "{md}"
        );
        assert!(md.contains(
            "- `clippy` (`run clippy`): exited with code 101\n\n  ```text\n  error: unused variable\n"
        ), "{md}");
        assert!(md.contains("- `slow` (`run slow`): timed out"));
        assert!(!md.contains("- `fmt` ("), "passed checks are not listed");
        assert!(md.contains("**Files changed**\n\n- `a.rs`\n- `b/c.rs`\n"));
        assert!(md.contains("### ⚠️ `offline` — provider_error\n\n```text\nprovider_error: connection refused after 3 retries\n```\n"));
        assert!(!md.contains('\u{1b}'));
    }

    /// The README says denials are listed in summary.md: a task that passed lists its
    /// denied calls too, after every task that did not pass; one without any gets no section.
    #[test]
    fn markdown_lists_the_denied_calls_of_a_task_that_passed() {
        let mut run = sample_run();
        run.tasks[0].denials.push(crate::Denial {
            tool_use_id: "toolu_9".to_string(),
            tool: "Write".to_string(),
            input: serde_json::json!({"file_path": ".env"}),
            rule: None,
            reason: "writing .env matches no allow rule (default deny)".to_string(),
        });
        let md = summary_md(&run);
        let section = "### ✅ `fix-add`: denied tool calls\n\n- `Write`: `writing .env matches no allow rule (default deny)` (no allow rule matched)\n";
        let at = md.find(section).unwrap_or_else(|| panic!("{md}"));
        assert!(at > md.find("### ⚠️ `offline`").unwrap(), "{md}");
        // The failed task's denial is still listed in its own section, once.
        assert_eq!(
            md.matches("denied by rule Bash(git push *)").count(),
            1,
            "{md}"
        );
        run.tasks[0].denials.clear();
        assert!(!summary_md(&run).contains("### ✅"));
    }

    #[test]
    fn last_lines_are_the_last_of_any_line_break() {
        let long: String = (1..=50).map(|i| format!("line {i}\n")).collect();
        assert_eq!(last_lines(&long, 3), "line 48\nline 49\nline 50");
        assert_eq!(last_lines("a\rb\r\nc\n\n", 2), "b\nc");
        assert_eq!(
            summary_md(&RunReport::default()),
            "## drover: 0 passed, 0 failed, 0 errors\n\nNo tasks ran.\n"
        );
    }

    /// Every string of a task report holding what a model, a check or a hostile
    /// `summary.json` chose: a heading, HTML, a list item, a table row, a fence.
    #[test]
    fn no_text_of_a_task_becomes_markdown() {
        use crate::markdown::tests::live_text;
        let hostile = "x`` \n## FORGED\r### FORGED\r\n<h2>FORGED</h2> | FORGED |\n```\n- FORGED\n";
        let mut run = sample_run();
        for task in &mut run.tasks {
            task.message = hostile.into();
            task.files_changed = vec![hostile.into()];
            task.attempts = 2;
            task.redacted = 1;
            task.todos = vec![crate::Todo {
                content: hostile.into(),
                status: TodoStatus::Pending,
                active_form: hostile.into(),
            }];
            task.output = Some(serde_json::json!({ "answer": hostile }));
            task.drift = Some(crate::DriftReport {
                count: 1,
                call: 1,
                tool: hostile.into(),
                tool_use_id: hostile.into(),
                diff: hostile.into(),
            });
            for denial in &mut task.denials {
                denial.tool = hostile.into();
                denial.reason = hostile.into();
                denial.rule = Some(hostile.into());
            }
            for check in &mut task.checks {
                check.name = hostile.into();
                check.command = hostile.into();
                check.output_tail = hostile.into();
            }
        }
        run.tasks[1].checks = run.tasks[2].checks.clone();
        run.tasks[1].checks[0].expectation = true;
        // Names are plain where they come from (a spec, a checked summary.json); still.
        run.tasks[0].name = hostile.into();
        let md = summary_md(&run);
        let live = live_text(&md);
        assert!(!live.contains("FORGED"), "{live}\n---\n{md}");
        assert!(!live.contains('<'), "{live}");
        let table: Vec<&str> = md.lines().filter(|l| l.starts_with("| `")).collect();
        assert_eq!(table.len(), 4, "{md}");
        assert!(
            table.iter().all(|row| row.matches(" | ").count() == 7),
            "{table:#?}"
        );
    }

    /// A replayed task as the replay reports it: `checks`, and whose outcome it is.
    fn replayed(name: &str, recorded: EndReason, checks: ChecksRun, own: EndReason) -> TaskReport {
        let mut report = task(name, "a.yaml", EndReason::EndTurn, "ok");
        let mut judgement = crate::ReplayJudgement::new(
            checks,
            Some(crate::RecordedOutcome::from_run_end(recorded, "recorded")),
        );
        let (reason, message) = judgement.settle((own, "own".into()));
        report.reason = reason;
        report.status = reason.status();
        report.message = message;
        report.replay = Some(judgement);
        report
    }

    #[test]
    fn markdown_says_whose_outcome_a_replay_shows_and_gives_no_tick_to_the_unverified() {
        let run = RunReport {
            tasks: vec![
                replayed(
                    "failed",
                    EndReason::ChecksFailed,
                    ChecksRun::NotRun,
                    EndReason::EndTurn,
                ),
                replayed(
                    "passed",
                    EndReason::EndTurn,
                    ChecksRun::NotRun,
                    EndReason::EndTurn,
                ),
                replayed(
                    "fixed",
                    EndReason::ChecksFailed,
                    ChecksRun::Rerun,
                    EndReason::EndTurn,
                ),
            ],
            ..RunReport::default()
        };
        let md = summary_md(&run);
        assert!(
            md.starts_with("## drover: 2 passed, 1 failed, 0 errors\n"),
            "{md}"
        );
        assert!(
            md.contains("| `failed` | ❌ failed (as recorded) | checks_failed |"),
            "{md}"
        );
        assert!(
            md.contains("| `passed` | ↺ passed (as recorded) | end_turn |"),
            "{md}"
        );
        assert!(md.contains("| `fixed` | ✅ passed | end_turn |"), "{md}");
        assert!(md.contains(
            "Replay of `failed`: checks not run: outcome as recorded (the recorded run ended failed, checks_failed)."
        ), "{md}");
        assert!(md.contains(
            "Replay of `fixed`: checks re-run on the replayed result: outcome of the replay (the recorded run ended failed, checks_failed)."
        ), "{md}");
        let json: serde_json::Value = serde_json::from_str(&summary_json(&run, "1")).unwrap();
        assert_eq!(json["exit_code"], 1);
        assert_eq!(json["tasks"][0]["replay"]["outcome_from"], "recording");
        assert_eq!(json["tasks"][2]["replay"]["checks"], "rerun");
        assert!(json["tasks"][0].get("start").is_none());
        let back: Vec<TaskReport> = serde_json::from_value(json["tasks"].clone()).unwrap();
        assert_eq!(back, run.tasks, "report merge reads them back as written");
    }

    #[test]
    fn markdown_shows_the_todo_list_as_a_checklist() {
        let mut done = task("planned", "a.yaml", EndReason::EndTurn, "ok");
        done.todos = vec![
            crate::Todo {
                content: "Find the bug".into(),
                status: TodoStatus::Completed,
                active_form: "Finding the bug".into(),
            },
            crate::Todo {
                content: "Run the tests".into(),
                status: TodoStatus::InProgress,
                active_form: "Running the tests".into(),
            },
        ];
        let md = summary_md(&RunReport {
            tasks: vec![done],
            ..RunReport::default()
        });
        assert!(
            md.contains(
                "### `planned`: todo list\n\n- [x] `Find the bug`\n- [ ] `Run the tests` (in progress)\n"
            ),
            "{md}"
        );
    }
}
