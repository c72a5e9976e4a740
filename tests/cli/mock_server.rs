//! A tiny HTTP/1.1 server on 127.0.0.1 for provider tests, written on raw sockets so a
//! test controls every byte: how a stream is chunked, when it is cut, when a connection
//! is reset. Replies are served in order, one per connection (`Connection: close`).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the server does with one request.
#[derive(Clone, Debug)]
pub(crate) enum Reply {
    /// 200 `text/event-stream`, chunked; each piece is written and flushed on its own,
    /// `pause` apart. Unless `complete`, the connection is dropped without the final
    /// chunk (a stream cut mid-message).
    Sse {
        pieces: Vec<Vec<u8>>,
        pause: Duration,
        complete: bool,
    },
    /// A plain response.
    Status {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    },
    /// Close the connection before answering, with the request unread (a reset).
    Reset,
}

impl Reply {
    /// A stream sent whole.
    pub(crate) fn sse(stream: &str) -> Reply {
        Reply::Sse {
            pieces: vec![stream.as_bytes().to_vec()],
            pause: Duration::ZERO,
            complete: true,
        }
    }

    /// A stream sent one byte per write.
    pub(crate) fn sse_bytewise(stream: &str) -> Reply {
        Reply::Sse {
            pieces: stream.bytes().map(|b| vec![b]).collect(),
            pause: Duration::ZERO,
            complete: true,
        }
    }

    /// A stream split at each of `cuts` (byte offsets), a little pause between pieces.
    pub(crate) fn sse_split(stream: &str, cuts: &[usize]) -> Reply {
        let bytes = stream.as_bytes();
        let mut pieces = Vec::new();
        let mut start = 0;
        for &cut in cuts {
            pieces.push(bytes[start..cut].to_vec());
            start = cut;
        }
        pieces.push(bytes[start..].to_vec());
        Reply::Sse {
            pieces,
            pause: Duration::from_millis(5),
            complete: true,
        }
    }

    /// The first `len` bytes of a stream, then the connection drops.
    pub(crate) fn sse_cut(stream: &str, len: usize) -> Reply {
        Reply::Sse {
            pieces: vec![stream.as_bytes()[..len].to_vec()],
            pause: Duration::ZERO,
            complete: false,
        }
    }

    pub(crate) fn status(status: u16, body: &str) -> Reply {
        Reply::bytes(status, body.as_bytes().to_vec())
    }

    /// A plain response whose body is any bytes (a compressed one …).
    pub(crate) fn bytes(status: u16, body: Vec<u8>) -> Reply {
        Reply::Status {
            status,
            headers: Vec::new(),
            body,
        }
    }

    pub(crate) fn with_header(mut self, name: &str, value: &str) -> Reply {
        if let Reply::Status { headers, .. } = &mut self {
            headers.push((name.to_string(), value.to_string()));
        }
        self
    }
}

/// One request as received.
#[derive(Clone, Debug)]
pub(crate) struct Request {
    /// `POST /v1/messages`
    pub line: String,
    /// The header block, lower-cased names as sent.
    pub headers: String,
    pub body: Vec<u8>,
}

impl Request {
    pub(crate) fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("request body is JSON")
    }

    pub(crate) fn header(&self, name: &str) -> Option<String> {
        self.headers.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim()
                .eq_ignore_ascii_case(name)
                .then(|| value.trim().to_string())
        })
    }
}

pub(crate) struct MockServer {
    pub base_url: String,
    requests: Arc<Mutex<Vec<Request>>>,
}

impl MockServer {
    /// Serve `replies` in order; requests past the last get a 500 saying so.
    pub(crate) fn start(replies: Vec<Reply>) -> MockServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let base_url = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let recorded = Arc::clone(&requests);
        std::thread::spawn(move || {
            let mut replies = replies.into_iter();
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let reply = replies.next().unwrap_or_else(|| {
                    Reply::status(500, "{\"error\":{\"message\":\"mock: no more replies\"}}")
                });
                serve(stream, reply, &recorded);
            }
        });
        MockServer { base_url, requests }
    }

    pub(crate) fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }
}

fn serve(mut stream: TcpStream, reply: Reply, recorded: &Mutex<Vec<Request>>) {
    let _ = stream.set_nodelay(true);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let Some((line, headers, rest)) = read_head(&mut stream) else {
        return;
    };
    if let Reply::Reset = reply {
        recorded.lock().unwrap().push(Request {
            line,
            headers,
            body: Vec::new(),
        });
        // Unread request bytes make the kernel answer the close with a reset.
        drop(stream);
        return;
    }
    let length = headers
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    let mut body = rest;
    while body.len() < length {
        let mut buf = [0u8; 65536];
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => body.extend_from_slice(&buf[..n]),
        }
    }
    recorded.lock().unwrap().push(Request {
        line,
        headers,
        body,
    });
    match reply {
        Reply::Status {
            status,
            headers,
            body,
        } => {
            // JSON unless the reply names its own content type.
            let typed = headers
                .iter()
                .any(|(name, _)| name.eq_ignore_ascii_case("content-type"));
            let default_type = if typed {
                ""
            } else {
                "content-type: application/json\r\n"
            };
            let mut head = format!(
                "HTTP/1.1 {status} Mock\r\n{default_type}content-length: {}\r\nconnection: close\r\n",
                body.len()
            );
            for (name, value) in headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str("\r\n");
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&body);
            let _ = stream.flush();
        }
        Reply::Sse {
            pieces,
            pause,
            complete,
        } => {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";
            if stream.write_all(head.as_bytes()).is_err() {
                return;
            }
            for piece in pieces.iter().filter(|p| !p.is_empty()) {
                let mut chunk = format!("{:x}\r\n", piece.len()).into_bytes();
                chunk.extend_from_slice(piece);
                chunk.extend_from_slice(b"\r\n");
                if stream
                    .write_all(&chunk)
                    .and_then(|()| stream.flush())
                    .is_err()
                {
                    return;
                }
                if !pause.is_zero() {
                    std::thread::sleep(pause);
                }
            }
            if complete {
                let _ = stream.write_all(b"0\r\n\r\n");
                let _ = stream.flush();
            }
        }
        Reply::Reset => {}
    }
    let _ = stream.shutdown(std::net::Shutdown::Both);
}

/// The request line, the header block and any body bytes read with them.
fn read_head(stream: &mut TcpStream) -> Option<(String, String, Vec<u8>)> {
    let mut data = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        if let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&data[..end]).into_owned();
            let rest = data[end + 4..].to_vec();
            let (line, headers) = head.split_once("\r\n").unwrap_or((&head, ""));
            return Some((line.to_string(), headers.replace("\r\n", "\n"), rest));
        }
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return None,
            Ok(n) => data.extend_from_slice(&buf[..n]),
        }
    }
}
