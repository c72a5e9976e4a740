//! Reading what can be read of a JSON-RPC message too long to be read whole: its start,
//! closed into a JSON value of its own. An MCP server's tool result over the 16 MiB
//! bound is cut this way (see [`super::stand_in`]), so the call gets the start of its
//! result at once instead of nothing.

use serde_json::Value;

/// The start of a JSON text cut anywhere, made whole: whatever follows its last complete
/// value is dropped (a string value being read is kept up to the cut and closed), and
/// the open arrays and objects are closed. None when nothing of it parses.
pub(crate) fn close_prefix(bytes: &[u8]) -> Option<Value> {
    // A character cut in two at the end is left out; invalid text anywhere else is not
    // JSON at all.
    let bytes = match std::str::from_utf8(bytes) {
        Ok(_) => bytes,
        Err(error) if error.error_len().is_none() => &bytes[..error.valid_up_to()],
        Err(_) => return None,
    };
    let end = scan(bytes);
    let mut out = match end.string {
        Some(string_end) => {
            let mut out = bytes[..string_end].to_vec();
            out.push(b'"');
            out
        }
        None => bytes[..end.safe].to_vec(),
    };
    out.extend(end.open.iter().rev());
    serde_json::from_slice(&out).ok()
}

/// Where a scan of a cut JSON text ended.
struct ScanEnd {
    /// The closers of the arrays and objects open at the last safe point.
    open: Vec<u8>,
    /// Just past the last complete value, or the last opening bracket.
    safe: usize,
    /// When the text ends inside a string value: where that string may be cut (never
    /// inside an escape, nor between the two halves of a surrogate pair).
    string: Option<usize>,
}

/// Scan `bytes` (valid UTF-8) as the start of a JSON text.
fn scan(bytes: &[u8]) -> ScanEnd {
    let mut open = Vec::new();
    let mut safe = 0;
    let mut expect_key = false;
    let mut in_scalar = false;
    // In a string: whether it is an object's key, and where it may be cut.
    let mut string: Option<(bool, usize)> = None;
    let mut i = 0;
    while i < bytes.len() {
        let byte = bytes[i];
        if let Some((is_key, cut)) = string.as_mut() {
            match byte {
                b'\\' => {
                    let Some(length) = escape_length(&bytes[i..]) else {
                        break;
                    };
                    i += length;
                    *cut = i;
                }
                b'"' => {
                    if !*is_key {
                        safe = i + 1;
                    }
                    string = None;
                    i += 1;
                }
                _ => {
                    i += 1;
                    *cut = i;
                }
            }
            continue;
        }
        if in_scalar {
            if !matches!(byte, b',' | b']' | b'}' | b':') && !byte.is_ascii_whitespace() {
                i += 1;
                continue;
            }
            in_scalar = false;
            safe = i;
        }
        match byte {
            b'{' | b'[' => {
                open.push(if byte == b'{' { b'}' } else { b']' });
                expect_key = byte == b'{';
                safe = i + 1;
            }
            b'}' | b']' => {
                open.pop();
                safe = i + 1;
            }
            b',' => expect_key = open.last() == Some(&b'}'),
            b':' => expect_key = false,
            b'"' => {
                string = Some((expect_key, i + 1));
                expect_key = false;
            }
            _ if byte.is_ascii_whitespace() => {}
            _ => in_scalar = true,
        }
        i += 1;
    }
    ScanEnd {
        open,
        safe,
        string: string.and_then(|(is_key, cut)| (!is_key).then_some(cut)),
    }
}

/// The length of the escape `bytes` starts with (a `\u` of a leading surrogate with the
/// `\u` of its trailing one), or None when the text ends before it does.
fn escape_length(bytes: &[u8]) -> Option<usize> {
    if bytes.get(1)? != &b'u' {
        return Some(2);
    }
    let hex = std::str::from_utf8(bytes.get(2..6)?).ok()?;
    let unit = u16::from_str_radix(hex, 16).ok()?;
    if (0xD800..0xDC00).contains(&unit) {
        bytes.get(6..12)?;
        return Some(12);
    }
    Some(6)
}

#[cfg(test)]
#[path = "json_prefix_tests.rs"]
mod tests;
