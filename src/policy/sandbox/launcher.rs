//! `drover __sandbox-exec`: the launcher that applies a [`SandboxPolicy`] in a fresh,
//! single-threaded process and then `exec`s the command, so the command and everything
//! it starts inherit the restriction. drover's own process is multi-threaded (Landlock
//! restricts one thread) and must not allocate between `fork` and `exec`; re-executing
//! itself avoids both problems.
//!
//! Exit codes of the launcher itself: 125 when the policy cannot be enforced (the command
//! never runs), 127 when the command cannot be executed; stderr says why, starting with
//! `drover sandbox:`.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;

use super::SandboxPolicy;
use super::enforce::enforce;

/// The launcher's exit code when the sandbox cannot be enforced.
pub const EXIT_UNENFORCEABLE: i32 = 125;
/// The launcher's exit code when the command cannot be executed.
pub const EXIT_CANNOT_EXEC: i32 = 127;
/// The hidden subcommand's name.
pub const SUBCOMMAND: &str = "__sandbox-exec";

/// How drover starts a command inside the sandbox: its own executable and the policy.
#[derive(Debug, Clone)]
pub struct Launcher {
    exe: PathBuf,
    policy: SandboxPolicy,
    policy_json: String,
}

impl Launcher {
    /// A launcher that re-executes the running drover binary.
    pub fn new(policy: SandboxPolicy) -> Result<Self, String> {
        let exe = std::env::current_exe().map_err(|e| {
            format!("cannot find drover's own executable to launch the sandbox: {e}")
        })?;
        Self::with_exe(exe, policy)
    }

    /// A launcher using the drover binary at `exe`.
    pub fn with_exe(exe: PathBuf, policy: SandboxPolicy) -> Result<Self, String> {
        let policy_json = serde_json::to_string(&policy)
            .map_err(|e| format!("cannot serialize the sandbox policy: {e}"))?;
        Ok(Launcher {
            exe,
            policy,
            policy_json,
        })
    }

    pub fn policy(&self) -> &SandboxPolicy {
        &self.policy
    }

    /// The program to start and its first arguments; the command's own program and
    /// arguments follow.
    pub fn prefix(&self) -> (PathBuf, Vec<OsString>) {
        (
            self.exe.clone(),
            vec![
                SUBCOMMAND.into(),
                "--policy".into(),
                self.policy_json.clone().into(),
                "--".into(),
            ],
        )
    }

    /// Apply the policy in a throwaway launcher process: Ok when the kernel enforces all
    /// of it, else what failed. Run once per task before the agent loop.
    pub async fn probe(&self) -> Result<(), String> {
        let output = tokio::process::Command::new(&self.exe)
            .arg(SUBCOMMAND)
            .arg("--policy")
            .arg(&self.policy_json)
            .arg("--probe")
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output()
            .await
            .map_err(|e| {
                format!(
                    "cannot start the sandbox launcher {}: {e}",
                    self.exe.display()
                )
            })?;
        if output.status.success() {
            return Ok(());
        }
        let stderr = String::from_utf8_lossy(&output.stderr);
        let reason = stderr.trim();
        Err(if reason.is_empty() {
            format!("the sandbox launcher failed ({})", output.status)
        } else {
            reason.to_string()
        })
    }
}

/// The launcher's main: enforce `policy_json`, then run `command` (or, with `probe`,
/// exit 0). Returns the exit code only when the command did not start.
pub fn sandbox_exec_main(policy_json: &str, probe: bool, command: &[OsString]) -> i32 {
    let policy: SandboxPolicy = match serde_json::from_str(policy_json) {
        Ok(policy) => policy,
        Err(e) => {
            eprintln!("drover sandbox: invalid policy: {e}");
            return EXIT_UNENFORCEABLE;
        }
    };
    let enforced = match enforce(&policy) {
        Ok(enforced) => enforced,
        Err(reason) => {
            eprintln!("drover sandbox: {reason}");
            return EXIT_UNENFORCEABLE;
        }
    };
    if probe {
        crate::say!(
            "drover sandbox: enforced (Landlock ABI {}, network {}{})",
            enforced.abi,
            if policy.network { "allowed" } else { "cut" },
            if enforced.private_network {
                ", private network namespace"
            } else {
                ""
            }
        );
        return 0;
    }
    let Some((program, args)) = command.split_first() else {
        eprintln!("drover sandbox: no command to run");
        return EXIT_CANNOT_EXEC;
    };
    let error = std::process::Command::new(program).args(args).exec();
    eprintln!(
        "drover sandbox: cannot run {}: {error}",
        program.to_string_lossy()
    );
    EXIT_CANNOT_EXEC
}
