//! SOCKS5 on the proxy's one port: a domain name, an IPv4 and an IPv6 address, allowed
//! or refused with reply 0x02.

use drover_proxy::{Decision, Protocol};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::{client, echo_server, start};

/// Negotiate no authentication and ask to CONNECT to `address` (type and bytes) and
/// `port`: the stream and the reply code.
async fn socks_connect(proxy: u16, address_type: u8, address: &[u8], port: u16) -> (TcpStream, u8) {
    let mut stream = client(proxy).await;
    stream.write_all(&[5, 2, 2, 0]).await.unwrap();
    let mut chosen = [0u8; 2];
    stream.read_exact(&mut chosen).await.unwrap();
    assert_eq!(chosen, [5, 0]);
    let mut request = vec![5, 1, 0, address_type];
    request.extend_from_slice(address);
    request.extend_from_slice(&port.to_be_bytes());
    stream.write_all(&request).await.unwrap();
    let mut reply = [0u8; 10];
    stream.read_exact(&mut reply).await.unwrap();
    assert_eq!((reply[0], reply[3]), (5, 1));
    (stream, reply[1])
}

fn domain(name: &str) -> Vec<u8> {
    let mut bytes = vec![name.len() as u8];
    bytes.extend_from_slice(name.as_bytes());
    bytes
}

async fn echo_through(stream: &mut TcpStream) {
    stream.write_all(b"socks ping").await.unwrap();
    let mut back = [0u8; 10];
    stream.read_exact(&mut back).await.unwrap();
    assert_eq!(&back, b"socks ping");
}

#[tokio::test]
async fn a_domain_name_is_connected_when_allowed() {
    let (echo, _) = echo_server().await;
    let mut proxy = start(&[format!("localhost:{echo}")], &[]);
    let (mut stream, code) = socks_connect(proxy.port, 3, &domain("LocalHost"), echo).await;
    assert_eq!(code, 0);
    echo_through(&mut stream).await;
    drop(stream);
    let event = proxy.events.next().await;
    assert_eq!(event.protocol, Protocol::Socks5);
    assert_eq!(event.decision, Decision::Allowed);
    assert_eq!((event.host.as_str(), event.port), ("localhost", echo));
    assert_eq!((event.bytes_up, event.bytes_down), (10, 10));
}

#[tokio::test]
async fn ipv4_and_ipv4_mapped_ipv6_addresses_are_judged_as_the_address() {
    let (echo, _) = echo_server().await;
    let mut proxy = start(&[format!("127.0.0.1:{echo}")], &[]);
    let (mut stream, code) = socks_connect(proxy.port, 1, &[127, 0, 0, 1], echo).await;
    assert_eq!(code, 0);
    echo_through(&mut stream).await;
    drop(stream);
    assert_eq!(proxy.events.next().await.host, "127.0.0.1");
    let mapped: std::net::Ipv6Addr = "::ffff:127.0.0.1".parse().unwrap();
    let (mut stream, code) = socks_connect(proxy.port, 4, &mapped.octets(), echo).await;
    assert_eq!(code, 0);
    echo_through(&mut stream).await;
    drop(stream);
    let event = proxy.events.next().await;
    assert_eq!(event.host, "127.0.0.1");
    assert_eq!(event.address, Some("127.0.0.1".parse().unwrap()));
}

#[tokio::test]
async fn refused_targets_get_reply_2_and_an_event() {
    let (echo, accepted) = echo_server().await;
    let mut proxy = start(
        &[format!("localhost:{echo}")],
        &["blocked.test".to_string()],
    );
    let v6: std::net::Ipv6Addr = "2001:db8::1".parse().unwrap();
    for (kind, address, port, host) in [
        (3, domain("blocked.test"), 443, "blocked.test"),
        (
            3,
            domain("localhost"),
            echo.wrapping_add(1).max(1),
            "localhost",
        ),
        (1, vec![127, 0, 0, 1], echo, "127.0.0.1"),
        (1, vec![169, 254, 169, 254], 80, "169.254.169.254"),
        (4, v6.octets().to_vec(), 443, "[2001:db8::1]"),
    ] {
        let (_, code) = socks_connect(proxy.port, kind, &address, port).await;
        assert_eq!(code, 2, "{host}");
        let event = proxy.events.next().await;
        assert_eq!(event.decision, Decision::Denied, "{host}");
        assert_eq!(event.host, host);
        assert_eq!(event.protocol, Protocol::Socks5);
    }
    assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 0);
}

#[tokio::test]
async fn udp_associate_and_authentication_only_clients_are_refused() {
    let mut proxy = start(&["example.com".to_string()], &[]);
    let mut stream = client(proxy.port).await;
    stream.write_all(&[5, 1, 0]).await.unwrap();
    let mut chosen = [0u8; 2];
    stream.read_exact(&mut chosen).await.unwrap();
    stream
        .write_all(&[5, 3, 0, 1, 0, 0, 0, 0, 0, 0])
        .await
        .unwrap();
    let mut reply = [0u8; 10];
    stream.read_exact(&mut reply).await.unwrap();
    assert_eq!(reply[1], 7);
    let event = proxy.events.next().await;
    assert!(event.reason.unwrap().contains("UDP ASSOCIATE"));
    // Username/password only: no acceptable method.
    let mut stream = client(proxy.port).await;
    stream.write_all(&[5, 1, 2]).await.unwrap();
    stream.read_exact(&mut chosen).await.unwrap();
    assert_eq!(chosen, [5, 0xff]);
    let event = proxy.events.next().await;
    assert_eq!(event.decision, Decision::Denied);
    assert!(
        event
            .reason
            .unwrap()
            .contains("no method without authentication")
    );
}
