// Test-only module: its parent includes it under #[cfg(test)].
// Every test runs with tokio's clock paused: it moves only when nothing else can, so
// the grace of a line past the bound passes only when the test lets it.
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};

use super::*;

/// What rmcp reads when the server writes `written` and ends.
async fn relayed(written: Vec<u8>) -> Vec<u8> {
    relayed_counting(written).await.0
}

/// [`relayed`], and what was counted of the lines not passed on.
async fn relayed_counting(written: Vec<u8>) -> (Vec<u8>, Arc<DroppedLines>) {
    let mut out = Vec::new();
    let dropped = Arc::new(DroppedLines::default());
    let cursor = std::io::Cursor::new(written);
    relay("flood", cursor, tokio::io::sink(), dropped.clone())
        .0
        .read_to_end(&mut out)
        .await
        .unwrap();
    (out, dropped)
}

fn text_answer(id: &str, text_bytes: usize, id_last: bool) -> Vec<u8> {
    let text = "x".repeat(text_bytes);
    let result = format!(r#""result":{{"content":[{{"type":"text","text":"{text}"}}]}}"#);
    let line = if id_last {
        format!(r#"{{{result},"id":{id},"jsonrpc":"2.0"}}"#)
    } else {
        format!(r#"{{"jsonrpc":"2.0","id":{id},{result}}}"#)
    };
    format!("{line}\n").into_bytes()
}

/// A server whose stdout the test writes, relayed: what the server writes (a task writes
/// it, so that the test reads as the server writes), rmcp's reading end, rmcp's stdin
/// (where the requests it sends are noted), what the server reads from its stdin, and
/// the lines not passed on.
struct Wired {
    server: tokio::sync::mpsc::UnboundedSender<Vec<u8>>,
    rmcp: BufReader<DuplexStream>,
    stdin: NotedStdin,
    server_stdin: BufReader<DuplexStream>,
    dropped: Arc<DroppedLines>,
}

fn wired() -> Wired {
    let (mut server, stdout) = tokio::io::duplex(1 << 20);
    let (server_stdin, stdin) = tokio::io::duplex(1 << 20);
    let dropped = Arc::new(DroppedLines::default());
    let (rmcp, stdin) = relay("flood", stdout, stdin, dropped.clone());
    let (writes, mut to_write) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
    // The server's stdout ends when the test drops its sender.
    tokio::spawn(async move {
        while let Some(bytes) = to_write.recv().await {
            server.write_all(&bytes).await.unwrap();
        }
    });
    Wired {
        server: writes,
        rmcp: BufReader::new(rmcp),
        stdin,
        server_stdin: BufReader::new(server_stdin),
        dropped,
    }
}

impl Wired {
    /// rmcp sends the request `id`.
    async fn send(&mut self, id: u64) {
        let request = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"answer\"}}}}\n"
        );
        self.stdin.write_all(request.as_bytes()).await.unwrap();
        // The request reaches the server, noted on its way.
        let mut got = String::new();
        self.server_stdin.read_line(&mut got).await.unwrap();
        assert_eq!(got, request);
    }

    /// The next line the server reads from its stdin, as JSON.
    async fn server_reads(&mut self) -> Value {
        let mut got = String::new();
        self.server_stdin.read_line(&mut got).await.unwrap();
        serde_json::from_str(&got).unwrap()
    }

    /// The server writes `bytes`.
    fn write(&self, bytes: &[u8]) {
        self.server.send(bytes.to_vec()).unwrap();
    }

    /// The server writes `count` bytes `byte`, in pieces.
    fn write_repeated(&self, byte: u8, count: usize) {
        let mut left = count;
        while left > 0 {
            let now = left.min(1 << 20);
            self.write(&vec![byte; now]);
            left -= now;
        }
    }

    /// The server writes the line `message` (a newline added).
    fn write_line(&self, message: &[u8]) {
        let mut line = message.to_vec();
        line.push(b'\n');
        self.write(&line);
    }

    /// The next line rmcp reads, newline left out.
    async fn line(&mut self) -> Vec<u8> {
        let mut line = Vec::new();
        self.rmcp.read_until(b'\n', &mut line).await.unwrap();
        assert_eq!(line.pop(), Some(b'\n'), "a whole line");
        line
    }

    /// The next line rmcp reads, as JSON.
    async fn message(&mut self) -> Value {
        serde_json::from_slice(&self.line().await).unwrap()
    }
}

/// The note the error of each call drover fails in the server's place ends with.
const CANCELLED: &str = "; drover asked the server to cancel this call, but it may have run";

#[tokio::test(start_paused = true)]
async fn messages_within_the_bound_pass_as_they_are() {
    let mut written = text_answer("1", 1000, false);
    written.extend(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\r\n");
    written.extend(b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":\"s\",\"result\":{}}\n");
    // A line of exactly the bound, its newline included.
    let mut full =
        br#"{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":""#.to_vec();
    full.resize(MAX_MESSAGE - 6, b'x');
    full.extend(b"\"}]}}\n");
    assert_eq!(full.len(), MAX_MESSAGE);
    written.extend(&full);
    let (out, dropped) = relayed_counting(written.clone()).await;
    assert!(out == written, "every message passes as it is");
    assert_eq!(dropped.closing_note(), None);
}

#[tokio::test(start_paused = true)]
async fn lines_rmcp_cannot_read_are_not_passed_on_but_counted() {
    let log = b"{\"level\":\"info\",\"msg\":\"processing item\",\"n\":12345}\n";
    let mut written = log.repeat(10_000);
    written.extend(b"not json\n\n{\"jsonrpc\":\"2.0\",\"foo\":1}\n");
    let answer = text_answer("1", 10, false);
    written.extend(&answer);
    // A last line that never ends is dropped too.
    written.extend(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}");
    let (out, dropped) = relayed_counting(written).await;
    assert_eq!(out, answer, "only the message reaches rmcp");
    let first = dropped.first_note().unwrap();
    assert!(
        first.ends_with("the first: \"{\\\"level\\\":\\\"info\\\",\\\"msg\\\":\\\"processing item\\\",\\\"n\\\":12345}\"]\n"),
        "{first}"
    );
    // The blank line is nothing to count.
    assert!(
        dropped
            .closing_note()
            .unwrap()
            .starts_with("[drover: in all, 10003 lines "),
        "{:?}",
        dropped.closing_note()
    );
}

#[tokio::test(start_paused = true)]
async fn an_answer_rmcp_cannot_read_fails_its_call_at_once_saying_why() {
    let mut wired = wired();
    let cases: [(&[u8], &str); 4] = [
        (
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"bad \xff\"}]}}",
            "invalid UTF-8 at byte 73",
        ),
        (
            b"{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\r{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}",
            "a carriage return at byte 37 inside it (a message ends with a newline)",
        ),
        (
            br#"{"jsonrpc":"2.0","id":3,"id":3,"result":{"content":[]}}"#,
            "it has its \"id\" twice",
        ),
        (
            br#"{"jsonrpc":"2.0","id":"4"}"#,
            "an answer with neither result nor error",
        ),
    ];
    for (id, (line, why)) in (1..).zip(cases) {
        wired.send(id).await;
        wired.write_line(line);
        let failed = wired.message().await;
        assert_eq!(failed["id"], id, "{why}");
        assert_eq!(
            failed["error"]["message"],
            format!(
                "MCP server flood answered request {id} with a message drover cannot read: {why}"
            )
        );
    }
    // The server answered: nothing to cancel, and nothing dropped unsaid.
    assert_eq!(wired.dropped.closing_note(), None);
    // An unreadable line naming no waiting call is only counted; the call still waits.
    wired.send(5).await;
    wired.write_line(br#"{"jsonrpc":"2.0","id":99}"#);
    // Nor is a log line with an `id` of its own (and no "jsonrpc") an answer.
    wired.write_line(br#"{"level":"error","id":5,"error":"boom"}"#);
    wired.write_line(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
    let late = wired.line().await;
    assert_eq!(
        late, br#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
        "a late answer passes"
    );
    let five = br#"{"jsonrpc":"2.0","id":5,"result":{}}"#;
    wired.write_line(five);
    assert_eq!(wired.line().await, five);
    assert!(wired.dropped.closing_note().unwrap().contains(" 2 lines "));
}

#[tokio::test(start_paused = true)]
async fn an_oversized_tool_result_is_answered_cut_with_a_note() {
    let mut wired = wired();
    wired.send(7).await;
    wired.send(8).await;
    wired.write(&text_answer("7", 20_000_000, false));
    let answer = wired.message().await;
    assert_eq!(answer["id"], 7);
    let content = answer["result"]["content"].as_array().unwrap();
    let note = content[0]["text"].as_str().unwrap();
    // Answered at the bound, before the line's end (and its length) was read.
    assert!(
        note.starts_with("[the server's answer was more than 16777216 bytes, over the 16 MiB"),
        "{note}"
    );
    let text = content[1]["text"].as_str().unwrap();
    assert!(
        text.len() > 1_000_000 && text.len() <= HEAD,
        "{}",
        text.len()
    );
    assert!(text.bytes().all(|b| b == b'x'));
    assert_eq!(answer["result"]["isError"], false);
    // None of the line reaches rmcp; the next message does.
    wired.write(&text_answer("8", 10, false));
    assert_eq!(wired.message().await["id"], 8);
}

#[tokio::test(start_paused = true)]
async fn an_oversized_answer_with_its_id_last_is_still_answered() {
    let mut wired = wired();
    wired
        .stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":\"r-1\",\"method\":\"tools/call\"}\n")
        .await
        .unwrap();
    let _ = wired.server_reads().await;
    wired.write(&text_answer("\"r-1\"", 17_000_000, true));
    let answer = wired.message().await;
    assert_eq!(answer["id"], "r-1");
    let note = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert!(note.contains("over the 16 MiB"), "{note}");
}

#[tokio::test(start_paused = true)]
async fn an_oversized_answer_of_another_kind_is_an_error_naming_its_size() {
    let mut wired = wired();
    wired.send(3).await;
    let listing = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{{\"tools\":[{{\"name\":\"{}\"}}]}}}}\n",
        "n".repeat(MAX_MESSAGE)
    );
    let length = listing.len();
    wired.write(listing.as_bytes());
    let answer = wired.message().await;
    assert_eq!(answer["id"], 3);
    let message = answer["error"]["message"].as_str().unwrap();
    // Its end was read with the byte past the bound: its length is known.
    assert_eq!(
        message,
        format!(
            "the server's answer was {length} bytes, over the 16 MiB drover reads of one MCP message; none of it was used"
        )
    );
    // A server's own request or notification is nobody's answer: only dropped.
    for own in [
        r#"{"jsonrpc":"2.0","method":"notifications/message","params":""#,
        r#"{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage","params":""#,
    ] {
        let mut message = own.as_bytes().to_vec();
        message.extend(vec![b'n'; MAX_MESSAGE]);
        message.extend(b"\"}\n");
        assert!(relayed(message).await.is_empty());
    }
}

#[tokio::test(start_paused = true)]
async fn an_oversized_answer_to_a_request_never_sent_fails_the_waiting_calls() {
    let mut wired = wired();
    wired.send(1).await;
    wired.write_line(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
    let _ = wired.line().await;
    wired.send(2).await;
    // A late answer to 1, already answered, is only dropped.
    wired.write(&text_answer("1", 17_000_000, false));
    // An answer to 9, which was never sent, may have been meant for 2.
    wired.write(&text_answer("9", 17_000_000, false));
    let failed = wired.message().await;
    assert_eq!(failed["id"], 2);
    assert_eq!(
        failed["error"]["message"],
        format!(
            "MCP server flood wrote an answer of more than 16777216 bytes, over the 16 MiB drover reads of one MCP message, to request 9, which drover never sent: it may have been meant for any call waiting on the server, so each of them failed{CANCELLED}"
        )
    );
    assert_eq!(wired.server_reads().await["params"]["requestId"], 2);
}

/// The start of a tool's result whose text the test then writes.
const RESULT_START: &[u8] = br#"{"jsonrpc":"2.0","result":{"content":[{"type":"text","text":""#;

#[tokio::test(start_paused = true)]
async fn an_id_mid_line_is_answered_at_the_bound_before_the_line_ends() {
    let mut wired = wired();
    wired.send(7).await;
    wired.write(RESULT_START);
    wired.write_repeated(b'x', 8_000_000);
    wired.write(br#""}]},"id":7,"pad":""#);
    wired.write_repeated(b'y', 9_000_000);
    // The line has not ended, and the server writes nothing more for now.
    let answer = wired.message().await;
    assert_eq!(answer["id"], 7);
    let note = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert!(note.contains("more than 16777216 bytes"), "{note}");
    let text = answer["result"]["content"][1]["text"].as_str().unwrap();
    assert!(text.starts_with("xxx"), "{}", &text[..10]);
    // The rest of the line is read and dropped; the next message passes.
    wired.write_repeated(b'y', 3_000_000);
    wired.write(b"\"}\n");
    wired.send(8).await;
    let next = br#"{"jsonrpc":"2.0","id":8,"result":{"content":[]}}"#;
    wired.write_line(next);
    assert_eq!(wired.line().await, next);
}

#[tokio::test(start_paused = true)]
async fn a_line_with_no_id_fails_every_waiting_call_when_it_ends_and_cancels_it() {
    let mut wired = wired();
    for id in [1, 2, 3] {
        wired.send(id).await;
    }
    // The server answers 2 (with the id as a string, which rmcp takes for 2) first.
    let two = br#"{"jsonrpc":"2.0","id":"2","result":{"content":[]}}"#;
    wired.write_line(two);
    assert_eq!(wired.line().await, two);
    wired.write(RESULT_START);
    wired.write_repeated(b'x', 20_000_000);
    wired.write(b"\"}]}}\n");
    let why = format!(
        "MCP server flood wrote a message of {} bytes, over the 16 MiB drover reads of one MCP message, in which drover found no id: it may have answered any call waiting on the server, so each of them failed",
        RESULT_START.len() + 20_000_000 + 6
    );
    for id in [1, 3] {
        let failed = wired.message().await;
        assert_eq!(failed["id"], id);
        assert_eq!(failed["error"]["code"], -32603);
        assert_eq!(failed["error"]["message"], format!("{why}{CANCELLED}"));
    }
    // The server is asked to cancel each, in a notification of its own.
    for id in [1, 3] {
        let cancel = wired.server_reads().await;
        assert_eq!(cancel["method"], "notifications/cancelled");
        assert_eq!(cancel["params"]["requestId"], id);
        let reason = cancel["params"]["reason"].as_str().unwrap();
        assert!(why.starts_with(reason) && reason.len() == 200, "{reason}");
    }
    // The server lives on: the next call is answered.
    wired.send(4).await;
    let four = br#"{"jsonrpc":"2.0","id":4,"result":{"content":[]}}"#;
    wired.write_line(four);
    assert_eq!(wired.line().await, four);
}

#[tokio::test(start_paused = true)]
async fn a_line_that_never_ends_fails_the_waiting_calls_after_the_grace() {
    let mut wired = wired();
    wired.send(1).await;
    wired.write(b"[");
    wired.write_repeated(b' ', 17_000_000);
    let started = Instant::now();
    let failed = wired.message().await;
    assert_eq!(started.elapsed(), GRACE);
    assert_eq!(failed["id"], 1);
    assert_eq!(
        failed["error"]["message"],
        format!(
            "MCP server flood is writing a message of more than 16777216 bytes, over the 16 MiB drover reads of one MCP message, that did not end within 5s of passing it; nothing the server answers can be read before that message ends, so every call waiting on it failed{CANCELLED}"
        )
    );
    assert_eq!(wired.server_reads().await["params"]["requestId"], 1);
    // A call sent while the line goes on fails at once (not when a timer would fire).
    wired.send(2).await;
    let started = Instant::now();
    let failed = tokio::time::timeout(Duration::from_secs(60), wired.message())
        .await
        .unwrap();
    assert_eq!(started.elapsed(), Duration::ZERO);
    assert_eq!(failed["id"], 2);
    assert_eq!(wired.server_reads().await["params"]["requestId"], 2);
    // Once it ends (and drover has read that it did), the server is heard again.
    wired.write(b"]\n");
    tokio::time::sleep(Duration::from_millis(1)).await;
    wired.send(3).await;
    let three = br#"{"jsonrpc":"2.0","id":3,"result":{"content":[]}}"#;
    wired.write_line(three);
    assert_eq!(wired.line().await, three);
}

#[tokio::test(start_paused = true)]
async fn when_the_output_ends_mid_line_the_waiting_calls_fail() {
    let mut wired = wired();
    wired.send(5).await;
    wired.write(b"{\"result\":");
    wired.write_repeated(b' ', MAX_MESSAGE + 10);
    drop(wired.server);
    let mut out = Vec::new();
    wired.rmcp.read_to_end(&mut out).await.unwrap();
    let lines: Vec<&[u8]> = out.split(|b| *b == b'\n').collect();
    assert_eq!(lines.len(), 2);
    let failed: Value = serde_json::from_slice(lines[0]).unwrap();
    assert_eq!(failed["id"], 5);
    let why = failed["error"]["message"].as_str().unwrap();
    assert!(
        why.contains(&format!("a message of {} bytes", MAX_MESSAGE + 20)),
        "{why}"
    );
}

#[tokio::test(start_paused = true)]
async fn an_oversized_line_that_is_no_answer_is_only_counted() {
    let mut wired = wired();
    wired.send(1).await;
    wired.write(br#"{"level":"debug","dump":""#);
    wired.write_repeated(b'd', 20_000_000);
    wired.write(b"\"}\n");
    let one = br#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
    wired.write_line(one);
    assert_eq!(wired.line().await, one, "the call was not failed");
    let first = wired.dropped.first_note().unwrap();
    assert!(
        first.ends_with(&format!(
            "the first: \"{{\\\"level\\\":\\\"debug\\\",\\\"dump\\\":\\\"{}\"… (20000027 bytes)]\n",
            "d".repeat(175)
        )),
        "{first}"
    );
}
