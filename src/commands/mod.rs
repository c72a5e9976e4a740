//! What each CLI command does, returning its exit code. `main` only parses and calls.

use std::io::Write;
use std::path::Path;

use serde_json::{Value, json};

use crate::cli::{
    Cli, Command, PolicyCommand, ReplayArgs, ReportCommand, ResumeArgs, RunArgs, TaskSettingsArgs,
    ToolArgs,
};
use crate::exit;
use crate::policy::{CallFacts, Policy, RuleSet, ToolFacts};
use crate::record::chain::{ChainError, verify_file};
use crate::record::github::{GithubEnv, report_to_github};
use crate::run::artifacts::{ArtifactsLock, clear_earlier_run, write_reports};
use crate::run::batch::{announce_orphans, progress, run_plans, shard};
use crate::run::plan::{self, Overrides, ReplayOptions, ResumeOptions, spec_checks};
use crate::run::recording::{artifacts_of, transcript_of};
use crate::run::task::{check_workspace, interrupt, subagents};
use crate::spec::{self, LoadedSpec};
use crate::tools::Registry;

mod artifacts;
mod tools;

use artifacts::{outputs_command, settle_artifacts};

/// Run the parsed command line.
pub async fn dispatch(cli: Cli) -> i32 {
    match cli.command {
        Command::Run(args) => run_command(args).await,
        Command::Replay(args) => replay_command(args).await,
        Command::Resume(args) => resume_command(args).await,
        Command::Validate {
            specs,
            show_merged: false,
        } => validate_command(&specs),
        Command::Validate {
            specs,
            show_merged: true,
        } => show_merged_command(&specs),
        Command::Tools { json, spec } => tools::tools_command(json, spec.as_deref()).await,
        Command::Policy {
            command: PolicyCommand::Check { spec, tool, input },
        } => policy_check_command(&spec, &tool, &input),
        Command::Report {
            command: ReportCommand::Merge { dirs, out },
        } => merge_command(&dirs, &out),
        Command::Report {
            command: ReportCommand::Outputs { dir },
        } => outputs_command(&dir),
        Command::Transcript {
            command: crate::cli::TranscriptCommand::Verify { transcript },
        } => verify_command(&transcript),
        // main runs the launcher before the async runtime starts; this is a fallback.
        Command::SandboxExec(args) => crate::sandbox::sandbox_exec_main(
            &args.policy,
            args.probe,
            args.stdio,
            args.env_fd,
            &args.command,
        ),
        Command::Tool(args) => tool_command(args).await,
        Command::Bench(args) => crate::bench::run(&args),
    }
}

/// Load specs, printing every error; None when any failed.
fn load_specs(inputs: &[std::path::PathBuf]) -> Option<Vec<LoadedSpec>> {
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
    match spec::load_all(&files) {
        Ok(specs) => {
            let errors = spec_checks::check_all(&specs);
            for error in &errors {
                crate::esay!("drover: {error}");
            }
            errors.is_empty().then_some(specs)
        }
        Err(errors) => {
            for error in errors {
                crate::esay!("drover: {error}");
            }
            None
        }
    }
}

async fn run_command(args: RunArgs) -> i32 {
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
        return resume_task(options, args.artifacts, args.quiet).await;
    }
    let artifacts = args
        .artifacts
        .unwrap_or_else(|| std::path::PathBuf::from("drover-artifacts"));
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
    // Every shard plans every task, so a bad spec fails all shards alike.
    let plans = match shard {
        Some(shard) => {
            let total = plans.len();
            let plans = shard.select(plans, |plan| plan.spec.name());
            if !args.quiet {
                crate::say!("drover: shard {shard}: {} of {total} tasks", plans.len());
            }
            plans
        }
        None => plans,
    };
    let names: Vec<String> = plans.iter().map(|p| p.spec.name().to_string()).collect();
    let _lock = match lock_artifacts(&artifacts) {
        Ok(lock) => lock,
        Err(code) => return code,
    };
    forget_earlier_run(&artifacts, &names, args.quiet);
    let finished = run_plans(plans, &artifacts, jobs, args.quiet, interrupt::install()).await;
    if let Err(code) = settle_artifacts(&finished.swept, &artifacts) {
        return code;
    }
    let mut report = finished.report;
    // summary.json says which shard this was, so `report merge` can tell one is missing.
    report.shard = shard.map(|shard| crate::record::ShardId {
        index: shard.index,
        count: shard.count,
    });
    finish_run(&report, &artifacts, true)
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
    }
}

