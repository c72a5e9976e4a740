//! CONNECT tunnels: allowed by a `localhost:PORT` entry, refused with 403 and an event.

use std::sync::atomic::Ordering;
use std::time::Duration;

use drover_proxy::{Decision, Protocol, ProxyOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::{
    client, connect, echo_server, read_to_end, start, start_with, table_resolver,
};

#[tokio::test]
async fn an_allowed_tunnel_reaches_the_server_and_counts_every_byte() {
    let (echo, _) = echo_server().await;
    let rule = format!("localhost:{echo}");
    let mut proxy = start(std::slice::from_ref(&rule), &[]);
    let (mut tunnel, head) = connect(proxy.port, &format!("localhost:{echo}")).await;
    assert_eq!(head, "HTTP/1.1 200 Connection established\r\n\r\n");
    // A known payload, larger than the proxy's copy buffers.
    let payload: Vec<u8> = (0..300_000u32).map(|n| (n % 251) as u8).collect();
    let (mut read, mut write) = tunnel.split();
    let sent = payload.clone();
    let (_, echoed) = tokio::join!(
        async move {
            write.write_all(&sent).await.unwrap();
            write.shutdown().await.unwrap();
        },
        async move {
            let mut echoed = Vec::new();
            read.read_to_end(&mut echoed).await.unwrap();
            echoed
        }
    );
    assert_eq!(echoed, payload);
    drop(tunnel);
    let event = proxy.events.next().await;
    assert_eq!(event.host, "localhost");
    assert_eq!(event.port, echo);
    assert_eq!(event.protocol, Protocol::Connect);
    assert_eq!(event.decision, Decision::Allowed);
    assert_eq!(event.rule.as_deref(), Some(rule.as_str()));
    assert_eq!(event.reason, None);
    assert!(event.address.unwrap().is_loopback(), "{event:?}");
    assert_eq!(event.bytes_up, payload.len() as u64);
    assert_eq!(event.bytes_down, payload.len() as u64);
    assert!(proxy.events.none_waiting());
}

#[tokio::test]
async fn a_denied_host_gets_403_naming_the_policy_and_is_never_resolved() {
    let (resolver, asked) = table_resolver(&[("evil.example", &["127.0.0.1"])]);
    let options = ProxyOptions {
        resolver,
        ..ProxyOptions::default()
    };
    let mut proxy = start_with(
        &["*.example".to_string()],
        &["evil.example".to_string()],
        options,
    );
    let (mut stream, head) = connect(proxy.port, "evil.example:443").await;
    let expected = "blocked by the task's network policy: evil.example:443 denied by evil.example";
    assert!(head.starts_with("HTTP/1.1 403 Forbidden\r\n"), "{head}");
    assert!(
        head.contains(&format!("\r\nX-Drover-Denied: {expected}\r\n")),
        "{head}"
    );
    let body = read_to_end(&mut stream).await;
    assert_eq!(String::from_utf8_lossy(&body), format!("{expected}\n"));
    let event = proxy.events.next().await;
    assert_eq!(event.decision, Decision::Denied);
    assert_eq!(event.rule.as_deref(), Some("evil.example"));
    assert_eq!(event.reason.as_deref(), Some("denied by evil.example"));
    assert_eq!((event.host.as_str(), event.port), ("evil.example", 443));
    assert_eq!(
        (event.bytes_up, event.bytes_down, event.address),
        (0, 0, None)
    );
    // No DNS leak: a refused name never reaches the resolver.
    assert!(asked.lock().unwrap().is_empty());
    // A host no entry names: no rule, "no allow rule".
    let (_, head) = connect(proxy.port, "other.test:443").await;
    assert!(head.contains("other.test:443 no allow rule\r\n"), "{head}");
    let event = proxy.events.next().await;
    assert_eq!(
        (event.rule, event.reason.as_deref()),
        (None, Some("no allow rule"))
    );
    assert!(asked.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_localhost_entry_names_that_port_only_and_not_the_address() {
    let (echo, accepted) = echo_server().await;
    let mut proxy = start(&[format!("localhost:{echo}")], &[]);
    for target in [
        format!("localhost:{}", echo.wrapping_add(1).max(1)),
        format!("127.0.0.1:{echo}"),
        format!("[::1]:{echo}"),
        format!("0x7f.1:{echo}"),
        format!("2130706433:{echo}"),
        format!("[::ffff:127.0.0.1]:{echo}"),
    ] {
        let (_, head) = connect(proxy.port, &target).await;
        assert!(head.starts_with("HTTP/1.1 403 "), "{target}: {head}");
        let event = proxy.events.next().await;
        assert_eq!(event.decision, Decision::Denied, "{target}");
    }
    assert_eq!(accepted.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn an_allowed_name_resolving_to_loopback_is_refused_without_connecting() {
    let (echo, accepted) = echo_server().await;
    let (resolver, asked) = table_resolver(&[("rebind.test", &["127.0.0.1", "::1"])]);
    let options = ProxyOptions {
        resolver,
        ..ProxyOptions::default()
    };
    // The localhost entry opens the port for the name localhost, not for other names.
    let mut proxy = start_with(
        &[format!("rebind.test:{echo}"), format!("localhost:{echo}")],
        &[],
        options,
    );
    let (_, head) = connect(proxy.port, &format!("rebind.test:{echo}")).await;
    assert!(head.starts_with("HTTP/1.1 403 "), "{head}");
    assert!(
        head.contains(&format!(
            "rebind.test resolves to 127.0.0.1:{echo}, a loopback address"
        )),
        "{head}"
    );
    let event = proxy.events.next().await;
    assert_eq!(event.decision, Decision::Denied);
    assert_eq!(event.rule, None);
    assert_eq!(*asked.lock().unwrap(), vec!["rebind.test".to_string()]);
    assert_eq!(accepted.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn the_next_address_is_tried_when_one_fails() {
    let (echo, accepted) = echo_server().await;
    // Nothing listens on 127.0.0.2 at that port (the echo server is bound to 127.0.0.1).
    let (resolver, _) = table_resolver(&[("localhost", &["127.0.0.2", "127.0.0.1"])]);
    let options = ProxyOptions {
        resolver,
        ..ProxyOptions::default()
    };
    let mut proxy = start_with(&[format!("localhost:{echo}")], &[], options);
    let (mut tunnel, head) = connect(proxy.port, &format!("localhost:{echo}")).await;
    assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
    tunnel.write_all(b"ping").await.unwrap();
    let mut back = [0u8; 4];
    tunnel.read_exact(&mut back).await.unwrap();
    assert_eq!(&back, b"ping");
    drop(tunnel);
    let event = proxy.events.next().await;
    assert_eq!(event.address, Some("127.0.0.1".parse().unwrap()));
    assert_eq!(accepted.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn an_unreachable_host_is_502_and_a_slow_one_504_with_allowed_events() {
    let (echo, _) = echo_server().await;
    // A port nobody listens on: bind one, learn it, close it.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed_port = closed.local_addr().unwrap().port();
    drop(closed);
    let resolver: drover_proxy::Resolver = std::sync::Arc::new(|name: String| {
        Box::pin(async move {
            if name == "slow.test" {
                std::future::pending::<()>().await;
            }
            Ok(vec!["127.0.0.1".parse().unwrap()])
        })
    });
    let options = ProxyOptions {
        resolver,
        connect_timeout: Duration::from_millis(300),
        ..ProxyOptions::default()
    };
    let mut proxy = start_with(
        &[format!("localhost:{closed_port}"), "slow.test".to_string()],
        &[],
        options,
    );
    let (_, head) = connect(proxy.port, &format!("localhost:{closed_port}")).await;
    assert!(head.starts_with("HTTP/1.1 502 Bad Gateway\r\n"), "{head}");
    let event = proxy.events.next().await;
    assert_eq!(event.decision, Decision::Allowed);
    assert!(
        event
            .reason
            .unwrap()
            .starts_with("cannot connect to localhost:")
    );
    assert_eq!(event.address, None);
    let (_, head) = connect(proxy.port, "slow.test:443").await;
    assert!(
        head.starts_with("HTTP/1.1 504 Gateway Timeout\r\n"),
        "{head}"
    );
    let event = proxy.events.next().await;
    assert_eq!(event.decision, Decision::Allowed);
    assert!(
        event
            .reason
            .unwrap()
            .contains("cannot reach slow.test:443 within")
    );
    let _ = echo;
}

#[tokio::test]
async fn bytes_sent_with_the_connect_head_reach_the_server() {
    let (echo, _) = echo_server().await;
    let mut proxy = start(&[format!("localhost:{echo}")], &[]);
    let mut stream = client(proxy.port).await;
    stream
        .write_all(format!("CONNECT localhost:{echo} HTTP/1.1\r\n\r\nearly").as_bytes())
        .await
        .unwrap();
    let head = crate::support::read_until_blank_line(&mut stream).await;
    assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
    let mut back = [0u8; 5];
    stream.read_exact(&mut back).await.unwrap();
    assert_eq!(&back, b"early");
    drop(stream);
    assert_eq!(proxy.events.next().await.bytes_up, 5);
}

#[tokio::test]
async fn events_serialise_in_snake_case() {
    let mut proxy = start(&[], &[]);
    let _ = connect(proxy.port, "example.com:443").await;
    let event = proxy.events.next().await;
    let json = serde_json::to_value(&event).unwrap();
    assert_eq!(json["protocol"], "connect");
    assert_eq!(json["decision"], "denied");
    assert_eq!(json["host"], "example.com");
    assert_eq!(json["port"], 443);
    assert_eq!(json["bytes_up"], 0);
    assert!(json["duration_ms"].is_u64());
    assert_eq!(
        serde_json::from_value::<drover_proxy::ConnectionEvent>(json).unwrap(),
        event
    );
}
