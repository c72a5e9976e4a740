//! The loopback server `bench --proxy` downloads from: every request answered with one
//! body of a fixed size, written from a buffer reused for the whole body, then closed.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// The buffer the body is written from.
const CHUNK: usize = 256 * 1024;

/// Serve `size` bytes to every client of a new listener on 127.0.0.1, at `pace` bytes a
/// second at most (None: as fast as loopback goes), on threads that live as long as the
/// process; its port.
pub(super) fn start(size: u64, pace: Option<u64>) -> std::io::Result<u16> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
    let port = listener.local_addr()?.port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || serve(stream, size, pace));
        }
    });
    Ok(port)
}

/// Read the request head, answer with the body (paced), close.
fn serve(mut stream: TcpStream, size: u64, pace: Option<u64>) {
    let mut head = Vec::new();
    let mut buffer = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 64 * 1024 {
        match stream.read(&mut buffer) {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buffer[..n]),
        }
    }
    let answer = format!("HTTP/1.1 200 OK\r\nContent-Length: {size}\r\nConnection: close\r\n\r\n");
    if stream.write_all(answer.as_bytes()).is_err() {
        return;
    }
    let chunk = vec![b'x'; CHUNK];
    let started = Instant::now();
    let mut left = size;
    while left > 0 {
        let n = usize::try_from(left).map_or(CHUNK, |left| left.min(CHUNK));
        if stream.write_all(&chunk[..n]).is_err() {
            return;
        }
        left -= n as u64;
        if let Some(pace) = pace.filter(|pace| *pace > 0) {
            // Not ahead of the pace: what was sent by now takes sent/pace seconds.
            let due = Duration::from_secs_f64((size - left) as f64 / pace as f64);
            if let Some(wait) = due.checked_sub(started.elapsed()) {
                std::thread::sleep(wait);
            }
        }
    }
}
