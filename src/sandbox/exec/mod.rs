//! Running shell commands without a person in the loop: stdin closed, stdout and stderr
//! merged in write order, memory bounded, and the whole process group killed on timeout,
//! on exit and on cancellation, so no leftover child can hang drover.

use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustix::process::{Pid, Signal, kill_process_group};

use super::Launcher;
use super::env::scrub;
use super::launch_network::{LaunchOutcome, LaunchedNetwork, NetworkOpener};
use super::proxy_env::proxy_environment;
use crate::record::network::NetworkOrigin;

mod tracker;
pub(crate) use tracker::{ProcessTracker, Token};

/// How much of the head and of the tail of the output is kept in memory.
pub(crate) const KEEP_HEAD_BYTES: usize = 1 << 20;
/// See [`KEEP_HEAD_BYTES`].
pub(crate) const KEEP_TAIL_BYTES: usize = 1 << 20;

/// The environment every shell command gets on top of drover's own: tools that would
/// otherwise prompt, page or open an editor behave as in CI, and scripts can tell (via
/// `DROVER=1`) that nobody is watching.
pub(crate) const NON_INTERACTIVE_ENV: &[(&str, &str)] = &[
    ("CI", "true"),
    ("GIT_TERMINAL_PROMPT", "0"),
    ("GIT_PAGER", "cat"),
    ("PAGER", "cat"),
    ("GIT_EDITOR", "true"),
    ("EDITOR", "true"),
    ("DEBIAN_FRONTEND", "noninteractive"),
    ("DROVER", "1"),
];

/// How long to wait for the output pipe to close once the process group is dead. Only a
/// process that left the group (e.g. via `setsid`) can hold it open longer.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// How a shell command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ShellOutcome {
    /// None when killed by a signal or the timeout.
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    /// stdout and stderr merged in the order written, possibly cut in the middle.
    pub output: String,
    /// How many bytes were cut from the middle of `output` ([`omitted_note`] stands for
    /// them there), so a later, tighter cut can still count them.
    pub omitted: u64,
    /// What the task's network rules denied the command (nothing without rules).
    pub network: LaunchOutcome,
}

/// The line that stands for the `dropped` bytes a [`Capture`] left out between its head
/// and its tail.
pub(crate) fn omitted_note(dropped: u64) -> String {
    format!("\n[... {dropped} bytes of output omitted ...]\n")
}

/// How to stop a started command with everything it started. Through the launcher,
/// closing the *lifeline* (the launcher's stdin) makes it kill the command's whole tree,
/// including processes that left the group or the session; killing the launcher itself
/// would orphan them. Without a launcher (unit tests), the process group is killed.
#[derive(Debug)]
pub(crate) struct Stopper {
    pgid: Option<Pid>,
    lifeline: Mutex<Option<std::io::PipeWriter>>,
    /// The command was started through a launcher (it had a lifeline): stopping it again
    /// must not kill the launcher's group, which would leave the tree it is killing.
    launched: bool,
    stopped: tokio::sync::Notify,
    requested: std::sync::atomic::AtomicBool,
}

impl Stopper {
    /// Resolves once [`Stopper::stop`] has been called (at once if it already was).
    pub(crate) async fn stopped(&self) {
        let notified = self.stopped.notified();
        if self.is_stopped() {
            return;
        }
        notified.await;
    }

