//! A task's command environment: the private temporary directory, the secret scrubbing
//! and, unless the spec says `sandbox: off`, the OS sandbox, probed once before the loop
//! so a machine that cannot enforce it fails the task up front instead of running the
//! agent's commands unsandboxed.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};

use super::command_network;
use super::error::TaskError;
use crate::network::{NetworkRecorder, RecordedNetwork};
use crate::policy::RuleSet;
use crate::record::network::NetworkOrigin;
use crate::sandbox::exec::CommandEnv;
use crate::sandbox::launch_network::NetworkOpener;
use crate::sandbox::{Launcher, ResourceLimits, SandboxError, SandboxPolicy, TaskSandbox};
use crate::spec::{
    CheckSpec, LimitsSpec, LoadedSpec, NetworkSpec, SandboxSpec, Switch,
    matrix_env as spec_matrix_env,
};
use crate::workspace::leftovers::HeldTempDir;

/// The command environment of one task, alive as long as the task.
pub(super) struct TaskCommands {
    pub env: CommandEnv,
    /// The task's sandbox policy, built even when the task's sandbox is off (a check may
    /// ask for it); with the network as the spec's `sandbox` says.
    pub policy: SandboxPolicy,
    /// What `run_start` records as `sandbox`.
    pub summary: Value,
    /// Why the sandbox cannot be enforced here, when it cannot.
    pub unavailable: Option<String>,
    /// Every network attempt of the task's commands under rules naming hosts.
    pub network: NetworkRecorder,
    /// The task's `sandbox:`, which its commands' own settings are judged against.
    task_sandbox: Option<SandboxSpec>,
    /// The variables of its matrix entry (`DROVER_MATRIX_KEY`), for its setup steps and
    /// checks only: their `run:` expands them. The agent's commands and hooks do not get
    /// them (the prompt gives the agent its values; nothing else needs them).
    matrix_vars: Vec<(String, String)>,
    /// The private `TMPDIR`, removed when the task ends.
    _tmpdir: HeldTempDir,
    /// Where hooks' inputs are written for them to read: made before the sandbox so its
    /// read grants cover it, and outside everything the agent's commands may write, so
    /// nothing the agent runs can change what a hook is shown.
    hook_dir: HeldTempDir,
}

/// The variables of drover's environment a replay's commands get: what programs need
/// to run (the search path, the home directory, the user, the locale, the terminal),
/// nothing that could carry a secret. Locale variables are matched by their `LC_` prefix.
pub(crate) const FIXED_ENVIRONMENT: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TERM", "NO_COLOR",
];

/// The names of drover's variables outside [`FIXED_ENVIRONMENT`].
pub(super) fn outside_fixed_environment() -> Vec<String> {
    std::env::vars_os()
        .map(|(name, _)| name.to_string_lossy().into_owned())
        .filter(|name| !FIXED_ENVIRONMENT.contains(&name.as_str()) && !name.starts_with("LC_"))
        .collect()
}

/// What a `sandbox:` value says: None for off, else the limits.
fn sandbox_setting(sandbox: Option<&SandboxSpec>) -> Option<LimitsSpec> {
    match sandbox {
        None | Some(SandboxSpec::Switch(Switch::On)) => Some(LimitsSpec::default()),
        Some(SandboxSpec::Switch(Switch::Off)) => None,
        Some(SandboxSpec::Settings(settings)) => Some(settings.limits),
    }
}

/// The `writable:` directories of a sandbox setting, `~/` expanded (a `~/` path without
/// a home directory to expand it in is left out).
fn extra_writable(sandbox: Option<&SandboxSpec>) -> Vec<PathBuf> {
    let Some(SandboxSpec::Settings(settings)) = sandbox else {
        return Vec::new();
    };
    let home = std::env::var_os("HOME").map(PathBuf::from);
    settings
        .writable
        .iter()
        .filter_map(|path| match path.strip_prefix("~/") {
            Some(rest) => home.as_ref().map(|home| home.join(rest)),
            None => Some(PathBuf::from(path)),
        })
        .collect()
}

/// Package managers' download caches in the home directory, writable by `setup:`
/// commands by default so `cargo fetch` or `npm ci` can fill them for the agent (which
/// then reads them with the network off). Only caches that exist, or whose tool's own
/// directory exists (`~/.cargo` for `~/.cargo/registry`, created then), are added.
const SETUP_CACHES: [&str; 10] = [
    ".cargo/registry",
    ".cargo/git",
    ".npm",
    ".cache/pip",
    ".cache/uv",
    ".cache/yarn",
    ".cache/go-build",
    "go/pkg/mod",
    ".m2/repository",
    ".gradle/caches",
];

