//! One download of the origin's body, directly or through the proxy by one of its three
//! routes: with curl when it is on PATH (what sandboxed commands use), else with a small
//! client here that speaks the same four ways.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

/// How a download reaches the origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Route {
    Direct,
    /// `CONNECT localhost:PORT` (how HTTPS goes through it).
    Connect,
    /// `GET http://localhost:PORT/` sent to the proxy.
    Http,
    /// SOCKS5 with the name resolved by the proxy (`socks5h://`).
    Socks5,
}

impl Route {
    pub(super) const ALL: [Route; 4] = [Route::Direct, Route::Connect, Route::Http, Route::Socks5];

    pub(super) fn name(self) -> &'static str {
        match self {
            Route::Direct => "direct",
            Route::Connect => "proxy CONNECT",
            Route::Http => "proxy plain HTTP",
            Route::Socks5 => "proxy SOCKS5",
        }
    }
}

/// The program that downloads.
pub(super) enum Client {
    Curl(PathBuf),
    Own,
}

/// Where the origin and the proxy listen (on 127.0.0.1).
#[derive(Debug, Clone, Copy)]
pub(super) struct Ports {
    pub origin: u16,
    pub proxy: u16,
}

/// One download: its wall time and the body bytes received.
pub(super) fn download(
    client: &Client,
    route: Route,
    ports: Ports,
) -> anyhow::Result<(Duration, u64)> {
    let start = Instant::now();
    let bytes = match client {
        Client::Curl(curl) => with_curl(curl, route, ports)?,
        Client::Own => with_own_client(route, ports)?,
    };
    Ok((start.elapsed(), bytes))
}

fn with_curl(curl: &PathBuf, route: Route, ports: Ports) -> anyhow::Result<u64> {
    let Ports { origin, proxy } = ports;
    let mut command = Command::new(curl);
    command.args(["-sS", "-o", "/dev/null", "-w", "%{size_download}"]);
    // The direct download names the address, so neither side resolves `localhost`
    // (through the proxy, the proxy resolves it: part of what it costs).
    match route {
        Route::Direct => command.arg(format!("http://127.0.0.1:{origin}/")),
        Route::Connect => command.args(["-p", "-x", &format!("http://127.0.0.1:{proxy}")]),
        Route::Http => command.args(["-x", &format!("http://127.0.0.1:{proxy}")]),
        Route::Socks5 => command.args(["-x", &format!("socks5h://127.0.0.1:{proxy}")]),
    };
    if route != Route::Direct {
        command.arg(format!("http://localhost:{origin}/"));
    }
    for variable in ["http_proxy", "https_proxy", "all_proxy", "no_proxy"] {
        command.env_remove(variable);
        command.env_remove(variable.to_ascii_uppercase());
    }
    let output = command
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .context("cannot run curl")?;
    if !output.status.success() {
        bail!(
            "curl ({}) failed: {}",
            route.name(),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    String::from_utf8_lossy(&output.stdout)
        .trim()
        .parse()
        .context("curl printed no size")
}

fn with_own_client(route: Route, ports: Ports) -> anyhow::Result<u64> {
    let Ports { origin, proxy } = ports;
    let target = format!("localhost:{origin}");
    let get = |host: &str| format!("GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    let mut stream = match route {
        Route::Direct => {
            let mut stream = TcpStream::connect(("127.0.0.1", origin))?;
            stream.write_all(get(&format!("127.0.0.1:{origin}")).as_bytes())?;
            stream
        }
        Route::Connect => {
            let mut stream = TcpStream::connect(("127.0.0.1", proxy))?;
            stream.write_all(
                format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n").as_bytes(),
            )?;
            let answer = read_head(&mut stream)?;
            if !answer.starts_with("HTTP/1.1 200 ") {
                bail!(
                    "the proxy refused CONNECT: {}",
                    answer.lines().next().unwrap_or("")
                );
            }
            stream.write_all(get(&target).as_bytes())?;
            stream
        }
        Route::Http => {
            let mut stream = TcpStream::connect(("127.0.0.1", proxy))?;
            stream.write_all(
                format!("GET http://{target}/ HTTP/1.1\r\nHost: {target}\r\n\r\n").as_bytes(),
            )?;
            stream
        }
        Route::Socks5 => {
            let mut stream = TcpStream::connect(("127.0.0.1", proxy))?;
            socks_connect(&mut stream, "localhost", origin)?;
            stream.write_all(get(&target).as_bytes())?;
            stream
        }
    };
    body_length(&mut stream)
}

/// The SOCKS5 handshake for `host:port`, no authentication.
fn socks_connect(stream: &mut TcpStream, host: &str, port: u16) -> anyhow::Result<()> {
    stream.write_all(&[5, 1, 0])?;
    let mut chosen = [0u8; 2];
    stream.read_exact(&mut chosen)?;
    let mut request = vec![5, 1, 0, 3, u8::try_from(host.len())?];
    request.extend_from_slice(host.as_bytes());
    request.extend_from_slice(&port.to_be_bytes());
    stream.write_all(&request)?;
    let mut reply = [0u8; 10];
    stream.read_exact(&mut reply)?;
    if chosen != [5, 0] || reply[1] != 0 {
        bail!("the proxy refused SOCKS5 CONNECT (reply {})", reply[1]);
    }
    Ok(())
}

/// A response head, read a byte at a time so nothing after it is consumed.
fn read_head(stream: &mut TcpStream) -> anyhow::Result<String> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte)? == 0 {
            bail!("the connection closed in a response head");
        }
        head.push(byte[0]);
    }
    Ok(String::from_utf8_lossy(&head).into_owned())
}

/// Read a whole response to its end: the bytes after its head.
fn body_length(stream: &mut TcpStream) -> anyhow::Result<u64> {
    let mut reader = BufReader::with_capacity(256 * 1024, stream);
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            bail!("the connection closed in the response head");
        }
        if line == "\r\n" {
            break;
        }
    }
    Ok(std::io::copy(&mut reader, &mut std::io::sink())?)
}
