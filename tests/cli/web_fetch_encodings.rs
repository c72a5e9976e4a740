//! WebFetch of bodies a server compressed, asked or not: gzip and deflate come back as
//! their text, a compression bomb is cut at the body bound with a note (and drover's
//! memory stays small), other codings are refused by name.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::Duration;

use flate2::Compression;
use flate2::write::{GzEncoder, ZlibEncoder};
use serde_json::Value;

use crate::common::{events, peak_kib, transcript, write_spec};
use crate::mock_server::{MockServer, Reply};

/// The spec of a task fetching each of `urls` in turn, the loopback server allowed.
fn spec(urls: &[String]) -> String {
    let mut script = String::new();
    for url in urls {
        script.push_str(&format!(
            "    - tool_calls: [{{ name: WebFetch, input: {{ url: \"{url}\" }} }}]\n"
        ));
    }
    format!(
        "version: 1\nname: web\nprompt: Fetch.\nworkspace: ws\nmodel:\n  provider: script\n  script:\n{script}    - text: Done.\npermissions:\n  allow: [\"WebFetch(domain:127.0.0.1)\"]\n"
    )
}

/// Run the task fetching `urls`; its tool results in order, and drover's peak resident
/// memory in KiB (VmHWM, sampled while it ran).
fn run(urls: &[String]) -> (Vec<Value>, u64) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    let spec = write_spec(dir.path(), "web.yaml", &spec(urls));
    let artifacts = dir.path().join("out");
    let mut command = Command::new(assert_cmd::cargo::cargo_bin("drover"));
    command
        .arg("run")
        .arg(&spec)
        .arg("--artifacts")
        .arg(&artifacts)
        .env_remove("GITHUB_ACTIONS")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    for proxy in [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ] {
        command.env_remove(proxy);
    }
    let mut child = command.spawn().unwrap();
    let mut peak = 0;
    let status = loop {
        if let Some(kib) = peak_kib(child.id()) {
            peak = peak.max(kib);
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    assert_eq!(status.code(), Some(0));
    let lines = transcript(&artifacts.join("web/transcript.jsonl"));
    let results = events(&lines, "tool_result").into_iter().cloned().collect();
    (results, peak)
}

fn content(result: &Value) -> &str {
    result["content"].as_str().unwrap()
}

#[test]
fn web_fetch_decodes_gzip_and_deflate_sent_unasked_and_asks_only_for_what_it_decodes() {
    let page =
        "<html><body><h1>Changelog</h1><p>Version <b>3.1</b> fixes the parser.</p></body></html>";
    let mut gzip = GzEncoder::new(Vec::new(), Compression::default());
    gzip.write_all(page.as_bytes()).unwrap();
    let json = "{\"release\": \"3.1\", \"notes\": \"h\u{e9}llo\"}";
    let mut zlib = ZlibEncoder::new(Vec::new(), Compression::default());
    zlib.write_all(json.as_bytes()).unwrap();
    let server = MockServer::start(vec![
        Reply::bytes(200, gzip.finish().unwrap())
            .with_header("Content-Type", "text/html; charset=utf-8")
            .with_header("Content-Encoding", "gzip"),
        Reply::bytes(200, zlib.finish().unwrap())
            .with_header("Content-Type", "application/json")
            .with_header("Content-Encoding", "deflate"),
    ]);
    let base = &server.base_url;
    let (results, _) = run(&[format!("{base}/log"), format!("{base}/release.json")]);
    let html = content(&results[0]);
    assert_eq!(results[0]["is_error"], false, "{html}");
    assert!(html.contains("# Changelog"), "{html}");
    assert!(html.contains("Version **3.1** fixes the parser."), "{html}");
    let json_text = content(&results[1]);
    assert_eq!(results[1]["is_error"], false, "{json_text}");
    assert!(json_text.contains(json), "{json_text}");
    for request in server.requests() {
        assert_eq!(
            request.header("accept-encoding").as_deref(),
            Some("gzip, deflate"),
            "{}",
            request.headers
        );
    }
}

#[test]
fn web_fetch_refuses_a_coding_it_does_not_decode_naming_it() {
    let server = MockServer::start(vec![
        Reply::bytes(200, vec![0x1b, 0x2f, 0x00, 0xf8, 0x4d, 0x13])
            .with_header("Content-Type", "text/html")
            .with_header("Content-Encoding", "br"),
        Reply::bytes(200, b"(\xb5/\xfd garbage".to_vec())
            .with_header("Content-Type", "text/plain")
            .with_header("Content-Encoding", "zstd"),
    ]);
    let base = &server.base_url;
    let (results, _) = run(&[format!("{base}/a"), format!("{base}/b")]);
    for (result, coding) in results.iter().zip(["br", "zstd"]) {
        let text = content(result);
        assert_eq!(result["is_error"], true, "{text}");
        assert!(
            text.contains(&format!(
                "Content-Encoding: {coding}, which WebFetch does not decode"
            )),
            "{text}"
        );
        assert!(text.contains("HTTP 200"), "{text}");
    }
}

/// A raw deflate bit stream, written least significant bit first.
#[derive(Default)]
struct Bits {
    bytes: Vec<u8>,
    used: u32,
}

impl Bits {
    fn put(&mut self, value: u32, count: u32) {
        for i in 0..count {
            if self.used.is_multiple_of(8) {
                self.bytes.push(0);
            }
            let bit = ((value >> i) & 1) as u8;
            *self.bytes.last_mut().unwrap() |= bit << (self.used % 8);
            self.used += 1;
        }
    }

    /// A Huffman code: its most significant bit goes first.
    fn code(&mut self, code: u32, length: u32) {
        for i in (0..length).rev() {
            self.put((code >> i) & 1, 1);
        }
    }

    /// A match of 258 bytes at distance 1, in the fixed codes: 13 bits.
    fn repeat(&mut self) {
        self.code(0xc5, 8); // length symbol 285: 258 bytes
        self.code(0, 5); // distance code 0: 1 byte back
    }
}

/// A server on 127.0.0.1 answering one request with a gzip body that decodes to 10 GiB of
/// `a` (one deflate block of fixed-code matches, about 63 MB compressed), written as long
/// as the client reads it, never held whole.
fn gzip_bomb_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/bomb", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let Ok((mut stream, _)) = listener.accept() else {
            return;
        };
        let mut request = Vec::new();
        let mut buf = [0u8; 4096];
        while !request.windows(4).any(|w| w == b"\r\n\r\n") {
            match stream.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => request.extend_from_slice(&buf[..n]),
            }
        }
        let head = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Encoding: gzip\r\nConnection: close\r\n\r\n";
        let mut start = Bits::default();
        start.put(1, 1); // the final block
        start.put(1, 2); // fixed Huffman codes
        start.code(0x30 + u32::from(b'a'), 8); // the literal `a`
        start.repeat(); // now byte aligned (24 bits)
        assert_eq!(start.used, 24);
        let mut eight = Bits::default();
        for _ in 0..8 {
            eight.repeat(); // 104 bits: 13 bytes, 2064 decoded
        }
        let mut body = head.as_bytes().to_vec();
        body.extend([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]);
        body.extend(&start.bytes);
        let block = eight.bytes.repeat(4096);
        let blocks = (10u64 << 30) / (2064 * 4096);
        if stream.write_all(&body).is_err() {
            return;
        }
        for _ in 0..blocks {
            if stream.write_all(&block).is_err() {
                return; // drover stopped reading: what it should do
            }
        }
        let mut end = Bits::default();
        end.code(0, 7); // end of block
        let _ = stream.write_all(&end.bytes);
        let _ = stream.write_all(&[0; 8]);
    });
    url
}

#[test]
fn a_gzip_bomb_is_cut_at_the_body_bound_with_a_note_and_memory_stays_small() {
    let url = gzip_bomb_server();
    let (results, peak) = run(&[url]);
    let text = content(&results[0]);
    assert_eq!(
        results[0]["is_error"],
        false,
        "{}",
        &text[text.len().saturating_sub(600)..]
    );
    assert!(
        text.contains(&"a".repeat(90_000)),
        "decoded, not compressed bytes"
    );
    assert!(
        text.contains("the response decoded from gzip to more than 10 MiB (a compression bomb, or a very large page); decoding stopped there"),
        "{}",
        &text[text.len() - 600..]
    );
    assert!(
        text.contains("[Content truncated: showing the first 100000 of"),
        "{}",
        &text[text.len() - 600..]
    );
    assert!(peak > 0, "no memory figure was read");
    // The body bound is 10 MiB; decoding everything would take 10 GiB, and the first 10
    // MiB of the compressed stream alone decode to over 1.5 GiB.
    assert!(peak < 256 * 1024, "peak RSS {peak} KiB");
}
