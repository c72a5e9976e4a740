//! What of a hook's output the transcript keeps. The capture is bounded in bytes
//! (`sandbox::exec::Capture`), but JSON writes a control character as six (`\u0000`),
//! so 2 MiB of NUL bytes would make a 12 MiB event. Each of stdout and stderr is kept
//! to [`MAX_RECORDED`] bytes *as JSON writes them*, its head and tail, with a line saying
//! how much was left out. The hook's answer is read from what is kept, so a replay,
//! which reads the recorded output, decides the same.

use crate::sandbox::exec::{KEEP_HEAD_BYTES, KEEP_TAIL_BYTES};

/// The most a hook's stdout or stderr takes in a transcript line, escaped.
pub(crate) const MAX_RECORDED: usize = KEEP_HEAD_BYTES + KEEP_TAIL_BYTES;

/// `text`, cut in its middle when JSON would write it in more than [`MAX_RECORDED`]
/// bytes.
pub(crate) fn bounded(text: String) -> String {
    if text.chars().map(escaped_len).sum::<usize>() <= MAX_RECORDED {
        return text;
    }
    let half = MAX_RECORDED / 2;
    let head_end = fitting(text.char_indices(), half).map_or(0, |(at, c)| at + c.len_utf8());
    let tail_start = fitting(text.char_indices().rev(), half).map_or(text.len(), |(at, _)| at);
    let tail_start = tail_start.max(head_end);
    format!(
        "{}\n[... {} bytes of output left out: the transcript keeps {} MiB of it as JSON writes it ...]\n{}",
        &text[..head_end],
        tail_start - head_end,
        MAX_RECORDED >> 20,
        &text[tail_start..]
    )
}

/// The last of `chars` that fits in `budget` escaped bytes, counting from the first.
fn fitting(chars: impl Iterator<Item = (usize, char)>, budget: usize) -> Option<(usize, char)> {
    let mut used = 0;
    let mut last = None;
    for (at, c) in chars {
        used += escaped_len(c);
        if used > budget {
            break;
        }
        last = Some((at, c));
    }
    last
}

/// How many bytes JSON (serde_json) writes for `c` inside a string.
fn escaped_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\n' | '\r' | '\t' | '\u{08}' | '\u{0c}' => 2,
        c if (c as u32) < 0x20 => 6,
        c => c.len_utf8(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_that_json_would_blow_up_is_cut_to_the_bound_keeping_head_and_tail() {
        let short = "ok\n\0".to_string();
        assert_eq!(bounded(short.clone()), short);
        let nuls = format!("start{}end", "\0".repeat(2 << 20));
        let kept = bounded(nuls);
        let written = serde_json::to_string(&kept).unwrap();
        assert!(written.len() <= MAX_RECORDED + 200, "{}", written.len());
        assert!(kept.starts_with("start\0"));
        assert!(kept.ends_with("\0end"));
        assert!(
            kept.contains("bytes of output left out"),
            "{}",
            &written[..100]
        );
        // Plain text within the bound is kept whole, whatever its escapes.
        let plain = "line\n".repeat(300_000);
        assert_eq!(bounded(plain.clone()), plain);
    }
}
