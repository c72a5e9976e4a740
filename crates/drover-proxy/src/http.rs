//! An HTTP client of the proxy: its request head read (bounded in size and time), then a
//! `CONNECT` tunnel or a plain request forwarded; anything else is answered `400`.

use std::time::Duration;

use drover_policy::EgressHost;
use tokio::io::AsyncWriteExt as _;
use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::answer::Answer;
use crate::counted::Counted;
use crate::event::{Protocol, Tally};
use crate::forward::forward;
use crate::head::{HeadError, parse_request, read_head, split_authority};
use crate::options::Shared;
use crate::tunnel::relay;
use crate::upstream::open;

/// How long a refused client's further bytes are read before the connection closes.
pub(crate) const REFUSAL_DRAIN: Duration = Duration::from_secs(1);

/// Serve the HTTP client on `client`, whose first byte (`first`) was read already.
pub(crate) async fn serve_http(
    mut client: TcpStream,
    first: u8,
    shared: &Shared,
    tally: &mut Tally,
    deadline: Instant,
) {
    tally.protocol(Protocol::Http);
    let max = shared.options.max_head_bytes;
    let read = tokio::time::timeout_at(deadline, read_head(&mut client, vec![first], max)).await;
    let head = match read {
        Ok(Ok(head)) => head,
        Err(_) => {
            let seconds = shared.options.head_timeout.as_secs();
            refuse(&mut client, tally, Some(Answer::HeadTimeout(seconds)), None).await;
            return;
        }
        Ok(Err(error @ HeadError::TooLarge(_))) => {
            let reason = error.to_string();
            refuse(
                &mut client,
                tally,
                Some(Answer::HeadTooLarge(max)),
                Some(reason),
            )
            .await;
            return;
        }
        Ok(Err(error)) => {
            tally.deny(None, format!("no request: {error}"));
            return;
        }
    };
    let request = match parse_request(head.head()) {
        Ok(request) => request,
        Err(bad) => {
            refuse(&mut client, tally, Some(Answer::BadRequest(bad.0)), None).await;
            return;
        }
    };
    if request.method == "CONNECT" {
        tally.protocol(Protocol::Connect);
        connect(client, request.target, head.rest(), shared, tally).await;
    } else {
        forward(client, &request, head.rest(), shared, tally).await;
    }
}

/// Answer `answer` (when there is one) and close; the event, denied, says why (the
/// answer's text unless `reason` is given).
pub(crate) async fn refuse(
    client: &mut TcpStream,
    tally: &mut Tally,
    answer: Option<Answer>,
    reason: Option<String>,
) {
    let text = reason.or_else(|| answer.as_ref().map(Answer::text));
    tally.deny(None, text.unwrap_or_default());
    if let Some(answer) = answer {
        let _ = client.write_all(&answer.to_http()).await;
        let _ = client.shutdown().await;
        // Closing with the request unread would reset the connection, and the client
        // might lose the answer: read what it still sends, briefly.
        let mut sink = tokio::io::sink();
        let _ = tokio::time::timeout(REFUSAL_DRAIN, tokio::io::copy(client, &mut sink)).await;
    }
}

/// The host and port of a request, normalised; the event learns them as written first.
pub(crate) fn target(tally: &mut Tally, host: &str, port: u16) -> Result<EgressHost, Answer> {
    tally.target(host.chars().take(256).collect(), port);
    let host = EgressHost::parse(host).map_err(|error| Answer::BadRequest(error.to_string()))?;
    tally.target(host.to_string(), port);
    Ok(host)
}

/// `CONNECT host:port`: open the tunnel, answer `200`, pass on what the client sent
/// after its head, then relay.
async fn connect(
    mut client: TcpStream,
    authority: &str,
    early: &[u8],
    shared: &Shared,
    tally: &mut Tally,
) {
    let Some((host, Some(port))) = split_authority(authority) else {
        let why = format!("CONNECT needs host:port, not {:?}", cut(authority));
        refuse(&mut client, tally, Some(Answer::BadRequest(why)), None).await;
        return;
    };
    let host = match target(tally, host, port) {
        Ok(host) => host,
        Err(answer) => {
            refuse(&mut client, tally, Some(answer), None).await;
            return;
        }
    };
    let stream = match open(shared, tally, &host, port).await {
        Ok(stream) => stream,
        Err(refusal) => {
            let _ = client
                .write_all(&refusal.answer(&host, port).to_http())
                .await;
            let _ = client.shutdown().await;
            return;
        }
    };
    let mut upstream = Counted::new(stream, tally.counters());
    if client
        .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .await
        .is_err()
        || upstream.write_all(early).await.is_err()
    {
        return;
    }
    relay(&mut client, &mut upstream).await;
}

/// At most 100 characters of client text, for a message.
pub(crate) fn cut(text: &str) -> String {
    text.chars().take(100).collect()
}
