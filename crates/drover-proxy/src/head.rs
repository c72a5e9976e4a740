//! Reading an HTTP head (a request's, or an upstream response's) with a bound on its size,
//! and the parts of a request the proxy acts on. The head comes from the sandbox, which
//! is hostile: the size is capped, the caller caps the time, and the parsing is
//! httparse's.

use std::io;

use tokio::io::{AsyncRead, AsyncReadExt as _};

/// The most headers a request or response head may carry.
const MAX_HEADERS: usize = 128;

/// Why a head could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HeadError {
    #[error("the head is larger than {0} bytes")]
    TooLarge(usize),
    #[error("the connection closed before the head ended")]
    Closed,
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// A head read whole: `bytes[..end]` is the head (its blank line included), the rest
/// is what followed it in the same reads (a body's start, a TLS ClientHello).
pub(crate) struct Head {
    pub(crate) bytes: Vec<u8>,
    pub(crate) end: usize,
}

impl Head {
    pub(crate) fn head(&self) -> &[u8] {
        &self.bytes[..self.end]
    }

    pub(crate) fn rest(&self) -> &[u8] {
        &self.bytes[self.end..]
    }
}

/// Read from `reader` (after the bytes already in `bytes`) until a blank line ends the
/// head, at most `max` bytes of head.
pub(crate) async fn read_head<R: AsyncRead + Unpin>(
    reader: &mut R,
    mut bytes: Vec<u8>,
    max: usize,
) -> Result<Head, HeadError> {
    let mut scanned = 0;
    loop {
        if let Some(end) = head_end(&bytes, scanned) {
            if end > max {
                return Err(HeadError::TooLarge(max));
            }
            return Ok(Head { bytes, end });
        }
        if bytes.len() >= max {
            return Err(HeadError::TooLarge(max));
        }
        // Only the tail can start a terminator that the next read completes.
        scanned = bytes.len().saturating_sub(3);
        bytes.reserve(4096.min(max + 4 - bytes.len()));
        if reader.read_buf(&mut bytes).await? == 0 {
            return Err(HeadError::Closed);
        }
    }
}

/// Where the head in `bytes` ends (after `\r\n\r\n`, or `\n\n` which HTTP parsers accept
/// too), looking from `from` on so that a head trickled in byte by byte is scanned once.
fn head_end(bytes: &[u8], from: usize) -> Option<usize> {
    let tail = bytes.get(from..)?;
    tail.windows(2).enumerate().find_map(|(i, pair)| {
        let at = from + i;
        if pair == b"\n\n" {
            Some(at + 2)
        } else if pair == b"\n\r" && bytes.get(at + 2) == Some(&b'\n') {
            Some(at + 3)
        } else {
            None
        }
    })
}

/// Why a request is not one the proxy serves; answered `400 Bad Request`.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct BadRequest(pub(crate) String);

/// The parts of a request head the proxy acts on.
pub(crate) struct RequestHead<'h> {
    pub(crate) method: &'h str,
    pub(crate) target: &'h str,
    /// The minor version of HTTP/1.x.
    pub(crate) minor: u8,
    pub(crate) headers: Vec<(&'h str, &'h [u8])>,
}

/// Parse a request head read by [`read_head`].
pub(crate) fn parse_request(head: &[u8]) -> Result<RequestHead<'_>, BadRequest> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut headers);
    match request.parse(head) {
        Ok(httparse::Status::Complete(_)) => {}
        Ok(httparse::Status::Partial) => {
            return Err(BadRequest("the request head is incomplete".to_string()));
        }
        Err(error) => {
            return Err(BadRequest(format!(
                "the request head is malformed: {error}"
            )));
        }
    }
    let (Some(method), Some(target), Some(minor)) = (request.method, request.path, request.version)
    else {
        return Err(BadRequest("the request line is incomplete".to_string()));
    };
    Ok(RequestHead {
        method,
        target,
        minor,
        headers: request
            .headers
            .iter()
            .map(|header| (header.name, header.value))
            .collect(),
    })
}

/// A response head from the upstream host, as the proxy passes it on.
pub(crate) struct ResponseHead<'h> {
    pub(crate) code: u16,
    pub(crate) reason: &'h str,
    pub(crate) minor: u8,
    pub(crate) headers: Vec<(&'h str, &'h [u8])>,
}