fn setup_caches() -> Vec<PathBuf> {
    let Some(home) = std::env::var_os("HOME").map(PathBuf::from) else {
        return Vec::new();
    };
    SETUP_CACHES
        .iter()
        .map(|cache| home.join(cache))
        .filter(|cache| {
            cache.is_dir()
                || cache.parent().is_some_and(|tool| {
                    tool != home && tool.is_dir() && std::fs::create_dir_all(cache).is_ok()
                })
        })
        .collect()
}

impl TaskCommands {
    /// The directory hooks' inputs are written to (see the field).
    pub(super) fn hook_dir(&self) -> &Path {
        self.hook_dir.path()
    }

    /// The environment a check runs with: the task's scrubbed environment and private
    /// `TMPDIR`, and its sandbox unless the check's own `sandbox:` says otherwise (a
    /// check runs code the agent wrote, so it is confined like the agent by default).
    pub(super) fn for_check(&self, check: &CheckSpec) -> Result<CommandEnv, SandboxError> {
        let env = self.for_command(check.sandbox.as_ref(), false)?;
        Ok(CommandEnv {
            vars: self.matrix_vars.clone(),
            ..env.for_origin(origin("check", &check.name))
        })
    }

    /// The environment of a command with its own `sandbox:` setting (a hook, an MCP
    /// server): the task's sandbox when it says nothing; its network as
    /// [`SandboxSpec::command_network`] says.
    pub(super) fn for_sandbox(
        &self,
        sandbox: Option<&SandboxSpec>,
    ) -> Result<CommandEnv, SandboxError> {
        self.for_command(sandbox, false)
    }

    /// The environment a `setup:` command runs with: the task's scrubbed environment
    /// and sandbox, with the whole network (fetching is what setup is for) unless the
    /// task's network is rules naming hosts or the entry's own `sandbox:` says
    /// otherwise, and the package managers' caches writable.
    pub(super) fn for_setup(&self, step: &CheckSpec) -> Result<CommandEnv, SandboxError> {
        let env = self.for_command(step.sandbox.as_ref(), true)?;
        Ok(CommandEnv {
            vars: self.matrix_vars.clone(),
            ..env.for_origin(origin("setup", &step.name))
        })
    }

    /// A command's environment: `own` is its `sandbox:` (None: it writes none);
    /// `setup` for a setup step.
    fn for_command(
        &self,
        own: Option<&SandboxSpec>,
        setup: bool,
    ) -> Result<CommandEnv, SandboxError> {
        let sandboxed = match own {
            None => self.task_sandbox_on(),
            Some(own) => SandboxSpec::is_on(Some(own)),
        };
        if !sandboxed {
            return self.with_policy(None, None);
        }
        let network = if self.network.is_replay() {
            // A replay never opens the network: every command proxied, all refused.
            NetworkSpec::Rules(Default::default())
        } else {
            SandboxSpec::command_network(own, self.task_sandbox.as_ref(), setup)
        };
        let mut policy = command_network::with_network(self.policy.clone(), &network);
        policy.writable.extend(extra_writable(own));
        if setup && own.is_none() {
            policy.writable.extend(setup_caches());
        }
        let gate = command_network::gate(&network, &self.network)?;
        self.with_policy(Some(policy), gate)
    }

    fn task_sandbox_on(&self) -> bool {
        self.env
            .sandbox
            .as_ref()
            .is_some_and(|launcher| launcher.policy().is_some())
    }

    /// The task's command environment under `policy` (None: unsandboxed), with the
    /// network `gate` of a proxied policy.
    fn with_policy(
        &self,
        policy: Option<SandboxPolicy>,
        gate: Option<Arc<dyn NetworkOpener>>,
    ) -> Result<CommandEnv, SandboxError> {
        let sandbox = match &self.env.sandbox {
            Some(launcher) => Some(launcher.with_policy(policy)?),
            None => None,
        };
        Ok(CommandEnv {
            sandbox,
            network: gate,
            ..self.env.clone()
        })
    }
}

/// The origin network attempts of a command started by `source` name.
fn origin(source: &str, name: &str) -> NetworkOrigin {
    NetworkOrigin {
        source: source.to_string(),
        tool_use_id: None,
        name: Some(name.to_string()),
    }
}

