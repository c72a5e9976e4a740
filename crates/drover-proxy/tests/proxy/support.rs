//! Servers on 127.0.0.1, a started proxy, its events, and a resolver of a fixed table.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use drover_policy::EgressRules;
use drover_proxy::{ConnectionEvent, Proxy, ProxyHandle, ProxyOptions, Resolver};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// `host[:port]` entries as the wiring hands them over.
pub(crate) fn entries(written: &[String]) -> Vec<(String, Option<u16>)> {
    written
        .iter()
        .map(|entry| match entry.rsplit_once(':') {
            Some((host, port)) if !port.ends_with(']') => {
                (host.to_string(), Some(port.parse().unwrap()))
            }
            _ => (entry.clone(), None),
        })
        .collect()
}

/// The events of one proxy.
pub(crate) struct Events(mpsc::UnboundedReceiver<ConnectionEvent>);

impl Events {
    /// The next event, within 10 s.
    pub(crate) async fn next(&mut self) -> ConnectionEvent {
        tokio::time::timeout(Duration::from_secs(10), self.0.recv())
            .await
            .expect("an event within 10 s")
            .expect("the proxy still sends")
    }

    /// No event waiting now.
    pub(crate) fn none_waiting(&mut self) -> bool {
        self.0.try_recv().is_err()
    }
}

pub(crate) struct Started {
    pub(crate) port: u16,
    pub(crate) handle: ProxyHandle,
    pub(crate) events: Events,
}

/// A proxy on 127.0.0.1 with these entries and options.
pub(crate) fn start_with(allow: &[String], deny: &[String], options: ProxyOptions) -> Started {
    let rules = EgressRules::new(&entries(allow), &entries(deny)).unwrap();
    let (sender, receiver) = mpsc::unbounded_channel();
    let (port, handle) = Proxy::new(rules, move |event| {
        let _ = sender.send(event);
    })
    .options(options)
    .bind_loopback()
    .unwrap();
    Started {
        port,
        handle,
        events: Events(receiver),
    }
}

pub(crate) fn start(allow: &[String], deny: &[String]) -> Started {
    start_with(allow, deny, ProxyOptions::default())
}

/// A resolver answering from `table` (anything else: not found), recording every name
/// it was asked.
pub(crate) fn table_resolver(table: &[(&str, &[&str])]) -> (Resolver, Arc<Mutex<Vec<String>>>) {
    let table: HashMap<String, Vec<IpAddr>> = table
        .iter()
        .map(|(name, addresses)| {
            (
                name.to_string(),
                addresses.iter().map(|a| a.parse().unwrap()).collect(),
            )
        })
        .collect();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&asked);
    let resolver: Resolver = Arc::new(move |name: String| {
        seen.lock().unwrap().push(name.clone());
        let found = table.get(&name).cloned();
        Box::pin(async move {
            found.ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "no such name"))
        })
    });
    (resolver, asked)
}

/// An echo server on 127.0.0.1: its port, and how many connections it accepted.
pub(crate) async fn echo_server() -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&accepted);
    tokio::spawn(async move {
        loop {
            let (mut stream, _) = listener.accept().await.unwrap();
            count.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let (mut read, mut write) = stream.split();
                let _ = tokio::io::copy(&mut read, &mut write).await;
            });
        }
    });
    (port, accepted)
}

/// An HTTP server on 127.0.0.1 answering every request with `body` and closing: its
/// port, and the request heads it received.
pub(crate) async fn http_server(body: &'static [u8]) -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let heads = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&heads);
    tokio::spawn(async move {
        loop {
            let (mut stream, _) = listener.accept().await.unwrap();
            let seen = Arc::clone(&seen);
            tokio::spawn(async move {
                let head = read_until_blank_line(&mut stream).await;
                seen.lock().unwrap().push(head);
                let answer = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: keep-alive\r\nX-Test: yes\r\n\r\n",
                    body.len()
                );
                stream.write_all(answer.as_bytes()).await.unwrap();
                stream.write_all(body).await.unwrap();
            });
        }
    });
    (port, heads)
}

/// Read a head to its blank line, as text.
pub(crate) async fn read_until_blank_line(stream: &mut TcpStream) -> String {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).await.unwrap() == 0 {
            break;
        }
        head.push(byte[0]);
    }
    String::from_utf8_lossy(&head).into_owned()
}

/// Connect to the proxy.
pub(crate) async fn client(port: u16) -> TcpStream {
    TcpStream::connect(("127.0.0.1", port)).await.unwrap()
}

/// Everything the peer sends until it closes, within 10 s.
pub(crate) async fn read_to_end(stream: &mut TcpStream) -> Vec<u8> {
    let mut all = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut all))
        .await
        .expect("the peer closes within 10 s")
        .unwrap();
    all
}

/// `CONNECT target` and the proxy's answer head.
pub(crate) async fn connect(port: u16, target: &str) -> (TcpStream, String) {
    let mut stream = client(port).await;
    stream
        .write_all(format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let head = read_until_blank_line(&mut stream).await;
    (stream, head)
}
