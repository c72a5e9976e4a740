//! Plain HTTP through the proxy: forwarded in origin form with its hop headers dropped,
//! refused with 403, malformed requests answered 400.

use drover_proxy::{Decision, Protocol};
use tokio::io::AsyncWriteExt;

use crate::support::{client, http_server, read_to_end, start};

#[tokio::test]
async fn a_plain_get_is_forwarded_and_its_body_returned() {
    let (server, heads) = http_server(b"hello from the origin").await;
    let rule = format!("localhost:{server}");
    let mut proxy = start(std::slice::from_ref(&rule), &[]);
    let mut stream = client(proxy.port).await;
    let request = format!(
        "GET http://LOCALHOST:{server}/path?x=1#frag HTTP/1.1\r\nHost: evil.test\r\nProxy-Authorization: Basic c2VjcmV0\r\nProxy-Connection: keep-alive\r\nAccept: */*\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let answer = String::from_utf8(read_to_end(&mut stream).await).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    assert_eq!(body, "hello from the origin");
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert!(head.contains("\r\nX-Test: yes"), "{head}");
    assert!(head.ends_with("\r\nConnection: close"), "{head}");
    assert!(!head.contains("keep-alive"), "{head}");
    let seen = heads.lock().unwrap().clone();
    assert_eq!(
        seen,
        vec![format!(
            "GET /path?x=1 HTTP/1.1\r\nAccept: */*\r\nHost: localhost:{server}\r\nConnection: close\r\n\r\n"
        )]
    );
    let event = proxy.events.next().await;
    assert_eq!(event.protocol, Protocol::Http);
    assert_eq!(event.decision, Decision::Allowed);
    assert_eq!((event.host.as_str(), event.port), ("localhost", server));
    assert_eq!(event.rule.as_deref(), Some(rule.as_str()));
    assert_eq!(event.bytes_up, seen[0].len() as u64);
    // The origin's head (with its keep-alive) and the body, as received.
    let origin_head =
        "HTTP/1.1 200 OK\r\nContent-Length: 21\r\nConnection: keep-alive\r\nX-Test: yes\r\n\r\n";
    assert_eq!(event.bytes_down, (origin_head.len() + body.len()) as u64);
}

#[tokio::test]
async fn a_denied_plain_request_gets_403_with_the_policy_in_header_and_body() {
    let mut proxy = start(&[], &[]);
    let mut stream = client(proxy.port).await;
    stream
        .write_all(b"GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n")
        .await
        .unwrap();
    let answer = String::from_utf8(read_to_end(&mut stream).await).unwrap();
    assert!(answer.starts_with("HTTP/1.1 403 Forbidden\r\n"), "{answer}");
    assert!(
        answer.contains("X-Drover-Denied: blocked by the task's network policy: example.com:80 no allow rule\r\n"),
        "{answer}"
    );
    let event = proxy.events.next().await;
    assert_eq!(event.protocol, Protocol::Http);
    assert_eq!((event.host.as_str(), event.port), ("example.com", 80));
    assert_eq!(event.decision, Decision::Denied);
}

#[tokio::test]
async fn malformed_requests_get_400_and_an_event() {
    let mut proxy = start(&["example.com".to_string()], &[]);
    for (request, says) in [
        (
            "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n",
            "absolute form",
        ),
        (
            "GET https://example.com/ HTTP/1.1\r\n\r\n",
            "CONNECT host:443",
        ),
        (
            "CONNECT example.com HTTP/1.1\r\n\r\n",
            "CONNECT needs host:port",
        ),
        ("CONNECT exa mple.com:443 HTTP/1.1\r\n\r\n", "malformed"),
        ("CONNECT ex%00ample.com:443 HTTP/1.1\r\n\r\n", "not a host"),
        (
            "GET http://user@example.com/ HTTP/1.1\r\n\r\n",
            "credentials",
        ),
        ("\x16\x03\x01\x00\x05hello\r\n\r\n", "malformed"),
    ] {
        let mut stream = client(proxy.port).await;
        stream.write_all(request.as_bytes()).await.unwrap();
        let answer = String::from_utf8_lossy(&read_to_end(&mut stream).await).into_owned();
        assert!(
            answer.starts_with("HTTP/1.1 400 Bad Request\r\n"),
            "{request:?}: {answer}"
        );
        assert!(answer.contains(says), "{request:?}: {answer}");
        let event = proxy.events.next().await;
        assert_eq!(event.decision, Decision::Denied, "{request:?}");
        assert!(event.reason.unwrap().contains(says), "{request:?}");
    }
}

#[tokio::test]
async fn a_head_over_the_bound_gets_431() {
    let mut proxy = start(&["example.com".to_string()], &[]);
    let mut stream = client(proxy.port).await;
    let mut request = b"GET http://example.com/ HTTP/1.1\r\n".to_vec();
    request.extend(std::iter::repeat_n(b'a', 70 * 1024));
    // The proxy may close while this is still being written.
    let _ = stream.write_all(&request).await;
    let answer = String::from_utf8_lossy(&read_to_end(&mut stream).await).into_owned();
    assert!(answer.starts_with("HTTP/1.1 431 "), "{answer}");
    let event = proxy.events.next().await;
    assert!(event.reason.unwrap().contains("larger than 65536 bytes"));
}
