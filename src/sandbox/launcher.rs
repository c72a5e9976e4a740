//! `drover __sandbox-exec`: the launcher that applies a [`SandboxPolicy`] in a fresh,
//! single-threaded process and then starts the command under it, so the command and
//! everything it starts inherit the restriction. drover's own process is multi-threaded
//! (Landlock restricts one thread) and must not allocate between `fork` and `exec`;
//! re-executing itself avoids both problems. The launcher stays as the command's
//! supervisor (see [`super::supervise`]): with the sandbox off (`--policy null`) it
//! still contains the command's processes.
//!
//! The launcher runs with an empty environment: the command's own comes through
//! [`super::env_channel`] and is applied only when the command starts, so nothing meant
//! for the command (`LD_PRELOAD`, …) acts on the launcher before it confines anything.
//!
//! Exit codes of the launcher itself: 125 when the policy cannot be enforced (the command
//! never runs), 127 when the command cannot be executed ([`supervise::EXIT_CANNOT_EXEC`]);
//! stderr says why, starting with `drover sandbox:`.

use super::SandboxError;
use std::ffi::{OsStr, OsString};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;

use super::SandboxPolicy;
use super::capabilities::{Dropped, drop_capabilities};
use super::enforce::{Enforced, enforce};
use super::read_only_mounts::Mounts;
use super::{env_channel, supervise};

/// The launcher's exit code when the sandbox cannot be enforced.
pub(crate) const EXIT_UNENFORCEABLE: i32 = 125;
/// The hidden subcommand's name.
pub(crate) const SUBCOMMAND: &str = "__sandbox-exec";

/// How drover starts a command inside the sandbox: its own executable and the policy.
#[derive(Debug, Clone)]
pub(crate) struct Launcher {
    exe: PathBuf,
    /// None: no OS sandbox (`sandbox: off`), the processes are still contained.
    policy: Option<SandboxPolicy>,
    policy_json: String,
}

impl Launcher {
    /// A launcher that re-executes the running drover binary.
    pub(crate) fn new(policy: Option<SandboxPolicy>) -> Result<Self, SandboxError> {
        let exe = std::env::current_exe().map_err(|e| {
            SandboxError::failed("find drover's own executable to launch the sandbox", e)
        })?;
        Self::with_exe(exe, policy)
    }

    /// A launcher using the drover binary at `exe`.
    pub(crate) fn with_exe(
        exe: PathBuf,
        policy: Option<SandboxPolicy>,
    ) -> Result<Self, SandboxError> {
        let policy_json = serde_json::to_string(&policy)
            .map_err(|e| SandboxError::failed("serialize the sandbox policy", e))?;
        Ok(Launcher {
            exe,
            policy,
            policy_json,
        })
    }

    pub(crate) fn policy(&self) -> Option<&SandboxPolicy> {
        self.policy.as_ref()
    }

    /// The same launcher with another policy (a check's own sandbox settings).
    pub(crate) fn with_policy(&self, policy: Option<SandboxPolicy>) -> Result<Self, SandboxError> {
        Self::with_exe(self.exe.clone(), policy)
    }

    /// The launcher's command for `program args` with environment `env`: started with
    /// an empty environment of its own, `env` in a file it inherits (see
    /// [`env_channel`]). With `stdio` the command talks over its stdin and stdout (an
    /// MCP server): the launcher passes both through, and takes the hang-up of its stdin
    /// (drover closed the channel, or died) as the cut lifeline.
    pub(crate) fn command(
        &self,
        stdio: bool,
        program: &OsStr,
        args: &[&OsStr],
        env: &[(OsString, OsString)],
    ) -> std::io::Result<tokio::process::Command> {
        let env_file = OwnedFd::from(env_channel::write(env)?);
        let env_fd = env_file.as_raw_fd();
        let mut cmd = tokio::process::Command::new(&self.exe);
        cmd.env_clear()
            .arg(SUBCOMMAND)
            .arg("--policy")
            .arg(&self.policy_json)
            .arg("--env-fd")
            .arg(env_fd.to_string());
        if stdio {
            cmd.arg("--stdio");
        }
        cmd.arg("--").arg(program).args(args);
        // SAFETY: the hook makes one system call (fcntl), which is async-signal-safe and
        // allocates nothing. It owns the file, so the descriptor stays open until the
        // command is dropped, after the spawn.
        unsafe {
            cmd.pre_exec(move || env_channel::inherit_in_child(env_file.as_raw_fd()));
        }
        Ok(cmd)
    }

