//! Passing one descriptor over a Unix socket (`SCM_RIGHTS`): the command's process hands
//! its seccomp listener to the launcher this way, and the launcher the proxy's listener
//! in a network namespace to drover. The sending side runs between `fork` and `exec`, so
//! it uses raw calls on stack buffers only.

use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{BorrowedFd, OwnedFd, RawFd};

use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags};

/// Room for one `cmsghdr` carrying one descriptor, aligned for it.
#[repr(C, align(8))]
struct ControlBuffer([u8; 64]);

/// Send `fd` over the connected Unix socket `channel`, with one byte of data. Raw
/// system calls and stack memory only (async-signal-safe).
pub(super) fn send(channel: RawFd, fd: RawFd) -> io::Result<()> {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    let mut control = ControlBuffer([0; 64]);
    // SAFETY: an all-zero msghdr is valid; the pointers set below outlive the call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.0.as_mut_ptr().cast();
    // SAFETY: CMSG_SPACE only computes a size.
    msg.msg_controllen = unsafe { libc::CMSG_SPACE(size_of::<RawFd>() as u32) } as _;
    // SAFETY: the control buffer holds at least one header of that size (64 bytes is
    // more than CMSG_SPACE(4) on every platform), so CMSG_FIRSTHDR is non-null and
    // CMSG_DATA points inside it.
    unsafe {
        let header = libc::CMSG_FIRSTHDR(&msg);
        (*header).cmsg_level = libc::SOL_SOCKET;
        (*header).cmsg_type = libc::SCM_RIGHTS;
        (*header).cmsg_len = libc::CMSG_LEN(size_of::<RawFd>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(header).cast::<RawFd>(), fd);
    }
    loop {
        // SAFETY: msg and everything it points to are valid for the call.
        let sent = unsafe { libc::sendmsg(channel, &msg, libc::MSG_NOSIGNAL) };
        if sent >= 0 {
            return Ok(());
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
}

/// Receive the descriptor [`send`] sent over `channel` (blocking).
pub(super) fn receive(channel: RawFd) -> io::Result<OwnedFd> {
    // SAFETY: the caller owns `channel` for the duration of the call.
    let channel = unsafe { BorrowedFd::borrow_raw(channel) };
    let mut byte = [0u8; 1];
    loop {
        match receive_with_descriptors(channel, &mut byte, RecvFlags::empty()) {
            Ok((0, _)) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the command's process sent no descriptor",
                ));
            }
            Ok((_, fds)) => {
                return fds
                    .into_iter()
                    .next()
                    .ok_or_else(|| io::Error::other("the command's process sent no descriptor"));
            }
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        }
    }
}

/// One `recvmsg` on `channel` into `buf`: the bytes read and the descriptors that came
/// with them (close-on-exec). Both ends of the launcher's channels read this way: the
/// launcher the command's seccomp listener, drover the proxy's listener in a network
/// namespace.
pub(crate) fn receive_with_descriptors(
    channel: BorrowedFd<'_>,
    buf: &mut [u8],
    flags: RecvFlags,
) -> io::Result<(usize, Vec<OwnedFd>)> {
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(2))];
    let mut ancillary = RecvAncillaryBuffer::new(&mut space);
    let mut iov = [io::IoSliceMut::new(buf)];
    let message = rustix::net::recvmsg(
        channel,
        &mut iov,
        &mut ancillary,
        flags | RecvFlags::CMSG_CLOEXEC,
    )?;
    let mut fds = Vec::new();
    for message in ancillary.drain() {
        if let RecvAncillaryMessage::ScmRights(rights) = message {
            fds.extend(rights);
        }
    }
    Ok((message.bytes, fds))
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsRawFd;

    use super::*;

    #[test]
    fn a_descriptor_arrives_as_a_new_descriptor_of_the_same_file() {
        let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        let file = tempfile::tempfile().unwrap();
        send(a.as_raw_fd(), file.as_raw_fd()).unwrap();
        let got = receive(b.as_raw_fd()).unwrap();
        assert_ne!(got.as_raw_fd(), file.as_raw_fd());
        let ours = rustix::fs::fstat(&file).unwrap();
        let theirs = rustix::fs::fstat(&got).unwrap();
        assert_eq!((ours.st_dev, ours.st_ino), (theirs.st_dev, theirs.st_ino));
    }

    #[test]
    fn a_closed_channel_is_an_error_not_a_hang() {
        let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        drop(a);
        assert!(receive(b.as_raw_fd()).is_err());
    }
}
