//! `drover exec`: one task from the command line, as `claude -p` and `codex exec` run
//! one. Its flags make the spec a file would hold (`spec::ExecTask`), which is loaded,
//! checked, planned and run exactly as `drover run` runs a spec file: one loop, one
//! policy, the same artifacts and exit codes. `run_start` records that spec, so a replay
//! of an exec run is a replay like any other. Stdout gets the answer (or JSON); the
//! human lines go to stderr.

use std::path::{Path, PathBuf};

use crate::cli::{ExecArgs, OutputFormat};
use crate::exit;
use crate::record::RunReport;
use crate::record::stream::{answer, run_result};
use crate::run::batch::Console;
use crate::run::plan::{self, Overrides};
use crate::spec::{self, EXEC_SPEC_PATH as EXEC_SPEC};

use super::finish::run_new;

mod claude_flags;
mod rule_list;
mod settings;

use settings::ExecSettings;

/// `drover exec`: refuse what cannot be honoured, make the task's spec, run it as a
/// spec is run, and print the answer as `--output-format` says.
pub(super) async fn exec_command(args: ExecArgs) -> i32 {
    if let Some(refusal) = claude_flags::refusal(&args.claude) {
        crate::esay!("drover: {refusal}");
        return exit::BAD_INPUT;
    }
    let format = match (args.json, args.output_format) {
        (true, _) => OutputFormat::StreamJson,
        (false, format) => format.unwrap_or(OutputFormat::Text),
    };
    let artifacts = args
        .artifacts
        .clone()
        .unwrap_or_else(|| PathBuf::from("drover-artifacts"));
    let task = match ExecSettings::from_args(&args)
        .map_err(Into::into)
        .and_then(|settings| settings.task(|name| std::env::var(name).ok()))
    {
        Ok(task) => task,
        Err(error) => {
            crate::esay!("drover: {error}");
            return exit::BAD_INPUT;
        }
    };
    let text = task.to_yaml();
    if args.print_spec {
        crate::output::say_text(&text);
        return exit::PASSED;
    }
    let Some(plans) = planned(text) else {
        return exit::BAD_INPUT;
    };
    let console = match format {
        OutputFormat::StreamJson => Console::json(args.quiet),
        OutputFormat::Text | OutputFormat::Json => Console::answer_only(args.quiet),
    };
    let (code, report) = run_new(plans, &artifacts, 1, &console, None).await;
    if let Some(report) = report {
        print_answer(format, &report, &artifacts, code);
    }
    code
}

/// The spec text loaded, checked and planned as `drover run` does a spec file's, every
/// error said; None when any.
fn planned(text: String) -> Option<Vec<crate::run::plan::TaskPlan>> {
    let failed = |errors: Vec<String>| {
        for error in errors {
            crate::esay!("drover: {error}");
        }
        crate::esay!(
            "drover: ({EXEC_SPEC} is the task spec drover exec made of its flags; `drover exec … --print-spec` shows it)"
        );
        None
    };
    let file = spec::parse_every(Path::new(EXEC_SPEC), text);
    match plan::plan_tasks(vec![file], &Overrides::default(), 1) {
        Ok(plans) => Some(plans),
        Err(errors) => failed(errors.iter().map(ToString::to_string).collect()),
    }
}

/// What stdout gets once the run is over: the answer (text), or the result (json);
/// stream-json wrote its result line already.
fn print_answer(format: OutputFormat, report: &RunReport, artifacts: &Path, code: i32) {
    match format {
        OutputFormat::Text => {
            let Some(task) = report.tasks.first() else {
                return;
            };
            match answer(task) {
                serde_json::Value::String(text) if text.is_empty() => {}
                serde_json::Value::String(text) => crate::output::say_text(&text),
                value => crate::output::say_json(&value.to_string()),
            }
        }
        OutputFormat::Json => {
            crate::output::say_json(&run_result(report, artifacts, code));
        }
        OutputFormat::StreamJson => {}
    }
}