    fn is_stopped(&self) -> bool {
        self.requested.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Ask for the command's end: the lifeline is closed (or the group killed). Returns at
    /// once; await the launcher's exit to know everything is gone.
    pub(crate) fn stop(&self) {
        let lifeline = self
            .lifeline
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        self.requested
            .store(true, std::sync::atomic::Ordering::SeqCst);
        self.stopped.notify_waiters();
        match lifeline {
            Some(lifeline) => drop(lifeline),
            // Asked again: the launcher is already killing the tree.
            None if self.launched => {}
            None => {
                if let Some(pgid) = self.pgid {
                    kill_group(pgid);
                }
            }
        }
    }

    /// The last resort when the launcher did not exit after [`Stopper::stop`]: kill its
    /// process group outright.
    pub(crate) fn force(&self) {
        self.stop();
        if let Some(pgid) = self.pgid {
            kill_group(pgid);
        }
    }
}

/// How long the launcher may take to kill a command's tree and exit after its lifeline
/// is cut, before it is killed itself.
pub(crate) const STOP_GRACE: Duration = Duration::from_secs(5);

/// Output retained with bounded memory: the first and the last bytes, and a count of
/// what was dropped between them.
#[derive(Debug, Default)]
pub(crate) struct Capture {
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    dropped: u64,
}

impl Capture {
    pub(crate) fn push(&mut self, mut bytes: &[u8]) {
        if self.head.len() < KEEP_HEAD_BYTES {
            let take = bytes.len().min(KEEP_HEAD_BYTES - self.head.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        self.tail.extend(bytes);
        let excess = self.tail.len().saturating_sub(KEEP_TAIL_BYTES);
        if excess > 0 {
            self.tail.drain(..excess);
            self.dropped += excess as u64;
        }
    }

    /// Everything captured since the last take, rendered, leaving the capture empty.
    /// Bytes of a character cut by a read boundary wait for the rest of it.
    pub(crate) fn take(&mut self) -> String {
        let mut bytes: Vec<u8> = self.head.drain(..).collect();
        let dropped = std::mem::take(&mut self.dropped);
        let mut tail: Vec<u8> = self.tail.drain(..).collect();
        let last = if tail.is_empty() {
            &mut bytes
        } else {
            &mut tail
        };
        let keep = incomplete_utf8_suffix(last);
        let pending = last.split_off(last.len() - keep);
        let mut out = String::from_utf8_lossy(&bytes).into_owned();
        if dropped > 0 {
            out.push_str(&omitted_note(dropped));
        }
        out.push_str(&String::from_utf8_lossy(&tail));
        self.head = pending;
        out
    }

    /// How many bytes were left out between the head and the tail.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped
    }

    pub(crate) fn render(&self) -> String {
        let mut out = String::from_utf8_lossy(&self.head).into_owned();
        if self.dropped > 0 {
            out.push_str(&omitted_note(self.dropped));
        }
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        out.push_str(&String::from_utf8_lossy(&tail));
        out
    }
}

/// How many bytes at the end of `bytes` start a UTF-8 character that is not complete yet.
fn incomplete_utf8_suffix(bytes: &[u8]) -> usize {
    for back in 1..=bytes.len().min(3) {
        let byte = bytes[bytes.len() - back];
        if byte & 0b1100_0000 == 0b1000_0000 {
            continue; // a continuation byte: look further back for the lead byte
        }
        let needed = match byte {
            b if b & 0b1110_0000 == 0b1100_0000 => 2,
            b if b & 0b1111_0000 == 0b1110_0000 => 3,
            b if b & 0b1111_1000 == 0b1111_0000 => 4,
            _ => return 0,
        };
        return if needed > back { back } else { 0 };
    }
    0
}

pub(crate) fn lock(capture: &Mutex<Capture>) -> std::sync::MutexGuard<'_, Capture> {
    // Each push leaves the capture consistent, so a poisoned lock is still usable.
    capture.lock().unwrap_or_else(|e| e.into_inner())
}

/// How the agent's commands are started: the environment they get and the sandbox they
/// run in. Shared by every Bash call of a task (foreground and background).
#[derive(Debug, Clone, Default)]
pub(crate) struct CommandEnv {
    /// The sandbox launcher, or None to run commands unsandboxed (`sandbox: off`, tests).
    pub sandbox: Option<Launcher>,
    /// The task's private temporary directory, given to commands as `TMPDIR`.
    pub tmpdir: Option<PathBuf>,
    /// Secret-looking variables passed through anyway (`env.pass`).
    pub pass: Vec<String>,
    /// Variables never passed, whatever their names (the model's API key variable).
    pub withheld: Vec<String>,
    /// Every command started with this environment, so the task can stop them all.
    pub tracker: Arc<ProcessTracker>,
    /// Under rules naming hosts (a proxied sandbox policy): the rules and the task's
    /// network record, from which each command gets a proxy of its own.
    pub network: Option<Arc<dyn NetworkOpener>>,
    /// What starts commands with this environment, as their network attempts name it.
    pub origin: NetworkOrigin,
    /// Variables drover sets for these commands on top of its scrubbed environment (a
    /// matrix task's values, for its setup steps and checks): data the command expands,
    /// never text of the command.
    pub vars: Vec<(String, String)>,
}

impl CommandEnv {
    /// The same environment for commands started by `origin` (a Bash call, a check).
    pub(crate) fn for_origin(&self, origin: NetworkOrigin) -> CommandEnv {
        CommandEnv {
            origin,
            ..self.clone()
        }
    }