async fn resume_command(args: ResumeArgs) -> i32 {
    let options = ResumeOptions {
        task: args.task,
        spec: args.spec,
        overrides: overrides_of(args.settings),
        strict: args.strict,
        ignore: args.ignore,
    };
    resume_task(options, args.artifacts, args.quiet).await
}

/// Resume one task: plan it from its recording, refuse a workspace no longer in the
/// recorded starting state, run it, and write the reports of the run it belongs to.
async fn resume_task(
    options: ResumeOptions,
    artifacts: Option<std::path::PathBuf>,
    quiet: bool,
) -> i32 {
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
    if !quiet && let plan::Mode::Resume(resume) = &plan.mode {
        let ended = match &resume.previous {
            Some(end) => format!("it ended with {}", end.reason.as_str()),
            None => "it was killed before it ended".to_string(),
        };
        crate::say!(
            "drover: resuming {} from {} ({ended}): replaying {} without the model, then the model goes on",
            plan.spec.name(),
            transcript.display(),
            crate::output::counted(resume.turns, "recorded turn", "recorded turns")
        );
    }
    let finished = run_plans(vec![plan], &artifacts, 1, quiet, interrupt::install()).await;
    // Swept first: the earlier run's summary.json is read as drover left it, never as
    // an agent of this run may have rewritten it.
    if let Err(code) = settle_artifacts(&finished.swept, &artifacts) {
        return code;
    }
    let report = crate::record::merge::into_earlier_run(finished.report, &artifacts);
    finish_run(&report, &artifacts, true)
}

async fn replay_command(args: ReplayArgs) -> i32 {
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
    let _lock = match lock_artifacts(&options.artifacts) {
        Ok(lock) => lock,
        Err(code) => return code,
    };
    forget_earlier_run(
        &options.artifacts,
        &[plan.spec.name().to_string()],
        args.quiet,
    );
    let finished = run_plans(
        vec![plan],
        &options.artifacts,
        1,
        args.quiet,
        interrupt::install(),
    )
    .await;
    if let Err(code) = settle_artifacts(&finished.swept, &options.artifacts) {
        return code;
    }
    finish_run(&finished.report, &options.artifacts, true)
}

/// Take the artifacts directory for this run (see `run::artifacts::lock`), saying whose
/// lock it takes over; the exit code when another run holds it or it cannot be locked.
fn lock_artifacts(artifacts: &Path) -> Result<ArtifactsLock, i32> {
    match ArtifactsLock::acquire(artifacts) {
        Ok(lock) => {
            if let Some(previous) = lock.previous() {
                crate::esay!(
                    "drover: note: took over the lock on {} left by {previous}, which is no longer running",
                    artifacts.display()
                );
            }
            Ok(lock)
        }
        Err(error) => {
            crate::esay!("drover: {error}");
            Err(exit::BAD_INPUT)
        }
    }
}

/// Remove the task folders an earlier run left in `artifacts` that this run does not
/// write, saying so: the directory then holds this run alone.
fn forget_earlier_run(artifacts: &Path, names: &[String], quiet: bool) {
    let removed = clear_earlier_run(artifacts, names);
    if !removed.is_empty() && !quiet {
        crate::esay!(
            "drover: removed {} an earlier run left in {} (not tasks of this run): {}",
            crate::output::counted(removed.len() as u64, "task folder", "task folders"),
            artifacts.display(),
            removed.join(", ")
        );
    }
}

