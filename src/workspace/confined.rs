//! A thread under the task's OS confinement, where drover's file tools do what the kernel
//! checks: opening, creating, renaming and removing files.
//!
//! Landlock restricts a thread (and the threads and processes it starts), not a process.
//! drover cannot restrict its own main threads (it writes the artifacts, starts
//! launchers, talks to the model), so each task gets one dedicated thread restricted with
//! the same filesystem rules as the task's Bash commands. The path handling of
//! [`super::Roots`] decides what to open; this thread is why a bug in that handling still
//! cannot write outside the writable directories or read a denied one: the kernel checks
//! every open made here. Reads and writes through a descriptor opened here happen on the
//! caller's thread (the kernel checks access when a file is opened, not on each read).

use std::io;
use std::sync::mpsc;

type Job = Box<dyn FnOnce() + Send>;

/// The confined thread of one task; it ends when this is dropped.
pub(crate) struct ConfinedThread {
    jobs: mpsc::Sender<Job>,
}

impl ConfinedThread {
    /// Start the thread and run `restrict` on it first (it applies the ruleset to the
    /// calling thread). An Err says why the thread could not be confined (`restrict`'s own
    /// error is its source); no job ever runs on a thread that was not.
    pub(crate) fn start<E: std::error::Error + Send + Sync + 'static>(
        restrict: impl FnOnce() -> Result<(), E> + Send + 'static,
    ) -> io::Result<Self> {
        let (jobs, queue) = mpsc::channel::<Job>();
        let (ready, confined) = mpsc::sync_channel::<Result<(), E>>(1);
        std::thread::Builder::new()
            .name("drover-files".to_string())
            .spawn(move || {
                let restricted = restrict();
                let usable = restricted.is_ok();
                let _ = ready.send(restricted);
                if usable {
                    for job in queue {
                        job();
                    }
                }
            })
            .map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("cannot start the confined file thread: {e}"),
                )
            })?;
        confined
            .recv()
            .map_err(|_| io::Error::other("the confined file thread stopped while starting"))?
            .map_err(io::Error::other)?;
        Ok(ConfinedThread { jobs })
    }

    /// Run `job` on the confined thread and wait for its result. Jobs run one at a time,
    /// in the order they were sent.
    pub(crate) fn run<T: Send + 'static>(
        &self,
        job: impl FnOnce() -> T + Send + 'static,
    ) -> io::Result<T> {
        let (result, answer) = mpsc::sync_channel(1);
        self.jobs
            .send(Box::new(move || {
                let _ = result.send(job());
            }))
            .map_err(|_| gone())?;
        answer.recv().map_err(|_| gone())
    }
}

/// The confined thread has stopped: every later file operation of the task fails with
/// this, which the tools report as drover's fault, not the model's.
#[derive(Debug, thiserror::Error)]
#[error(
    "drover's confined file thread is gone (a file operation panicked); nothing more is opened"
)]
pub(crate) struct ThreadGone;

fn gone() -> io::Error {
    io::Error::other(ThreadGone)
}

/// Whether `error` says the confined thread is gone (see [`ThreadGone`]).
pub(crate) fn is_thread_gone(error: &io::Error) -> bool {
    error
        .get_ref()
        .is_some_and(|inner| inner.is::<ThreadGone>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_run_on_the_thread_in_order_and_a_failed_restriction_runs_none() {
        let thread = ConfinedThread::start(|| Ok::<(), io::Error>(())).unwrap();
        let name = thread
            .run(|| std::thread::current().name().map(str::to_string))
            .unwrap();
        assert_eq!(name.as_deref(), Some("drover-files"));
        assert_eq!(thread.run(|| 1 + 1).unwrap(), 2);
        let error = ConfinedThread::start(|| Err(io::Error::other("no Landlock")))
            .err()
            .unwrap();
        assert_eq!(error.to_string(), "no Landlock");
    }

    #[test]
    fn a_panicking_job_fails_closed() {
        let thread = ConfinedThread::start(|| Ok::<(), io::Error>(())).unwrap();
        let job = || -> u8 { panic!("boom") };
        assert!(thread.run(job).is_err());
        assert!(
            thread.run(|| 1).is_err(),
            "no job runs after the thread died"
        );
    }
}