    /// Apply the policy in a throwaway launcher process: Ok when the kernel enforces all
    /// of it, else what failed. Run once per task before the agent loop.
    pub(crate) async fn probe(&self) -> Result<(), SandboxError> {
        let output = tokio::process::Command::new(&self.exe)
            .env_clear()
            .arg(SUBCOMMAND)
            .arg("--policy")
            .arg(&self.policy_json)
            .arg("--probe")
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output()
            .await
            .map_err(|e| {
                SandboxError::failed(
                    format!("start the sandbox launcher {}", self.exe.display()),
                    e,
                )
            })?;
        if output.status.success() {
            return Ok(());
        }
        let stderr = String::from_utf8_lossy(&output.stderr);
        let reason = stderr.trim();
        // The launcher says why on stderr, after its own prefix.
        let reason = reason.strip_prefix("drover sandbox: ").unwrap_or(reason);
        Err(SandboxError::Unenforceable(if reason.is_empty() {
            format!("the sandbox launcher failed ({})", output.status)
        } else {
            reason.to_string()
        }))
    }
}

/// The launcher's main: contain, enforce `policy_json` (`null`: no sandbox), then run
/// `command` under supervision (or, with `probe`, exit 0), with the environment read
/// from descriptor `env_fd` (without one, the launcher's own). With `stdio` the command
/// talks over the launcher's stdin and stdout (see [`Launcher::command`]). Returns the
/// exit code.
pub fn sandbox_exec_main(
    policy_json: &str,
    probe: bool,
    stdio: bool,
    env_fd: Option<i32>,
    command: &[OsString],
) -> i32 {
    // First, so the descriptor is closed before anything else happens.
    let env = match env_fd.map(env_channel::read).transpose() {
        Ok(env) => env,
        Err(reason) => {
            crate::esay!("drover sandbox: {reason}");
            return EXIT_UNENFORCEABLE;
        }
    };
    let policy: Option<SandboxPolicy> = match serde_json::from_str(policy_json) {
        Ok(policy) => policy,
        Err(e) => {
            crate::esay!("drover sandbox: invalid policy: {e}");
            return EXIT_UNENFORCEABLE;
        }
    };
    let containment = match supervise::prepare() {
        Ok(containment) => containment,
        Err(reason) => {
            crate::esay!("drover sandbox: {reason}");
            return EXIT_UNENFORCEABLE;
        }
    };
    let enforced = match &policy {
        Some(policy) => match enforce_all(policy) {
            Ok(enforced) => Some(enforced),
            Err(reason) => {
                crate::esay!("drover sandbox: {reason}");
                return EXIT_UNENFORCEABLE;
            }
        },
        None => None,
    };
    if probe {
        say_probe(policy.as_ref(), enforced, &containment);
        return 0;
    }
    supervise::run(command, env, containment, stdio)
}

/// What `--probe` reports: what the sandbox enforced here, or that it is off.
fn say_probe(
    policy: Option<&SandboxPolicy>,
    enforced: Option<(Enforced, Dropped)>,
    containment: &supervise::Containment,
) {
    match (policy, enforced) {
        (Some(policy), Some((enforced, dropped))) => crate::say!(
            "drover sandbox: enforced (Landlock ABI {}, network {}{}{}{}{}{}, {})",
            enforced.abi,
            if policy.network { "allowed" } else { "cut" },
            if enforced.socket_filter {
                ", socket filter: Unix sockets only"
            } else {
                ""
            },
            if enforced.private_network {
                ", private network namespace"
            } else {
                ""
            },
            if enforced.scoped {
                ", signals and abstract sockets scoped"
            } else {
                ""
            },
            if containment.pid_namespace {
                ", private PID namespace"
            } else {
                ""
            },
            match enforced.mounts {
                Mounts::Shared => String::new(),
                Mounts::ReadOnly { kept: 0 } =>
                    ", mounts read-only but the writable paths".to_string(),
                Mounts::ReadOnly { kept } => format!(
                    ", mounts read-only but the writable paths and {kept} the kernel keeps as they are"
                ),
            },
            dropped,
        ),
        _ => crate::say!(
            "drover sandbox: off (processes contained{})",
            if containment.pid_namespace {
                " in a private PID namespace"
            } else {
                ""
            }
        ),
    }
}

/// Everything the sandbox imposes, in order: Landlock, the network namespace and the
/// socket filter (which need capabilities root has), the limits, then the drop of every
/// capability the command may not keep. An error means the command must not run.
fn enforce_all(policy: &SandboxPolicy) -> Result<(Enforced, Dropped), SandboxError> {
    let enforced = enforce(policy)?;
    policy.limits.apply()?;
    let dropped = drop_capabilities()?;
    Ok((enforced, dropped))
}
