//! git run for a clone or fetch: outside the sandbox, before any agent, so everything
//! it may do is pinned down here. No prompt (no terminal, no askpass, ssh in batch
//! mode), only the five transports `repo.url` may name (`GIT_ALLOW_PROTOCOL`: `ext::`
//! runs a program), low-speed limits and a wall clock that kills git's whole process
//! group (ssh and the remote helpers with it), an environment without drover's
//! secrets, and a token handed over by a credential helper reading a variable that only
//! this git child has: never on a command line, never in a URL git stores.

use std::ffi::OsString;
use std::io::{Read as _, Seek as _};
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::record::secret_names::looks_secret;

/// Where the clone's credentials come from.
#[derive(Clone)]
pub(crate) enum Credential {
    /// git's own configuration (its credential helpers); never a prompt.
    GitConfig,
    /// A token (or password) with its user name, from `credentials.env` or the URL.
    Token { username: String, token: String },
    /// `credentials.helper`: this helper alone.
    Helper(String),
}

/// The variables the credential helper of a token reads; set on the git child alone.
const USERNAME_VAR: &str = "DROVER_REPO_USERNAME";
const TOKEN_VAR: &str = "DROVER_REPO_TOKEN";

/// The helper that answers git's `get` with the token from the child's environment.
const TOKEN_HELPER: &str = "!f() { test \"$1\" = get || exit 0; printf 'username=%s\\npassword=%s\\n' \"$DROVER_REPO_USERNAME\" \"$DROVER_REPO_TOKEN\"; }; f";

/// The transports git may use (`GIT_ALLOW_PROTOCOL`).
const ALLOWED_PROTOCOLS: &str = "file:git:http:https:ssh";

/// How a git command ended when it did not succeed.
#[derive(Debug)]
pub(crate) enum GitFailure {
    /// git could not be started.
    Spawn(std::io::Error),
    /// The time limit passed; git's process group was killed.
    TimedOut(Duration),
    /// drover was interrupted; git's process group was killed.
    Interrupted,
    /// git said no: its stderr, secrets taken out.
    Failed(String),
}

/// Runs git for one clone: its credential, its deadline, the secrets its messages lose.
pub(crate) struct RemoteGit<'a> {
    pub credential: &'a Credential,
    pub deadline: Instant,
    pub timeout: Duration,
    /// Values never quoted in a message (the token).
    pub secrets: Vec<String>,
    pub stop: &'a (dyn Fn() -> bool + Sync),
}

impl RemoteGit<'_> {
    /// `git [-C dir] args…`: its stdout, or how it failed.
    pub(crate) fn run(&self, dir: Option<&Path>, args: &[&str]) -> Result<Vec<u8>, GitFailure> {
        let mut command = self.command(dir);
        command.args(args);
        self.wait(command)
    }

    fn command(&self, dir: Option<&Path>) -> Command {
        let mut command = Command::new("git");
        scrub_environment(&mut command);
        if let Some(dir) = dir {
            command.arg("-C").arg(dir);
        }
        let connect = self.timeout.as_secs().clamp(1, 60);
        command
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GCM_INTERACTIVE", "never")
            .env("GIT_ALLOW_PROTOCOL", ALLOWED_PROTOCOLS)
            .env(
                "GIT_SSH_COMMAND",
                format!("ssh -o BatchMode=yes -o ConnectTimeout={connect}"),
            );
        for setting in [
            "core.askPass=",
            "core.hooksPath=/dev/null",
            "core.fsmonitor=false",
            "credential.interactive=false",
            "http.lowSpeedLimit=1000",
            "http.lowSpeedTime=30",
            // A redirect could take the token to another host: the URL is the one given.
            "http.followRedirects=false",
            "advice.detachedHead=false",
            // A checkout writes its files on every core.
            "checkout.workers=0",
            "init.defaultBranch=drover",
        ] {
            command.arg("-c").arg(setting);
        }
        match self.credential {
            Credential::GitConfig => {}
            Credential::Token { username, token } => {
                command
                    .args(["-c", "credential.helper=", "-c"])
                    .arg(format!("credential.helper={TOKEN_HELPER}"))
                    .env(USERNAME_VAR, username)
                    .env(TOKEN_VAR, token);
            }
            Credential::Helper(helper) => {
                command
                    .args(["-c", "credential.helper=", "-c"])
                    .arg(format!("credential.helper={helper}"));
            }
        }
        command
    }

    /// Run `command` in a process group of its own until it ends, the deadline passes
    /// or drover is interrupted (then the whole group is killed).
    fn wait(&self, mut command: Command) -> Result<Vec<u8>, GitFailure> {
        let mut stdout = tempfile::tempfile().map_err(GitFailure::Spawn)?;
        let mut stderr = tempfile::tempfile().map_err(GitFailure::Spawn)?;
        let out = stdout.try_clone().map_err(GitFailure::Spawn)?;
        let err = stderr.try_clone().map_err(GitFailure::Spawn)?;
        let mut child = command
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0)
            .spawn()
            .map_err(GitFailure::Spawn)?;
        let exited = exit_signal(child.id());
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) => {}
                Err(error) => return Err(GitFailure::Spawn(error)),
            }
            let late = Instant::now() >= self.deadline;
            if late || (self.stop)() {
                kill_group(child.id());
                let _ = child.wait();
                return Err(if late {
                    GitFailure::TimedOut(self.timeout)
                } else {
                    GitFailure::Interrupted
                });
            }
            wait_a_tick(exited.as_ref());
        };
        settle_group(child.id());
        let read = |file: &mut std::fs::File| {
            let mut bytes = Vec::new();
            let _ = file.rewind();
            let _ = file.read_to_end(&mut bytes);
            bytes
        };
        if status.success() {
            return Ok(read(&mut stdout));
        }
        let text = String::from_utf8_lossy(&read(&mut stderr)).into_owned();
        Err(GitFailure::Failed(self.redacted(&text)))
    }

    /// `text` with every secret replaced by `[redacted]`.
    pub(crate) fn redacted(&self, text: &str) -> String {
        let mut text = text.to_string();
        for secret in self.secrets.iter().filter(|s| !s.is_empty()) {
            text = text.replace(secret.as_str(), crate::record::redact::REDACTED);
        }
        text
    }
}

