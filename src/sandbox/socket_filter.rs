//! With the network off, a command may create Unix sockets only. Landlock has rules for
//! TCP alone: UDP (a DNS query to a listener on 127.0.0.1 carries data out), raw and
//! netlink sockets stay open to it, and the private network namespace that cuts them
//! needs root, which CI runners do not have. So the launcher installs a seccomp filter:
//! `socket()` and `socketpair()` fail with EPERM for every family but `AF_UNIX`, and
//! io_uring, which creates sockets without either call, fails with EPERM whole.
//!
//! The filter judges the calls of the launcher's own architecture only. A process of
//! another one (i386's `socketcall` through `int 0x80` on x86_64, arm32 on aarch64) is
//! killed at its first system call; x86_64's x32 calls carry the native architecture
//! with a high bit set in the number, so their socket and io_uring calls are refused by
//! number too.

use std::collections::BTreeMap;

use seccompiler::{
    SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    TargetArch,
};

use super::SandboxError;

/// The bit x86_64 sets in the number of an x32 system call.
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: i64 = 0x4000_0000;

/// Which sockets a command may create.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Sockets {
    /// Unix sockets only: the network is off.
    UnixOnly,
    /// Unix sockets and TCP sockets (IPv4 and IPv6, plain TCP): the network through
    /// drover's proxy, where the connect filter decides where a TCP socket connects.
    /// No TCP Fast Open either: `sendto`/`sendmsg` with `MSG_FASTOPEN` connect without
    /// `connect()`.
    UnixAndTcp,
}

/// Let the current thread, and everything it starts from now on, create only the
/// sockets `sockets` says. Irreversible; the caller must be single-threaded (the
/// launcher) or mean it for this thread only.
pub(super) fn install(sockets: Sockets) -> Result<(), SandboxError> {
    let program: seccompiler::BpfProgram = filter(sockets)?
        .try_into()
        .map_err(|e| SandboxError::failed("compile the socket filter", e))?;
    seccompiler::apply_filter(&program)
        .map_err(|e| SandboxError::failed("install the socket filter (seccomp)", e))
}

/// One argument condition (the arguments are ints: the kernel reads the low 32 bits,
/// and so does the rule).
fn arg(index: u8, op: SeccompCmpOp, value: i32) -> Result<SeccompCondition, SandboxError> {
    SeccompCondition::new(index, SeccompCmpArgLen::Dword, op, value as u32 as u64)
        .map_err(|e| SandboxError::failed("build the socket filter", e))
}

fn rule(conditions: Vec<SeccompCondition>) -> Result<SeccompRule, SandboxError> {
    SeccompRule::new(conditions).map_err(|e| SandboxError::failed("build the socket filter", e))
}

/// The rules (any one matching refuses the call) of `socket()` for `sockets`.
fn socket_rules(sockets: Sockets) -> Result<Vec<SeccompRule>, SandboxError> {
    if sockets == Sockets::UnixOnly {
        return Ok(vec![rule(vec![arg(0, SeccompCmpOp::Ne, libc::AF_UNIX)?])?]);
    }
    let mut rules = vec![rule(vec![
        arg(0, SeccompCmpOp::Ne, libc::AF_UNIX)?,
        arg(0, SeccompCmpOp::Ne, libc::AF_INET)?,
        arg(0, SeccompCmpOp::Ne, libc::AF_INET6)?,
    ])?];
    for family in [libc::AF_INET, libc::AF_INET6] {
        // The type's low four bits (the flags SOCK_NONBLOCK and SOCK_CLOEXEC are above
        // them): every type but SOCK_STREAM is refused.
        for kind in (0..16).filter(|kind| *kind != libc::SOCK_STREAM) {
            rules.push(rule(vec![
                arg(0, SeccompCmpOp::Eq, family)?,
                arg(1, SeccompCmpOp::MaskedEq(0xf), kind)?,
            ])?);
        }
        // Plain TCP only (0 or IPPROTO_TCP): not SCTP or MPTCP over a stream socket.
        rules.push(rule(vec![
            arg(0, SeccompCmpOp::Eq, family)?,
            arg(2, SeccompCmpOp::Ne, 0)?,
            arg(2, SeccompCmpOp::Ne, libc::IPPROTO_TCP)?,
        ])?);
    }
    Ok(rules)
}

/// The filter: the calls it matches fail with EPERM, every other call is allowed.
fn filter(sockets: Sockets) -> Result<SeccompFilter, SandboxError> {
    let failed = |e| SandboxError::failed("build the socket filter", e);
    let not_unix = rule(vec![arg(0, SeccompCmpOp::Ne, libc::AF_UNIX)?])?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    rules.insert(libc::SYS_socket, socket_rules(sockets)?);
    rules.insert(libc::SYS_socketpair, vec![not_unix]);
    if sockets == Sockets::UnixAndTcp {
        let fast_open = libc::MSG_FASTOPEN;
        let flags_at = [
            (libc::SYS_sendto, 3),
            (libc::SYS_sendmsg, 2),
            (libc::SYS_sendmmsg, 3),
        ];
        for (call, index) in flags_at {
            let masked = SeccompCmpOp::MaskedEq(fast_open as u32 as u64);
            rules.insert(call, vec![rule(vec![arg(index, masked, fast_open)?])?]);
        }
    }
    // An empty rule list matches the call whatever its arguments.
    for call in [
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
    ] {
        rules.insert(call, Vec::new());
    }
    #[cfg(target_arch = "x86_64")]
    {
        // Every call above in its x32 form is refused whatever its arguments.
        let native: Vec<i64> = rules.keys().copied().collect();
        for call in native {
            rules.insert(call | X32_SYSCALL_BIT, Vec::new());
        }
    }
    SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        target_arch()?,
    )
    .map_err(failed)
}

