//! The proxy's bounds: a client that never finishes its request head is cut off, the
//! connection limit answers 503, and stopping the proxy closes open tunnels.

use std::time::{Duration, Instant};

use drover_proxy::{Decision, Protocol, ProxyOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::{Started, client, connect, echo_server, read_to_end, start, start_with};

#[tokio::test]
async fn a_slow_loris_client_is_cut_off_at_the_head_timeout() {
    let options = ProxyOptions {
        head_timeout: Duration::from_millis(400),
        ..ProxyOptions::default()
    };
    let mut proxy = start_with(&["example.com".to_string()], &[], options);
    // One byte at a time, never the blank line: the limit is on the whole head, not on
    // each read.
    let (mut read, mut write) = client(proxy.port).await.into_split();
    let began = Instant::now();
    let trickle = tokio::spawn(async move {
        for byte in
            b"CONNECT example.com:443 HTTP/1.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
        {
            if write.write_all(&[*byte]).await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(30)).await;
        }
        write
    });
    let mut answer = Vec::new();
    // The proxy may reset the connection once it stops reading; what came before counts.
    let _ = tokio::time::timeout(Duration::from_secs(5), read.read_to_end(&mut answer)).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        answer.starts_with("HTTP/1.1 408 Request Timeout\r\n"),
        "{answer}"
    );
    assert!(
        began.elapsed() < Duration::from_secs(2),
        "{:?}",
        began.elapsed()
    );
    drop(trickle.await.unwrap());
    let event = proxy.events.next().await;
    assert_eq!(event.decision, Decision::Denied);
    assert!(
        event
            .reason
            .unwrap()
            .contains("no complete request head within")
    );
    // Silence from the start, and a SOCKS5 handshake that stops half way.
    let mut silent = client(proxy.port).await;
    let answer = String::from_utf8_lossy(&read_to_end(&mut silent).await).into_owned();
    assert!(answer.starts_with("HTTP/1.1 408 "), "{answer}");
    assert_eq!(proxy.events.next().await.protocol, Protocol::Unknown);
    let mut socks = client(proxy.port).await;
    socks.write_all(&[5, 1]).await.unwrap();
    let _ = read_to_end(&mut socks).await;
    let event = proxy.events.next().await;
    assert_eq!(event.protocol, Protocol::Socks5);
    assert!(
        event
            .reason
            .unwrap()
            .contains("no complete SOCKS5 request within")
    );
}

#[tokio::test]
async fn connections_over_the_limit_get_503_and_an_event() {
    let (echo, _) = echo_server().await;
    let options = ProxyOptions {
        max_connections: 2,
        ..ProxyOptions::default()
    };
    let mut proxy = start_with(&[format!("localhost:{echo}")], &[], options);
    let target = format!("localhost:{echo}");
    let (first, head) = connect(proxy.port, &target).await;
    assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
    let (_second, head) = connect(proxy.port, &target).await;
    assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
    let (mut third, head) = connect(proxy.port, &target).await;
    assert!(
        head.starts_with("HTTP/1.1 503 Service Unavailable\r\n"),
        "{head}"
    );
    let _ = read_to_end(&mut third).await;
    let event = proxy.events.next().await;
    assert_eq!(event.protocol, Protocol::Unknown);
    assert_eq!(event.decision, Decision::Denied);
    assert!(
        event
            .reason
            .unwrap()
            .contains("serves 2 connections, its limit")
    );
    // A closed tunnel frees its place.
    drop(first);
    assert_eq!(proxy.events.next().await.decision, Decision::Allowed);
    let mut opened = false;
    for _ in 0..50 {
        let (_, head) = connect(proxy.port, &target).await;
        if head.starts_with("HTTP/1.1 200 ") {
            opened = true;
            break;
        }
        let _ = proxy.events.next().await;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(opened, "no place freed after a tunnel closed");
}

#[tokio::test]
async fn stopping_the_proxy_closes_open_tunnels_and_reports_them() {
    let (echo, _) = echo_server().await;
    let Started {
        port,
        handle,
        mut events,
    } = start(&[format!("localhost:{echo}")], &[]);
    let (mut tunnel, head) = connect(port, &format!("localhost:{echo}")).await;
    assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
    tunnel.write_all(b"abc").await.unwrap();
    let mut back = [0u8; 3];
    tunnel.read_exact(&mut back).await.unwrap();
    handle.shutdown().await;
    let event = events.next().await;
    assert_eq!(event.decision, Decision::Allowed);
    assert_eq!((event.bytes_up, event.bytes_down), (3, 3));
    // The tunnel is closed, and nothing listens any more.
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(5), tunnel.read_to_end(&mut rest)).await;
    assert!(matches!(closed, Ok(Ok(0)) | Ok(Err(_))), "{closed:?}");
    assert!(
        tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_err()
    );
}
