//! Relaying a connection's bytes between the client and the host. The bytes move through
//! a pipe with splice(2), socket to pipe to socket, never copied through the proxy's
//! memory: a connection's memory is the kernel's pipe whatever it carries, and the
//! proxy's CPU is about half what copying through even a large buffer costs (measured
//! by `drover bench --proxy`'s downloads). When no pipe can be had (out of
//! descriptors), a fixed buffer copies instead.

use std::io;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::net::Shutdown;
use rustix::pipe::{PipeFlags, SpliceFlags, pipe_with, splice};
use tokio::io::Interest;
use tokio::net::TcpStream;

use crate::event::Counters;

/// The buffer each direction of a copied (not spliced) tunnel goes through.
pub(crate) const COPY_BUFFER: usize = 32 * 1024;

/// The capacity asked for each pipe, and the most one splice call moves. A pipe's
/// default (64 KiB) costs more calls; an unprivileged user's pipes may hold 64 MiB in
/// all (`/proc/sys/fs/pipe-user-pages-soft`), so 256 KiB keeps 128 tunnels at full
/// size. When the kernel refuses the size, the pipe keeps the one it has.
const SPLICE_CHUNK: usize = 256 * 1024;

/// Relay between `client` and `upstream` until both directions end or one fails (a
/// reset); what crossed is added to `counters` (`up`: written to the host, `down`: read
/// from it).
pub(crate) async fn relay(client: &TcpStream, upstream: &TcpStream, counters: &Counters) {
    let up = relay_one_way(client, upstream, Count::Written(&counters.up));
    let down = relay_one_way(upstream, client, Count::Read(&counters.down));
    // The first failure (a reset) ends both directions; the counters say what crossed.
    let _ = tokio::try_join!(up, down);
}

/// Relay one direction, `from` to `to`, until `from` ends; then end `to`'s writing.
/// (Rust programs ignore SIGPIPE, so a peer gone is an error here, not a signal.)
pub(crate) async fn relay_one_way(
    from: &TcpStream,
    to: &TcpStream,
    count: Count<'_>,
) -> io::Result<()> {
    match Pipe::new() {
        Ok(pipe) => pump(from, to, &pipe, count).await,
        Err(_) => copy_one_way(from, to, count).await,
    }
}

/// Which side of a direction is counted.
#[derive(Clone, Copy)]
pub(crate) enum Count<'c> {
    /// Bytes read from `from` (the host's, going down).
    Read(&'c AtomicU64),
    /// Bytes written to `to` (going up to the host).
    Written(&'c AtomicU64),
}

/// A pipe for one direction, both ends non-blocking.
struct Pipe {
    read: OwnedFd,
    write: OwnedFd,
}

impl Pipe {
    fn new() -> io::Result<Pipe> {
        let (read, write) = pipe_with(PipeFlags::NONBLOCK | PipeFlags::CLOEXEC)?;
        let _ = rustix::pipe::fcntl_setpipe_size(&write, SPLICE_CHUNK);
        Ok(Pipe { read, write })
    }
}

/// Move `from`'s bytes to `to` through `pipe` until `from` ends, then shut `to`'s
/// writing down (the other direction may go on).
async fn pump(from: &TcpStream, to: &TcpStream, pipe: &Pipe, count: Count<'_>) -> io::Result<()> {
    let flags = SpliceFlags::NONBLOCK | SpliceFlags::MOVE;
    loop {
        // The pipe is empty here, so "would block" can only mean `from` has nothing.
        let filled = loop {
            from.readable().await?;
            match from.try_io(Interest::READABLE, || {
                Ok(splice(from, None, &pipe.write, None, SPLICE_CHUNK, flags)?)
            }) {
                Ok(filled) => break filled,
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
                Err(error) => return Err(error),
            }
        };
        if filled == 0 {
            let _ = rustix::net::shutdown(to, Shutdown::Write);
            return Ok(());
        }
        if let Count::Read(counter) = count {
            counter.fetch_add(filled as u64, Ordering::Relaxed);
        }
        let mut left = filled;
        while left > 0 {
            to.writable().await?;
            match to.try_io(Interest::WRITABLE, || {
                Ok(splice(&pipe.read, None, to, None, left, flags)?)
            }) {
                Ok(moved) => {
                    left -= moved;
                    if let Count::Written(counter) = count {
                        counter.fetch_add(moved as u64, Ordering::Relaxed);
                    }
                }
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
                Err(error) => return Err(error),
            }
        }
    }
}

/// `pump` through a buffer, for when no pipe can be had.
async fn copy_one_way(from: &TcpStream, to: &TcpStream, count: Count<'_>) -> io::Result<()> {
    let mut buffer = vec![0u8; COPY_BUFFER];
    loop {
        from.readable().await?;
        let filled = match from.try_read(&mut buffer) {
            Ok(filled) => filled,
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => continue,
            Err(error) => return Err(error),
        };
        if filled == 0 {
            let _ = rustix::net::shutdown(to, Shutdown::Write);
            return Ok(());
        }
        if let Count::Read(counter) = count {
            counter.fetch_add(filled as u64, Ordering::Relaxed);
        }
        let mut written = 0;
        while written < filled {
            to.writable().await?;
            match to.try_write(&buffer[written..filled]) {
                Ok(moved) => {
                    written += moved;
                    if let Count::Written(counter) = count {
                        counter.fetch_add(moved as u64, Ordering::Relaxed);
                    }
                }
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
                Err(error) => return Err(error),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    use tokio::net::TcpListener;

    /// Two connected sockets on 127.0.0.1.
    async fn pair() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let (near, far) = tokio::join!(TcpStream::connect(address), listener.accept());
        (near.unwrap(), far.unwrap().0)
    }

    /// Send `payload` into a one-way relay (spliced or copied), read it out the other
    /// side: what arrived, and what the relay counted.
    async fn through(payload: &[u8], spliced: bool, count_read: bool) -> (Vec<u8>, u64) {
        let (mut sender, from) = pair().await;
        let (to, mut receiver) = pair().await;
        let counter = AtomicU64::new(0);
        let count = if count_read {
            Count::Read(&counter)
        } else {
            Count::Written(&counter)
        };
        let relay = async {
            if spliced {
                pump(&from, &to, &Pipe::new().unwrap(), count).await
            } else {
                copy_one_way(&from, &to, count).await
            }
        };
        let send = async {
            sender.write_all(payload).await.unwrap();
            sender.shutdown().await.unwrap();
        };
        let mut received = Vec::new();
        let receive = receiver.read_to_end(&mut received);
        let (relayed, (), read) = tokio::join!(relay, send, receive);
        relayed.unwrap();
        read.unwrap();
        (received, counter.load(Ordering::Relaxed))
    }

    #[tokio::test]
    async fn spliced_and_copied_relays_move_and_count_every_byte_then_end_the_far_side() {
        let payload: Vec<u8> = (0..3_000_000u32).map(|n| (n % 253) as u8).collect();
        for spliced in [true, false] {
            for count_read in [true, false] {
                let (received, counted) = through(&payload, spliced, count_read).await;
                assert!(received == payload, "spliced {spliced}: bytes differ");
                assert_eq!(counted, payload.len() as u64, "spliced {spliced}");
            }
        }
    }
}
