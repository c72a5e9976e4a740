//! GitHub Actions integration: when `GITHUB_ACTIONS=true`, drover appends `summary.md` to
//! the job's step summary (`$GITHUB_STEP_SUMMARY`) and prints workflow commands
//! (`::error …`) so failed tasks and checks show up as annotations on the run and the pull
//! request, without any extra step in the user's workflow.

use std::borrow::Cow;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::junit::{check_failure, tail};
use crate::markdown;
use crate::summary::summary_md;
use crate::{RunReport, Status, TaskReport};
use drover_output::one_line;

/// GitHub refuses a step summary over 1 MiB; stay under it with room for a note.
const STEP_SUMMARY_MAX: usize = 1000 * 1024;
/// Bytes of check output put into an annotation (annotations are short by design).
const ANNOTATION_OUTPUT: usize = 1500;

/// What drover needs to know about the GitHub Actions environment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GithubEnv {
    /// `GITHUB_ACTIONS=true`: we run in a workflow, so workflow commands are understood.
    pub actions: bool,
    /// `$GITHUB_STEP_SUMMARY`: the file the job's summary page is built from.
    pub step_summary: Option<PathBuf>,
    /// `$GITHUB_WORKSPACE`: annotation paths are made relative to it.
    pub workspace: Option<PathBuf>,
}

impl GithubEnv {
    /// Read the variables GitHub sets for every step.
    pub fn from_env() -> GithubEnv {
        let path = |name: &str| {
            std::env::var_os(name)
                .filter(|value| !value.is_empty())
                .map(PathBuf::from)
        };
        GithubEnv {
            actions: std::env::var("GITHUB_ACTIONS").is_ok_and(|value| value == "true"),
            step_summary: path("GITHUB_STEP_SUMMARY"),
            workspace: path("GITHUB_WORKSPACE"),
        }
    }
}

/// Report a finished run to GitHub: annotations on `out` (stdout in practice) when
/// `annotate`, and the Markdown summary appended to the step summary. Does nothing
/// outside GitHub Actions. `report merge` does not annotate: the shard jobs that ran the
/// tasks already did, and GitHub would show every annotation twice.
pub fn report_to_github(
    report: &RunReport,
    env: &GithubEnv,
    annotate: bool,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    if !env.actions {
        return Ok(());
    }
    if annotate {
        for line in annotations(report, env.workspace.as_deref()) {
            writeln!(out, "{line}")?;
        }
        out.flush()?;
    }
    if let Some(path) = &env.step_summary {
        append_step_summary(path, &summary_md(report))?;
    }
    Ok(())
}

/// Append Markdown to the step summary file (GitHub concatenates what every step
/// appends), cut to GitHub's size limit at a line's end (see [`markdown::cut`]) with a
/// note saying where the rest is.
pub(crate) fn append_step_summary(path: &Path, markdown: &str) -> std::io::Result<()> {
    let mut text = match markdown::cut(markdown, STEP_SUMMARY_MAX) {
        Some(cut) => format!(
            "{cut}\n_The summary was cut at GitHub's size limit; summary.md in the artifacts has all of it._\n"
        ),
        None => markdown.to_string(),
    };
    if !text.ends_with('\n') {
        text.push('\n');
    }
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    file.write_all(text.as_bytes())?;
    file.flush()
}

/// The workflow commands for a run: an `::error` for every task that did not pass and
/// every failed check, a `::warning` for every task whose tool calls the policy denied
/// and for every task whose commands' connections its network rules denied.
pub fn annotations(report: &RunReport, workspace: Option<&Path>) -> Vec<String> {
    let mut lines = Vec::new();
    for task in &report.tasks {
        let file = annotation_path(&task.spec_path, workspace);
        if task.status != Status::Passed {
            let title = format!(
                "drover: task {} {} ({})",
                task.name,
                match task.status {
                    Status::Error => "could not run",
                    _ => "failed",
                },
                task.reason.as_str()
            );
            lines.push(command("error", &file, &title, &task_message(task)));
        }
        for check in task.checks.iter().filter(|check| !check.passed) {
            if check.expectation {
                let what = check.name.strip_prefix("expect: ").unwrap_or(&check.name);
                let title = format!("drover: task {}: expectation {what} not met", task.name);
                lines.push(command("error", &file, &title, &check_failure(check)));
                continue;
            }
            let title = format!("drover: task {}: check {} failed", task.name, check.name);
            let mut message = format!("$ {}\n{}", check.command, check_failure(check));
            let output = tail(check.output_tail.trim_end(), ANNOTATION_OUTPUT);
            if !output.is_empty() {
                message.push('\n');
                message.push_str(output);
            }
            lines.push(command("error", &file, &title, &message));
        }
        if !task.denials.is_empty() {
            let title = format!(
                "drover: task {}: {} denied",
                task.name,
                drover_output::counted(task.denials.len() as u64, "tool call", "tool calls")
            );
            let message = task
                .denials
                .iter()
                .map(|denial| format!("{}: {}", denial.tool, denial.reason))
                .collect::<Vec<_>>()
                .join("\n");
            lines.push(command("warning", &file, &title, &message));
        }
        if let Some(message) = task
            .network
            .as_ref()
            .and_then(crate::network::denied_message)
        {
            let title = format!("drover: task {}: network connections denied", task.name);
            lines.push(command("warning", &file, &title, &message));
        }
    }
    lines
}

fn task_message(task: &TaskReport) -> String {
    format!(
        "{}\n{} turns, {} tokens, cost {}; transcript and diff: {}",
        task.message,
        task.turns,
        task.usage.shown(),
        task.cost_usd
            .filter(|cost| cost.is_finite())
            .map_or_else(|| "n/a".to_string(), |cost| format!("${cost:.4}")),
        task.artifacts_dir.display()
    )
}

/// The spec path as GitHub wants it: relative to the repository checkout when it is in it.
fn annotation_path(spec: &Path, workspace: Option<&Path>) -> String {
    let relative = workspace
        .and_then(|root| spec.strip_prefix(root).ok())
        .unwrap_or(spec);
    relative.to_string_lossy().replace('\\', "/")
}

/// One workflow command: `::error file=F,title=T::MESSAGE`. Its parts hold what models,
/// tools and checks wrote, so each is shown as [`one_line`] shows text (no escape
/// sequences or control characters: the annotation would show them as garbage, and a
/// stray escape could confuse the log viewer; no line break of any kind), the message
/// line by line so it keeps its lines; then GitHub's own escapes make it one command.
fn command(kind: &str, file: &str, title: &str, message: &str) -> String {
    let message: Vec<Cow<'_, str>> = message
        .split('\n')
        .map(|line| one_line(line.strip_suffix('\r').unwrap_or(line)))
        .collect();
    format!(
        "::{kind} file={},title={}::{}",
        escape_property(&one_line(file)),
        escape_property(&one_line(title)),
        escape_data(&message.join("\n"))
    )
}

/// A workflow command's message: `%`, `\r` and `\n` percent-encoded (GitHub's rules, as in
/// `@actions/core`), so a multi-line message stays one command.
pub fn escape_data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A workflow command's property value: as data, plus `:` and `,`, which would otherwise
/// end the value.
pub(crate) fn escape_property(text: &str) -> String {
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
#[path = "github_tests.rs"]
mod tests;