/// `drover transcript verify`: 0 whole, 1 edited or cut short, 2 unreadable.
fn verify_command(transcript: &Path) -> i32 {
    match verify_file(transcript) {
        Ok(lines) => {
            crate::say!(
                "drover: {}: intact ({lines} events, hash chain verified, ends with run_end)",
                transcript.display()
            );
            0
        }
        Err(error @ ChainError::Unreadable(_)) => {
            crate::esay!("drover: {error}");
            exit::BAD_INPUT
        }
        Err(error) => {
            crate::esay!("drover: {}", error.at(transcript));
            exit::FAILED
        }
    }
}

/// Write the reports, say where they are, and tell GitHub (annotations only when
/// `annotate`). Returns the run's exit code.
fn finish_run(report: &crate::record::RunReport, artifacts: &Path, annotate: bool) -> i32 {
    if let Err(error) = write_reports(report, artifacts) {
        crate::esay!(
            "drover: cannot write the reports in {}: {error}",
            artifacts.display()
        );
        return exit::RUNNER_ERROR;
    }
    crate::say!(
        "drover: artifacts in {} (junit.xml, summary.json, summary.md, <task>/transcript.jsonl, <task>/diff.patch)",
        artifacts.display()
    );
    crate::say!("{}", progress::outcome_line(report));
    let github = GithubEnv::from_env();
    if let Err(error) = report_to_github(report, &github, annotate, &mut crate::output::Stdout) {
        // The artifacts are written; a missing step summary does not change the outcome.
        crate::esay!("drover: warning: cannot write the GitHub step summary: {error}");
    }
    report.status().exit_code()
}

/// `drover report merge`: one report from the artifacts of sharded runs; the exit code
/// is the worst merged task's, as if the tasks had run in one `drover run`.
fn merge_command(dirs: &[std::path::PathBuf], out: &Path) -> i32 {
    match crate::record::merge::merge(dirs, out) {
        // The shard jobs annotated their own tasks: the merge writes the step summary only.
        Ok(report) => finish_run(&report, out, false),
        Err(error) => {
            crate::esay!("drover: report merge: {error}");
            exit::BAD_INPUT
        }
    }
}

/// Everything `run` checks before it starts a task — the spec itself, the workspace,
/// the isolation, the model's key, a price for a budget — and every error at once.
fn validate_command(inputs: &[std::path::PathBuf]) -> i32 {
    let Some(specs) = load_specs(inputs) else {
        return exit::BAD_INPUT;
    };
    let named: Vec<(String, String)> = specs
        .iter()
        .map(|spec| (spec.path.display().to_string(), spec.name().to_string()))
        .collect();
    if let Err(errors) = plan::plan_tasks(specs, &Overrides::default(), 1) {
        for error in errors {
            crate::esay!("drover: {error}");
        }
        return exit::BAD_INPUT;
    }
    for (path, name) in named {
        crate::say!("ok: {path} (task {name})");
    }
    exit::PASSED
}

/// `validate --show-merged`: each spec as it runs, merged with its directory's defaults,
/// every setting with where it was written; then what `validate` checks.
fn show_merged_command(inputs: &[std::path::PathBuf]) -> i32 {
    let Some(specs) = load_specs(inputs) else {
        return exit::BAD_INPUT;
    };
    for loaded in &specs {
        match spec::merged_view(loaded) {
            Ok(lines) => lines.iter().for_each(|line| crate::say!("{line}")),
            Err(error) => {
                crate::esay!("drover: {error}");
                return exit::BAD_INPUT;
            }
        }
    }
    let named: Vec<(String, String)> = specs
        .iter()
        .map(|spec| (spec.path.display().to_string(), spec.name().to_string()))
        .collect();
    if let Err(errors) = plan::plan_tasks(specs, &Overrides::default(), 1) {
        for error in errors {
            crate::esay!("drover: {error}");
        }
        return exit::BAD_INPUT;
    }
    for (path, name) in named {
        crate::say!("ok: {path} (task {name})");
    }
    exit::PASSED
}

