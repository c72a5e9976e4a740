use std::io::{BufRead as _, BufReader};

use serde_json::json;

use super::*;

const SCENARIO: Scenario = Scenario {
    turns: 12,
    result_bytes: 4096,
};

fn start(window: Option<u64>, refuse_at: Option<u32>) -> MockModel {
    MockModel::start(Settings {
        scenario: SCENARIO,
        window,
        refuse_at,
    })
    .unwrap()
}

/// A client on one kept-alive connection.
struct Client {
    reader: BufReader<TcpStream>,
}

impl Client {
    fn new(mock: &MockModel) -> Client {
        Client {
            reader: BufReader::new(TcpStream::connect(mock.address()).unwrap()),
        }
    }

    /// Send `head` then `body`; the status and body of the answer.
    fn raw(&mut self, head: &str, body: &[u8]) -> (u16, String) {
        let stream = self.reader.get_mut();
        stream.write_all(head.as_bytes()).unwrap();
        stream.write_all(body).unwrap();
        let mut status = String::new();
        self.reader.read_line(&mut status).unwrap();
        let code = status.split(' ').nth(1).unwrap().parse().unwrap();
        let mut length = 0;
        loop {
            let mut line = String::new();
            self.reader.read_line(&mut line).unwrap();
            if line == "\r\n" {
                break;
            }
            if let Some(n) = line.to_ascii_lowercase().strip_prefix("content-length: ") {
                length = n.trim().parse().unwrap();
            }
        }
        let mut body = vec![0u8; length];
        self.reader.read_exact(&mut body).unwrap();
        (code, String::from_utf8(body).unwrap())
    }

    fn post(&mut self, body: &serde_json::Value) -> (u16, String) {
        let body = body.to_string();
        let head = format!(
            "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        self.raw(&head, body.as_bytes())
    }
}

/// A request with tools whose body is `bytes` long (padded in its one message).
fn with_tools(bytes: usize) -> serde_json::Value {
    padded(
        json!({"model": "m", "stream": true, "tools": [{"name": "Read"}], "messages": [{"role": "user", "content": ""}]}),
        bytes,
    )
}

fn padded(mut request: serde_json::Value, bytes: usize) -> serde_json::Value {
    let size = request.to_string().len();
    request["messages"][0]["content"] = json!("x".repeat(bytes.saturating_sub(size)));
    assert_eq!(request.to_string().len(), bytes.max(size));
    request
}

/// The stop reason and the name of the tool called (if any) of a streamed answer.
fn played(stream: &str) -> (String, Option<String>) {
    let mut stop = String::new();
    let mut tool = None;
    for line in stream.lines() {
        if let Some(data) = line.strip_prefix("data: ") {
            let data: serde_json::Value = serde_json::from_str(data).unwrap();
            if let Some(reason) = data["delta"]["stop_reason"].as_str() {
                stop = reason.to_string();
            }
            if let Some(name) = data["content_block"]["name"].as_str() {
                tool = Some(name.to_string());
            }
        }
    }
    (stop, tool)
}

#[test]
fn the_window_is_enforced_with_the_apis_refusal_and_turns_follow_the_script() {
    let mock = start(Some(1000), None);
    let mut client = Client::new(&mock);
    // 4,000 bytes are 1,000 tokens: fits; 4,001 bytes do not.
    let (status, body) = client.post(&with_tools(4000));
    assert_eq!(status, 200, "{body}");
    assert_eq!(played(&body), ("tool_use".into(), Some("Read".into())));
    assert!(body.contains("\"input_tokens\":1000"), "{body}");
    let (status, body) = client.post(&with_tools(4001));
    assert_eq!(status, 400);
    assert_eq!(
        body,
        r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 1001 tokens > 1000 maximum"}}"#
    );
    // The refusal did not use up a turn: turns 2 to 9 read, 10 writes, 11 reads, 12 ends.
    let mut tools = Vec::new();
    for _ in 2..=12 {
        let (status, body) = client.post(&with_tools(100));
        assert_eq!(status, 200);
        tools.push(played(&body));
    }
    assert_eq!(tools[8], ("tool_use".into(), Some("Write".into())));
    assert_eq!(tools[9], ("tool_use".into(), Some("Read".into())));
    assert_eq!(tools[10], ("end_turn".into(), None));
    let figures = mock.figures();
    assert_eq!(figures.turns, 12);
    assert_eq!(figures.refusals, 1);
    assert_eq!(figures.largest_refused_tokens, 1001);
    assert_eq!(figures.peak_bytes, 4000);
    assert_eq!(figures.peak_tokens, 1000);
    assert_eq!(figures.bytes_summed, 4000 + 11 * 100);
    assert_eq!(figures.requests.len(), 12);
}

#[test]
fn a_request_without_tools_gets_a_summary_and_uses_no_turn() {
    let mock = start(None, None);
    let mut client = Client::new(&mock);
    for _ in 0..3 {
        assert_eq!(client.post(&with_tools(200)).0, 200);
    }
    let none = padded(
        json!({"model": "m", "tools": [{"name": "Read"}], "tool_choice": {"type": "none"}, "messages": [{"role": "user", "content": ""}]}),
        300,
    );
    let no_tools = padded(
        json!({"model": "m", "messages": [{"role": "user", "content": ""}]}),
        300,
    );
    for request in [none, no_tools] {
        let (status, body) = client.post(&request);
        assert_eq!(status, 200);
        assert_eq!(played(&body), ("end_turn".into(), None));
        assert!(body.contains("Summary after turn 3 of 12"), "{body}");
    }
    let (_, body) = client.post(&with_tools(200));
    assert!(body.contains("toolu_mock_00004"), "{body}");
    let figures = mock.figures();
    assert_eq!((figures.turns, figures.text_answers), (4, 2));
    assert_eq!(figures.requests[3].turn, 3);
    assert!(figures.requests[3].text);
}

#[test]
fn refuse_at_refuses_that_turns_first_request_once_even_when_it_fits() {
    let mock = start(Some(10_000), Some(2));
    let mut client = Client::new(&mock);
    assert_eq!(client.post(&with_tools(400)).0, 200);
    let (status, body) = client.post(&with_tools(400));
    assert_eq!(status, 400);
    assert!(
        body.contains("prompt is too long: 100 tokens > 99 maximum"),
        "{body}"
    );
    let (status, body) = client.post(&with_tools(400));
    assert_eq!(status, 200);
    assert!(body.contains("toolu_mock_00002"), "{body}");
    assert_eq!(mock.figures().refusals, 1);
}

#[test]
fn what_is_no_messages_request_is_refused_and_counts_nothing() {
    let mock = start(None, None);
    let mut client = Client::new(&mock);
    let (status, _) = client.raw("GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n", b"");
    assert_eq!(status, 404);
    let (status, body) = client.raw(
        "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\n",
        b"{}x",
    );
    assert_eq!(status, 400, "{body}");
    let (status, _) = client.post(&json!({"model": "m"}));
    assert_eq!(status, 400);
    let mut chunked = Client::new(&mock);
    let (status, _) = chunked.raw(
        "POST /v1/messages HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"0\r\n\r\n",
    );
    assert_eq!(status, 411);
    assert_eq!(mock.figures(), Figures::default());
}
