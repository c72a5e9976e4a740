//! Background shells: commands started by Bash with `run_in_background`, read with
//! BashOutput and stopped with KillShell.
//!
//! Each runs in its own process group with its output captured continuously (bounded
//! memory). Nothing outlives the run: when the command's shell exits, what is left of its
//! group is killed; [`BackgroundShells::shutdown`] and dropping the registry kill every
//! group still running.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;

use super::ToolError;
use crate::sandbox::exec::{
    Capture, CommandEnv, STOP_GRACE, Stopper, lock as lock_capture, pump, spawn_shell,
};

/// How long to wait for the output pipe to close after the shell exits (only a process
/// that left the group can hold it open), and for a killed shell to be reaped.
const SETTLE: Duration = Duration::from_secs(2);

/// Where a background shell stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ShellStatus {
    Running,
    Exited(i32),
    /// Ended by a signal drover did not send.
    Signalled,
    /// Stopped by KillShell or when the run ended.
    Killed,
}

impl fmt::Display for ShellStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShellStatus::Running => write!(f, "is running"),
            ShellStatus::Exited(code) => write!(f, "exited with code {code}"),
            ShellStatus::Signalled => write!(f, "was terminated by a signal"),
            ShellStatus::Killed => write!(f, "was killed"),
        }
    }
}

/// What BashOutput reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ShellReport {
    pub command: String,
    pub status: ShellStatus,
    /// Output produced since the previous report for this shell.
    pub new_output: String,
}

struct Shell {
    command: String,
    stopper: Arc<Stopper>,
    output: Arc<Mutex<Capture>>,
    status: Arc<Mutex<ShellStatus>>,
    /// Becomes true once the shell has been reaped and its output drained.
    done: watch::Receiver<bool>,
}

#[derive(Default)]
struct Inner {
    next: u64,
    shells: BTreeMap<u64, (String, Shell)>,
    shut_down: bool,
}

/// The background shells of one run, shared by every tool call of the run.
#[derive(Default)]
pub(crate) struct BackgroundShells {
    inner: Mutex<Inner>,
}

fn lock_status(status: &Mutex<ShellStatus>) -> std::sync::MutexGuard<'_, ShellStatus> {
    // Every mutation is a single assignment, so a poisoned lock is still consistent.
    status.lock().unwrap_or_else(|e| e.into_inner())
}

