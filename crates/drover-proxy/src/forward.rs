//! A plain HTTP request through the proxy (`GET http://host/path HTTP/1.1`): judged by
//! its URL's host and port, sent on in origin form with the hop-by-hop and `Proxy-*`
//! headers dropped, `Host` set from the URL (so the head cannot name another host than
//! the one judged and connected to) and `Connection: close`, one request per
//! connection. The response goes back with `Connection: close` too.

use drover_policy::EgressHost;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt as _};
use tokio::net::TcpStream;

use crate::answer::Answer;
use crate::counted::Counted;
use crate::event::Tally;
use crate::head::{
    BadRequest, HeadError, RequestHead, ResponseHead, parse_response, read_head, split_authority,
};
use crate::http::{cut, refuse, target};
use crate::options::Shared;
use crate::tunnel::COPY_BUFFER;
use crate::upstream::open;

/// Headers of one hop that are not passed on (RFC 9110 7.6.1), `Host` (set from the URL)
/// and every `Proxy-*` header (the client's credentials for this proxy, if any).
const HOP_HEADERS: &[&str] = &["connection", "keep-alive", "te", "upgrade", "host"];

/// Forward `request` (whose body starts with `body_start`) to the host of its URL.
pub(crate) async fn forward(
    mut client: TcpStream,
    request: &RequestHead<'_>,
    body_start: &[u8],
    shared: &Shared,
    tally: &mut Tally,
) {
    let url = match absolute_url(request.target) {
        Ok(url) => url,
        Err(bad) => {
            refuse(&mut client, tally, Some(Answer::BadRequest(bad.0)), None).await;
            return;
        }
    };
    let host = match target(tally, url.host, url.port) {
        Ok(host) => host,
        Err(answer) => {
            refuse(&mut client, tally, Some(answer), None).await;
            return;
        }
    };
    let stream = match open(shared, tally, &host, url.port).await {
        Ok(stream) => stream,
        Err(refusal) => {
            let _ = client
                .write_all(&refusal.answer(&host, url.port).to_http())
                .await;
            let _ = client.shutdown().await;
            return;
        }
    };
    let head = request_head(request, url.path, &host, url.port);
    let (mut upstream_read, mut upstream_write) =
        tokio::io::split(Counted::new(stream, tally.counters()));
    if upstream_write.write_all(&head).await.is_err()
        || upstream_write.write_all(body_start).await.is_err()
    {
        return;
    }
    let (mut client_read, mut client_write) = client.split();
    let max = shared.options.max_head_bytes;
    let up = async {
        let _ = tokio::io::copy(&mut client_read, &mut upstream_write).await;
        let _ = upstream_write.shutdown().await;
    };
    let down = async {
        if pass_response(&mut upstream_read, &mut client_write, max).await {
            let mut buffered = tokio::io::BufReader::with_capacity(COPY_BUFFER, &mut upstream_read);
            let _ = tokio::io::copy_buf(&mut buffered, &mut client_write).await;
        }
        let _ = client_write.shutdown().await;
    };
    tokio::pin!(up, down);
    // The response ends the exchange; a client done sending only ends its direction.
    tokio::select! {
        () = &mut down => {}
        () = &mut up => down.await,
    }
}

/// The parts of an absolute-form `http://` target.
struct AbsoluteUrl<'t> {
    host: &'t str,
    port: u16,
    /// Path and query, `/` when empty; no fragment.
    path: String,
}

fn absolute_url(target: &str) -> Result<AbsoluteUrl<'_>, BadRequest> {
    let scheme_end = target.find("://").map(|at| at + 3);
    let Some(rest) = scheme_end
        .filter(|&end| target[..end].eq_ignore_ascii_case("http://"))
        .map(|end| &target[end..])
    else {
        return Err(BadRequest(if target.starts_with('/') {
            "this is a proxy: send requests in absolute form (GET http://host/path) or CONNECT host:port".to_string()
        } else if target.len() > 8 && target[..8].eq_ignore_ascii_case("https://") {
            "https goes through CONNECT host:443, not as a plain request".to_string()
        } else {
            format!("not an http:// URL: {:?}", cut(target))
        }));
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    if authority.contains('@') {
        return Err(BadRequest(
            "the URL carries credentials (user@host); the proxy sends none".to_string(),
        ));
    }
    let Some((host, port)) = split_authority(authority) else {
        return Err(BadRequest(format!(
            "not a host[:port]: {:?}",
            cut(authority)
        )));
    };
    let path = path.split('#').next().unwrap_or("");
    let path = match path.chars().next() {
        None => "/".to_string(),
        Some('?') => format!("/{path}"),
        Some(_) => path.to_string(),
    };
    Ok(AbsoluteUrl {
        host,
        port: port.unwrap_or(80),
        path,
    })
}

/// The request head sent on: origin form, no hop-by-hop or `Proxy-*` header, the URL's
/// host as `Host`, `Connection: close`.
fn request_head(request: &RequestHead<'_>, path: String, host: &EgressHost, port: u16) -> Vec<u8> {
    let mut head = format!("{} {path} HTTP/1.{}\r\n", request.method, request.minor).into_bytes();
    push_headers(&mut head, &request.headers);
    let authority = if port == 80 {
        host.to_string()
    } else {
        format!("{host}:{port}")
    };
    head.extend_from_slice(format!("Host: {authority}\r\nConnection: close\r\n\r\n").as_bytes());
    head
}

