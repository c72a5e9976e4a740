//! A task's command environment: the private temporary directory, the secret scrubbing
//! and, unless the spec says `sandbox: off`, the OS sandbox, probed once before the loop
//! so a machine that cannot enforce it fails the task up front instead of running the
//! agent's commands unsandboxed.

use std::path::Path;

use serde_json::{Value, json};
use tempfile::TempDir;

use crate::exec::CommandEnv;
use crate::policy::sandbox::{Launcher, SandboxPolicy, TaskSandbox};
use crate::spec::{LoadedSpec, SandboxSpec, Switch};

/// The command environment of one task, alive as long as the task.
pub struct TaskCommands {
    pub env: CommandEnv,
    /// What `run_start` records as `sandbox`.
    pub summary: Value,
    /// Why the sandbox cannot be enforced here, when it cannot.
    pub unavailable: Option<String>,
    /// The private `TMPDIR`, removed when the task ends.
    _tmpdir: TempDir,
}

/// Is the sandbox on for this spec, and with the network? None when `sandbox: off`.
pub fn sandbox_network(spec: &LoadedSpec) -> Option<bool> {
    match &spec.spec.sandbox {
        None | Some(SandboxSpec::Switch(Switch::On)) => Some(false),
        Some(SandboxSpec::Switch(Switch::Off)) => None,
        Some(SandboxSpec::Settings(settings)) => Some(settings.network),
    }
}

/// Set up the commands of a task working in `workspace` (canonical). `probe`: check now
/// that the sandbox can be enforced (when the task offers a tool that runs commands).
/// An Err is an internal error (no temporary directory, no executable).
pub async fn task_commands(
    spec: &LoadedSpec,
    workspace: &Path,
    probe: bool,
) -> Result<TaskCommands, String> {
    let tmpdir = tempfile::Builder::new()
        .prefix("drover-tmp-")
        .tempdir()
        .map_err(|e| format!("cannot create the task's temporary directory: {e}"))?;
    let tmp_path = tmpdir
        .path()
        .canonicalize()
        .unwrap_or_else(|_| tmpdir.path().to_path_buf());
    let mut env = CommandEnv {
        sandbox: None,
        tmpdir: Some(tmp_path.clone()),
        pass: spec.spec.env.pass.clone(),
        withheld: spec
            .spec
            .model
            .value
            .api_key_env
            .iter()
            .filter(|name| name.as_str() != "none")
            .cloned()
            .collect(),
    };
    let Some(network) = sandbox_network(spec) else {
        return Ok(TaskCommands {
            env,
            summary: json!({"enabled": false}),
            unavailable: None,
            _tmpdir: tmpdir,
        });
    };
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let additional = spec.additional_directories();
    let policy = SandboxPolicy::for_task(&TaskSandbox {
        workspace,
        additional: &additional,
        tmpdir: &tmp_path,
        deny: &spec.spec.permissions.deny,
        network,
        home: home.as_deref(),
    });
    let summary = policy.summary();
    let launcher = Launcher::new(policy)?;
    let unavailable = if probe {
        launcher.probe().await.err().map(|reason| {
            let reason = reason.strip_prefix("drover sandbox: ").unwrap_or(&reason);
            format!(
                "the OS sandbox for shell commands cannot be enforced on this machine ({reason}), so the task did not run; run drover on a Linux kernel with Landlock enabled (6.7+ to cut the network), or write `sandbox: off` in the spec to run commands unsandboxed explicitly"
            )
        })
    } else {
        None
    };
    env.sandbox = Some(launcher);
    Ok(TaskCommands {
        env,
        summary,
        unavailable,
        _tmpdir: tmpdir,
    })
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
