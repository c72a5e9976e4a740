//! One child process measured whole: its wall time, what the kernel counted for it when
//! it was reaped (`wait4`: peak RSS, CPU time, blocks written) and the most file
//! descriptors and anonymous memory it held at once (sampled from `/proc/<pid>` while it
//! runs).

use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How often the open file descriptors and anonymous memory are sampled.
const FD_SAMPLE_EVERY: Duration = Duration::from_millis(50);

/// What one finished child cost.
#[derive(Debug, Clone)]
pub(super) struct Measured {
    pub wall: Duration,
    /// The exit code; None when a signal ended it.
    pub exit_code: Option<i32>,
    /// `ru_maxrss` (KiB): the child's peak resident set. Linux reports the larger of the
    /// child's own and that of the largest descendant it waited for (git, here: smaller).
    pub max_rss_kib: u64,
    /// User and system CPU time of the child and the descendants it waited for.
    pub cpu: Duration,
    /// Blocks (512 bytes) the child and its waited-for descendants wrote to disk.
    pub written_blocks: u64,
    /// The most entries seen in `/proc/<pid>/fd` at once.
    pub peak_fds: usize,
    /// The largest `RssAnon` (KiB) seen in `/proc/<pid>/status`: the process's own heap
    /// and stacks, without the pages of its executable, which `ru_maxrss` counts too and
    /// which do not grow with the work (a debug build maps hundreds of MiB of them).
    pub peak_anon_kib: u64,
}

/// Spawn `command`, sample its descriptors until it ends, reap it with `wait4`.
pub(super) fn measure(command: &mut Command) -> std::io::Result<Measured> {
    measure_while(command, |_| ()).map(|(measured, ())| measured)
}

/// Spawn `command`, hand it to `during` (which talks to it through its pipes) while its
/// descriptors and memory are sampled, close its stdin, and reap it with `wait4`: what
/// it cost, and what `during` returned.
pub(super) fn measure_while<T>(
    command: &mut Command,
    during: impl FnOnce(&mut Child) -> T,
) -> std::io::Result<(Measured, T)> {
    let start = Instant::now();
    // Reaped below by wait4, not by std: dropping a `Child` neither waits nor kills.
    let mut child = command.spawn()?;
    let pid = child.id();
    let done = AtomicBool::new(false);
    let (waited, wall, (peak_fds, peak_anon_kib), result) = std::thread::scope(|scope| {
        let sampler = scope.spawn(|| {
            let (mut fds, mut anon) = (0, 0);
            while !done.load(Ordering::Relaxed) {
                if let Some(count) = open_fds(pid) {
                    fds = fds.max(count);
                }
                if let Some(kib) = anonymous_kib(pid) {
                    anon = anon.max(kib);
                }
                std::thread::sleep(FD_SAMPLE_EVERY);
            }
            (fds, anon)
        });
        let result = during(&mut child);
        // A child that serves until its stdin closes (the proxy of `bench --proxy`) ends.
        drop(child.stdin.take());
        let waited = wait4(pid);
        let wall = start.elapsed();
        done.store(true, Ordering::Relaxed);
        (waited, wall, sampler.join().unwrap_or((0, 0)), result)
    });
    drop(child);
    let (status, usage) = waited?;
    let time = |t: libc::timeval| {
        Duration::from_secs(u64::try_from(t.tv_sec).unwrap_or(0))
            + Duration::from_micros(u64::try_from(t.tv_usec).unwrap_or(0))
    };
    let measured = Measured {
        wall,
        exit_code: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
        max_rss_kib: u64::try_from(usage.ru_maxrss).unwrap_or(0),
        cpu: time(usage.ru_utime) + time(usage.ru_stime),
        written_blocks: u64::try_from(usage.ru_oublock).unwrap_or(0),
        peak_fds,
        peak_anon_kib,
    };
    Ok((measured, result))
}

/// The number of open descriptors of `pid`, None once it is gone.
fn open_fds(pid: u32) -> Option<usize> {
    let listing = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
    Some(listing.count())
}

/// The `RssAnon` of `pid` in KiB, None once it is gone (or on a kernel without it).
fn anonymous_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|line| line.starts_with("RssAnon:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Block until the child `pid` ends and reap it: its wait status and resource usage.
fn wait4(pid: u32) -> std::io::Result<(libc::c_int, libc::rusage)> {
    let pid = libc::pid_t::try_from(pid).map_err(std::io::Error::other)?;
    let mut status: libc::c_int = 0;
    // SAFETY: `rusage` is plain integers and timevals, for which all zeroes is valid.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: both pointers are to live locals of the right types; `pid` is this
        // process's own child, not yet reaped (std's `Child` is never waited on).
        let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if reaped == pid {
            return Ok((status, usage));
        }
        let error = std::io::Error::last_os_error();
        if error.kind() != std::io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_is_reaped_with_its_exit_code_and_usage() {
        let measured = measure(Command::new("sh").args(["-c", "sleep 0.2; exit 7"])).unwrap();
        assert_eq!(measured.exit_code, Some(7));
        assert!(measured.wall >= Duration::from_millis(200));
        assert!(measured.max_rss_kib > 0);
        // stdin, stdout, stderr at least, seen while it slept.
        assert!(measured.peak_fds >= 3, "{measured:?}");
        assert!(measured.peak_anon_kib > 0, "{measured:?}");
    }
}
