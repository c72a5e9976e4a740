//! Git blob ids (SHA-1 of `blob <len>\0<content>`). `git apply` refuses binary patches
//! without full `index` lines and checks both ids against the files, so the diff must
//! carry the real ones. SHA-1 here is git's object naming, not a security measure.

/// The id git would give a blob with this content, as 40 lowercase hex digits.
pub fn blob_id(content: &[u8]) -> String {
    let mut sha = Sha1::new();
    sha.update(format!("blob {}\0", content.len()).as_bytes());
    sha.update(content);
    crate::workspace::snapshot::hex(&sha.finish())
}

/// The id git writes for "no file" (`new file` / `deleted file` sides).
pub const NULL_ID: &str = "0000000000000000000000000000000000000000";

/// A minimal streaming SHA-1 (FIPS 180-4); the crate has no SHA-1 dependency.
struct Sha1 {
    state: [u32; 5],
    buffer: Vec<u8>,
    length: u64,
}

impl Sha1 {
    fn new() -> Sha1 {
        Sha1 {
            state: [
                0x6745_2301,
                0xEFCD_AB89,
                0x98BA_DCFE,
                0x1032_5476,
                0xC3D2_E1F0,
            ],
            buffer: Vec::with_capacity(64),
            length: 0,
        }
    }

    fn update(&mut self, mut data: &[u8]) {
        self.length = self.length.wrapping_add(data.len() as u64);
        if !self.buffer.is_empty() {
            let take = (64 - self.buffer.len()).min(data.len());
            self.buffer.extend_from_slice(&data[..take]);
            data = &data[take..];
            if self.buffer.len() == 64 {
                let block = std::mem::take(&mut self.buffer);
                self.compress(&block);
            }
        }
        let mut blocks = data.chunks_exact(64);
        for block in &mut blocks {
            self.compress(block);
        }
        self.buffer.extend_from_slice(blocks.remainder());
    }

    fn finish(mut self) -> [u8; 20] {
        let bit_length = self.length.wrapping_mul(8);
        let mut tail = std::mem::take(&mut self.buffer);
        tail.push(0x80);
        while tail.len() % 64 != 56 {
            tail.push(0);
        }
        tail.extend_from_slice(&bit_length.to_be_bytes());
        for block in tail.chunks_exact(64) {
            self.compress(block);
        }
        let mut out = [0u8; 20];
        for (chunk, word) in out.chunks_exact_mut(4).zip(self.state) {
            chunk.copy_from_slice(&word.to_be_bytes());
        }
        out
    }

    /// One 64-byte block (callers only pass exact 64-byte chunks).
    fn compress(&mut self, block: &[u8]) {
        let mut w = [0u32; 80];
        for (i, bytes) in block.chunks_exact(4).take(16).enumerate() {
            w[i] = u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        }
        for i in 16..80 {
            w[i] = (w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]).rotate_left(1);
        }
        let [mut a, mut b, mut c, mut d, mut e] = self.state;
        for (i, word) in w.iter().enumerate() {
            let (f, k) = match i {
                0..=19 => ((b & c) | (!b & d), 0x5A82_7999),
                20..=39 => (b ^ c ^ d, 0x6ED9_EBA1),
                40..=59 => ((b & c) | (b & d) | (c & d), 0x8F1B_BCDC),
                _ => (b ^ c ^ d, 0xCA62_C1D6),
            };
            let temp = a
                .rotate_left(5)
                .wrapping_add(f)
                .wrapping_add(e)
                .wrapping_add(k)
                .wrapping_add(*word);
            e = d;
            d = c;
            c = b.rotate_left(30);
            b = a;
            a = temp;
        }
        for (slot, value) in self.state.iter_mut().zip([a, b, c, d, e]) {
            *slot = slot.wrapping_add(value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_match_git_hash_object() {
        // `git hash-object` of these contents.
        assert_eq!(blob_id(b""), "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
        assert_eq!(
            blob_id(b"old\n"),
            "3367afdbbf91e638efe983616377c60477cc6612"
        );
        assert_eq!(
            blob_id(b"\0\x01"),
            "bdc955b7b2e610ad5a72302b139a2e6cb325519a"
        );
    }

    #[test]
    fn long_content_matches_git() {
        let content: Vec<u8> = (0..10_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data");
        std::fs::write(&path, &content).unwrap();
        let output = std::process::Command::new("git")
            .arg("hash-object")
            .arg(&path)
            .output()
            .unwrap();
        assert!(output.status.success());
        assert_eq!(
            blob_id(&content),
            String::from_utf8_lossy(&output.stdout).trim()
        );
    }
}
