//! One accepted connection: its first byte tells SOCKS5 (0x05) from HTTP, on the one
//! port, so `ALL_PROXY=socks5h://…` and `HTTPS_PROXY=http://…` can name the same
//! listener. The connection's event is sent however the connection ends.

use std::sync::Arc;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::answer::Answer;
use crate::event::Tally;
use crate::http::serve_http;
use crate::options::Shared;
use crate::socks::serve_socks;

/// SOCKS4's version byte: refused with its own "request rejected" reply, since a SOCKS4
/// client would not read an HTTP answer.
const SOCKS4: u8 = 4;
const SOCKS5: u8 = 5;

/// Serve one client from its first byte to the end of its connection.
pub(crate) async fn serve_connection(mut client: TcpStream, shared: Arc<Shared>, started: Instant) {
    let mut tally = Tally::new(Arc::clone(&shared.sink), started.into_std());
    let _ = client.set_nodelay(true);
    let deadline = started + shared.options.head_timeout;
    let mut first = [0u8; 1];
    let read = tokio::time::timeout_at(deadline, client.read(&mut first)).await;
    match read {
        Ok(Ok(1)) => {}
        Ok(Ok(_)) => {
            tally.deny(
                None,
                "the client closed the connection without a request".to_string(),
            );
            return;
        }
        Ok(Err(error)) => {
            tally.deny(None, format!("no request: {error}"));
            return;
        }
        Err(_) => {
            let answer = Answer::HeadTimeout(shared.options.head_timeout.as_secs());
            tally.deny(None, answer.text());
            let _ = client.write_all(&answer.to_http()).await;
            return;
        }
    }
    match first[0] {
        SOCKS5 => serve_socks(client, &shared, &mut tally, deadline).await,
        SOCKS4 => {
            tally.deny(
                None,
                "SOCKS4 is not supported: use SOCKS5 (socks5h://) or HTTP".to_string(),
            );
            let _ = client.write_all(&[0, 0x5b, 0, 0, 0, 0, 0, 0]).await;
        }
        byte => serve_http(client, byte, &shared, &mut tally, deadline).await,
    }
}
