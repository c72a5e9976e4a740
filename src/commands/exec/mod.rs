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
    let Some((defaults, spec_path)) = workspace_defaults(&args) else {
        return exit::BAD_INPUT;
    };
    let task = match ExecSettings::from_args(&args)
        .map(|settings| match &defaults {
            Some(defaults) => settings.inheriting(defaults),
            None => settings,
        })
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
    let Some(plans) = planned(&spec_path, text, defaults.as_ref()) else {
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

/// The defaults file of the workspace (only with `--defaults`, and when it has one),
/// and the path the task's spec goes by: `drover-exec.yaml` (in the directory exec runs
/// in, as `drover resume` looks for it), or with a defaults file, `drover-exec.yaml` in
/// the workspace, beside the file, so its relative paths mean what they would for a spec
/// file there and a resume finds the defaults beside the spec. None, every error said,
/// when the defaults file is bad: it never fails open.
fn workspace_defaults(args: &ExecArgs) -> Option<(Option<spec::Defaults>, PathBuf)> {
    let workspace = args.workspace.clone().unwrap_or_else(|| PathBuf::from("."));
    // A workspace that is no directory is refused, naming --workspace, by the task.
    if !args.defaults || !workspace.is_dir() {
        return Some((None, PathBuf::from(EXEC_SPEC)));
    }
    if let Some(outside) = defaults_outside(&workspace) {
        crate::esay!(
            "drover: {}: the defaults file is a symbolic link out of the workspace; drover reads no file of the workspace outside it: put the file itself there, or leave out --defaults",
            outside.display()
        );
        return None;
    }
    match spec::defaults_for_dir_every(&workspace) {
        Ok(None) => Some((None, PathBuf::from(EXEC_SPEC))),
        Ok(Some(defaults)) => {
            crate::esay!(
                "drover: with the defaults of {} (--defaults)",
                defaults.path.display()
            );
            let spec_path = if workspace == Path::new(".") {
                PathBuf::from(EXEC_SPEC)
            } else {
                workspace.join(EXEC_SPEC)
            };
            Some((Some(defaults), spec_path))
        }
        Err(errors) => {
            for error in errors {
                crate::esay!("drover: {error}");
            }
            crate::esay!(
                "drover: (the defaults file of the workspace, merged into what drover exec's flags make; fix it, or leave out --defaults)"
            );
            None
        }
    }
}

/// A defaults file of `workspace` that resolves outside it (through a symbolic link), so
/// it is refused before it is read: the workspace may be the repository under test, and
/// its files must not make drover read, and quote in an error, one elsewhere.
fn defaults_outside(workspace: &Path) -> Option<PathBuf> {
    let root = workspace.canonicalize().ok()?;
    let candidates = [
        workspace.join(spec::DEFAULTS_FILE),
        workspace.join(".drover").join("defaults.yaml"),
    ];
    candidates.into_iter().find(|path| {
        // A name that is not there, or leads nowhere, is the reader's to report.
        path.canonicalize()
            .is_ok_and(|real| !real.starts_with(&root))
    })
}

/// The spec text loaded with `defaults`, checked and planned as `drover run` does a spec
/// file's, every error said; None when any.
fn planned(
    spec_path: &Path,
    text: String,
    defaults: Option<&spec::Defaults>,
) -> Option<Vec<crate::run::plan::TaskPlan>> {
    let failed = |errors: Vec<String>| {
        for error in errors {
            crate::esay!("drover: {error}");
        }
        crate::esay!(
            "drover: ({} is the task spec drover exec made of its flags; `drover exec … --print-spec` shows it)",
            spec_path.display()
        );
        None
    };
    let file = spec::parse_every_with_defaults(spec_path, text, defaults);
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
