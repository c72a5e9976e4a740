//! The mock model: an Anthropic Messages API (`POST /v1/messages`, streamed) on
//! 127.0.0.1 that enforces a context window and plays the long run's scenario. A request
//! counts as its body's bytes over four tokens; one over the window is refused with the
//! API's own 400 `prompt is too long`, as the real API refuses it, so a run without
//! context management meets the failure it would meet in production. Std threads, one
//! per connection (drover keeps one open); the figures sit behind one lock.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;

use super::answer;
use super::figures::{Figures, tokens};
use super::scenario::{Scenario, Step};

/// The largest request body taken: far above any window this plays, and a bound on
/// what one request can make the mock hold.
const MAX_BODY: usize = 64 * 1024 * 1024;
/// The largest request head taken.
const MAX_HEAD: usize = 64 * 1024;

/// How the mock behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Settings {
    pub scenario: Scenario,
    /// The window in tokens; None accepts every request.
    pub window: Option<u64>,
    /// Refuse the request for this scenario turn once as too long, even if it fits.
    pub refuse_at: Option<u32>,
}

/// The mock's state between requests.
#[derive(Debug)]
struct State {
    settings: Settings,
    figures: Figures,
    /// `refuse_at` has been played.
    refused_once: bool,
}

/// A running mock; dropping it stops accepting connections.
pub(crate) struct MockModel {
    address: SocketAddr,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
}

impl MockModel {
    /// Listen on a free port of 127.0.0.1 and serve on threads of its own.
    pub(crate) fn start(settings: Settings) -> std::io::Result<MockModel> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        let address = listener.local_addr()?;
        let state = Arc::new(Mutex::new(State {
            settings,
            figures: Figures {
                window: settings.window,
                ..Figures::default()
            },
            refused_once: false,
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let (shared, stopped) = (Arc::clone(&state), Arc::clone(&stop));
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stopped.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let state = Arc::clone(&shared);
                std::thread::spawn(move || serve(stream, &state));
            }
        });
        Ok(MockModel {
            address,
            state,
            stop,
        })
    }

    pub(crate) fn address(&self) -> SocketAddr {
        self.address
    }

    /// The figures so far.
    pub(crate) fn figures(&self) -> Figures {
        lock(&self.state).figures.clone()
    }
}

impl Drop for MockModel {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.address);
    }
}

/// The state, even if a connection's thread panicked holding it: the figures are plain
/// counters, never left half-written.
fn lock(state: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One response.
struct Response {
    status: u16,
    content_type: &'static str,
    body: String,
}

impl Response {
    fn error(status: u16, kind: &str, message: &str) -> Response {
        Response {
            status,
            content_type: "application/json",
            body: answer::error_body(kind, message),
        }
    }
}

/// Answer the requests of one connection, kept alive, until the client closes it.
fn serve(mut stream: TcpStream, state: &Mutex<State>) {
    let mut buffer = Vec::new();
    loop {
        let Some((head, close)) = read_head(&mut stream, &mut buffer) else {
            return;
        };
        let response = match head {
            Head::Request { post, length } => match read_body(&mut stream, &mut buffer, length) {
                Some(body) if post => answer_request(state, &body),
                Some(_) => Response::error(404, "not_found_error", "mock: POST /v1/messages only"),
                None => return,
            },
            Head::Refused(response) => response,
        };
        let closing = close || response.status == 411 || response.status == 413;
        if write_response(&mut stream, &response, closing).is_err() || closing {
            return;
        }
    }
}

/// What a request head asked for.
enum Head {
    /// `post`: a POST to /v1/messages; `length`: its body's bytes.
    Request { post: bool, length: usize },
    /// Answered without reading a body.
    Refused(Response),
}

/// Read and parse the next request head from `stream` (bytes already read first): the
/// head, and whether the client asked to close. None when the connection ends.
fn read_head(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> Option<(Head, bool)> {
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut request = httparse::Request::new(&mut headers);
        match request.parse(buffer) {
            Ok(httparse::Status::Complete(used)) => {
                let head = head_of(&request);
                let close = request.headers.iter().any(|h| {
                    h.name.eq_ignore_ascii_case("connection")
                        && h.value.eq_ignore_ascii_case(b"close")
                });
                buffer.drain(..used);
                return Some((head, close));
            }
            Ok(httparse::Status::Partial) if buffer.len() < MAX_HEAD => {
                let mut chunk = [0u8; 16 * 1024];
                match stream.read(&mut chunk) {
                    Ok(0) | Err(_) => return None,
                    Ok(n) => buffer.extend_from_slice(&chunk[..n]),
                }
            }
            _ => return None,
        }
    }
}

fn head_of(request: &httparse::Request) -> Head {
    let header = |name: &str| {
        request
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| String::from_utf8_lossy(h.value).trim().to_string())
    };
    if header("transfer-encoding").is_some() {
        return Head::Refused(Response::error(
            411,
            "invalid_request_error",
            "mock: send the body with a Content-Length",
        ));
    }
    let length = match header("content-length").map(|n| n.parse::<usize>()) {
        None => 0,
        Some(Ok(n)) if n <= MAX_BODY => n,
        Some(_) => {
            return Head::Refused(Response::error(
                413,
                "request_too_large",
                "mock: the request body is too large",
            ));
        }
    };
    let post = request.method == Some("POST")
        && request
            .path
            .is_some_and(|path| path.split('?').next() == Some("/v1/messages"));
    Head::Request { post, length }
}