impl BackgroundShells {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // Every mutation is a single insert or flag change, so a poisoned lock is usable.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Start `command` in `cwd` as `env` says (environment, sandbox) and return its id
    /// (`bash_1`, `bash_2`, … in start order). Outside a tokio runtime nothing is
    /// started and the error says why.
    pub(crate) fn start(
        &self,
        command: &str,
        cwd: &Path,
        env: &CommandEnv,
    ) -> Result<String, ToolError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|e| {
            ToolError::Internal(format!("background shells need the async runtime: {e}"))
        })?;
        let mut inner = self.lock();
        if inner.shut_down {
            return Err(ToolError::Failed(
                "the run is ending; no new background shells can start".to_string(),
            ));
        }
        let mut spawned = spawn_shell(command, cwd, &[], env)
            .map_err(|e| ToolError::Failed(format!("could not start the command: {e}")))?;
        inner.next += 1;
        let id = format!("bash_{}", inner.next);
        let stopper = Arc::clone(&spawned.stopper);
        let waiter_stopper = Arc::clone(&stopper);
        let reader = spawned.take_reader().ok_or_else(|| {
            ToolError::Internal("could not start the command: no output pipe".to_string())
        })?;
        let output = Arc::new(Mutex::new(Capture::default()));
        let status = Arc::new(Mutex::new(ShellStatus::Running));
        let (done_tx, done) = watch::channel(false);
        let reader_task = pump(reader, Arc::clone(&output));
        let waiter_status = Arc::clone(&status);
        runtime.spawn(async move {
            let exit = tokio::select! {
                exit = spawned.wait() => exit,
                // Stopped: the launcher kills the tree and exits, or is killed after a grace.
                () = waiter_stopper.stopped() => {
                    spawned.stop_and_wait().await;
                    Err(std::io::Error::other("stopped"))
                }
            };
            // The shell is gone: so is everything it left running.
            spawned.stop_and_wait().await;
            drop(spawned);
            let _ = tokio::time::timeout(SETTLE, reader_task).await;
            {
                let mut status = lock_status(&waiter_status);
                if *status == ShellStatus::Running {
                    *status = match exit.ok().and_then(|s| s.code()) {
                        Some(code) => ShellStatus::Exited(code),
                        None => ShellStatus::Signalled,
                    };
                }
            }
            let _ = done_tx.send(true);
        });
        let shell = Shell {
            command: command.to_string(),
            stopper,
            output,
            status,
            done,
        };
        let number = inner.next;
        inner.shells.insert(number, (id.clone(), shell));
        Ok(id)
    }

    fn unknown(inner: &Inner, id: &str) -> String {
        let known: Vec<&str> = inner.shells.values().map(|(id, _)| id.as_str()).collect();
        if known.is_empty() {
            format!(
                "No background shell with id {id}: none has been started in this run (use Bash with run_in_background: true)."
            )
        } else {
            format!(
                "No background shell with id {id}. Known shells: {}.",
                known.join(", ")
            )
        }
    }

    fn find<'a>(inner: &'a Inner, id: &str) -> Option<&'a Shell> {
        inner
            .shells
            .values()
            .find(|(known, _)| known == id)
            .map(|(_, shell)| shell)
    }

    /// The status of shell `id` and its output since the previous call; an error naming
    /// the known ids when there is no such shell.
    pub(crate) fn read(&self, id: &str) -> Result<ShellReport, ToolError> {
        let inner = self.lock();
        let Some(shell) = Self::find(&inner, id) else {
            return Err(ToolError::Failed(Self::unknown(&inner, id)));
        };
        // Status first: output that arrived before an exit is then in this report.
        let status = *lock_status(&shell.status);
        let new_output = lock_capture(&shell.output).take();
        Ok(ShellReport {
            command: shell.command.clone(),
            status,
            new_output,
        })
    }

    /// Kill shell `id` with its whole process group and wait (briefly) until it is gone.
    /// Returns the status it had before: killing a shell that already ended does nothing.
    pub(crate) async fn kill(&self, id: &str) -> Result<ShellStatus, ToolError> {
        let mut done = {
            let inner = self.lock();
            let Some(shell) = Self::find(&inner, id) else {
                return Err(ToolError::Failed(Self::unknown(&inner, id)));
            };
            let mut status = lock_status(&shell.status);
            let before = *status;
            if before != ShellStatus::Running {
                return Ok(before);
            }
            *status = ShellStatus::Killed;
            shell.stopper.stop();
            shell.done.clone()
        };
        let _ = tokio::time::timeout(STOP_GRACE + SETTLE, done.wait_for(|done| *done)).await;
        Ok(ShellStatus::Running)
    }

    /// Kill every background shell still running and refuse new ones. The run calls this
    /// when the agent loop ends, so checks never race a leftover server or watcher.
    pub(crate) fn shutdown(&self) {
        self.lock().shut_down = true;
        self.stop_running();
    }

    /// Kill every background shell still running, still taking new ones: between two
    /// rounds of a task (its checks run in between, and nothing may race them).
    pub(crate) fn stop_running(&self) {
        let inner = self.lock();
        for (_, shell) in inner.shells.values() {
            let mut status = lock_status(&shell.status);
            if *status == ShellStatus::Running {
                *status = ShellStatus::Killed;
                shell.stopper.stop();
            }
        }
    }

    /// Ids of the shells started so far, in start order.
    #[cfg(test)]
    pub(crate) fn ids(&self) -> Vec<String> {
        self.lock()
            .shells
            .values()
            .map(|(id, _)| id.clone())
            .collect()
    }
}

/// Whatever path the run takes out (an error, a panic elsewhere, a cancelled future),
/// the last clone of the context going away kills every group still running.
impl Drop for BackgroundShells {
    fn drop(&mut self) {
        self.shutdown();
    }
}

#[cfg(test)]
#[path = "background_tests.rs"]
mod tests;
