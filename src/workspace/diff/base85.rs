//! Git's base85 encoding, the text form of `GIT binary patch` data: without it a diff
//! could not carry binary files that `git apply` accepts.

/// Git's alphabet (`base85.c`), which differs from Ascii85 and RFC 1924 ordering.
const ALPHABET: &[u8; 85] =
    b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~";

/// Most bytes git puts on one line of a binary patch.
const LINE_BYTES: usize = 52;

/// Encode `data` as base85: every 4 bytes (the last group zero-padded) become 5 chars.
pub(super) fn encode(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(4) * 5);
    for group in data.chunks(4) {
        let mut word = [0u8; 4];
        word[..group.len()].copy_from_slice(group);
        let mut acc = u32::from_be_bytes(word);
        let mut chars = [0u8; 5];
        for slot in chars.iter_mut().rev() {
            *slot = ALPHABET[(acc % 85) as usize];
            acc /= 85;
        }
        out.extend(chars.iter().map(|&c| char::from(c)));
    }
    out
}

/// The lines of a binary patch body: each starts with a length char (`A`–`Z` for 1–26
/// bytes, `a`–`z` for 27–52) followed by the base85 of up to 52 bytes, and ends in `\n`.
pub(super) fn encode_lines(data: &[u8]) -> String {
    let mut out = String::new();
    for line in data.chunks(LINE_BYTES) {
        // chunks() yields 1..=52 bytes, so the length char stays in A-Z / a-z.
        let len = line.len() as u8;
        let tag = if len <= 26 {
            b'A' + len - 1
        } else {
            b'a' + len - 27
        };
        out.push(char::from(tag));
        out.push_str(&encode(line));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_lines_written_by_git_diff_binary() {
        // zlib streams and the lines `git diff --binary` (git 2.47) wrote for them.
        let two_bytes = [120, 1, 99, 96, 4, 0, 0, 3, 0, 2];
        assert_eq!(encode_lines(&two_bytes), "JcmZQz1ONa700IC2\n");
        let five_bytes = [120, 1, 75, 100, 72, 102, 72, 1, 0, 3, 119, 1, 41];
        assert_eq!(encode_lines(&five_bytes), "McmYdfNM=X@00VacDF6Tf\n");
    }

    #[test]
    fn long_data_splits_into_52_byte_lines_with_length_chars() {
        let data: Vec<u8> = (0..=255u8).collect();
        let text = encode_lines(&data);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 5); // 4 × 52 + 48
        for line in &lines[..4] {
            assert!(line.starts_with('z'));
            assert_eq!(line.len(), 1 + 65);
        }
        assert!(lines[4].starts_with('v')); // 48 bytes
        assert_eq!(lines[4].len(), 1 + 60);
        assert_eq!(encode(&[0, 0, 0, 0]), "00000");
        assert_eq!(encode(&[255, 255, 255, 255]), "|NsC0");
        assert_eq!(encode_lines(&[]), "");
    }
}
