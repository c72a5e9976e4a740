//! `drover run`, `drover resume` and `drover replay`: specs or a recording planned, run
//! and reported, each with progress for people or (`--json`) its events on stdout.

use std::path::PathBuf;

use crate::cli::{ReplayArgs, ResumeArgs, RunArgs, TaskSettingsArgs};
use crate::exit;
use crate::run::batch::work_item::{self, WorkItem};
use crate::run::batch::{Console, announce_orphans, run_plans, shard};
use crate::run::plan::{self, Overrides, ReplayOptions, ResumeOptions, TaskPlan};
use crate::run::recording::{artifacts_of, transcript_of};
use crate::run::task::{check_workspace, interrupt};
use crate::spec;

use super::finish::{conclude, lock_artifacts, run_new};

/// The spec files the arguments name, each loaded with every problem it has (printed by
/// planning); None when the arguments name none (said).
pub(super) fn load_specs(inputs: &[std::path::PathBuf]) -> Option<Vec<spec::SpecFile>> {
    let files = match spec::collect_spec_files(inputs) {
        Ok(found) => {
            for path in &found.skipped {
                crate::esay!(
                    "drover: note: skipped {}: not a task spec (no `version:` or `prompt:` at its top); name it as an argument to check it as one",
                    path.display()
                );
            }
            found.files
        }
        Err(error) => {
            crate::esay!("drover: {error}");
            return None;
        }
    };
    Some(spec::load_every(&files))
}

/// How a command that runs tasks talks: `--json` keeps stdout for the events.
fn console_of(quiet: bool, json: bool) -> Console {
    if json {
        Console::json(quiet)
    } else {
        Console::for_people(quiet)
    }
}

pub(super) async fn run_command(args: RunArgs) -> i32 {
    let shard = match args
        .shard
        .as_deref()
        .map(|text| shard::Shard::parse(text, &|name| std::env::var(name).ok()))
    {
        Some(Err(error)) => {
            crate::esay!("drover: {error}");
            return exit::BAD_INPUT;
        }
        Some(Ok(shard)) => Some(shard),
        None => None,
    };
    let work_item = match work_item_of(&args.only, args.task_index.as_deref()) {
        Ok(item) => item,
        Err(error) => {
            crate::esay!("drover: {error}");
            return exit::BAD_INPUT;
        }
    };
    let console = console_of(args.quiet, args.json);
    let overrides = overrides_of(args.settings);
    if let Some(task) = args.resume {
        let [spec] = args.specs.as_slice() else {
            crate::esay!(
                "drover: --resume continues one task: give the one spec it recorded, not {}",
                args.specs.len()
            );
            return exit::BAD_INPUT;
        };
        let options = ResumeOptions {
            task,
            spec: Some(spec.clone()),
            overrides,
            strict: args.strict,
            ignore: args.ignore,
        };
        return resume_task(options, args.artifacts, &console).await;
    }
    let artifacts = args
        .artifacts
        .unwrap_or_else(|| PathBuf::from("drover-artifacts"));
    let Some(specs) = load_specs(&args.specs) else {
        return exit::BAD_INPUT;
    };
    let jobs = usize::from(args.jobs);
    let plans = match plan::plan_tasks(specs, &overrides, jobs) {
        Ok(plans) => plans,
        Err(errors) => {
            for error in errors {
                crate::esay!("drover: {error}");
            }
            return exit::BAD_INPUT;
        }
    };
    let Some(plans) = chosen(plans, shard, work_item, &console, args.quiet) else {
        return exit::BAD_INPUT;
    };
    let shard = shard.map(|shard| crate::record::ShardId {
        index: shard.index,
        count: shard.count,
    });
    run_new(plans, &artifacts, jobs, &console, shard).await.0
}

/// The tasks this run takes of every task planned: its shard's, or its work item's.
/// None: the work item names no task (said on stderr).
fn chosen(
    plans: Vec<TaskPlan>,
    shard: Option<shard::Shard>,
    work_item: Option<WorkItem>,
    console: &Console,
    quiet: bool,
) -> Option<Vec<TaskPlan>> {
    // Every shard plans every task, so a bad spec fails all shards alike.
    let plans = match shard {
        Some(shard) => {
            let total = plans.len();
            let plans = shard.select(plans, |plan| plan.spec.name());
            if !quiet {
                console.say(&format!(
                    "drover: shard {shard}: {} of {total} tasks",
                    plans.len()
                ));
            }
            plans
        }
        None => plans,
    };
    match work_item {
        None => Some(plans),
        Some(item) => match item.select(plans, |plan| plan.spec.name()) {
            Ok(plans) => Some(plans),
            Err(error) => {
                crate::esay!("drover: {error}");
                None
            }
        },
    }
}