/// How often a running git is checked against the deadline and an interrupt.
const TICK: Duration = Duration::from_millis(20);

/// A descriptor that becomes readable when process `pid` ends (Linux 5.3), so a git
/// command of a few milliseconds is not waited on for a whole tick; None on an older
/// kernel, which then waits tick by tick.
fn exit_signal(pid: u32) -> Option<OwnedFd> {
    let pid = rustix::process::Pid::from_raw(i32::try_from(pid).ok()?)?;
    rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()).ok()
}

/// Until the process behind `exited` ends, or a tick passes.
fn wait_a_tick(exited: Option<&OwnedFd>) {
    let Some(exited) = exited else {
        std::thread::sleep(TICK);
        return;
    };
    let mut fds = [rustix::event::PollFd::new(
        exited,
        rustix::event::PollFlags::IN,
    )];
    let tick = rustix::event::Timespec {
        tv_sec: 0,
        tv_nsec: i64::from(TICK.subsec_nanos()),
    };
    if rustix::event::poll(&mut fds, Some(&tick)).is_err() {
        std::thread::sleep(TICK);
    }
}

/// How long what git started (`upload-pack` of a `file://` remote, ssh) may go on
/// writing to git's stderr after git itself ended, before it is killed.
const GRACE: Duration = Duration::from_millis(200);

/// Let the rest of process group `pid` end (git can die before the `upload-pack` it
/// started has written its own words), then kill what is left: nothing git started
/// outlives it, and its stderr is whole when it is read.
fn settle_group(pid: u32) {
    let Some(group) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return;
    };
    let until = Instant::now() + GRACE;
    while rustix::process::test_kill_process_group(group).is_ok() {
        if Instant::now() >= until {
            kill_group(pid);
            return;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Kill process group `pid` (git and what it started).
fn kill_group(pid: u32) {
    if let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
}

/// drover's environment without its secrets and without every `GIT_*` variable (one
/// could point git at another repository, add configuration or a program): git keeps
/// `HOME` (its global configuration, ssh's keys), `PATH`, the locale, the proxy and
/// certificate settings and the ssh agent's socket.
fn scrub_environment(command: &mut Command) {
    let dropped: Vec<OsString> = std::env::vars_os()
        .map(|(name, _)| name)
        .filter(|name| {
            let text = name.to_string_lossy();
            let keep = matches!(
                text.as_ref(),
                "SSH_AUTH_SOCK" | "GIT_SSL_CAINFO" | "GIT_SSL_CAPATH"
            );
            !keep
                && (text.starts_with("GIT_")
                    || looks_secret(&text)
                    || text == "SSH_ASKPASS"
                    || text == "DISPLAY")
        })
        .collect();
    for name in dropped {
        command.env_remove(name);
    }
}