/// Parse a response head; None when it is none httparse reads (the caller then passes
/// the bytes on as they came).
pub(crate) fn parse_response(head: &[u8]) -> Option<ResponseHead<'_>> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut headers);
    match response.parse(head) {
        Ok(httparse::Status::Complete(_)) => {}
        _ => return None,
    }
    Some(ResponseHead {
        code: response.code?,
        reason: response.reason.unwrap_or(""),
        minor: response.version?,
        headers: response
            .headers
            .iter()
            .map(|header| (header.name, header.value))
            .collect(),
    })
}

/// `host[:port]` split; an IPv6 host keeps its brackets. None when the port is not
/// digits, or an IPv6 address is written without brackets.
pub(crate) fn split_authority(authority: &str) -> Option<(&str, Option<u16>)> {
    let (host, port) = if authority.starts_with('[') {
        let close = authority.find(']')?;
        let (host, after) = authority.split_at(close + 1);
        match after {
            "" => (host, None),
            _ => (host, Some(after.strip_prefix(':')?)),
        }
    } else {
        match authority.rsplit_once(':') {
            Some((host, _)) if host.contains(':') => return None,
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    let port = match port {
        None => None,
        Some(digits) => {
            if digits.is_empty() || digits.len() > 5 || !digits.bytes().all(|b| b.is_ascii_digit())
            {
                return None;
            }
            Some(digits.parse().ok()?)
        }
    };
    Some((host, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_head_is_read_to_its_blank_line_and_the_rest_kept() {
        let mut input: &[u8] = b"GET http://a/ HTTP/1.1\r\nHost: a\r\n\r\nbody";
        let head = read_head(&mut input, Vec::new(), 1024).await.unwrap();
        assert_eq!(head.head(), b"GET http://a/ HTTP/1.1\r\nHost: a\r\n\r\n");
        assert_eq!(head.rest(), b"body");
        let mut bare: &[u8] = b"GET / HTTP/1.0\n\nx";
        let head = read_head(&mut bare, Vec::new(), 1024).await.unwrap();
        assert_eq!(head.rest(), b"x");
    }

    #[tokio::test]
    async fn a_head_split_across_reads_is_found() {
        let (mut client, mut server) = tokio::io::duplex(64);
        let writer = tokio::spawn(async move {
            for byte in b"CONNECT a:443 HTTP/1.1\r\n\r\n" {
                tokio::io::AsyncWriteExt::write_all(&mut client, &[*byte])
                    .await
                    .unwrap();
            }
            client
        });
        let head = read_head(&mut server, b"".to_vec(), 1024).await.unwrap();
        assert_eq!(head.end, 26);
        drop(writer.await.unwrap());
    }

    #[tokio::test]
    async fn a_head_too_large_or_cut_short_is_an_error() {
        let big = vec![b'a'; 5000];
        let mut input: &[u8] = &big;
        assert!(matches!(
            read_head(&mut input, Vec::new(), 4096).await,
            Err(HeadError::TooLarge(4096))
        ));
        let mut short: &[u8] = b"GET / HTTP/1.1\r\n";
        assert!(matches!(
            read_head(&mut short, Vec::new(), 4096).await,
            Err(HeadError::Closed)
        ));
    }

    #[test]
    fn requests_are_parsed_and_bad_ones_refused() {
        let head = parse_request(b"CONNECT example.com:443 HTTP/1.1\r\nX: y\r\n\r\n").unwrap();
        assert_eq!(
            (head.method, head.target, head.minor),
            ("CONNECT", "example.com:443", 1)
        );
        assert_eq!(head.headers, vec![("X", &b"y"[..])]);
        assert!(parse_request(b"GET\r\n\r\n").is_err());
        assert!(parse_request(b"\x16\x03\x01\x02\x00\x01\r\n\r\n").is_err());
    }

    #[test]
    fn authorities_split_into_host_and_port() {
        assert_eq!(
            split_authority("example.com:443"),
            Some(("example.com", Some(443)))
        );
        assert_eq!(split_authority("example.com"), Some(("example.com", None)));
        assert_eq!(split_authority("[::1]:8080"), Some(("[::1]", Some(8080))));
        assert_eq!(split_authority("[::1]"), Some(("[::1]", None)));
        for bad in [
            "::1:443", "a:+80", "a:", "a:65536", "a:123456", "[::1]x", "[::1",
        ] {
            assert_eq!(split_authority(bad), None, "{bad}");
        }
    }
}
