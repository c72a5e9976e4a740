//! Arming a task in its workspace: the policy (drover's own paths off limits), the tools
//! it offers, how its commands start and in which sandbox, the confined thread drover's
//! file tools open files on, its MCP servers, and the project's instruction files.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::mcp::{McpSession, RecordedTool, Setup as McpSetup};
use crate::policy::Policy;
use crate::record::Redactor;
use crate::run::plan::{Mode, TaskPlan};
use crate::tools::Registry;
use crate::tools::recorded::AnsweredTool;
use crate::tools::skill::SkillTool;
use crate::workspace::confined::ConfinedThread;
use crate::workspace::isolation::PreparedWorkspace;

use super::commands::{TaskCommands, task_commands};
use super::error::TaskError;
use super::project::{ProjectFiles, task_instructions};
use super::redaction::withheld_vars;

/// What the agent may do: the policy, the tools it offers, how commands start, and the
/// thread drover's file tools open files on.
pub(super) struct Armed {
    pub policy: Policy,
    pub registry: Registry,
    pub commands: TaskCommands,
    pub file_thread: Option<ConfinedThread>,
    /// The task's MCP servers (none without `mcp:`), stopped when the task ends.
    pub mcp: McpSession,
    /// The project's instruction files, read from the task's workspace (or recorded).
    pub project: ProjectFiles,
}

/// Arm the task in `workspace`: the policy (with drover's own paths off limits), the
/// tools it does not withhold, the command environment and sandbox, and the confined
/// file thread. A sandbox that cannot be enforced is noted in `commands.unavailable`.
/// What the MCP servers' headers helpers print is added to `redactor`.
pub(super) async fn arm(
    plan: &TaskPlan,
    workspace: &PreparedWorkspace,
    artifacts: &Path,
    task_dir: &Path,
    redactor: &Redactor,
) -> Result<Armed, TaskError> {
    let policy = Policy::new(
        &plan.rules,
        &workspace.dir,
        &plan.spec.additional_directories(),
    )
    .with_protected(protected_paths(workspace, artifacts));
    let mut registry = Registry::builtin()?;
    let runs_commands = registry.names().iter().any(|name| name == "Bash");
    // Setup and checks run in the sandbox too, so it is probed for them as for Bash.
    let probe =
        runs_commands || !plan.spec.spec.checks.is_empty() || !plan.spec.spec.setup.is_empty();
    let mut commands = commands_of(plan, &workspace.dir, probe).await?;
    let file_thread = file_thread(&mut commands);
    // MCP servers start only for a task that will run, each in its sandbox.
    let mut mcp = McpSession::default();
    if !plan.mcp_servers.is_empty() && commands.unavailable.is_none() {
        mcp = start_mcp_servers(plan, &workspace.dir, task_dir, &commands, redactor).await;
        offer_mcp_tools(plan, &mcp, &mut registry);
    }
    // A replay answers the recording's MCP calls with their recorded results.
    if let Mode::Replay(replay) = &plan.mode {
        for name in &replay.replayed_mcp_tools {
            let tool = RecordedTool::new(name.clone(), Arc::clone(&replay.answers));
            registry.add(Arc::new(tool))?;
        }
    }
    super::subagents::add_agent_tool(&mut registry, &plan.agents)?;
    if !plan.skills.is_empty() {
        registry.add(Arc::new(SkillTool::new(plan.skills.clone())))?;
    }
    registry.retain(|facts| policy.withholds(facts).is_none());
    let project = task_instructions(plan, &workspace.dir, &policy);
    Ok(Armed {
        policy,
        registry,
        commands,
        file_thread,
        mcp,
        project,
    })
}

/// drover's artifacts and a worktree's `.git` file are off limits to every tool (the OS
/// keeps them out of reach too: see `run::artifacts::task_folder` and
/// `restore_git_link`).
fn protected_paths(workspace: &PreparedWorkspace, artifacts: &Path) -> Vec<PathBuf> {
    let mut protected = workspace.protected();
    let artifacts_dir = crate::workspace::paths::canonicalize_for_write(
        &std::path::absolute(artifacts).unwrap_or_else(|_| artifacts.to_path_buf()),
    )
    .unwrap_or_else(|_| artifacts.to_path_buf());
    // An artifacts directory holding the whole workspace cannot be kept off limits
    // without forbidding every write; the OS-side staging still protects its files.
    if !workspace.dir.starts_with(&artifacts_dir) {
        protected.push(artifacts_dir);
    }
    protected
}