    /// The directory a command may write scratch files to (the private `TMPDIR`).
    pub(crate) fn tmpdir(&self) -> Option<&Path> {
        self.tmpdir.as_deref()
    }

    /// Whether drover's variable `name` reaches the commands started this way.
    pub(crate) fn passes(&self, name: &str) -> bool {
        super::env::passes(name, &self.pass, &self.withheld)
    }

    /// `bash -c command`, launched through the sandbox when there is one, with drover's
    /// environment scrubbed of secrets, `TMPDIR` pointing at the private directory, and
    /// `extra_env` on top.
    fn bash(
        &self,
        command: &str,
        extra_env: &[(&str, &OsStr)],
    ) -> std::io::Result<(tokio::process::Command, Option<Box<dyn LaunchedNetwork>>)> {
        let args = [OsStr::new("-c"), OsStr::new(command)];
        self.command(false, OsStr::new("bash"), &args, extra_env)
    }

    /// `program args` as a long-lived server talking over its stdin and stdout (an MCP
    /// server), started like every command of the task: through the sandbox when there
    /// is one (which passes both through), scrubbed environment, private `TMPDIR`, and
    /// `extra_env` (the server's `env:`) on top.
    /// Under a proxied policy the command's network comes with it: keep it until the
    /// command has ended.
    pub(crate) fn stdio_command<K: AsRef<OsStr>, V: AsRef<OsStr>>(
        &self,
        program: &OsStr,
        args: &[&OsStr],
        extra_env: &[(K, V)],
    ) -> std::io::Result<(tokio::process::Command, Option<Box<dyn LaunchedNetwork>>)> {
        self.command(true, program, args, extra_env)
    }

