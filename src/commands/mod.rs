//! What each CLI command does, returning its exit code. `main` only parses and calls.

use std::io::Write;
use std::path::Path;

use serde_json::{Value, json};

use crate::cli::{Cli, Command, PolicyCommand, ReportCommand, ToolArgs};
use crate::exit;
use crate::policy::{CallFacts, Policy, RuleSet, ToolFacts};
use crate::record::chain::{ChainError, verify_file};
use crate::run::batch::Console;
use crate::run::plan::{self, Overrides, spec_checks};
use crate::run::task::subagents;
use crate::spec::{self, LoadedSpec};
use crate::tools::Registry;

mod artifacts;
mod exec;
mod finish;
mod plan_list;
mod runs;
mod tools;

use artifacts::outputs_command;
use finish::finish_run;
use runs::{load_specs, replay_command, resume_command, run_command};

/// Run the parsed command line.
pub async fn dispatch(cli: Cli) -> i32 {
    match cli.command {
        Command::Run(args) => run_command(args).await,
        Command::Exec(args) => exec::exec_command(*args).await,
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
        Command::Plan { specs, json } => plan_list::plan_command(&specs, json),
        Command::Tools { json, spec } => tools::tools_command(json, spec.as_deref()).await,
        Command::Policy {
            command: PolicyCommand::Check { spec, tool, input },
        } => policy_check_command(&spec, &tool, &input),
        Command::Report {
            command: ReportCommand::Merge { dirs, out, partial },
        } => merge_command(&dirs, &out, crate::record::merge::MergeOptions { partial }),
        Command::Report {
            command: ReportCommand::Outputs { dir },
        } => outputs_command(&dir),
        Command::Transcript {
            command: crate::cli::TranscriptCommand::Verify { transcript },
        } => verify_command(&transcript),
        // main runs the launcher before the async runtime starts; this is a fallback.
        Command::SandboxExec(args) => {
            crate::sandbox::launcher::sandbox_exec_main(&args.launch_request())
        }
        Command::Tool(args) => tool_command(args).await,
        Command::Bench(args) => crate::bench::run(&args),
        Command::Publish(args) => publish_command(args).await,
        Command::EgressProxyBench { allow } => crate::bench::egress_proxy_child(&allow).await,
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

/// `drover report merge`: one report from the artifacts of several runs; the exit code
/// is the worst merged task's (each task's latest run), as if the tasks had run in one
/// `drover run`.
fn merge_command(
    dirs: &[std::path::PathBuf],
    out: &Path,
    options: crate::record::merge::MergeOptions,
) -> i32 {
    match crate::record::merge::merge(dirs, out, options) {
        // The shard jobs annotated their own tasks: the merge writes the step summary only.
        Ok(report) => finish_run(&report, out, false, &Console::for_people(false)),
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
    match plan::plan_tasks(specs, &Overrides::default(), 1) {
        Ok(plans) => {
            for plan in plans {
                crate::say!(
                    "ok: {} (task {})",
                    plan.spec.path.display(),
                    plan.spec.name()
                );
            }
            exit::PASSED
        }
        Err(errors) => {
            for error in errors {
                crate::esay!("drover: {error}");
            }
            exit::BAD_INPUT
        }
    }
}

/// `validate --show-merged`: each spec as it runs, merged with its directory's defaults,
/// every setting with where it was written; then what `validate` checks.
fn show_merged_command(inputs: &[std::path::PathBuf]) -> i32 {
    let Some(files) = load_specs(inputs) else {
        return exit::BAD_INPUT;
    };
    let mut shown = true;
    // A file with errors is not shown: its errors say what is wrong, below.
    let readable = files.iter().filter(|file| file.errors.is_empty());
    for loaded in readable.flat_map(|file| &file.specs) {
        match spec::merged_view(loaded) {
            Ok(lines) => lines.iter().for_each(|line| crate::say!("{line}")),
            Err(error) => {
                crate::esay!("drover: {error}");
                shown = false;
            }
        }
    }
    match plan::plan_tasks(files, &Overrides::default(), 1) {
        Ok(plans) if shown => {
            for plan in plans {
                crate::say!(
                    "ok: {} (task {})",
                    plan.spec.path.display(),
                    plan.spec.name()
                );
            }
            exit::PASSED
        }
        Ok(_) => exit::BAD_INPUT,
        Err(errors) => {
            for error in errors {
                crate::esay!("drover: {error}");
            }
            exit::BAD_INPUT
        }
    }
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

async fn publish_command(args: crate::cli::PublishArgs) -> i32 {
    let author = match args.author.as_deref().map(crate::publish::parse_author) {
        Some(Err(error)) => {
            crate::esay!("drover: publish: {error}");
            return crate::exit::BAD_INPUT;
        }
        Some(Ok(identity)) => Some(identity),
        None => None,
    };
    let options = crate::publish::PublishOptions {
        artifacts: args.artifacts,
        tasks: args.tasks,
        branch: args.branch,
        remote: args.remote,
        base: args.base,
        force: args.force,
        dry_run: args.dry_run,
        allow_workflow_changes: args.allow_workflow_changes,
        limits: crate::publish::Limits {
            max_files: args.max_files,
            max_lines: args.max_lines,
            max_blob_bytes: args.max_blob_bytes,
        },
        message: args.message,
        author,
        token_env: args.token_env,
        timeout: args.timeout,
    };
    // SIGINT or SIGTERM stops git (its whole process group) and publishes nothing more.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = stop.clone();
    let watcher = tokio::spawn(async move {
        let kinds = [
            tokio::signal::unix::SignalKind::interrupt(),
            tokio::signal::unix::SignalKind::terminate(),
        ];
        let [Ok(mut interrupt), Ok(mut terminate)] = kinds.map(tokio::signal::unix::signal) else {
            return;
        };
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
        flag.store(true, std::sync::atomic::Ordering::SeqCst);
    });
    let stopped = move || stop.load(std::sync::atomic::Ordering::SeqCst);
    let code = tokio::task::spawn_blocking(move || crate::publish::run(&options, &stopped))
        .await
        .unwrap_or(crate::exit::RUNNER_ERROR);
    watcher.abort();
    code
}