/// How the task's commands start: its sandbox, and an environment without the secrets
/// it must not see (a replay's: only the fixed environment).
async fn commands_of(
    plan: &TaskPlan,
    workspace: &Path,
    probe: bool,
) -> Result<TaskCommands, TaskError> {
    let confinement = plan.mode.confinement();
    let mut unreadable = confinement.map_or_else(Vec::new, |c| c.unreadable.clone());
    unreadable.extend(super::repo::files_holding_the_url_token(plan));
    // The repository cache and the other tasks' checkouts (this task's own is its
    // workspace, which the sandbox grants).
    unreadable.extend(crate::workspace::repo::private_dirs());
    let replayed_network = confinement.and_then(|c| c.network.clone());
    let mut commands = task_commands(
        &plan.spec,
        &plan.rules,
        workspace,
        (&unreadable, replayed_network),
        probe,
    )
    .await?;
    for name in withheld_vars(plan) {
        if !commands.env.withheld.contains(&name) {
            commands.env.withheld.push(name);
        }
    }
    if confinement.is_some() {
        commands
            .env
            .withheld
            .extend(super::commands::outside_fixed_environment());
    }
    Ok(commands)
}

/// drover's file tools get the same filesystem confinement as the commands: a thread
/// under the task's Landlock ruleset does their opens (defence in depth beneath the
/// path handling). Failing that, the task fails as it would for Bash.
fn file_thread(commands: &mut TaskCommands) -> Option<ConfinedThread> {
    if commands.summary["enabled"] != true {
        return None;
    }
    let sandbox = commands.policy.clone();
    match ConfinedThread::start(move || crate::sandbox::enforce_files(&sandbox)) {
        Ok(thread) => Some(thread),
        Err(reason) => {
            let hint = super::runner_hint::here();
            commands.unavailable.get_or_insert(format!(
                "the OS sandbox cannot be enforced on this machine ({reason}), so the task did not run; {hint}; or write `sandbox: off` in the spec to run without it explicitly"
            ));
            None
        }
    }
}

/// Start the task's MCP servers, each in the sandbox its spec asks for.
async fn start_mcp_servers(
    plan: &TaskPlan,
    workspace: &Path,
    task_dir: &Path,
    commands: &TaskCommands,
    redactor: &Redactor,
) -> McpSession {
    let limits = plan
        .spec
        .spec
        .mcp
        .as_ref()
        .map(|mcp| mcp.value.clone())
        .unwrap_or_default();
    let env_for = |sandbox: Option<&crate::spec::SandboxSpec>| commands.for_sandbox(sandbox);
    let setup = McpSetup {
        spec_dir: plan.spec.path.parent().unwrap_or(Path::new(".")),
        workspace,
        log_dir: task_dir,
        vars: &plan.mcp_vars,
        redactor,
        env_for: &env_for,
    };
    McpSession::start(&plan.mcp_servers, &limits, &setup).await
}

/// Offer the servers' tools. A resumed run answers the calls it replays from the
/// recording: what the recorded run did to the world is not done twice.
fn offer_mcp_tools(plan: &TaskPlan, mcp: &McpSession, registry: &mut Registry) {
    for tool in &mcp.tools {
        let tool = match &plan.mode {
            Mode::Resume(resume) => Arc::new(AnsweredTool::new(
                Arc::clone(tool),
                Arc::clone(&resume.answers),
            )),
            Mode::Live | Mode::Replay(_) | Mode::DiffOnly(_) => Arc::clone(tool),
        };
        // A server's schema that does not compile leaves its tool out, not the task.
        if let Err(error) = registry.add(Arc::clone(&tool)) {
            crate::esay!(
                "drover: warning: MCP tool {} left out: {error}",
                tool.name()
            );
        }
    }
}