/// The `length` bytes of the body (some already in `buffer`); None when the connection
/// ends first.
fn read_body(stream: &mut TcpStream, buffer: &mut Vec<u8>, length: usize) -> Option<Vec<u8>> {
    while buffer.len() < length {
        let mut chunk = vec![0u8; (length - buffer.len()).min(256 * 1024)];
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return None,
            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
        }
    }
    Some(buffer.drain(..length).collect())
}

fn write_response(stream: &mut TcpStream, response: &Response, close: bool) -> std::io::Result<()> {
    let reason = match response.status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        411 => "Length Required",
        _ => "Payload Too Large",
    };
    let head = format!(
        "HTTP/1.1 {} {reason}\r\nContent-Type: {}\r\nCache-Control: no-cache\r\nContent-Length: {}\r\n{}\r\n",
        response.status,
        response.content_type,
        response.body.len(),
        if close { "Connection: close\r\n" } else { "" }
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(response.body.as_bytes())?;
    stream.flush()
}

/// Judge one Messages request against the window, then play the scenario's next turn
/// or, for a request without tools, where the work stands.
fn answer_request(state: &Mutex<State>, body: &[u8]) -> Response {
    let Ok(request) = serde_json::from_slice::<Value>(body) else {
        return Response::error(400, "invalid_request_error", "mock: the body is not JSON");
    };
    if !request.get("messages").is_some_and(Value::is_array) {
        return Response::error(
            400,
            "invalid_request_error",
            "mock: messages: Field required",
        );
    }
    let bytes = body.len() as u64;
    let tokens = tokens(bytes);
    let text_only = text_only(&request);
    let mut state = lock(state);
    let settings = state.settings;
    let next = state.figures.turns + 1;
    if let Some(window) = settings.window.filter(|window| tokens > *window) {
        state.figures.refuse(tokens);
        return Response::error(
            400,
            "invalid_request_error",
            &answer::too_long_message(tokens, window),
        );
    }
    if !text_only && settings.refuse_at == Some(next) && !state.refused_once {
        state.refused_once = true;
        state.figures.refuse(tokens);
        let maximum = settings
            .window
            .unwrap_or(tokens)
            .min(tokens.saturating_sub(1));
        return Response::error(
            400,
            "invalid_request_error",
            &answer::too_long_message(tokens, maximum),
        );
    }
    let (turn, body) = if text_only {
        let done = state.figures.turns;
        let text = settings.scenario.progress(done);
        let step = Step::Finish { text };
        (done, answer::stream(&step, done, tokens))
    } else {
        (
            next,
            answer::stream(&settings.scenario.step(next), next, tokens),
        )
    };
    state.figures.accept(turn, text_only, bytes);
    Response {
        status: 200,
        content_type: "text/event-stream",
        body,
    }
}

/// A request the model must answer with text: no tools offered, or `tool_choice`
/// `{"type": "none"}` (drover's summary and wrap-up requests).
fn text_only(request: &Value) -> bool {
    let no_tools = request
        .get("tools")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    no_tools || request["tool_choice"]["type"] == "none"
}

#[cfg(test)]
#[path = "server_tests.rs"]
mod tests;
