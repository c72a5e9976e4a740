// Test-only module: its parent includes it under #[cfg(test)].
use std::io::Write;

use flate2::Compression;
use flate2::write::{DeflateEncoder, GzEncoder, ZlibEncoder};

use super::*;

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
    encoder.write_all(data).unwrap();
    encoder.finish().unwrap()
}

/// `body` pushed in pieces of `piece` bytes, then finished.
fn decode(
    coding: Coding,
    body: &[u8],
    piece: usize,
    max: usize,
) -> Result<(Vec<u8>, Cut), Undecodable> {
    let mut decoder = BodyDecoder::new(coding, max);
    for chunk in body.chunks(piece) {
        if !decoder.push(chunk)? {
            break;
        }
    }
    decoder.finish()
}

#[test]
fn content_encoding_headers_name_the_coding_or_what_is_refused() {
    let of = |values: &[&str]| coding(values.iter().map(|v| v.as_bytes()));
    assert_eq!(of(&[]), Ok(Coding::Identity));
    assert_eq!(of(&["identity"]), Ok(Coding::Identity));
    assert_eq!(of(&["GZIP"]), Ok(Coding::Gzip));
    assert_eq!(of(&["x-gzip"]), Ok(Coding::Gzip));
    assert_eq!(of(&["identity, gzip"]), Ok(Coding::Gzip));
    assert_eq!(of(&[" deflate "]), Ok(Coding::Deflate));
    assert_eq!(of(&["br"]), Err(Unsupported("br".into())));
    assert_eq!(of(&["zstd"]), Err(Unsupported("zstd".into())));
    assert_eq!(of(&["gzip", "br"]), Err(Unsupported("gzip, br".into())));
    assert_eq!(of(&["gzip, gzip"]), Err(Unsupported("gzip, gzip".into())));
    let long = "x".repeat(500);
    assert_eq!(of(&[&long]).unwrap_err().0.len(), MAX_NAME);
}

#[test]
fn gzip_and_both_forms_of_deflate_decode_in_any_pieces() {
    let page = "<p>h\u{e9}llo</p>\n".repeat(2_000);
    let mut zlib = ZlibEncoder::new(Vec::new(), Compression::default());
    zlib.write_all(page.as_bytes()).unwrap();
    let mut raw = DeflateEncoder::new(Vec::new(), Compression::default());
    raw.write_all(page.as_bytes()).unwrap();
    let cases = [
        (Coding::Gzip, gzip(page.as_bytes())),
        (Coding::Deflate, zlib.finish().unwrap()),
        (Coding::Deflate, raw.finish().unwrap()),
        (Coding::Identity, page.as_bytes().to_vec()),
    ];
    for (coding, body) in cases {
        for piece in [1, 7, 4096, body.len()] {
            let (bytes, cut) = decode(coding, &body, piece, 1 << 20).unwrap();
            assert_eq!(cut, Cut::None, "{coding:?} {piece}");
            assert_eq!(bytes, page.as_bytes(), "{coding:?} {piece}");
        }
    }
    // Two gzip members are one body, as gzip(1) reads them.
    let mut two = gzip(b"first ");
    two.extend(gzip(b"second"));
    assert_eq!(
        decode(Coding::Gzip, &two, 5, 100).unwrap().0,
        b"first second"
    );
    // An empty body is empty, whatever its coding says.
    assert_eq!(
        decode(Coding::Gzip, b"", 1, 100).unwrap(),
        (Vec::new(), Cut::None)
    );
}

#[test]
fn a_body_past_the_bound_is_cut_on_either_side() {
    let zeros = gzip(&vec![0u8; 4 << 20]);
    assert!(zeros.len() < 64 * 1024, "{}", zeros.len());
    let (bytes, cut) = decode(Coding::Gzip, &zeros, 1024, 1 << 20).unwrap();
    assert_eq!((bytes.len(), cut), (1 << 20, Cut::Decoded));
    // Exactly the bound is not cut.
    let exact = gzip(&vec![1u8; 1000]);
    assert_eq!(decode(Coding::Gzip, &exact, 64, 1000).unwrap().1, Cut::None);
    // More on the wire than the bound: only the bound is read.
    let (bytes, cut) = decode(Coding::Identity, &[b'x'; 5000], 999, 1000).unwrap();
    assert_eq!((bytes.len(), cut), (1000, Cut::Read));
}

#[test]
fn corrupt_and_truncated_bodies_are_undecodable() {
    assert!(decode(Coding::Gzip, b"not gzip at all", 4, 1000).is_err());
    let whole = gzip(b"some text that is compressed");
    assert!(decode(Coding::Gzip, &whole[..whole.len() - 6], 4, 1000).is_err());
    assert!(decode(Coding::Deflate, b"\xff\xff\xff\xff", 4, 1000).is_err());
    assert!(decode(Coding::Deflate, b"x", 4, 1000).is_err());
}
