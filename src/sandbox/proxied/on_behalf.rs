//! What the launcher does with a proxied command's `connect()` and `listen()` (see
//! [`super::connect_filter`]): it takes the command's socket (`pidfd_getfd`, the same
//! open socket, not a copy of its state), reads the address once into its own memory,
//! and acts on the socket itself:
//!
//! - a TCP connection to the proxy's port on 127.0.0.1 (or `::ffff:127.0.0.1` from an
//!   IPv6 socket) is made, to the address the launcher builds, not the one it read;
//! - any other internet address is refused with EACCES and reported to drover (the
//!   attempt is accounted for, the host blocked by the task's policy);
//! - a Unix socket address (a path, relative to the command's working directory, or an
//!   abstract name) is connected as given: that is no network. A path is refused when
//!   the command runs under another root directory (chroot), where the launcher would
//!   resolve it differently;
//! - `listen()` is done for Unix sockets only: a TCP socket listening (after the
//!   automatic bind `listen()` makes) would take connections from outside.
//!
//! The kernel never acts on the command's own arguments, so a thread of the command
//! rewriting the address after it was read changes nothing.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};

use rustix::io::Errno;
use rustix::process::{Pid, PidfdFlags, PidfdGetfdFlags, pidfd_getfd, pidfd_open};

/// The most of an address the launcher reads (`sockaddr_storage`).
const MAX_ADDRESS: usize = 128;

/// What became of a call: its result for the command, and an attempt to report.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Handled {
    /// 0, or the negated errno the call fails with.
    pub result: i32,
    /// A direct connection to an internet address, refused.
    pub refused: Option<SocketAddr>,
    /// The call was refused because the launcher could not look at it: the caller made
    /// itself undumpable (or runs a program it may not read), so neither its memory nor
    /// its socket is the launcher's to take. Reported, so the attempt is accounted for.
    pub uninspectable: bool,
}

impl Handled {
    fn ok() -> Handled {
        Handled::errno(Errno::from_raw_os_error(0))
    }

    fn errno(errno: Errno) -> Handled {
        Handled {
            result: -errno.raw_os_error(),
            refused: None,
            uninspectable: false,
        }
    }

    /// A failure to read the call or take its socket: a refusal of an uninspectable
    /// caller when the kernel said no (EPERM, EACCES), else that error.
    fn not_inspected(errno: Errno) -> Handled {
        let uninspectable = matches!(errno, Errno::PERM | Errno::ACCESS);
        Handled {
            uninspectable,
            ..Handled::errno(if uninspectable { Errno::PERM } else { errno })
        }
    }

    fn from(result: Result<(), Errno>) -> Handled {
        match result {
            Ok(()) => Handled::ok(),
            Err(errno) => Handled::errno(errno),
        }
    }
}

/// The process that made a notified call, and how to tell that the call is still
/// pending (so the pid still names that process: it cannot end while blocked in it).
pub(super) struct Caller<'a> {
    pub pid: Pid,
    pub pending: &'a dyn Fn() -> bool,
}

impl Caller<'_> {
    /// The caller's socket `fd`, as an open descriptor of the launcher's. Taken through
    /// a pidfd opened while the call was still pending, so it is the caller's even if
    /// the caller dies and its pid is reused meanwhile.
    fn socket(&self, fd: u64) -> Result<OwnedFd, Errno> {
        let fd = i32::try_from(fd).map_err(|_| Errno::BADF)?;
        // The call may come from any thread: a pidfd is opened for its process (the
        // thread group), whose descriptor table all its threads share.
        let pidfd = pidfd_open(thread_group_of(self.pid)?, PidfdFlags::empty())?;
        if !(self.pending)() {
            return Err(Errno::SRCH);
        }
        pidfd_getfd(&pidfd, fd, PidfdGetfdFlags::empty())
    }
}

/// The process (thread group leader) thread `tid` belongs to, from its `/proc` status.
fn thread_group_of(tid: Pid) -> Result<Pid, Errno> {
    let status = std::fs::read_to_string(format!("/proc/{}/status", tid.as_raw_nonzero()))
        .map_err(|_| Errno::SRCH)?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("Tgid:"))
        .and_then(|tgid| tgid.trim().parse::<i32>().ok())
        .and_then(Pid::from_raw)
        .ok_or(Errno::SRCH)
}

