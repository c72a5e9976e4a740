//! What of a hook's output the transcript keeps. The capture is bounded in bytes
//! (`sandbox::exec::Capture`: its first and last MiB, a line counting what it left out
//! between them), but JSON writes a control character as six (`\u0000`) and a line break
//! as two, so 2 MiB of NUL bytes would make a 12 MiB event. Each of stdout and stderr is
//! kept to [`MAX_RECORDED`] bytes *as JSON writes them*, its head and tail, with a line
//! saying how much was left out in all. The hook's answer is read from what is kept, so
//! a replay, which reads the recorded output, decides the same.

use crate::sandbox::exec::{KEEP_HEAD_BYTES, KEEP_TAIL_BYTES, omitted_note};

/// Room for the capture's line between its head and its tail: output the capture kept
/// whole (a head and a tail of plain text) is recorded as captured, its line intact.
const NOTE_ROOM: usize = 256;

/// The most a hook's stdout or stderr takes in a transcript line, escaped.
pub(crate) const MAX_RECORDED: usize = KEEP_HEAD_BYTES + KEEP_TAIL_BYTES + NOTE_ROOM;

/// `text`, cut in its middle when JSON would write it in more than [`MAX_RECORDED`]
/// bytes. `omitted` bytes were already cut from its middle by the capture (named there
/// by [`omitted_note`]); a cut here replaces that line with one counting both.
pub(crate) fn bounded(text: String, omitted: u64) -> String {
    if text.chars().map(escaped_len).sum::<usize>() <= MAX_RECORDED {
        return text;
    }
    // Each side keeps at most as many escaped bytes as the capture kept raw bytes (an
    // escape or a replaced byte is never shorter than the byte), so the capture's line,
    // which sits between its head and its tail, always falls in the cut.
    let head_end =
        fitting(text.char_indices(), KEEP_HEAD_BYTES).map_or(0, |(at, c)| at + c.len_utf8());
    let tail_start =
        fitting(text.char_indices().rev(), KEEP_TAIL_BYTES).map_or(text.len(), |(at, _)| at);
    let tail_start = tail_start.max(head_end);
    let note = if omitted > 0 {
        omitted_note(omitted).len()
    } else {
        0
    };
    let left_out = ((tail_start - head_end).saturating_sub(note) as u64).saturating_add(omitted);
    format!(
        "{}\n[... {left_out} bytes of output left out: the transcript keeps {} MiB of it as JSON writes it ...]\n{}",
        &text[..head_end],
        (KEEP_HEAD_BYTES + KEEP_TAIL_BYTES) >> 20,
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
        assert_eq!(bounded(short.clone(), 0), short);
        let nuls = format!("start{}end", "\0".repeat(2 << 20));
        let kept = bounded(nuls, 0);
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
        assert_eq!(bounded(plain.clone(), 0), plain);
    }

    /// What the capture keeps of output it cut: its head, its line, its tail.
    fn captured(head: &str, dropped: u64, tail: &str) -> String {
        format!("{head}{}{tail}", omitted_note(dropped))
    }

    #[test]
    fn a_capture_of_plain_text_is_recorded_as_captured_its_line_intact() {
        let text = captured(
            &format!("first\n{}", "x".repeat(KEEP_HEAD_BYTES - 6)),
            9_000_000,
            &format!("{}\nlast\n", "y".repeat(KEEP_TAIL_BYTES - 6)),
        );
        assert_eq!(bounded(text.clone(), 9_000_000), text);
    }

    #[test]
    fn a_second_cut_counts_what_the_capture_left_out_too() {
        // Line breaks escape to two bytes: the captured head and tail no longer fit.
        let head = "h\n".repeat(KEEP_HEAD_BYTES / 2);
        let tail = "t\n".repeat(KEEP_TAIL_BYTES / 2);
        let text = captured(&head, 9_000_000, &tail);
        let kept = bounded(text, 9_000_000);
        assert!(kept.starts_with("h\nh\n"));
        assert!(kept.ends_with("t\nt\n"));
        assert!(
            !kept.contains("omitted"),
            "the capture's line is in the cut"
        );
        // Each side keeps a MiB as JSON writes it, two thirds of its bytes: 699 051 of
        // the head (349 525 `h\n` and an `h`), 699 050 of the tail (349 525 `t\n`).
        let expected = 9_000_000 + (KEEP_HEAD_BYTES - 699_051) + (KEEP_TAIL_BYTES - 699_050);
        let at = kept.find("\n[... ").unwrap();
        assert_eq!(at, 699_051);
        assert!(
            kept[at..].starts_with(&format!("\n[... {expected} bytes of output left out: the transcript keeps 2 MiB of it as JSON writes it ...]\nt\n")),
            "{}",
            &kept[at..at + 120]
        );
        let written = serde_json::to_string(&kept).unwrap();
        assert!(written.len() <= MAX_RECORDED + 200, "{}", written.len());
    }
}