/// The one work item `--only` or `--task-index` names, if either does.
fn work_item_of(
    only: &[String],
    task_index: Option<&str>,
) -> Result<Option<WorkItem>, work_item::WorkItemError> {
    if let Some(text) = task_index {
        return WorkItem::index(text, &|name| std::env::var(name).ok()).map(Some);
    }
    Ok((!only.is_empty()).then(|| WorkItem::Named(only.to_vec())))
}

/// The settings given on the command line.
fn overrides_of(settings: TaskSettingsArgs) -> Overrides {
    Overrides {
        provider: settings.provider.map(Into::into),
        model: settings.model,
        max_turns: settings.max_turns,
        max_cost_usd: settings.max_cost_usd,
        max_tokens: settings.max_tokens,
        timeout: settings.timeout,
        workspace: settings.workspace,
        repo_cache: settings.repo_cache.or_else(|| {
            std::env::var_os("DROVER_REPO_CACHE")
                .filter(|dir| !dir.is_empty())
                .map(PathBuf::from)
        }),
        repo_overlay: settings.repo_checkout == crate::cli::RepoCheckoutArg::Auto,
    }
}

pub(super) async fn resume_command(args: ResumeArgs) -> i32 {
    let options = ResumeOptions {
        task: args.task,
        spec: args.spec,
        overrides: overrides_of(args.settings),
        strict: args.strict,
        ignore: args.ignore,
    };
    resume_task(options, args.artifacts, &console_of(args.quiet, args.json)).await
}

/// Resume one task: plan it from its recording, refuse a workspace no longer in the
/// recorded starting state, run it, and write the reports of the run it belongs to.
async fn resume_task(options: ResumeOptions, artifacts: Option<PathBuf>, console: &Console) -> i32 {
    // A task killed while its folder was staged is published first: its transcript
    // (each folder under its artifacts directory's lock, taken for the while).
    announce_orphans(&std::env::temp_dir());
    let transcript = transcript_of(&options.task);
    let artifacts = artifacts.unwrap_or_else(|| artifacts_of(&transcript));
    let _lock = match lock_artifacts(&artifacts) {
        Ok(lock) => lock,
        Err(code) => return code,
    };
    let mut plan = match plan::plan_resume(&options) {
        Ok(plan) => plan,
        Err(error) => {
            crate::esay!("drover: {error}");
            return exit::BAD_INPUT;
        }
    };
    if let Err(error) = check_workspace(&mut plan, &artifacts) {
        crate::esay!("drover: {error}");
        return exit::BAD_INPUT;
    }
    if !console.quiet
        && let plan::Mode::Resume(resume) = &plan.mode
    {
        let ended = match &resume.previous {
            Some(end) => format!("it ended with {}", end.reason.as_str()),
            None => "it was killed before it ended".to_string(),
        };
        console.say(&format!(
            "drover: resuming {} from {} ({ended}): replaying {} without the model, then the model goes on",
            plan.spec.name(),
            transcript.display(),
            crate::output::counted(resume.turns, "recorded turn", "recorded turns")
        ));
    }
    let finished = run_plans(vec![plan], &artifacts, 1, console, interrupt::install()).await;
    // Swept first: the earlier run's summary.json is read as drover left it, never as
    // an agent of this run may have rewritten it.
    conclude(finished, &artifacts, console, |report| {
        crate::record::merge::into_earlier_run(report, &artifacts)
    })
    .0
}

pub(super) async fn replay_command(args: ReplayArgs) -> i32 {
    let console = console_of(args.quiet, args.json);
    let options = ReplayOptions {
        transcript: args.transcript,
        workspace: args.workspace,
        spec: args.spec,
        strict: args.strict,
        checks: args.checks,
        mcp: args.mcp,
        mcp_env: args.mcp_env,
        mcp_urls: args.mcp_urls,
        quiet: args.quiet,
        ignore: args.ignore,
        diff_only: args.diff_only,
        artifacts: args.artifacts,
    };
    let plan = match plan::plan_replay(&options) {
        Ok(plan) => plan,
        Err(error) => {
            crate::esay!("drover: {error}");
            return exit::BAD_INPUT;
        }
    };
    run_new(vec![plan], &options.artifacts, 1, &console, None)
        .await
        .0
}
