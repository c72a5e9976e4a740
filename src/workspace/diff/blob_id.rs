//! Git blob ids (SHA-1 of `blob <len>\0<content>`). `git apply` refuses binary patches
//! without full `index` lines and checks both ids against the files, so the diff must
//! carry the real ones. SHA-1 here is git's object naming, not a security measure.

use sha1::{Digest, Sha1};

/// The id git would give a blob with this content, as 40 lowercase hex digits.
pub(crate) fn blob_id(content: &[u8]) -> String {
    let mut sha = Sha1::new();
    sha.update(format!("blob {}\0", content.len()).as_bytes());
    sha.update(content);
    crate::digest::hex(&sha.finalize())
}

/// The id git writes for "no file" (`new file` / `deleted file` sides).
pub(super) const NULL_ID: &str = "0000000000000000000000000000000000000000";

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
