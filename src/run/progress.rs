//! Progress while tasks run, on stderr. On a terminal: one live line per running task
//! (turn, tokens, cost, the tool running now) above an overall bar. Off a terminal (CI
//! logs): plain timestamped lines, one per event worth reading. `--quiet`: nothing but
//! the final per-task lines, which always go to stdout.
//!
//! Progress follows each task's transcript events as they are written (see
//! [`EventObserver`](crate::record::transcript::EventObserver)), so the agent loop knows
//! nothing about it, and progress never says anything the transcript does not.

use crate::output::counted;
use std::collections::HashMap;
use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::Value;

use crate::message::ContentBlock;
use crate::record::transcript::{Decision, EventObserver};
use crate::record::{Event, Status, TaskReport};

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    /// Only the final lines (stdout).
    Quiet,
    /// Timestamped lines on stderr, for logs.
    Lines,
    /// Live bars on stderr, for people at a terminal.
    Bars,
}

impl Style {
    /// Bars on a terminal (not a dumb one), lines elsewhere, nothing with `--quiet`.
    pub(crate) fn detect(quiet: bool) -> Style {
        let dumb = std::env::var("TERM").is_ok_and(|term| term == "dumb");
        if quiet {
            Style::Quiet
        } else if std::io::stderr().is_terminal() && !dumb {
            Style::Bars
        } else {
            Style::Lines
        }
    }
}

/// `NO_COLOR` set to anything non-empty turns colours off (<https://no-color.org>).
pub(crate) fn colors_enabled() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty())
}

/// The live bars of a terminal run.
struct Bars {
    multi: MultiProgress,
    overall: ProgressBar,
    task_style: ProgressStyle,
    running: Mutex<HashMap<String, ProgressBar>>,
}

/// Progress of a whole run, shared by its tasks.
pub(crate) struct Progress {
    style: Style,
    bars: Option<Bars>,
}

impl Progress {
    /// Progress for `total` tasks in `style`, coloured unless `color` is false.
    pub(crate) fn new(style: Style, total: usize, color: bool) -> Arc<Progress> {
        let bars = (style == Style::Bars).then(|| {
            let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
            let (overall_template, task_template) = if color {
                (
                    "{bar:30.cyan/blue} {pos}/{len} tasks · {elapsed}",
                    "{spinner:.green} {prefix:.bold} {wide_msg}",
                )
            } else {
                (
                    "{bar:30} {pos}/{len} tasks · {elapsed}",
                    "{spinner} {prefix} {wide_msg}",
                )
            };
            let overall = multi.add(ProgressBar::new(total as u64));
            if let Ok(style) = ProgressStyle::with_template(overall_template) {
                overall.set_style(style.progress_chars("=> "));
            }
            overall.enable_steady_tick(Duration::from_millis(250));
            Bars {
                multi,
                overall,
                task_style: ProgressStyle::with_template(task_template)
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                running: Mutex::new(HashMap::new()),
            }
        });
        Arc::new(Progress { style, bars })
    }

    /// What the task `name` reports, to be attached to its transcript.
    pub(crate) fn observer(self: &Arc<Self>, name: &str) -> Option<EventObserver> {
        if self.style == Style::Quiet {
            return None;
        }
        let mut task = TaskProgress {
            progress: Arc::clone(self),
            name: name.to_string(),
            turn: 0,
            tokens: 0,
            cost: None,
            tools: HashMap::new(),
            running: Vec::new(),
            bar: None,
        };
        Some(Box::new(move |event: &Event| task.observe(event)))
    }

    /// A task ended: its final line on stdout, and its place in the progress.
    pub(crate) fn task_finished(&self, report: &TaskReport) {
        match &self.bars {
            Some(bars) => {
                let bar = lock(&bars.running).remove(&report.name);
                if let Some(bar) = bar {
                    bars.multi.remove(&bar);
                }
                bars.overall.inc(1);
                bars.multi.suspend(|| crate::say!("{}", final_line(report)));
            }
            None => {
                if self.style == Style::Lines {
                    self.line(&report.name, &finished_text(report));
                }
                crate::say!("{}", final_line(report));
            }
        }
    }

    /// The run is over: take the bars off the screen.
    pub(crate) fn finish(&self) {
        if let Some(bars) = &self.bars {
            bars.overall.finish_and_clear();
            let _ = bars.multi.clear();
        }
    }

    fn line(&self, task: &str, text: &str) {
        match &self.bars {
            Some(bars) => {
                let _ = bars.multi.println(format!("{task}: {text}"));
            }
            None => eprintln!(
                "{} {task}: {text}",
                humantime::format_rfc3339_seconds(SystemTime::now())
            ),
        }
    }
}

/// One task's view of its own events.
struct TaskProgress {
    progress: Arc<Progress>,
    name: String,
    turn: u32,
    tokens: u64,
    cost: Option<f64>,
    /// Tool names by tool_use id, so a denial can name its tool.
    tools: HashMap<String, String>,
    /// Calls started and not finished: (id, what is running).
    running: Vec<(String, String)>,
    bar: Option<ProgressBar>,
}