    /// The command's whole environment goes to the launcher through its environment
    /// file, never onto the launcher process itself (see `sandbox::env_channel`): what
    /// the command is given, from wherever it came, cannot steer the launcher.
    fn command<K: AsRef<OsStr>, V: AsRef<OsStr>>(
        &self,
        stdio: bool,
        program: &OsStr,
        args: &[&OsStr],
        extra_env: &[(K, V)],
    ) -> std::io::Result<(tokio::process::Command, Option<Box<dyn LaunchedNetwork>>)> {
        let mut env = scrub(std::env::vars_os(), &self.pass, &self.withheld);
        if let Some(tmpdir) = &self.tmpdir {
            env.push(("TMPDIR".into(), tmpdir.into()));
        }
        env.extend(
            self.vars
                .iter()
                .map(|(k, v)| (OsString::from(k), OsString::from(v))),
        );
        env.extend(
            extra_env
                .iter()
                .map(|(k, v)| (k.as_ref().to_os_string(), v.as_ref().to_os_string())),
        );
        let Some(launcher) = &self.sandbox else {
            let mut cmd = tokio::process::Command::new(program);
            cmd.args(args).env_clear().envs(env);
            return Ok((cmd, None));
        };
        let proxied = launcher.policy().is_some_and(|policy| policy.proxied);
        let network = match (&self.network, proxied) {
            (Some(gate), true) => Some(gate.open(self.origin.clone())?),
            // A proxied policy without its rules would start a command whose every
            // connection is refused with nothing recorded: never.
            (None, true) => {
                return Err(std::io::Error::other(
                    "the command's network rules are missing (an internal error)",
                ));
            }
            (_, false) => None,
        };
        if let Some(network) = &network {
            let value_of = |name: &str| {
                env.iter()
                    .rev()
                    .find(|(n, _)| n == name)
                    .map(|(_, v)| v.clone())
            };
            let proxy_env = proxy_environment(network.port(), value_of);
            env.extend(proxy_env);
        }
        let cmd = launcher.command(stdio, program, args, &env, network.as_deref())?;
        Ok((cmd, network))
    }
}

/// Start `command` with `bash -c` in `cwd` in its own process group, stdin closed,
/// stdout and stderr into one pipe, with [`NON_INTERACTIVE_ENV`], as `env` says
/// (scrubbed environment; the sandbox and private `TMPDIR` when it has them). Returns the
/// child and the pipe's read end (the parent keeps no copy of the write end).
pub(crate) fn spawn_shell(
    command: &str,
    cwd: &Path,
    extra_env: &[(&str, &OsStr)],
    env: &CommandEnv,
) -> std::io::Result<Spawned> {
    spawn_shell_with(command, cwd, extra_env, env, false).map(|(spawned, _)| spawned)
}

/// [`spawn_shell`], with stderr on a pipe of its own (returned) when `split_stderr`.
fn spawn_shell_with(
    command: &str,
    cwd: &Path,
    extra_env: &[(&str, &OsStr)],
    env: &CommandEnv,
    split_stderr: bool,
) -> std::io::Result<(Spawned, Option<std::io::PipeReader>)> {
    let (reader, writer) = std::io::pipe()?;
    let (err_reader, writer_err) = if split_stderr {
        let (err_reader, err_writer) = std::io::pipe()?;
        (Some(err_reader), err_writer)
    } else {
        (None, writer.try_clone()?)
    };
    let mut all_env: Vec<(&str, &OsStr)> = NON_INTERACTIVE_ENV
        .iter()
        .map(|(k, v)| (*k, OsStr::new(v)))
        .collect();
    all_env.extend_from_slice(extra_env);
    let (mut cmd, mut network) = env.bash(command, &all_env)?;
    let lifeline = if env.sandbox.is_some() {
        let (lifeline_reader, lifeline) = std::io::pipe()?;
        cmd.stdin(lifeline_reader);
        Some(lifeline)
    } else {
        cmd.stdin(Stdio::null());
        None
    };
    cmd.current_dir(cwd)
        .stdout(writer)
        .stderr(writer_err)
        .process_group(0);
    let spawned = cmd.spawn();
    // The command owns the parent's copies of the pipe's write end: drop them, or the
    // reader never sees end-of-file.
    drop(cmd);
    let child = spawned?;
    if let Some(network) = &mut network {
        network.started();
    }
    let stopper = Arc::new(Stopper {
        pgid: group_of(&child),
        launched: lifeline.is_some(),
        lifeline: Mutex::new(lifeline),
        stopped: tokio::sync::Notify::new(),
        requested: std::sync::atomic::AtomicBool::new(false),
    });
    let token = env.tracker.register(&stopper);
    let spawned = Spawned {
        child: Some(child),
        reader: Some(reader),
        stopper,
        token: Some(token),
        network,
    };
    Ok((spawned, err_reader))
}

/// A started command: its launcher (or shell), its output pipe and how to stop it. If
/// dropped before the launcher was reaped (a cancelled call), the command is stopped and
/// a task waits for the launcher's exit, keeping the command registered until then.
pub(crate) struct Spawned {
    pub child: Option<tokio::process::Child>,
    pub reader: Option<std::io::PipeReader>,
    pub stopper: Arc<Stopper>,
    pub token: Option<Token>,
    /// The command's proxy under rules naming hosts, until it has ended.
    pub network: Option<Box<dyn LaunchedNetwork>>,
}

impl Spawned {
    /// The output pipe (once).
    pub(crate) fn take_reader(&mut self) -> Option<std::io::PipeReader> {
        self.reader.take()
    }