/// The architecture drover was built for, which is the one its launcher runs as.
fn target_arch() -> Result<TargetArch, SandboxError> {
    TargetArch::try_from(std::env::consts::ARCH).map_err(|_| {
        SandboxError::Unenforceable(format!(
            "the network cannot be cut on {}: drover has no socket filter for this architecture; set sandbox: {{network: true}} to allow the network",
            std::env::consts::ARCH
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The filter is installed on a thread of its own: the test process stays as it was.
    fn on_filtered_thread<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        std::thread::spawn(move || {
            install(Sockets::UnixOnly).unwrap();
            f()
        })
        .join()
        .unwrap()
    }

    fn socket(domain: i32, kind: i32) -> std::io::Result<()> {
        // SAFETY: socket(2) takes plain integers; a descriptor it returns is closed.
        let fd = unsafe { libc::socket(domain, kind, 0) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: fd was just returned by socket(2) and is owned here.
        unsafe { libc::close(fd) };
        Ok(())
    }

    #[test]
    fn only_unix_sockets_can_be_created() {
        let results = on_filtered_thread(|| {
            let mut pair = [0; 2];
            // SAFETY: pair has room for the two descriptors socketpair(2) writes.
            let unix_pair =
                unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM, 0, pair.as_mut_ptr()) };
            if unix_pair == 0 {
                // SAFETY: both were just returned by socketpair(2).
                unsafe {
                    libc::close(pair[0]);
                    libc::close(pair[1]);
                }
            }
            // SAFETY: as above; AF_INET pairs do not exist, the filter answers first.
            let inet_pair =
                unsafe { libc::socketpair(libc::AF_INET, libc::SOCK_STREAM, 0, pair.as_mut_ptr()) };
            let inet_pair_errno = std::io::Error::last_os_error().raw_os_error();
            (
                socket(libc::AF_UNIX, libc::SOCK_DGRAM).is_ok(),
                unix_pair,
                [
                    socket(libc::AF_INET, libc::SOCK_DGRAM),
                    socket(libc::AF_INET6, libc::SOCK_STREAM),
                    socket(libc::AF_NETLINK, libc::SOCK_RAW),
                    socket(libc::AF_PACKET, libc::SOCK_RAW),
                ]
                .map(|r| r.err().and_then(|e| e.raw_os_error())),
                (inet_pair, inet_pair_errno),
            )
        });
        let (unix, unix_pair, others, inet_pair) = results;
        assert!(unix, "an AF_UNIX socket is allowed");
        assert_eq!(unix_pair, 0, "an AF_UNIX socketpair is allowed");
        for errno in others {
            assert_eq!(errno, Some(libc::EPERM));
        }
        assert_eq!(inet_pair, (-1, Some(libc::EPERM)));
    }

    #[test]
    fn proxied_commands_get_tcp_but_no_udp_raw_or_fast_open() {
        let results = std::thread::spawn(|| {
            install(Sockets::UnixAndTcp).unwrap();
            let kinds = [
                (libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC),
                (libc::AF_INET6, libc::SOCK_STREAM | libc::SOCK_NONBLOCK),
                (libc::AF_UNIX, libc::SOCK_DGRAM),
                (libc::AF_INET, libc::SOCK_DGRAM),
                (libc::AF_INET6, libc::SOCK_DGRAM),
                (libc::AF_INET, libc::SOCK_RAW),
                (libc::AF_INET, libc::SOCK_SEQPACKET),
                (libc::AF_NETLINK, libc::SOCK_RAW),
                (libc::AF_PACKET, libc::SOCK_RAW),
            ];
            let made: Vec<bool> = kinds
                .iter()
                .map(|(domain, kind)| socket(*domain, *kind).is_ok())
                .collect();
            // SAFETY: socket(2) with plain integers; MPTCP over a stream socket.
            let mptcp = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM, 262) };
            // SAFETY: sendto(2) on an invalid descriptor reads nothing: the filter
            // answers before the kernel looks at the arguments.
            let fast_open = unsafe {
                libc::sendto(
                    -1,
                    std::ptr::null(),
                    0,
                    libc::MSG_FASTOPEN,
                    std::ptr::null(),
                    0,
                )
            };
            let fast_open_errno = std::io::Error::last_os_error().raw_os_error();
            (made, mptcp, (fast_open, fast_open_errno))
        })
        .join()
        .unwrap();
        let (made, mptcp, fast_open) = results;
        assert_eq!(
            made,
            [true, true, true, false, false, false, false, false, false]
        );
        assert_eq!(mptcp, -1, "MPTCP is refused");
        assert_eq!(fast_open, (-1, Some(libc::EPERM)));
    }

    #[test]
    fn io_uring_is_refused() {
        let errno = on_filtered_thread(|| {
            let mut params = [0u8; 120];
            // SAFETY: io_uring_setup(2) reads and writes at most its 120-byte params.
            let rc = unsafe { libc::syscall(libc::SYS_io_uring_setup, 4, params.as_mut_ptr()) };
            (rc, std::io::Error::last_os_error().raw_os_error())
        });
        assert_eq!(errno, (-1, Some(libc::EPERM)));
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn x32_socket_calls_are_refused() {
        let result = on_filtered_thread(|| {
            // SAFETY: socket(2) through its x32 number takes plain integers.
            let rc = unsafe {
                libc::syscall(
                    libc::SYS_socket | X32_SYSCALL_BIT,
                    libc::AF_INET,
                    libc::SOCK_DGRAM,
                    0,
                )
            };
            (rc, std::io::Error::last_os_error().raw_os_error())
        });
        // EPERM from the filter; without it, a kernel with x32 would give a socket and
        // one without would say ENOSYS.
        assert_eq!(result, (-1, Some(libc::EPERM)));
    }
}
