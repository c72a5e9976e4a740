//! A fetched body's content coding (`Content-Encoding`), decoded as it arrives.
//!
//! A server may compress a body whether or not it was asked to; passed on as it came,
//! gzip bytes would reach the model as 100,000 characters of noise. WebFetch asks for
//! and decodes gzip and deflate (flate2, already drover's), and refuses any other coding
//! (br, zstd …) with an error naming it: it is binary to WebFetch, like an image.
//!
//! Decoding is streaming and bounded on both sides: at most `max` compressed bytes are
//! read and at most `max` decoded bytes kept, and decoding stops the moment the decoded
//! side is full, so a small body that inflates to gigabytes (a compression bomb) costs
//! `max` bytes of memory and the time to decode them, no more.

use std::io::Write;

use flate2::write::{DeflateDecoder, MultiGzDecoder, ZlibDecoder};

/// The codings WebFetch decodes, as its `Accept-Encoding` header says (and nothing else:
/// a server is not invited to send what cannot be read).
pub(crate) const ACCEPT_ENCODING: &str = "gzip, deflate";

/// A body's content coding, of those WebFetch decodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Coding {
    Identity,
    Gzip,
    Deflate,
}

impl Coding {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Coding::Identity => "identity",
            Coding::Gzip => "gzip",
            Coding::Deflate => "deflate",
        }
    }
}

/// A `Content-Encoding` WebFetch does not decode, as the server wrote it (cleaned: it
/// is the server's text, shown to the model).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct Unsupported(pub String);

/// Longest coding name shown.
const MAX_NAME: usize = 64;

/// The coding of a body whose `Content-Encoding` header lines are `values`. `identity`
/// entries mean nothing; more than one real coding (`gzip, br`) is refused as a whole,
/// as no server sends layered codings to a client that did not ask for them.
pub(crate) fn coding<'a>(values: impl Iterator<Item = &'a [u8]>) -> Result<Coding, Unsupported> {
    let mut names = Vec::new();
    for value in values {
        for name in String::from_utf8_lossy(value).split(',') {
            let name = name.trim().to_ascii_lowercase();
            if !name.is_empty() && name != "identity" {
                names.push(name);
            }
        }
    }
    match names.as_slice() {
        [] => Ok(Coding::Identity),
        [one] if one == "gzip" || one == "x-gzip" => Ok(Coding::Gzip),
        [one] if one == "deflate" => Ok(Coding::Deflate),
        _ => {
            let shown: String = names
                .join(", ")
                .chars()
                .filter(|c| !c.is_control())
                .take(MAX_NAME)
                .collect();
            Err(Unsupported(shown))
        }
    }
}

/// Where a body's reading stopped short of its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cut {
    /// The whole body was read and decoded.
    None,
    /// More than the bound arrived on the wire: only the first bytes were read.
    Read,
    /// The body decoded to more than the bound: decoding stopped there.
    Decoded,
}

/// A body that could not be decoded (corrupt or cut short by the server).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct Undecodable(std::io::Error);

/// A body being read and decoded, chunk by chunk.
pub(crate) struct BodyDecoder {
    state: State,
    /// Compressed (wire) bytes taken so far.
    read: usize,
    max: usize,
    read_cut: bool,
}

enum State {
    Plain(Sink),
    Gzip(MultiGzDecoder<Sink>),
    Zlib(ZlibDecoder<Sink>),
    RawDeflate(DeflateDecoder<Sink>),
    /// `deflate` is zlib-wrapped by the standard and raw in some servers (as browsers
    /// know): its first two bytes tell which.
    SniffingDeflate(Sink, Vec<u8>),
}

impl BodyDecoder {
    /// A decoder of `coding` keeping at most `max` bytes, read and decoded.
    pub(crate) fn new(coding: Coding, max: usize) -> Self {
        let sink = Sink {
            bytes: Vec::new(),
            max,
            full: false,
        };
        let state = match coding {
            Coding::Identity => State::Plain(sink),
            Coding::Gzip => State::Gzip(MultiGzDecoder::new(sink)),
            Coding::Deflate => State::SniffingDeflate(sink, Vec::new()),
        };
        BodyDecoder {
            state,
            read: 0,
            max,
            read_cut: false,
        }
    }