    /// Wait for the launcher's exit.
    pub(crate) async fn wait(&mut self) -> std::io::Result<std::process::ExitStatus> {
        match self.child.as_mut() {
            Some(child) => child.wait().await,
            None => Err(std::io::Error::other("the command was already reaped")),
        }
    }

    /// Stop the command and wait until its launcher is gone.
    pub(crate) async fn stop_and_wait(&mut self) {
        self.stopper.stop();
        if let Some(child) = self.child.as_mut() {
            wait_stopped(child, &self.stopper).await;
        }
        // Gone: no longer a live command of the task.
        self.child = None;
        self.token = None;
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        self.stopper.stop();
        let (Some(mut child), Some(token)) = (self.child.take(), self.token.take()) else {
            return;
        };
        let stopper = Arc::clone(&self.stopper);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                wait_stopped(&mut child, &stopper).await;
                drop(token);
            });
        }
    }
}

/// Wait for a stopped command's launcher to exit (it kills the command's tree first);
/// after [`STOP_GRACE`], kill it outright.
pub(crate) async fn wait_stopped(child: &mut tokio::process::Child, stopper: &Stopper) {
    if tokio::time::timeout(STOP_GRACE, child.wait())
        .await
        .is_err()
    {
        stopper.force();
        let _ = child.kill().await;
    }
}

/// The process group a child leads (it was spawned with `process_group(0)`).
pub(crate) fn group_of(child: &tokio::process::Child) -> Option<Pid> {
    child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .and_then(Pid::from_raw)
}

/// Kill every process of group `pgid`. ESRCH (the group is already gone) is the
/// expected, harmless failure.
pub(crate) fn kill_group(pgid: Pid) {
    let _ = kill_process_group(pgid, Signal::KILL);
}

/// Copy everything from `reader` into `sink` until end-of-file, on a blocking thread.
pub(crate) fn pump(
    mut reader: std::io::PipeReader,
    sink: Arc<Mutex<Capture>>,
) -> tokio::task::JoinHandle<()> {
    tokio::task::spawn_blocking(move || {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => lock(&sink).push(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
    })
}

/// Run `command` with `bash -c` in `cwd`, stdin closed, killed with its whole process
/// group at `timeout`. The child sees [`NON_INTERACTIVE_ENV`] (`CI=true`, `DROVER=1`, …),
/// so scripts can tell they run unattended and nothing waits for a person, on top of
/// drover's environment scrubbed as `env` says (secret-looking variables removed unless
/// passed, the model key's variable always). Checks run this way with an `env` that has
/// no sandbox and no private `TMPDIR`: they are the user's commands, but they run code
/// the agent wrote (`cargo test`), which has no business with drover's keys.
pub(crate) async fn run_shell(
    command: &str,
    cwd: &Path,
    timeout: Duration,
    env: &CommandEnv,
) -> std::io::Result<ShellOutcome> {
    run_spawned(spawn_shell(command, cwd, &[], env)?, timeout).await
}

/// [`run_shell`] the agent's way: started as `env` says (scrubbed environment, private
/// `TMPDIR`, sandbox), with more environment variables (set after
/// [`NON_INTERACTIVE_ENV`]).
pub(crate) async fn run_shell_with_env(
    command: &str,
    cwd: &Path,
    timeout: Duration,
    extra_env: &[(&str, &OsStr)],
    env: &CommandEnv,
) -> std::io::Result<ShellOutcome> {
    run_spawned(spawn_shell(command, cwd, extra_env, env)?, timeout).await
}

/// How a command with separate stdout and stderr ended (a hook's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SplitOutcome {
    /// None when killed by a signal or the timeout.
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub stdout: String,
    pub stderr: String,
    /// The bytes cut from the middle of `stdout` and `stderr` (see
    /// [`ShellOutcome::omitted`]).
    pub stdout_omitted: u64,
    pub stderr_omitted: u64,
}

