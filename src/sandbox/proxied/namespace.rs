//! As root, a proxied command also gets a network namespace of its own, whose only
//! interface is loopback: whatever the connect filter did, nothing in it can reach
//! another host. drover's proxy is brought into it: the launcher, in the new namespace,
//! binds the proxy's port on 127.0.0.1 and hands the listening socket to drover over
//! the report channel (`SCM_RIGHTS`), and drover serves the proxy on it too. A socket
//! belongs to the namespace it was made in, wherever its descriptor goes.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::fd::{AsRawFd, OwnedFd};

use rustix::net::{AddressFamily, SocketFlags, SocketType};

use super::super::SandboxError;
use super::pass_fd;

/// Move into a new network namespace, bring its loopback up, listen on
/// 127.0.0.1:`proxy_port` there and send the listener over `report`. Ok(false) when no
/// namespace can be made here (no CAP_SYS_ADMIN: a user), leaving nothing changed.
/// Must run before Landlock (which forbids binding the port) and the socket filter.
pub(crate) fn enter(proxy_port: u16, report: &std::fs::File) -> Result<bool, SandboxError> {
    // SAFETY: the launcher is single-threaded here, and NEWNET does not touch file
    // descriptor tables.
    if unsafe { rustix::thread::unshare_unsafe(rustix::thread::UnshareFlags::NEWNET) }.is_err() {
        return Ok(false);
    }
    loopback_up()?;
    let listener = rustix::net::socket_with(
        AddressFamily::INET,
        SocketType::STREAM,
        SocketFlags::CLOEXEC,
        None,
    )
    .map_err(|e| SandboxError::failed("make the proxy's socket in the network namespace", e))?;
    let address = SocketAddrV4::new(Ipv4Addr::LOCALHOST, proxy_port);
    rustix::net::bind(&listener, &address)
        .and_then(|()| rustix::net::listen(&listener, 1024))
        .map_err(|e| {
            SandboxError::failed("listen on the proxy's port in the network namespace", e)
        })?;
    pass_fd::send(report.as_raw_fd(), listener.as_raw_fd())
        .map_err(|e| SandboxError::failed("hand the proxy's socket to drover", e))?;
    drop::<OwnedFd>(listener);
    Ok(true)
}

/// `ip link set lo up`: SIOCSIFFLAGS on an internet socket of the namespace.
fn loopback_up() -> Result<(), SandboxError> {
    let failed = |e| SandboxError::failed("bring up loopback in the network namespace", e);
    let socket = rustix::net::socket_with(
        AddressFamily::INET,
        SocketType::DGRAM,
        SocketFlags::CLOEXEC,
        None,
    )
    .map_err(|e| failed(std::io::Error::from(e)))?;
    // SAFETY: an all-zero ifreq is valid; the name is NUL-terminated within IFNAMSIZ.
    let mut request: libc::ifreq = unsafe { std::mem::zeroed() };
    for (slot, byte) in request.ifr_name.iter_mut().zip(b"lo\0") {
        *slot = *byte as libc::c_char;
    }
    // SAFETY: SIOCGIFFLAGS/SIOCSIFFLAGS read and write the ifreq, which lives here.
    unsafe {
        if libc::ioctl(socket.as_raw_fd(), libc::SIOCGIFFLAGS, &mut request) != 0 {
            return Err(failed(std::io::Error::last_os_error()));
        }
        request.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
        if libc::ioctl(socket.as_raw_fd(), libc::SIOCSIFFLAGS, &request) != 0 {
            return Err(failed(std::io::Error::last_os_error()));
        }
    }
    Ok(())
}
