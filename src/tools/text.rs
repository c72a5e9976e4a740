//! Text helpers shared by the file tools: decoding files the way editors do, numbering
//! lines the way Read shows them, and cutting long text without splitting characters.

use std::path::Path;

/// How many leading bytes are inspected for a NUL byte to call a file binary.
pub(super) const BINARY_SNIFF_BYTES: usize = 8 * 1024;

/// The encoding a text file was found in, so an edit can write it back the same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Encoding {
    Utf8 { bom: bool },
    Utf16Le,
    Utf16Be,
}

/// A text file's content, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Decoded {
    pub text: String,
    pub encoding: Encoding,
    /// Invalid sequences were replaced with U+FFFD: writing `text` back would change bytes
    /// the model never saw.
    pub lossy: bool,
}

/// Why a file's bytes are not text the file tools can show or change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum NotText {
    /// A NUL byte in the first [`BINARY_SNIFF_BYTES`].
    Binary,
    /// A UTF-16 byte-order mark, then an odd number of bytes: the last byte is half a
    /// code unit, and decoding would drop it (an edit would then delete it).
    OddUtf16,
}

impl std::fmt::Display for NotText {
    /// Completes "`<path>` is …".
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            NotText::Binary => "a binary file (it contains NUL bytes)",
            NotText::OddUtf16 => {
                "not valid UTF-16 text (it starts with a UTF-16 byte-order mark but has an odd number of bytes), so it is treated like a binary file"
            }
        })
    }
}

/// Decode `bytes` as a text file: UTF-16 with a BOM, UTF-8 (BOM stripped), or why not.
pub(super) fn decode(bytes: &[u8]) -> Result<Decoded, NotText> {
    if let Some(rest) = bytes.strip_prefix(&[0xFF, 0xFE]) {
        return decode_utf16(rest, Encoding::Utf16Le, u16::from_le_bytes);
    }
    if let Some(rest) = bytes.strip_prefix(&[0xFE, 0xFF]) {
        return decode_utf16(rest, Encoding::Utf16Be, u16::from_be_bytes);
    }
    let (rest, bom) = match bytes.strip_prefix(&[0xEF, 0xBB, 0xBF]) {
        Some(rest) => (rest, true),
        None => (bytes, false),
    };
    if rest[..rest.len().min(BINARY_SNIFF_BYTES)].contains(&0) {
        return Err(NotText::Binary);
    }
    let (text, lossy) = match std::str::from_utf8(rest) {
        Ok(text) => (text.to_string(), false),
        Err(_) => (String::from_utf8_lossy(rest).into_owned(), true),
    };
    Ok(Decoded {
        text,
        encoding: Encoding::Utf8 { bom },
        lossy,
    })
}

fn decode_utf16(
    bytes: &[u8],
    encoding: Encoding,
    unit: fn([u8; 2]) -> u16,
) -> Result<Decoded, NotText> {
    let (units, rest) = bytes.as_chunks::<2>();
    if !rest.is_empty() {
        return Err(NotText::OddUtf16);
    }
    let units = units.iter().map(|&pair| unit(pair));
    let mut lossy = false;
    let text = char::decode_utf16(units)
        .map(|r| {
            r.unwrap_or_else(|_| {
                lossy = true;
                char::REPLACEMENT_CHARACTER
            })
        })
        .collect();
    Ok(Decoded {
        text,
        encoding,
        lossy,
    })
}

/// Encode `text` back into `encoding`, BOM included.
pub(super) fn encode(text: &str, encoding: Encoding) -> Vec<u8> {
    match encoding {
        Encoding::Utf8 { bom } => {
            let mut out = Vec::with_capacity(text.len() + 3);
            if bom {
                out.extend_from_slice(&[0xEF, 0xBB, 0xBF]);
            }
            out.extend_from_slice(text.as_bytes());
            out
        }
        Encoding::Utf16Le => std::iter::once(0xFEFF)
            .chain(text.encode_utf16())
            .flat_map(u16::to_le_bytes)
            .collect(),
        Encoding::Utf16Be => std::iter::once(0xFEFF)
            .chain(text.encode_utf16())
            .flat_map(u16::to_be_bytes)
            .collect(),
    }
}

/// The first `max` characters of `s`, and whether anything was cut.
pub(super) fn cut_chars(s: &str, max: usize) -> (&str, bool) {
    match s.char_indices().nth(max) {
        Some((at, _)) => (&s[..at], true),
        None => (s, false),
    }
}