impl TaskProgress {
    fn observe(&mut self, event: &Event) {
        match event {
            Event::RunStart {
                provider, model, ..
            } => {
                self.start_bar();
                self.say(&format!("started ({provider}/{model})"));
            }
            // A resumed run writes no run_start of its own (the recorded one stands).
            Event::Resume {
                replayed_turns,
                provider,
                model,
                ..
            } => {
                self.start_bar();
                self.turn = *replayed_turns;
                self.say(&format!(
                    "resumed ({provider}/{model}): replaying {} without the model",
                    counted(*replayed_turns, "recorded turn", "recorded turns")
                ));
            }
            Event::ModelResponse {
                turn,
                content,
                usage,
                ..
            } => {
                self.turn = *turn;
                self.tokens = self.tokens.saturating_add(usage.total());
                if let Some(cost) = event_cost(event) {
                    *self.cost.get_or_insert(0.0) += cost;
                }
                let tools: Vec<&str> = content
                    .iter()
                    .filter_map(|block| match block {
                        ContentBlock::ToolUse { name, .. } => Some(name.as_str()),
                        _ => None,
                    })
                    .collect();
                let calls = if tools.is_empty() {
                    "no tool calls".to_string()
                } else {
                    tools.join(", ")
                };
                self.say(&format!("turn {turn}: {calls} · {}", self.figures()));
            }
            Event::ToolCall { id, name, input } => {
                self.tools.insert(id.clone(), name.clone());
                self.running.push((id.clone(), brief(name, input)));
                self.refresh();
            }
            Event::Permission {
                tool_use_id,
                decision: Decision::Deny,
                reason,
                ..
            } => {
                let tool = self.tools.get(tool_use_id).map_or("a tool", String::as_str);
                let text = format!("denied {tool}: {reason}");
                self.progress.line(&self.name, &text);
            }
            Event::ToolResult { tool_use_id, .. } => {
                self.running.retain(|(id, _)| id != tool_use_id);
                self.refresh();
            }
            Event::Check {
                name,
                command,
                passed,
                expectation: true,
                found,
                ..
            } => {
                let name = name.strip_prefix("expect: ").unwrap_or(name);
                let text = if *passed {
                    format!("expectation {name} met")
                } else {
                    format!(
                        "expectation {name} NOT MET: expected {command}, but {}",
                        found.as_deref().unwrap_or("it was not")
                    )
                };
                self.say(&text);
            }
            Event::Check {
                name,
                passed,
                exit_code,
                timed_out,
                ..
            } => {
                let outcome = match (passed, timed_out, exit_code) {
                    (true, _, _) => "passed".to_string(),
                    (false, true, _) => "FAILED (timed out)".to_string(),
                    (false, false, Some(code)) => format!("FAILED (exit code {code})"),
                    (false, false, None) => "FAILED".to_string(),
                };
                self.say(&format!("check {name:?} {outcome}"));
            }
            Event::ReplayDrift {
                call,
                tool,
                tool_use_id,
                diff,
                ..
            } => {
                let text = format!(
                    "drift at call {call} ({tool} {tool_use_id}): the result differs from the recording"
                );
                self.progress.line(&self.name, &text);
                for line in diff.lines() {
                    self.progress.line(&self.name, &format!("  {line}"));
                }
            }
            Event::AgentStart {
                agent_type, depth, ..
            } => {
                self.say(&format!("agent {agent_type} started (depth {depth})"));
            }
            Event::AgentEnd {
                agent_type,
                reason,
                turns,
                usage,
                cost_usd,
                ..
            } => {
                self.tokens = self.tokens.saturating_add(usage.total());
                if let Some(cost) = cost_usd {
                    *self.cost.get_or_insert(0.0) += cost;
                }
                self.say(&format!(
                    "agent {agent_type} ended: {} after {} · {}",
                    reason.as_str(),
                    counted(*turns, "turn", "turns"),
                    self.figures()
                ));
            }
            Event::RunEnd {
                cost_usd: Some(cost),
                ..
            } => self.cost = Some(*cost),
            _ => {}
        }
    }

    fn start_bar(&mut self) {
        if let Some(bars) = &self.progress.bars {
            let bar = bars
                .multi
                .insert_before(&bars.overall, ProgressBar::new_spinner());
            bar.set_style(bars.task_style.clone());
            bar.set_prefix(self.name.clone());
            bar.enable_steady_tick(Duration::from_millis(120));
            lock(&bars.running).insert(self.name.clone(), bar.clone());
            self.bar = Some(bar);
        }
    }

    /// A line in the log; on a terminal the task's live line says it instead.
    fn say(&self, text: &str) {
        match &self.bar {
            Some(_) => self.refresh(),
            None => self.progress.line(&self.name, text),
        }
    }

