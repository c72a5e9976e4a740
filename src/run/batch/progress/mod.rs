//! Progress while tasks run, on stderr. On a terminal: one live line per running task
//! (turn, tokens, cost, the tool running now) above an overall bar. Off a terminal (CI
//! logs): plain timestamped lines, one per event worth reading. `--quiet`: nothing but
//! the final per-task lines, which always go to stdout.
//!
//! Progress follows each task's transcript events as they are written (see
//! [`EventObserver`](crate::record::transcript::EventObserver)), so the agent loop knows
//! nothing about it, and progress never says anything the transcript does not.

use crate::output::{counted, one_line};
use std::collections::HashMap;
use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

mod task;

use task::TaskProgress;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::record::transcript::EventObserver;
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

/// Where a run's human lines go: stdout, or stderr when stdout is kept for machines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Channel {
    Stdout,
    Stderr,
}

impl Channel {
    /// One line there, made safe as every line drover prints.
    pub(crate) fn say(self, text: &str) {
        match self {
            Channel::Stdout => crate::say!("{text}"),
            Channel::Stderr => crate::esay!("{text}"),
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
    /// A task's line while a check runs: the check and its time.
    check_style: ProgressStyle,
    /// Tasks finished so far by status, for the overall bar.
    finished: Mutex<(usize, usize, usize)>,
    running: Mutex<HashMap<String, ProgressBar>>,
}

/// Progress of a whole run, shared by its tasks.
pub(crate) struct Progress {
    style: Style,
    bars: Option<Bars>,
    /// Where each task's final line goes.
    finals: Channel,
}

impl Progress {
    /// Progress for `total` tasks in `style`, coloured unless `color` is false, each
    /// task's final line on `finals`.
    pub(crate) fn new(style: Style, total: usize, color: bool, finals: Channel) -> Arc<Progress> {
        let bars = (style == Style::Bars).then(|| {
            let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
            let (overall_template, task_template, check_template) = if color {
                (
                    "{bar:30.cyan/blue} {pos}/{len} tasks{msg} · {elapsed}",
                    "{spinner:.green} {prefix:.bold} {wide_msg}",
                    "{spinner:.yellow} {prefix:.bold} {msg} ({elapsed})",
                )
            } else {
                (
                    "{bar:30} {pos}/{len} tasks{msg} · {elapsed}",
                    "{spinner} {prefix} {wide_msg}",
                    "{spinner} {prefix} {msg} ({elapsed})",
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
                check_style: ProgressStyle::with_template(check_template)
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                finished: Mutex::new((0, 0, 0)),
                running: Mutex::new(HashMap::new()),
            }
        });
        Arc::new(Progress {
            style,
            bars,
            finals,
        })
    }

    /// What the task `name` reports, to be attached to its transcript.
    pub(crate) fn observer(self: &Arc<Self>, name: &str) -> Option<EventObserver> {
        if self.style == Style::Quiet {
            return None;
        }
        let mut task = TaskProgress::new(Arc::clone(self), name);
        Some(Box::new(move |event: &Event| task.observe(event)))
    }

    /// A task ended: its final line, and its place in the progress.
    pub(crate) fn task_finished(&self, report: &TaskReport) {
        match &self.bars {
            Some(bars) => {
                let bar = lock(&bars.running).remove(&report.name);
                if let Some(bar) = bar {
                    bars.multi.remove(&bar);
                }
                bars.overall.inc(1);
                let counts = {
                    let mut finished = lock(&bars.finished);
                    match report.status {
                        Status::Passed => finished.0 += 1,
                        Status::Failed => finished.1 += 1,
                        Status::Error => finished.2 += 1,
                    }
                    *finished
                };
                bars.overall.set_message(format!(
                    " · {} passed, {} failed, {}",
                    counts.0,
                    counts.1,
                    counted(counts.2 as u64, "error", "errors")
                ));
                bars.multi.suspend(|| self.finals.say(&final_line(report)));
            }
            None => {
                if self.style == Style::Lines {
                    self.line(&report.name, &finished_text(report));
                }
                self.finals.say(&final_line(report));
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

    /// A log line of the task `task`; `text` may hold what a model or a tool wrote, so it
    /// is shown as one line (see [`one_line`]): on a terminal its escape sequences cannot
    /// drive it, and on GitHub Actions no part of it becomes a workflow command.
    fn line(&self, task: &str, text: &str) {
        let text = one_line(text);
        match &self.bars {
            Some(bars) => {
                let _ = bars.multi.println(format!("{task}: {text}"));
            }
            None => crate::esay!(
                "{} {task}: {text}",
                humantime::format_rfc3339_seconds(SystemTime::now())
            ),
        }
    }
}

fn finished_text(report: &TaskReport) -> String {
    let cost = report
        .cost_usd
        .map_or_else(|| "cost unknown".to_string(), |c| format!("${c:.4}"));
    // A replay's outcome says whose it is: `failed (checks_failed, as recorded; checks
    // not re-run)`.
    let whose = report
        .replay
        .as_ref()
        .map_or_else(String::new, |replay| format!(", {}", replay.label_words()));
    format!(
        "finished: {} ({}{whose}) — {}, {cost}, {:.1}s",
        status_word(report.status),
        report.reason.as_str(),
        counted(report.turns, "turn", "turns"),
        report.duration.as_secs_f64()
    )
}

/// The line printed for every task, whatever the progress style.
pub(crate) fn final_line(report: &TaskReport) -> String {
    // The message may quote what a model wrote (an invalid final answer's errors).
    one_line(&format!(
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
    ))
    .into_owned()
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
    use std::path::PathBuf;

    use super::*;
    use crate::record::EndReason;

    /// A task that hit its turn limit, as a task report carries it.
    fn refactor() -> TaskReport {
        TaskReport {
            name: "refactor".to_string(),
            spec_path: PathBuf::from("tasks/calc.yaml"),
            status: Status::Failed,
            reason: EndReason::MaxTurns,
            message: "max_turns: stopped after 3 turns (limit 3)".to_string(),
            provider: "script".to_string(),
            model: "scripted".to_string(),
            turns: 3,
            usage: crate::message::Usage::default(),
            cost_usd: None,
            duration: Duration::from_millis(31_952),
            checks: Vec::new(),
            setup: Vec::new(),
            denials: Vec::new(),
            files_changed: Vec::new(),
            ignored_changes: 0,
            excluded_from_diff: None,
            network: None,
            final_text: String::new(),
            todos: Vec::new(),
            artifacts_dir: PathBuf::from("drover-artifacts/refactor"),
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

    #[test]
    fn a_final_line_is_one_line_whatever_the_message_holds() {
        let mut task = refactor();
        task.message =
            "invalid output:\n::error::forged\r##[add-mask]x\u{2028}::stop-commands::t".into();
        let line = final_line(&task);
        assert_eq!(line.lines().count(), 1, "{line}");
        assert!(line.starts_with("drover: refactor FAILED"), "{line}");
        assert!(!line.contains("##["), "{line}");
        assert!(line.contains("\\n::error::forged"), "{line}");
    }

    #[test]
    fn quiet_progress_observes_nothing() {
        let progress = Progress::new(Style::Quiet, 1, true, Channel::Stdout);
        assert!(progress.observer("t").is_none());
        let lines = Progress::new(Style::Lines, 1, true, Channel::Stderr);
        assert!(lines.observer("t").is_some());
    }
}