    /// Take the next chunk from the wire; false once no more should be read (a bound
    /// was reached).
    pub(crate) fn push(&mut self, chunk: &[u8]) -> Result<bool, Undecodable> {
        let room = self.max - self.read;
        let chunk = if chunk.len() > room {
            self.read_cut = true;
            &chunk[..room]
        } else {
            chunk
        };
        self.read += chunk.len();
        let written = match &mut self.state {
            State::Plain(sink) => sink.write_all(chunk),
            State::Gzip(decoder) => decoder.write_all(chunk),
            State::Zlib(decoder) => decoder.write_all(chunk),
            State::RawDeflate(decoder) => decoder.write_all(chunk),
            State::SniffingDeflate(_, head) => {
                head.extend_from_slice(chunk);
                Ok(())
            }
        };
        let written = match &self.state {
            State::SniffingDeflate(_, head) if head.len() >= 2 => self.start_deflate(),
            _ => written,
        };
        match written {
            // The decoded side filled up: the sink stopped the decoder on purpose.
            Err(_) if self.sink().full => Ok(false),
            Err(error) => Err(Undecodable(error)),
            Ok(()) => Ok(!(self.read_cut || self.sink().full)),
        }
    }

    /// The body as read and decoded, and where it was cut; an error for a body that
    /// ended (whole, as far as the wire said) inside its compressed stream.
    pub(crate) fn finish(mut self) -> Result<(Vec<u8>, Cut), Undecodable> {
        if self.read > 0 && !self.read_cut && !self.sink().full {
            if matches!(self.state, State::SniffingDeflate(..)) {
                self.start_deflate().map_err(Undecodable)?;
            }
            let finished = match &mut self.state {
                State::Plain(_) | State::SniffingDeflate(..) => Ok(()),
                State::Gzip(decoder) => decoder.try_finish(),
                State::Zlib(decoder) => decoder.try_finish(),
                State::RawDeflate(decoder) => decoder.try_finish(),
            };
            if let Err(error) = finished
                && !self.sink().full
            {
                return Err(Undecodable(error));
            }
        }
        let cut = if self.sink().full {
            Cut::Decoded
        } else if self.read_cut {
            Cut::Read
        } else {
            Cut::None
        };
        let sink = match self.state {
            State::Plain(sink) | State::SniffingDeflate(sink, _) => sink,
            State::Gzip(mut decoder) => std::mem::take(decoder.get_mut()),
            State::Zlib(mut decoder) => std::mem::take(decoder.get_mut()),
            State::RawDeflate(mut decoder) => std::mem::take(decoder.get_mut()),
        };
        Ok((sink.bytes, cut))
    }

    /// Leave [`State::SniffingDeflate`] for the decoder its first bytes call for, and
    /// give it those bytes.
    fn start_deflate(&mut self) -> std::io::Result<()> {
        let placeholder = State::Plain(Sink::default());
        let State::SniffingDeflate(sink, head) = std::mem::replace(&mut self.state, placeholder)
        else {
            return Ok(());
        };
        let zlib = head.len() >= 2
            && head[0] & 0x0f == 8
            && (u16::from(head[0]) << 8 | u16::from(head[1])) % 31 == 0;
        self.state = if zlib {
            State::Zlib(ZlibDecoder::new(sink))
        } else {
            State::RawDeflate(DeflateDecoder::new(sink))
        };
        match &mut self.state {
            State::Zlib(decoder) => decoder.write_all(&head),
            State::RawDeflate(decoder) => decoder.write_all(&head),
            _ => Ok(()),
        }
    }

    fn sink(&self) -> &Sink {
        match &self.state {
            State::Plain(sink) | State::SniffingDeflate(sink, _) => sink,
            State::Gzip(decoder) => decoder.get_ref(),
            State::Zlib(decoder) => decoder.get_ref(),
            State::RawDeflate(decoder) => decoder.get_ref(),
        }
    }
}

/// Where decoded bytes go: kept up to `max`; past that it refuses with an error, which
/// stops the decoder writing into it at once (`full` tells that error from a corrupt
/// stream's).
#[derive(Default)]
struct Sink {
    bytes: Vec<u8>,
    max: usize,
    full: bool,
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let room = self.max - self.bytes.len();
        if buf.len() > room {
            self.bytes.extend_from_slice(&buf[..room]);
            self.full = true;
            return Err(std::io::Error::other("the decoded body reached its bound"));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
#[path = "encoding_tests.rs"]
mod tests;
