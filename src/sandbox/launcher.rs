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
use super::socket_filter::Sockets;
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
    /// With `network` (a proxied policy), the command may reach that proxy only, and
    /// the launcher reports the connections it refused on the network's channel.
    pub(crate) fn command(
        &self,
        stdio: bool,
        program: &OsStr,
        args: &[&OsStr],
        env: &[(OsString, OsString)],
        network: Option<&dyn super::launch_network::LaunchedNetwork>,
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
        let report_fd = match network {
            Some(network) => {
                let report_fd = network.launcher_fd().ok_or_else(|| {
                    std::io::Error::other("the command's network channel was already used")
                })?;
                cmd.arg("--proxy-port")
                    .arg(network.port().to_string())
                    .arg("--report-fd")
                    .arg(report_fd.to_string());
                Some(report_fd)
            }
            None => None,
        };
        cmd.arg("--").arg(program).args(args);
        // SAFETY: the hook makes system calls (fcntl) only, which are async-signal-safe
        // and allocate nothing. It owns the environment file, so that descriptor stays
        // open until the command is dropped, after the spawn; the report channel's end
        // is held by the network until the launcher has started.
        unsafe {
            cmd.pre_exec(move || {
                env_channel::inherit_in_child(env_file.as_raw_fd())?;
                if let Some(report_fd) = report_fd {
                    env_channel::inherit_in_child(report_fd)?;
                }
                Ok(())
            });
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

/// What the launcher was asked to do (its command line).
#[derive(Debug)]
pub struct LaunchRequest<'a> {
    /// The policy as JSON (`null`: no sandbox).
    pub policy_json: &'a str,
    /// Only check that the policy can be enforced.
    pub probe: bool,
    /// The command talks over the launcher's stdin and stdout (see
    /// [`Launcher::command`]).
    pub stdio: bool,
    /// The descriptor of the command's environment (without one, the launcher's own).
    pub env_fd: Option<i32>,
    /// For a proxied policy: the port of drover's egress proxy on 127.0.0.1.
    pub proxy_port: Option<u16>,
    /// For a proxied policy: where refused connections are reported to drover.
    pub report_fd: Option<i32>,
    pub command: &'a [OsString],
}

/// The launcher's main: contain, enforce the policy, then run the command under
/// supervision (or, with `probe`, exit 0). Returns the exit code.
pub fn sandbox_exec_main(request: &LaunchRequest<'_>) -> i32 {
    match launch(request) {
        Ok(code) => code,
        Err(reason) => {
            crate::esay!("drover sandbox: {reason}");
            EXIT_UNENFORCEABLE
        }
    }
}

fn launch(request: &LaunchRequest<'_>) -> Result<i32, SandboxError> {
    // The command, the same user, must not trace the launcher, read its memory or take
    // its descriptors (the lifeline, a seccomp listener): see `proxied::scoped`.
    super::proxied::scoped::make_launcher_undumpable()
        .map_err(|e| SandboxError::failed("make the launcher undumpable", e))?;
    // First, so the descriptors are closed (or kept from the command) before anything
    // else happens.
    let env = request.env_fd.map(env_channel::read).transpose()?;
    let report = request.report_fd.map(report_channel).transpose()?;
    let policy: Option<SandboxPolicy> = serde_json::from_str(request.policy_json)
        .map_err(|e| SandboxError::Unenforceable(format!("invalid policy: {e}")))?;
    let proxied = policy.as_ref().is_some_and(|policy| policy.proxied);
    let proxy_port = match (proxied, request.proxy_port, request.probe) {
        (true, Some(port), _) => Some(port),
        (true, None, true) => None,
        (true, None, false) => {
            return Err(SandboxError::Unenforceable(
                "a proxied policy needs --proxy-port".to_string(),
            ));
        }
        (false, _, _) => None,
    };
    supervise::become_subreaper()?;
    if proxied {
        super::proxied::notify::available()?;
    }
    let enforced = match &policy {
        Some(policy) => Some(enforce(policy, proxy_port, report.as_ref())?),
        None => None,
    };
    let handover = match proxy_port {
        Some(proxy_port) if !request.probe => Some(super::proxied::FilterHandover::start(
            super::proxied::ProxiedLaunch { proxy_port, report },
        )?),
        _ => None,
    };
    let containment = supervise::enter_pid_namespace();
    let enforced = match (&policy, enforced) {
        (Some(policy), Some(enforced)) => {
            policy.limits.apply()?;
            Some((enforced, drop_capabilities()?))
        }
        _ => None,
    };
    if request.probe {
        say_probe(policy.as_ref(), enforced, &containment);
        return Ok(0);
    }
    // Where Landlock scopes signals (ABI 6), the command's own nested domain keeps it
    // from signalling (stopping, killing) the launcher.
    let nest_domain = enforced
        .as_ref()
        .is_some_and(|(enforced, _)| enforced.scoped);
    Ok(supervise::run(
        request.command,
        env,
        containment,
        request.stdio,
        handover,
        nest_domain,
    ))
}

/// The report channel's descriptor as a file, kept from the command (close-on-exec).
fn report_channel(fd: i32) -> Result<std::fs::File, SandboxError> {
    if fd < 3 {
        return Err(SandboxError::Unenforceable(format!(
            "--report-fd {fd} is a standard stream"
        )));
    }
    // SAFETY: drover passes a descriptor it opened for this launcher alone; it is owned
    // from here on.
    let file = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    rustix::io::fcntl_setfd(&file, rustix::io::FdFlags::CLOEXEC)
        .map_err(|e| SandboxError::failed("keep the report channel from the command", e))?;
    Ok(file)
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
            match (policy.network, policy.proxied) {
                (true, _) => "allowed",
                (false, true) => "through drover's proxy only",
                (false, false) => "cut",
            },
            match enforced.socket_filter {
                Some(Sockets::UnixOnly) => ", socket filter: Unix sockets only",
                Some(Sockets::UnixAndTcp) =>
                    ", socket filter: Unix and TCP sockets only, every connect decided by the launcher",
                None => "",
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