fn policy_check_command(spec_path: &Path, tool_name: &str, input: &str) -> i32 {
    let loaded = match spec::load(spec_path) {
        Ok(loaded) => loaded,
        Err(error) => {
            crate::esay!("drover: {error}");
            return exit::BAD_INPUT;
        }
    };
    let rules = match spec_checks::check(&loaded).and_then(|()| spec_checks::rule_set(&loaded)) {
        Ok(rules) => rules,
        Err(error) => {
            crate::esay!("drover: {error}");
            return exit::BAD_INPUT;
        }
    };
    let input: Value = match serde_json::from_str(input) {
        Ok(value) => value,
        Err(error) => {
            crate::esay!("drover: --input is not valid JSON: {error}");
            return exit::BAD_INPUT;
        }
    };
    // Anthropic's server-side search is judged once per task, not per call: whether the
    // rules offer it, and with which domains.
    if tool_name == "WebSearch" {
        return web_search_check(&rules, tool_name);
    }
    let (tool_facts, call_facts) = match judged_facts(&loaded, tool_name, input) {
        Ok(facts) => facts,
        Err(code) => return code,
    };
    let workspace_dir = loaded.workspace_dir();
    let workspace = workspace_dir.canonicalize().unwrap_or(workspace_dir);
    let policy = Policy::new(&rules, &workspace, &loaded.additional_directories());
    let decision = policy
        .withholds(&tool_facts)
        .unwrap_or_else(|| policy.decide(&call_facts));
    let output = json!({
        "tool": tool_name,
        "decision": if decision.allowed() { "allow" } else { "deny" },
        "rule": decision.rule(),
        "reason": decision.reason(),
    });
    crate::output::say_json(&output.to_string());
    if decision.allowed() {
        exit::PASSED
    } else {
        exit::FAILED
    }
}

/// `drover policy check … WebSearch`: whether the rules offer Anthropic's web search,
/// and with which domains.
fn web_search_check(rules: &RuleSet, tool_name: &str) -> i32 {
    let search = rules.web_search(None);
    let reason = match &search {
        None => "no allow rule names WebSearch, or deny: [WebSearch] withholds it".to_string(),
        Some(search) if !search.allowed_domains.is_empty() => format!(
            "offered to Anthropic models, results only from {}",
            search.allowed_domains.join(", ")
        ),
        Some(search) if !search.blocked_domains.is_empty() => format!(
            "offered to Anthropic models, never results from {}",
            search.blocked_domains.join(", ")
        ),
        Some(_) => "offered to Anthropic models, any domain".to_string(),
    };
    let output = json!({
        "tool": tool_name,
        "decision": if search.is_some() { "allow" } else { "deny" },
        "rule": Value::Null,
        "reason": reason,
    });
    crate::output::say_json(&output.to_string());
    if search.is_some() {
        exit::PASSED
    } else {
        exit::FAILED
    }
}