/// The headers that go on to the next hop: none of `HOP_HEADERS`, no `Proxy-*`, none
/// that `Connection` names.
fn push_headers(head: &mut Vec<u8>, headers: &[(&str, &[u8])]) {
    let named: Vec<String> = headers
        .iter()
        .filter(|(name, _)| name.eq_ignore_ascii_case("connection"))
        .flat_map(|(_, value)| {
            String::from_utf8_lossy(value)
                .split(',')
                .map(|token| token.trim().to_ascii_lowercase())
                .collect::<Vec<_>>()
        })
        .collect();
    for (name, value) in headers {
        let lower = name.to_ascii_lowercase();
        if HOP_HEADERS.contains(&lower.as_str())
            || lower.starts_with("proxy-")
            || named.contains(&lower)
        {
            continue;
        }
        head.extend_from_slice(name.as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(value);
        head.extend_from_slice(b"\r\n");
    }
}

/// Pass the upstream's response head on with `Connection: close` (interim `1xx` heads
/// as they are); false when there is nothing more to copy.
async fn pass_response<R, W>(upstream: &mut R, client: &mut W, max: usize) -> bool
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut carried = Vec::new();
    loop {
        let head = match read_head(upstream, carried, max).await {
            Ok(head) => head,
            Err(error) => {
                let why = match error {
                    HeadError::TooLarge(max) => {
                        format!("the host's response head is larger than {max} bytes")
                    }
                    other => format!("the host sent no response: {other}"),
                };
                let _ = client.write_all(&Answer::BadGateway(why).to_http()).await;
                return false;
            }
        };
        let response = parse_response(head.head());
        let interim = response
            .as_ref()
            .is_some_and(|r| (100..200).contains(&r.code) && r.code != 101);
        let written = match &response {
            Some(response) if !interim => client.write_all(&response_head(response)).await,
            // An interim head, or one httparse cannot read: passed on as it came.
            _ => client.write_all(head.head()).await,
        };
        if written.is_err() {
            return false;
        }
        if interim {
            carried = head.rest().to_vec();
            continue;
        }
        return client.write_all(head.rest()).await.is_ok();
    }
}

/// A final response head with `Connection: close` in place of the upstream's.
fn response_head(response: &ResponseHead<'_>) -> Vec<u8> {
    let mut head = format!(
        "HTTP/1.{} {} {}\r\n",
        response.minor, response.code, response.reason
    )
    .into_bytes();
    push_headers(&mut head, &response.headers);
    head.extend_from_slice(b"Connection: close\r\n\r\n");
    head
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_urls_split_into_host_port_and_origin_form() {
        let url = absolute_url("http://Example.com:8080/a/../b?q=1#frag").unwrap();
        assert_eq!((url.host, url.port), ("Example.com", 8080));
        assert_eq!(url.path, "/a/../b?q=1");
        let url = absolute_url("HTTP://example.com").unwrap();
        assert_eq!((url.port, url.path.as_str()), (80, "/"));
        assert_eq!(absolute_url("http://a?x").unwrap().path, "/?x");
        assert_eq!(absolute_url("http://[::1]:81/").unwrap().host, "[::1]");
        for bad in [
            "/path",
            "https://example.com/",
            "ftp://example.com/",
            "http://user:pw@example.com/",
            "http://a:b:c/",
            "example.com",
        ] {
            assert!(absolute_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn hop_by_hop_and_proxy_headers_are_dropped_and_host_is_the_urls() {
        let request = RequestHead {
            method: "POST",
            target: "http://example.com/x",
            minor: 1,
            headers: vec![
                ("Host", b"evil.com"),
                ("Proxy-Authorization", b"Basic c2VjcmV0"),
                ("Proxy-Connection", b"keep-alive"),
                ("Connection", b"keep-alive, X-Secret"),
                ("X-Secret", b"1"),
                ("Keep-Alive", b"timeout=5"),
                ("Upgrade", b"websocket"),
                ("Content-Length", b"3"),
                ("Accept", b"*/*"),
            ],
        };
        let host = EgressHost::parse("example.com").unwrap();
        let head = String::from_utf8(request_head(&request, "/x".into(), &host, 8080)).unwrap();
        assert_eq!(
            head,
            "POST /x HTTP/1.1\r\nContent-Length: 3\r\nAccept: */*\r\nHost: example.com:8080\r\nConnection: close\r\n\r\n"
        );
    }

    #[tokio::test]
    async fn a_response_goes_back_with_connection_close_after_interim_heads() {
        let mut upstream: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok";
        let mut client = Vec::new();
        assert!(pass_response(&mut upstream, &mut client, 1024).await);
        assert_eq!(
            String::from_utf8(client).unwrap(),
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
        );
    }

    #[tokio::test]
    async fn no_response_is_a_502() {
        let mut upstream: &[u8] = b"";
        let mut client = Vec::new();
        assert!(!pass_response(&mut upstream, &mut client, 1024).await);
        assert!(client.starts_with(b"HTTP/1.1 502 Bad Gateway\r\n"));
    }
}