/// [`run_shell_with_env`] with stdout and stderr kept apart and stdin read from the file
/// `input` (a hook's JSON): the file is opened by the shell itself, as its first
/// redirection, because the launcher's own stdin is the command's lifeline.
pub(crate) async fn run_shell_split(
    command: &str,
    cwd: &Path,
    timeout: Duration,
    extra_env: &[(&str, &OsStr)],
    env: &CommandEnv,
    input: &Path,
) -> std::io::Result<SplitOutcome> {
    let script = format!("exec 0<\"$DROVER_HOOK_INPUT\" || exit 1\n{command}");
    let mut all_env: Vec<(&str, &OsStr)> = extra_env.to_vec();
    all_env.push(("DROVER_HOOK_INPUT", input.as_os_str()));
    run_split(&script, cwd, timeout, &all_env, env).await
}

/// [`run_shell_with_env`] with stdout and stderr kept apart, stdin closed (an MCP
/// server's `headersHelper`, whose stdout is data and whose stderr is its log).
pub(crate) async fn run_shell_apart(
    command: &str,
    cwd: &Path,
    timeout: Duration,
    extra_env: &[(&str, &OsStr)],
    env: &CommandEnv,
) -> std::io::Result<SplitOutcome> {
    run_split(command, cwd, timeout, extra_env, env).await
}

async fn run_split(
    command: &str,
    cwd: &Path,
    timeout: Duration,
    extra_env: &[(&str, &OsStr)],
    env: &CommandEnv,
) -> std::io::Result<SplitOutcome> {
    let (spawned, err_reader) = spawn_shell_with(command, cwd, extra_env, env, true)?;
    let stderr = Arc::new(Mutex::new(Capture::default()));
    let err_task = err_reader.map(|reader| pump(reader, Arc::clone(&stderr)));
    let outcome = run_spawned(spawned, timeout).await?;
    if let Some(task) = err_task {
        let _ = tokio::time::timeout(DRAIN_GRACE, task).await;
    }
    let (stderr, stderr_omitted) = {
        let capture = lock(&stderr);
        (capture.render(), capture.dropped())
    };
    Ok(SplitOutcome {
        exit_code: outcome.exit_code,
        timed_out: outcome.timed_out,
        stdout: outcome.output,
        stderr,
        stdout_omitted: outcome.omitted,
        stderr_omitted,
    })
}

async fn run_spawned(mut spawned: Spawned, timeout: Duration) -> std::io::Result<ShellOutcome> {
    let capture = Arc::new(Mutex::new(Capture::default()));
    let reader_task = spawned
        .take_reader()
        .map(|reader| pump(reader, Arc::clone(&capture)));

    let (exit_code, timed_out) = match tokio::time::timeout(timeout, spawned.wait()).await {
        Ok(status) => (status?.code(), false),
        Err(_) => (None, true),
    };
    // Whatever happened, nothing of the command may outlive the call.
    spawned.stop_and_wait().await;
    let network = match spawned.network.take() {
        Some(network) => network.finish().await,
        None => LaunchOutcome::default(),
    };
    drop(spawned);
    let Some(reader_task) = reader_task else {
        return Err(std::io::Error::other("the command's output pipe is gone"));
    };
    let drained = tokio::time::timeout(DRAIN_GRACE, reader_task).await.is_ok();
    let (mut output, omitted) = {
        let capture = lock(&capture);
        (capture.render(), capture.dropped())
    };
    if !drained {
        output.push_str(
            "\n[output stream still held open by a process that left the process group; \
             stopped reading]",
        );
    }
    Ok(ShellOutcome {
        exit_code,
        timed_out,
        output,
        omitted,
        network,
    })
}

#[cfg(test)]
#[path = "exec_tests.rs"]
mod tests;
