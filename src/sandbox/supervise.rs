//! The launcher as the supervisor of one command: nothing the command starts outlives it.
//!
//! A command can leave its process group and session (`setsid`, a double fork) and so
//! escape a kill of its group; such a process once rewrote a script between the diff and
//! a check, and drover's summary after drover exited. So the launcher does not `exec` the
//! command: it stays as its parent and
//!
//! - makes itself a child subreaper, so every orphan of the command's tree is re-parented
//!   to it rather than to init, and can be found and killed;
//! - when it can (CAP_SYS_ADMIN, i.e. as root), starts the command as process 1 of a new
//!   PID namespace: when that process ends, the kernel kills everything left in the
//!   namespace, and nothing in it can escape;
//! - starts the command in a new session, with no controlling terminal (no `/dev/tty` to
//!   push keystrokes into with `TIOCSTI`), stdin `/dev/null`;
//! - watches its own stdin, the *lifeline*: drover holds the pipe's write end, so when
//!   drover wants the command gone (a timeout, KillShell, the task's end) or drover
//!   itself dies (even by SIGKILL), the pipe closes and the launcher kills the whole tree.
//!   In stdio mode (an MCP server) stdin and stdout are the command's channel, passed
//!   through; the launcher then only watches stdin for its hang-up, never reading it,
//!   and lets go of its own stdout once the command has started, so that when the
//!   command closes its stdout drover reads the end of the channel at once;
//! - when the command's main process ends, kills whatever it left behind.
//!
//! The launcher exits with the command's exit code (128 + the signal when it was killed
//! by one; [`EXIT_LIFELINE_CUT`] when drover cut the lifeline).

use super::SandboxError;
use std::ffi::OsString;
use std::io::ErrorKind;
use std::os::unix::process::CommandExt;
use std::process::Stdio;
use std::time::Duration;

use rustix::event::{PollFd, PollFlags, poll};
use rustix::io::Errno;
use rustix::process::{Pid, Signal, WaitOptions, kill_process, wait};

use super::proxied::FilterHandover;
use std::os::fd::AsRawFd;
use std::sync::Arc;

/// The launcher's exit code when drover cut the lifeline and the command was killed.
pub(crate) const EXIT_LIFELINE_CUT: i32 = 137;
/// The launcher's exit code when the command cannot be executed (as a shell's).
pub(crate) const EXIT_CANNOT_EXEC: i32 = 127;

/// How often the launcher looks at the command while nothing happens on the lifeline.
const POLL_INTERVAL: Duration = Duration::from_millis(20);

/// How the command was contained, for the probe to report.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Containment {
    /// The command is process 1 of its own PID namespace.
    pub pid_namespace: bool,
}

/// Make this process the reaper of its descendants' orphans. Call first.
pub(crate) fn become_subreaper() -> Result<(), SandboxError> {
    rustix::process::set_child_subreaper(Some(rustix::process::getpid()))
        .map_err(|e| SandboxError::failed("become the subreaper of the command's processes", e))
}

/// When the kernel lets it (CAP_SYS_ADMIN), put this thread's future children in a new
/// PID namespace. After it, this process can start no thread: a thread the launcher
/// needs is started before.
pub(crate) fn enter_pid_namespace() -> Containment {
    // SAFETY: NEWPID changes only which PID namespace later children are created in,
    // not file descriptor tables.
    let pid_namespace =
        unsafe { rustix::thread::unshare_unsafe(rustix::thread::UnshareFlags::NEWPID) }.is_ok();
    Containment { pid_namespace }
}

/// Start `command` as described in the module docs, with exactly `env` as its
/// environment when given (else the launcher's own), and supervise it until it ends or
/// the lifeline closes. Returns the launcher's exit code.
/// With `proxied`, the command's process installs the connect filter before it `exec`s
/// and sends its listener to the launcher's thread (see [`super::proxied`]). With
/// `nest_domain` it enters a Landlock domain of its own, nested in the launcher's, that
/// cannot signal the launcher (see [`super::proxied::scoped`]).
pub(crate) fn run(
    command: &[OsString],
    env: Option<Vec<(OsString, OsString)>>,
    containment: Containment,
    stdio: bool,
    proxied: Option<FilterHandover>,
    nest_domain: bool,
) -> i32 {
    let Some((program, args)) = command.split_first() else {
        crate::esay!("drover sandbox: no command to run");
        return EXIT_CANNOT_EXEC;
    };
    let mut child = std::process::Command::new(program);
    child.args(args);
    if let Some(env) = env {
        // The program is looked up in this environment's PATH.
        child.env_clear().envs(env);
    }
    if !stdio {
        child.stdin(Stdio::null());
    }
    let pid_namespace = containment.pid_namespace;
    let connect_filter = proxied
        .as_ref()
        .map(|handover| (Arc::clone(&handover.filter), handover.child_end.as_raw_fd()));
    // SAFETY: between fork and exec the closure only makes raw system calls (setsid,
    // prctl, landlock, seccomp, sendmsg, close), which are async-signal-safe, on memory
    // allocated before the fork or on the stack; it allocates nothing.
    unsafe {
        child.pre_exec(move || {
            rustix::process::setsid()?;
            if pid_namespace {
                // Process 1 of the namespace dies with the launcher, and so does the
                // whole namespace.
                rustix::process::set_parent_process_death_signal(Some(Signal::KILL))?;
            }
            if nest_domain {
                super::proxied::scoped::nest_scoped_domain()?;
            }
            if let Some((filter, channel)) = &connect_filter {
                filter.install_in_child(*channel)?;
            }
            Ok(())
        });
    }
    let main = match child.spawn() {
        Ok(main) => main,
        Err(error) => {
            crate::esay!(
                "drover sandbox: cannot run {}: {error}",
                program.to_string_lossy()
            );
            return EXIT_CANNOT_EXEC;
        }
    };
    let main_pid = i32::try_from(main.id()).ok().and_then(Pid::from_raw);
    // The std handle is not waited on: the launcher reaps every child itself.
    drop(main);
    // The command's process sent its filter's listener over the pair before its exec:
    // the launcher's thread receives it from its own end.
    drop(proxied);
    if stdio {
        // The launcher writes nothing to stdout from here on; the command holds the
        // channel's only copy. Failing that, the end is read when the launcher exits.
        let _ = std::fs::File::open("/dev/null")
            .and_then(|null| rustix::stdio::dup2_stdout(&null).map_err(std::io::Error::from));
    }
    let code = supervise(main_pid, stdio);
    kill_descendants();
    code
}

