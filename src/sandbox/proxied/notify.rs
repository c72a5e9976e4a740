//! The launcher's thread that answers a proxied command's notified calls (see
//! [`super::connect_filter`] and [`super::on_behalf`]). A thread of its own, so a call
//! that blocks (a connection to a Unix socket whose listener never accepts) never keeps
//! the launcher from watching its lifeline and killing the command.

use std::io::Write;
use std::os::fd::{AsRawFd, OwnedFd};

use rustix::process::Pid;

use super::SandboxError;
use super::on_behalf::{self, Caller, Handled};

/// The receive buffer: the kernel's `seccomp_notif` may be larger than the one libc
/// knows, so it is sized by what the kernel says (`SECCOMP_GET_NOTIF_SIZES`).
struct Buffers {
    request: Vec<u64>,
    response: Vec<u64>,
}

impl Buffers {
    fn new() -> std::io::Result<Buffers> {
        // SAFETY: an all-zero struct of integers is valid.
        let mut sizes: libc::seccomp_notif_sizes = unsafe { std::mem::zeroed() };
        // SAFETY: seccomp(2) writes the sizes into the struct.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_GET_NOTIF_SIZES,
                0,
                &mut sizes as *mut libc::seccomp_notif_sizes,
            )
        };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let words = |kernel: u16, ours: usize| usize::from(kernel).max(ours).div_ceil(8);
        Ok(Buffers {
            request: vec![0; words(sizes.seccomp_notif, size_of::<libc::seccomp_notif>())],
            response: vec![
                0;
                words(
                    sizes.seccomp_notif_resp,
                    size_of::<libc::seccomp_notif_resp>()
                )
            ],
        })
    }
}

/// Check that this kernel can hand calls to the launcher (seccomp user notification,
/// Linux 5.0) and lend it a process's descriptor (`pidfd_getfd`, Linux 5.6): what the
/// probe runs.
pub(crate) fn available() -> Result<(), SandboxError> {
    let missing = |what: &str, e: &dyn std::fmt::Display| {
        SandboxError::Unenforceable(format!(
            "the network cannot be limited to drover's proxy: {what} is not available ({e}); use sandbox: {{network: true}} to allow the whole network knowingly"
        ))
    };
    Buffers::new().map_err(|e| missing("seccomp user notification (Linux 5.0)", &e))?;
    let pidfd = rustix::process::pidfd_open(
        rustix::process::getpid(),
        rustix::process::PidfdFlags::empty(),
    )
    .map_err(|e| missing("pidfd_open (Linux 5.3)", &e))?;
    match rustix::process::pidfd_getfd(&pidfd, 0, rustix::process::PidfdGetfdFlags::empty()) {
        Ok(_) | Err(rustix::io::Errno::BADF) => Ok(()),
        Err(e) => Err(missing("pidfd_getfd (Linux 5.6)", &e)),
    }
}

/// Answer the calls notified on `listener` until it closes, for a proxy on
/// `proxy_port`; report refused connections on `report` (drover's end of the channel)
/// as JSON lines.
pub(crate) fn serve(listener: OwnedFd, proxy_port: u16, mut report: Option<std::fs::File>) {
    // A working directory of the thread's own: relative Unix socket paths are
    // resolved by moving into the command's.
    // SAFETY: CLONE_FS only detaches this thread's root, cwd and umask.
    if unsafe { rustix::thread::unshare_unsafe(rustix::thread::UnshareFlags::FS) }.is_err() {
        return;
    }
    let Ok(mut buffers) = Buffers::new() else {
        return;
    };
    loop {
        buffers.request.fill(0);
        // SAFETY: the buffer is at least the kernel's seccomp_notif size.
        let rc = unsafe {
            libc::ioctl(
                listener.as_raw_fd(),
                libc::SECCOMP_IOCTL_NOTIF_RECV,
                buffers.request.as_mut_ptr(),
            )
        };
        if rc != 0 {
            match std::io::Error::last_os_error().raw_os_error() {
                // Interrupted, or the caller died before it was received.
                Some(libc::EINTR | libc::ENOENT) => continue,
                // No process uses the filter any more, or the listener is gone.
                _ => return,
            }
        }
        // SAFETY: the kernel filled the buffer's first bytes with a seccomp_notif, and
        // the buffer is u64-aligned.
        let request: libc::seccomp_notif =
            unsafe { std::ptr::read(buffers.request.as_ptr().cast()) };
        let handled = handle(&request, proxy_port, &listener);
        let line = match (handled.refused, handled.uninspectable) {
            (Some(target), _) => Some(
                serde_json::json!({"direct": {"address": target.ip().to_string(), "port": target.port()}}),
            ),
            (None, true) => Some(serde_json::json!({"uninspectable": {}})),
            (None, false) => None,
        };
        if let (Some(line), Some(out)) = (line, report.as_mut()) {
            // drover reads the channel for as long as the command runs; if it stopped
            // reading, the attempt is still refused.
            let _ = writeln!(out, "{line}");
        }
        respond(&listener, &mut buffers, request.id, handled.result);
    }
}

/// Act on one notified call, after making sure its process is the one that made it.
fn handle(request: &libc::seccomp_notif, proxy_port: u16, listener: &OwnedFd) -> Handled {
    let refuse = Handled {
        result: -libc::EPERM,
        refused: None,
        uninspectable: false,
    };
    let Some(pid) = i32::try_from(request.pid).ok().and_then(Pid::from_raw) else {
        return refuse;
    };
    let args = request.data.args;
    let pending = || id_valid(listener, request.id);
    let caller = Caller {
        pid,
        pending: &pending,
    };
    match i64::from(request.data.nr) {
        nr if nr == libc::SYS_connect => {
            on_behalf::connect(&caller, args[0], args[1], args[2], proxy_port)
        }
        nr if nr == libc::SYS_listen => on_behalf::listen(&caller, args[0], args[1]),
        _ => refuse,
    }
}

fn id_valid(listener: &OwnedFd, id: u64) -> bool {
    // SAFETY: the ioctl reads the u64 id.
    unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_ID_VALID,
            &id,
        ) == 0
    }
}

fn respond(listener: &OwnedFd, buffers: &mut Buffers, id: u64, result: i32) {
    buffers.response.fill(0);
    let response = libc::seccomp_notif_resp {
        id,
        val: 0,
        error: result,
        flags: 0,
    };
    // SAFETY: the buffer is u64-aligned and at least as large as seccomp_notif_resp.
    unsafe {
        std::ptr::write(buffers.response.as_mut_ptr().cast(), response);
        // ENOENT: the caller is gone; nothing to answer.
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_SEND,
            buffers.response.as_mut_ptr(),
        );
    }
}
