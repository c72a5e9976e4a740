// Test-only module: its parent includes it under #[cfg(test)].
use std::time::Duration;

use serde_json::json;
use tokio::io::DuplexStream;

use super::*;
use crate::mcp::pending::Named;

/// rmcp's end, the server's end of its stdin, and the table of requests.
fn piped() -> (NotedStdin, DuplexStream, Arc<Pending>) {
    let pending = Arc::new(Pending::default());
    let (server, stdin) = tokio::io::duplex(1 << 20);
    (pump(stdin, pending.clone()), server, pending)
}

/// Let the pump copy what it has been given.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(10)).await;
}

#[tokio::test(start_paused = true)]
async fn every_byte_passes_and_the_requests_written_are_noted_until_answered() {
    let (mut rmcp, mut server, pending) = piped();
    let written = concat!(
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}}"#,
        "\n",
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        "\n",
        r#"{"jsonrpc":"2.0","id":"s-1","result":{}}"#,
        "\n",
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"arguments":{"id":9}}}"#,
        "\n",
        r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#,
    );
    // Written in pieces that cut messages anywhere.
    for piece in written.as_bytes().chunks(7) {
        rmcp.write_all(piece).await.unwrap();
    }
    settle().await;
    // A notification and drover's own answer to the server are no requests; the third
    // request's line has not ended.
    assert_eq!(pending.answered(&json!("2")), Named::Waiting(json!(2)));
    assert_eq!(pending.take_all(), vec![json!(1)]);
    rmcp.write_all(b"\n").await.unwrap();
    settle().await;
    assert_eq!(pending.take_all(), vec![json!(3)]);
    drop(rmcp);
    let mut got = Vec::new();
    server.read_to_end(&mut got).await.unwrap();
    assert_eq!(got, format!("{written}\n").as_bytes(), "every byte passes");
}

#[tokio::test(start_paused = true)]
async fn a_cancellation_waits_for_the_end_of_rmcps_line_and_an_idle_one_goes_at_once() {
    let (mut rmcp, mut server, pending) = piped();
    rmcp.write_all(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","#)
        .await
        .unwrap();
    settle().await;
    pending.cancel(&json!(1), "drover failed it");
    settle().await;
    rmcp.write_all(b"\"params\":{}}\n").await.unwrap();
    settle().await;
    // Idle: nothing of rmcp's is being written.
    pending.cancel(&json!(2), "again");
    settle().await;
    drop(rmcp);
    let mut got = String::new();
    server.read_to_string(&mut got).await.unwrap();
    let lines: Vec<&str> = got.lines().collect();
    assert_eq!(
        lines,
        [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"reason":"drover failed it","requestId":1}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"reason":"again","requestId":2}}"#,
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_request_rmcp_cancels_itself_awaits_no_answer() {
    let (mut rmcp, _server, pending) = piped();
    for line in [
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{}}"#,
        r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4,"reason":"timeout"}}"#,
    ] {
        rmcp.write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
    }
    settle().await;
    assert_eq!(pending.take_all(), vec![json!(5)]);
    assert_eq!(pending.answered(&json!(4)), Named::Settled);
}

#[tokio::test(start_paused = true)]
async fn letting_go_releases_the_servers_stdin_even_while_a_write_waits() {
    let pending = Arc::new(Pending::default());
    // A server that reads nothing: its stdin holds 16 bytes.
    let (mut server, stdin) = tokio::io::duplex(16);
    let mut rmcp = pump(stdin, pending);
    rmcp.write_all(&[b'x'; 1000]).await.unwrap();
    settle().await;
    drop(rmcp);
    let mut got = Vec::new();
    tokio::time::timeout(Duration::from_secs(1), server.read_to_end(&mut got))
        .await
        .expect("the server's stdin ends")
        .unwrap();
    assert!(got.len() < 1000, "{}", got.len());
}