/// The facts the policy judges of `tool_name` called with `input` under the spec's tools
/// (its sub-agents make the Agent tool one to judge too, its skills the Skill tool), or
/// the exit code.
fn judged_facts(
    loaded: &LoadedSpec,
    tool_name: &str,
    input: Value,
) -> Result<(ToolFacts, CallFacts), i32> {
    let mut registry = Registry::builtin().map_err(|error| {
        crate::esay!("drover: internal error: {error}");
        exit::RUNNER_ERROR
    })?;
    match spec_checks::task_agents(loaded) {
        Ok((agents, _)) => {
            if let Err(error) = subagents::add_agent_tool(&mut registry, &agents) {
                crate::esay!("drover: internal error: {error}");
                return Err(exit::RUNNER_ERROR);
            }
        }
        Err(error) => {
            crate::esay!("drover: {error}");
            return Err(exit::BAD_INPUT);
        }
    }
    match spec_checks::task_skills(loaded, &loaded.workspace_dir()) {
        Ok((skills, _)) if !skills.is_empty() => {
            let tool = crate::tools::skill::SkillTool::new(skills);
            if let Err(error) = registry.add(std::sync::Arc::new(tool)) {
                crate::esay!("drover: internal error: {error}");
                return Err(exit::RUNNER_ERROR);
            }
        }
        Ok(_) => {}
        Err(error) => {
            crate::esay!("drover: {error}");
            return Err(exit::BAD_INPUT);
        }
    }
    // An MCP tool is judged by the facts drover states for every MCP tool, without
    // starting its server: the decision depends on the rules only.
    if tool_name.starts_with("mcp__") {
        let facts = crate::mcp::facts_of(tool_name);
        return Ok((facts.clone(), CallFacts::without_subject(facts)));
    }
    let Some(facts) = registry.facts(tool_name).cloned() else {
        crate::esay!(
            "drover: unknown tool {tool_name}; the tools are: {}, or mcp__<server>__<tool>",
            registry.names().join(", ")
        );
        return Err(exit::BAD_INPUT);
    };
    match registry.prepare(tool_name, input) {
        Ok(call) => Ok((facts, call.facts())),
        Err(error) => {
            crate::esay!("drover: {error}");
            Err(exit::BAD_INPUT)
        }
    }
}

/// `drover tool`: one read-only call, validated like a model's call but with no policy,
/// so a single tool can be timed or debugged as a whole process.
async fn tool_command(args: ToolArgs) -> i32 {
    let input: Value = match serde_json::from_str(&args.input) {
        Ok(value) => value,
        Err(error) => {
            crate::esay!("drover: --input is not valid JSON: {error}");
            return exit::BAD_INPUT;
        }
    };
    let tools = crate::tools::builtin();
    let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    let names = names.join(", ");
    let Some(tool) = tools.into_iter().find(|t| t.name() == args.name) else {
        crate::esay!("drover: unknown tool {}; the tools are: {names}", args.name);
        return exit::BAD_INPUT;
    };
    if !tool.facts().read_only {
        crate::esay!(
            "drover: {} is not read-only; `drover tool` runs read-only tools only (it applies no policy)",
            args.name
        );
        return exit::BAD_INPUT;
    }
    // Only this tool's schema is compiled: the others would cost start-up time for nothing.
    let registry = match Registry::new(vec![std::sync::Arc::clone(&tool)]) {
        Ok(registry) => registry,
        Err(error) => {
            crate::esay!("drover: internal error: {error}");
            return exit::RUNNER_ERROR;
        }
    };
    let call = match registry.prepare(&args.name, input) {
        Ok(call) => call,
        Err(error) => {
            crate::esay!("drover: {error}");
            return exit::BAD_INPUT;
        }
    };
    let workspace = args
        .workspace
        .unwrap_or_else(|| std::path::PathBuf::from("."));
    let workspace = match workspace.canonicalize() {
        Ok(dir) if dir.is_dir() => dir,
        _ => {
            crate::esay!(
                "drover: the workspace {} is not a directory",
                workspace.display()
            );
            return exit::BAD_INPUT;
        }
    };
    let ctx = crate::tools::ToolContext::new(workspace);
    let output = match crate::tools::run_call(&args.name, call, &ctx).await {
        Ok(output) => output,
        Err(fault) => {
            crate::esay!("drover: {fault}");
            return exit::RUNNER_ERROR;
        }
    };
    let mut stdout = std::io::stdout().lock();
    let written = stdout
        .write_all(output.content.as_bytes())
        .and_then(|()| stdout.write_all(b"\n"))
        .and_then(|()| stdout.flush());
    // A closed pipe (`drover tool … | head`) is the reader's choice, not a failure.
    if let Err(error) = written
        && error.kind() != std::io::ErrorKind::BrokenPipe
    {
        crate::esay!("drover: cannot write the result: {error}");
        return exit::RUNNER_ERROR;
    }
    if output.is_error {
        exit::FAILED
    } else {
        exit::PASSED
    }
}