/// Read `len` bytes (at most [`MAX_ADDRESS`]) at `address` in process `pid`.
fn read_address(pid: Pid, address: u64, len: u64) -> Result<Vec<u8>, Errno> {
    let len = usize::try_from(len)
        .map_err(|_| Errno::INVAL)?
        .min(MAX_ADDRESS);
    let mut buf = vec![0u8; len];
    let local = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: len,
    };
    let remote = libc::iovec {
        iov_base: address as *mut libc::c_void,
        iov_len: len,
    };
    // SAFETY: the local buffer has `len` bytes; the remote side is read by the kernel,
    // which checks it.
    let read =
        unsafe { libc::process_vm_readv(pid.as_raw_nonzero().get(), &local, 1, &remote, 1, 0) };
    if read < 0 {
        return Err(Errno::from_raw_os_error(
            std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EFAULT),
        ));
    }
    buf.truncate(read as usize);
    Ok(buf)
}

/// Handle `connect(fd, address, len)` of `caller`, for a proxy on `proxy_port`.
pub(super) fn connect(
    caller: &Caller<'_>,
    fd: u64,
    address: u64,
    len: u64,
    proxy_port: u16,
) -> Handled {
    let bytes = match read_address(caller.pid, address, len) {
        Ok(bytes) => bytes,
        Err(errno) => return Handled::not_inspected(errno),
    };
    // Checked after the read: what was read is the caller's.
    let socket = match caller.socket(fd) {
        Ok(socket) => socket,
        Err(errno) => return Handled::not_inspected(errno),
    };
    let family = match bytes.get(..2) {
        Some(family) => u16::from_ne_bytes([family[0], family[1]]),
        None => return Handled::errno(Errno::INVAL),
    };
    match i32::from(family) {
        libc::AF_INET | libc::AF_INET6 => connect_internet(&socket, &bytes, proxy_port),
        libc::AF_UNIX => connect_unix(caller.pid, &socket, &bytes),
        // AF_UNSPEC (dissolving an association) and families the socket will refuse:
        // the kernel judges the launcher's copy.
        _ => Handled::from(raw_connect(&socket, &bytes)),
    }
}

/// An internet address: the proxy, or refused.
fn connect_internet(socket: &OwnedFd, bytes: &[u8], proxy_port: u16) -> Handled {
    let Some(target) = internet_address(bytes) else {
        return Handled::errno(Errno::INVAL);
    };
    if !is_proxy(target, proxy_port) {
        return Handled {
            refused: Some(target),
            ..Handled::errno(Errno::ACCESS)
        };
    }
    // The launcher's own address of the proxy, in the socket's family.
    let proxy = match target {
        SocketAddr::V4(_) => SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), proxy_port),
        SocketAddr::V6(_) => {
            SocketAddr::new(IpAddr::V6(Ipv4Addr::LOCALHOST.to_ipv6_mapped()), proxy_port)
        }
    };
    Handled::from(rustix::net::connect(socket, &proxy))
}

/// Whether `target` is the proxy as the command sees it.
fn is_proxy(target: SocketAddr, proxy_port: u16) -> bool {
    let loopback_v4 = match target.ip() {
        IpAddr::V4(ip) => ip == Ipv4Addr::LOCALHOST,
        IpAddr::V6(ip) => ip.to_ipv4_mapped() == Some(Ipv4Addr::LOCALHOST),
    };
    loopback_v4 && target.port() == proxy_port
}

/// The internet address in a `sockaddr_in` or `sockaddr_in6`'s bytes.
fn internet_address(bytes: &[u8]) -> Option<SocketAddr> {
    let family = i32::from(u16::from_ne_bytes([*bytes.first()?, *bytes.get(1)?]));
    let port = u16::from_be_bytes([*bytes.get(2)?, *bytes.get(3)?]);
    match family {
        libc::AF_INET => {
            let ip: [u8; 4] = bytes.get(4..8)?.try_into().ok()?;
            Some(SocketAddr::new(IpAddr::V4(Ipv4Addr::from(ip)), port))
        }
        libc::AF_INET6 => {
            let ip: [u8; 16] = bytes.get(8..24)?.try_into().ok()?;
            Some(SocketAddr::new(IpAddr::V6(Ipv6Addr::from(ip)), port))
        }
        _ => None,
    }
}