/// Wait for the main process to end (its exit code) or the lifeline to close. With
/// `stdio` the lifeline is the command's own input: it is polled for its hang-up only
/// (no events asked for), so no byte meant for the command is consumed.
fn supervise(main_pid: Option<Pid>, stdio: bool) -> i32 {
    let stdin = std::io::stdin();
    loop {
        // Reap whatever ended: the main process, or orphans re-parented to us.
        loop {
            match wait(WaitOptions::NOHANG) {
                Ok(Some((pid, status))) if Some(pid) == main_pid => {
                    return match (status.exit_status(), status.terminating_signal()) {
                        (Some(code), _) => code,
                        (None, Some(signal)) => 128 + signal,
                        (None, None) => 1,
                    };
                }
                Ok(Some(_)) => continue,
                Ok(None) => break,
                Err(Errno::INTR) => continue,
                // No children at all: the main process was reaped elsewhere, or never was.
                Err(_) => return 1,
            }
        }
        let wanted = if stdio {
            PollFlags::empty()
        } else {
            PollFlags::IN
        };
        let mut fds = [PollFd::new(&stdin, wanted)];
        let timeout = rustix::event::Timespec {
            tv_sec: 0,
            tv_nsec: POLL_INTERVAL.as_nanos() as _,
        };
        match poll(&mut fds, Some(&timeout)) {
            Ok(0) | Err(Errno::INTR) => continue,
            // Only a hang-up or an error can wake a poll that asked for nothing.
            Ok(_) if stdio => return EXIT_LIFELINE_CUT,
            Ok(_) => {
                let mut buf = [0u8; 64];
                match rustix::io::read(&stdin, &mut buf) {
                    // drover writes nothing: any data is ignored, end-of-file is the cut.
                    Ok(n) if n > 0 => continue,
                    Err(Errno::INTR | Errno::AGAIN) => continue,
                    _ => return EXIT_LIFELINE_CUT,
                }
            }
            Err(_) => return EXIT_LIFELINE_CUT,
        }
    }
}

/// Kill every descendant: they are all children of this subreaper by now or will be once
/// their parents die, so kill the children, reap, and repeat until there are none.
pub(crate) fn kill_descendants() {
    loop {
        for pid in children_of_self() {
            let _ = kill_process(pid, Signal::KILL);
        }
        match wait(WaitOptions::NOHANG) {
            Ok(Some(_)) | Err(Errno::INTR) => continue,
            Ok(None) => std::thread::sleep(Duration::from_millis(2)),
            // ECHILD: nothing left.
            Err(_) => return,
        }
    }
}

/// The processes whose parent is this process, read from `/proc`.
fn children_of_self() -> Vec<Pid> {
    let me = rustix::process::getpid().as_raw_nonzero().get();
    let mut children = Vec::new();
    let entries = match std::fs::read_dir("/proc") {
        Ok(entries) => entries,
        Err(error) if error.kind() == ErrorKind::NotFound => return children,
        Err(_) => return children,
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        if parent_in_stat(&stat) == Some(me)
            && let Some(pid) = Pid::from_raw(pid)
        {
            children.push(pid);
        }
    }
    children
}

/// The parent pid in a `/proc/PID/stat` line: the second field after the command name,
/// which is in parentheses and may itself hold spaces and parentheses.
fn parent_in_stat(stat: &str) -> Option<i32> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parent_is_read_after_the_command_name() {
        assert_eq!(parent_in_stat("12 (bash) S 7 12 12 0"), Some(7));
        assert_eq!(parent_in_stat("12 (a) b) S 99 12 12 0"), Some(99));
        assert_eq!(parent_in_stat("garbage"), None);
    }
}