    fn refresh(&self) {
        if let Some(bar) = &self.bar {
            let now = match self.running.last() {
                Some((_, running)) => format!(" · {running}"),
                None => String::new(),
            };
            bar.set_message(format!("turn {} · {}{now}", self.turn, self.figures()));
        }
    }

    fn figures(&self) -> String {
        let cost = self
            .cost
            .map_or_else(String::new, |c| format!(" · ${c:.4}"));
        format!("{} tokens{cost}", compact(self.tokens))
    }
}

/// The per-turn `cost_usd` of a model_response, when the transcript carries one (read by
/// name: the field belongs to the pricing work and may be absent).
fn event_cost(event: &Event) -> Option<f64> {
    serde_json::to_value(event)
        .ok()?
        .get("cost_usd")
        .and_then(Value::as_f64)
}

/// What a tool call is doing, in a few words: `Bash: cargo test`, `Edit: src/lib.rs`.
fn brief(name: &str, input: &Value) -> String {
    let detail = ["command", "file_path", "pattern", "path", "url"]
        .iter()
        .find_map(|key| input.get(key).and_then(Value::as_str))
        .unwrap_or("");
    let detail: String = detail
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(48)
        .collect();
    if detail.is_empty() {
        name.to_string()
    } else {
        format!("{name}: {detail}")
    }
}

/// 950, 12.3k, 4.5M.
fn compact(count: u64) -> String {
    match count {
        0..1_000 => count.to_string(),
        1_000..1_000_000 => format!("{:.1}k", count as f64 / 1_000.0),
        _ => format!("{:.1}M", count as f64 / 1_000_000.0),
    }
}

fn finished_text(report: &TaskReport) -> String {
    let cost = report
        .cost_usd
        .map_or_else(|| "cost unknown".to_string(), |c| format!("${c:.4}"));
    format!(
        "finished: {} ({}) — {}, {cost}, {:.1}s",
        status_word(report.status),
        report.reason.as_str(),
        counted(report.turns, "turn", "turns"),
        report.duration.as_secs_f64()
    )
}

/// The line printed on stdout for every task, whatever the progress style.
pub(crate) fn final_line(report: &TaskReport) -> String {
    format!(
        "drover: {} {} ({}: {}) — {}, {}, {} — {}",
        report.name,
        status_word(report.status),
        report.reason.as_str(),
        report.message,
        counted(report.turns, "turn", "turns"),
        counted(report.denials.len() as u64, "denied call", "denied calls"),
        counted(
            report.files_changed.len() as u64,
            "file changed",
            "files changed"
        ),
        report.artifacts_dir.display()
    )
}

/// The run's outcome in one line: how many tasks passed, failed and erred, the exit
/// code, and why it is that code (the first task that decided it).
pub(crate) fn outcome_line(report: &crate::record::RunReport) -> String {
    let count = |status: Status| report.tasks.iter().filter(|t| t.status == status).count();
    let (passed, failed, errors) = (
        count(Status::Passed),
        count(Status::Failed),
        count(Status::Error),
    );
    let status = report.status();
    let why = match status {
        Status::Passed if report.tasks.is_empty() => "there was no task to run".to_string(),
        Status::Passed => "every task passed".to_string(),
        Status::Failed | Status::Error => {
            let deciding: Vec<&TaskReport> =
                report.tasks.iter().filter(|t| t.status == status).collect();
            let first = deciding
                .first()
                .map(|t| format!("{} ({})", t.name, t.reason.as_str()))
                .unwrap_or_default();
            let more = match deciding.len() {
                0 | 1 => String::new(),
                n => format!(" and {} more", n - 1),
            };
            let kind = if status == Status::Failed {
                "a task failed"
            } else {
                "drover could not finish a task"
            };
            format!("{kind}: {first}{more}")
        }
    };
    format!(
        "drover: {}: {passed} passed, {failed} failed, {} — exit {}: {why}",
        counted(report.tasks.len() as u64, "task", "tasks"),
        counted(errors as u64, "error", "errors"),
        status.exit_code()
    )
}

fn status_word(status: Status) -> &'static str {
    match status {
        Status::Passed => "passed",
        Status::Failed => "FAILED",
        Status::Error => "ERROR",
    }
}

/// A poisoned lock only means another task panicked while showing progress; the map is
/// still usable.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn briefs_and_counts_read_well() {
        assert_eq!(
            brief("Bash", &json!({"command": "cargo test\nmore"})),
            "Bash: cargo test"
        );
        assert_eq!(brief("Edit", &json!({"file_path": "a.rs"})), "Edit: a.rs");
        assert_eq!(brief("TodoWrite", &json!({"todos": []})), "TodoWrite");
        assert_eq!(compact(950), "950");
        assert_eq!(compact(12_345), "12.3k");
        assert_eq!(compact(4_500_000), "4.5M");
    }

    #[test]
    fn quiet_progress_observes_nothing() {
        let progress = Progress::new(Style::Quiet, 1, true);
        assert!(progress.observer("t").is_none());
        assert!(Progress::new(Style::Lines, 1, true).observer("t").is_some());
    }
}