/// A Unix socket address: connected as given, a relative path from the command's
/// working directory.
fn connect_unix(pid: Pid, socket: &OwnedFd, bytes: &[u8]) -> Handled {
    let path = bytes.get(2..).unwrap_or_default();
    let abstract_name = path.first().is_none_or(|first| *first == 0);
    if abstract_name {
        return Handled::from(raw_connect(socket, bytes));
    }
    if !same_root(pid) {
        return Handled::errno(Errno::ACCESS);
    }
    if path[0] != b'/' {
        // The handling thread has a working directory of its own (see notify.rs).
        let cwd = format!("/proc/{}/cwd", pid.as_raw_nonzero());
        let moved = rustix::fs::open(
            cwd.as_str(),
            rustix::fs::OFlags::PATH | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )
        .and_then(|dir| rustix::process::fchdir(&dir));
        if let Err(errno) = moved {
            return Handled::errno(errno);
        }
    }
    Handled::from(raw_connect(socket, bytes))
}

/// Whether process `pid` has the launcher's root directory (it made no chroot).
fn same_root(pid: Pid) -> bool {
    let theirs = rustix::fs::stat(format!("/proc/{}/root/", pid.as_raw_nonzero()).as_str());
    let ours = rustix::fs::stat("/");
    matches!((theirs, ours), (Ok(a), Ok(b)) if (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino))
}

/// `connect(2)` on `socket` with the address bytes as read.
fn raw_connect(socket: &OwnedFd, bytes: &[u8]) -> Result<(), Errno> {
    // SAFETY: connect(2) reads `bytes.len()` bytes of the buffer, which has them.
    let rc = unsafe {
        libc::connect(
            socket.as_fd().as_raw_fd(),
            bytes.as_ptr().cast(),
            bytes.len() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(Errno::from_raw_os_error(
            std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EINVAL),
        ))
    }
}

/// Handle `listen(fd, backlog)` of `caller`: Unix sockets only.
pub(super) fn listen(caller: &Caller<'_>, fd: u64, backlog: u64) -> Handled {
    let socket = match caller.socket(fd) {
        Ok(socket) => socket,
        Err(errno) => return Handled::errno(errno),
    };
    match rustix::net::sockopt::socket_domain(&socket) {
        Ok(domain) if domain == rustix::net::AddressFamily::UNIX => {}
        Ok(_) => return Handled::errno(Errno::ACCESS),
        Err(errno) => return Handled::errno(errno),
    }
    // listen(2)'s backlog is an int (the register's low 32 bits); the kernel clamps it.
    let backlog = backlog as u32 as i32;
    Handled::from(rustix::net::listen(&socket, backlog))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sockaddr_in(ip: [u8; 4], port: u16) -> Vec<u8> {
        let mut bytes = (libc::AF_INET as u16).to_ne_bytes().to_vec();
        bytes.extend_from_slice(&port.to_be_bytes());
        bytes.extend_from_slice(&ip);
        bytes.extend_from_slice(&[0; 8]);
        bytes
    }

    #[test]
    fn only_loopback_v4_at_the_proxy_port_is_the_proxy() {
        let proxy = |ip: &str, port| is_proxy(SocketAddr::new(ip.parse().unwrap(), port), 3128);
        assert!(proxy("127.0.0.1", 3128));
        assert!(proxy("::ffff:127.0.0.1", 3128));
        assert!(!proxy("127.0.0.1", 3129));
        assert!(!proxy("127.0.0.2", 3128));
        assert!(!proxy("::1", 3128));
        assert!(!proxy("93.184.216.34", 3128));
    }

    #[test]
    fn a_threads_process_is_its_thread_group() {
        let me = rustix::process::getpid();
        assert_eq!(thread_group_of(me), Ok(me));
        let (sender, receiver) = std::sync::mpsc::channel();
        let (done, wait) = std::sync::mpsc::channel::<()>();
        let worker = std::thread::spawn(move || {
            sender.send(rustix::thread::gettid()).unwrap();
            let _ = wait.recv();
        });
        let tid = receiver.recv().unwrap();
        assert_ne!(tid, me);
        assert_eq!(thread_group_of(tid), Ok(me));
        done.send(()).unwrap();
        worker.join().unwrap();
    }

    #[test]
    fn addresses_are_read_from_their_bytes() {
        assert_eq!(
            internet_address(&sockaddr_in([10, 1, 2, 3], 443)),
            Some("10.1.2.3:443".parse().unwrap())
        );
        assert_eq!(internet_address(&[2, 0, 1]), None);
    }
}