/// Set up the commands of a task working in `workspace` (canonical), denied reading
/// `unreadable` besides what the Read deny rules name; `replayed`: a replay of a
/// recording whose commands had rules naming hosts (its commands run proxied, every
/// connection refused, attempts compared). `probe`: check now that the sandbox can be
/// enforced (when the task offers a tool that runs commands). An Err is an internal
/// error (no temporary directory, no executable).
pub(super) async fn task_commands(
    spec: &LoadedSpec,
    rules: &RuleSet,
    workspace: &Path,
    (unreadable, replayed): (&[PathBuf], Option<RecordedNetwork>),
    probe: bool,
) -> Result<TaskCommands, TaskError> {
    let tmpdir = task_temp_dir("tmp")?;
    let hook_dir = task_temp_dir("hooks")?;
    let tmp_path = tmpdir
        .path()
        .canonicalize()
        .unwrap_or_else(|_| tmpdir.path().to_path_buf());
    // No sandbox, network gate or variables yet: set below.
    let mut env = CommandEnv {
        tmpdir: Some(tmp_path.clone()),
        pass: spec.spec.env.pass.clone(),
        withheld: api_key_vars(spec),
        ..CommandEnv::default()
    };
    let matrix_vars = spec
        .matrix
        .as_ref()
        .map(spec_matrix_env)
        .unwrap_or_default();
    let setting = sandbox_setting(spec.spec.sandbox.as_ref());
    let limits = setting.unwrap_or_default();
    let (task_network, recorder) = task_network(spec, replayed);
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let additional = spec.additional_directories();
    let mut read_denials = crate::policy::read_denials(&rules.deny, home.as_deref());
    read_denials.extend(unreadable.iter().cloned());
    let policy = SandboxPolicy::for_task(&TaskSandbox {
        workspace,
        additional: &additional,
        tmpdir: &tmp_path,
        read_denials: &read_denials,
        network: false,
        limits: ResourceLimits::from_spec(&limits),
    });
    let mut policy = command_network::with_network(policy, &task_network);
    policy
        .writable
        .extend(extra_writable(spec.spec.sandbox.as_ref()));
    if setting.is_none() {
        // No OS sandbox, but the agent's processes are still contained by the launcher.
        env.sandbox = Some(Launcher::new(None)?);
        return Ok(TaskCommands {
            env,
            policy,
            summary: json!({"enabled": false}),
            unavailable: None,
            network: recorder,
            task_sandbox: spec.spec.sandbox.clone(),
            matrix_vars,
            _tmpdir: tmpdir,
            hook_dir,
        });
    }
    let mut summary = policy.summary();
    summary["network"] = command_network::summary(&task_network);
    env.network = command_network::gate(&task_network, &recorder)?;
    let launcher = Launcher::new(Some(policy.clone()))?;
    let unavailable = if probe {
        launcher.probe().await.err().map(|reason| {
            let hint = super::runner_hint::here();
            format!(
                "the OS sandbox for shell commands cannot be enforced on this machine ({reason}), so the task did not run; {hint}; or write `sandbox: off` in the spec to run commands unsandboxed explicitly"
            )
        })
    } else {
        None
    };
    env.sandbox = Some(launcher);
    Ok(TaskCommands {
        env,
        policy,
        summary,
        unavailable,
        network: recorder,
        task_sandbox: spec.spec.sandbox.clone(),
        matrix_vars,
        _tmpdir: tmpdir,
        hook_dir,
    })
}

/// The network of the task's Bash commands, and the recorder of its attempts: a
/// replay's (`replayed`: the recording had rules) proxies every command and refuses all.
fn task_network(
    spec: &LoadedSpec,
    replayed: Option<RecordedNetwork>,
) -> (NetworkSpec, NetworkRecorder) {
    match replayed {
        Some(recorded) => (
            NetworkSpec::Rules(Default::default()),
            NetworkRecorder::replaying(recorded),
        ),
        None => (
            SandboxSpec::network(spec.spec.sandbox.as_ref())
                .cloned()
                .unwrap_or(NetworkSpec::Off),
            NetworkRecorder::default(),
        ),
    }
}

/// A directory of the task's own in the temp directory, named so a later drover knows
/// it as one a killed run left.
fn task_temp_dir(kind: &str) -> Result<HeldTempDir, TaskError> {
    HeldTempDir::new(kind).map_err(TaskError::TempDir)
}

/// The variables holding the model's API key: never a command's.
fn api_key_vars(spec: &LoadedSpec) -> Vec<String> {
    spec.spec
        .model
        .value
        .api_key_env
        .iter()
        .filter(|name| name.as_str() != "none")
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::record::{EndReason, Status};

    #[test]
    fn an_unenforceable_sandbox_is_a_runner_error() {
        let reason = EndReason::SandboxUnavailable;
        assert_eq!(reason.as_str(), "sandbox_unavailable");
        assert_eq!(reason.status(), Status::Error);
        assert_eq!(reason.status().exit_code(), 3);
        assert_eq!(
            serde_json::to_value(reason).unwrap(),
            serde_json::json!("sandbox_unavailable")
        );
    }
}
