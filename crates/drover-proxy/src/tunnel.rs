//! Relaying a tunnel's bytes both ways until either side is done, through fixed buffers:
//! a connection costs the same memory whatever it carries.

use tokio::io::{AsyncRead, AsyncWrite};

/// The buffer each direction of a tunnel copies through.
pub(crate) const COPY_BUFFER: usize = 32 * 1024;

/// Copy between `client` and `upstream` until both directions end (or one fails, as a
/// reset does); what crossed is counted by the upstream stream itself.
pub(crate) async fn relay<C, U>(client: &mut C, upstream: &mut U)
where
    C: AsyncRead + AsyncWrite + Unpin + ?Sized,
    U: AsyncRead + AsyncWrite + Unpin + ?Sized,
{
    // A reset or a half-finished copy ends the tunnel; the counters say what crossed.
    let _ =
        tokio::io::copy_bidirectional_with_sizes(client, upstream, COPY_BUFFER, COPY_BUFFER).await;
}