/// Keep the first and last `max / 2` characters of `s` with a note about what was cut in
/// the middle: errors usually show at the end of a command's output, context at the start.
pub(super) fn cut_middle(s: &str, max: usize) -> String {
    let total = s.chars().count();
    if total <= max {
        return s.to_string();
    }
    let half = max / 2;
    let (head, _) = cut_chars(s, half);
    let tail_start = s
        .char_indices()
        .nth(total - half)
        .map_or(s.len(), |(at, _)| at);
    format!(
        "{head}\n\n[... {} characters omitted from the middle of the output ...]\n\n{}",
        total - 2 * half,
        &s[tail_start..]
    )
}

/// One line as Read shows it: `N<TAB>text`, `\r` removed, cut at `max_chars`.
pub(super) fn numbered_line(number: usize, line: &str, max_chars: usize) -> String {
    let line = line.strip_suffix('\r').unwrap_or(line);
    let (shown, cut) = cut_chars(line, max_chars);
    if cut {
        format!(
            "{number}\t{shown}… [line truncated: {} characters in total]",
            line.chars().count()
        )
    } else {
        format!("{number}\t{shown}")
    }
}

/// Lines `first..=last` (1-based, clamped) of `text`, numbered as Read shows them.
pub(super) fn numbered_snippet(text: &str, first: usize, last: usize) -> String {
    text.split('\n')
        .enumerate()
        .map(|(i, line)| (i + 1, line))
        .skip(first.saturating_sub(1))
        .take_while(|(n, _)| *n <= last)
        .map(|(n, line)| numbered_line(n, line, 2000))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `path` as the model should see it: relative to the workspace when inside it.
pub(super) fn display_path(workspace: &Path, path: &Path) -> String {
    match crate::workspace::paths::relative_to(workspace, path) {
        Some(rel) if !rel.is_empty() => rel,
        _ => path.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_round_trips_with_bom() {
        for enc in [Encoding::Utf16Le, Encoding::Utf16Be] {
            let bytes = encode("héllo\nwörld", enc);
            let decoded = decode(&bytes).unwrap();
            assert_eq!(decoded.text, "héllo\nwörld");
            assert_eq!(decoded.encoding, enc);
            assert!(!decoded.lossy);
        }
    }

    #[test]
    fn utf16_with_an_odd_trailing_byte_is_not_text() {
        for enc in [Encoding::Utf16Le, Encoding::Utf16Be] {
            let mut bytes = encode("hi", enc);
            bytes.push(b'!');
            assert_eq!(decode(&bytes), Err(NotText::OddUtf16));
        }
        // A lone BOM byte pair is an empty file; a BOM and one byte is not text.
        assert_eq!(decode(b"\xFF\xFE").unwrap().text, "");
        assert_eq!(decode(b"\xFF\xFEx"), Err(NotText::OddUtf16));
    }

    #[test]
    fn utf8_bom_is_stripped_and_kept_for_writing() {
        let decoded = decode(b"\xEF\xBB\xBFabc").unwrap();
        assert_eq!(decoded.text, "abc");
        assert_eq!(encode(&decoded.text, decoded.encoding), b"\xEF\xBB\xBFabc");
    }

    #[test]
    fn nul_means_binary_and_invalid_utf8_is_lossy() {
        assert_eq!(decode(b"ab\0cd"), Err(NotText::Binary));
        assert!(decode(b"ab\xFFcd").unwrap().lossy);
    }

    #[test]
    fn cutting_respects_characters() {
        assert_eq!(cut_chars("héllo", 2), ("hé", true));
        assert_eq!(cut_chars("hé", 2), ("hé", false));
        let cut = cut_middle(&"é".repeat(100), 10);
        assert!(cut.starts_with("ééééé\n"));
        assert!(cut.ends_with("\n\néééééé") || cut.ends_with("\n\nééééé"));
        assert!(cut.contains("90 characters omitted"));
    }

    #[test]
    fn numbered_lines_drop_carriage_returns() {
        assert_eq!(numbered_line(7, "abc\r", 2000), "7\tabc");
        assert_eq!(numbered_snippet("a\r\nb\r\nc", 2, 9), "2\tb\n3\tc");
        assert!(numbered_line(1, "abcdef", 3).starts_with("1\tabc… [line truncated"));
    }
}
