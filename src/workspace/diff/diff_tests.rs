// Test-only module: its parent includes it under #[cfg(test)].
//! Every case is checked the way users use the patch: `git apply --check` and `git apply`
//! on an untouched copy of the before tree must produce exactly the after tree.

use std::path::Path;
use std::process::Command;

use super::*;
use crate::workspace::file_entry::{MODE_EXECUTABLE, MODE_FILE, MODE_SYMLINK};

fn tree(entries: &[(&str, u32, &[u8])]) -> TreeInMemory {
    let named: Vec<(&[u8], u32, &[u8])> = entries
        .iter()
        .map(|(path, mode, content)| (path.as_bytes(), *mode, *content))
        .collect();
    tree_of_bytes(&named)
}

/// [`tree`] with file names given as raw bytes (names that are not UTF-8).
fn tree_of_bytes(entries: &[(&[u8], u32, &[u8])]) -> TreeInMemory {
    use std::os::unix::ffi::OsStrExt;
    let mut snapshot = TreeInMemory::default();
    for (path, mode, content) in entries {
        snapshot.files.insert(
            RelPath::from_relative(Path::new(std::ffi::OsStr::from_bytes(path))),
            FileEntry {
                mode: *mode,
                content: content.to_vec(),
            },
        );
    }
    snapshot
}

fn materialize(root: &Path, snapshot: &TreeInMemory) {
    use std::os::unix::fs::PermissionsExt;
    for (path, entry) in &snapshot.files {
        let target = root.join(path.to_path());
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        if entry.mode == MODE_SYMLINK {
            let link = String::from_utf8(entry.content.clone()).unwrap();
            std::os::unix::fs::symlink(link, &target).unwrap();
        } else {
            std::fs::write(&target, &entry.content).unwrap();
            let mode = if entry.mode == MODE_EXECUTABLE {
                0o755
            } else {
                0o644
            };
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(mode)).unwrap();
        }
    }
}

fn git(dir: &Path, args: &[&str]) {
    let output = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git is installed");
    assert!(
        output.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Diff `before` → `after`, apply the patch with git to a fresh copy of `before`, and
/// assert the result is `after`. Returns the patch for further assertions.
fn assert_applies(before: &TreeInMemory, after: &TreeInMemory) -> String {
    let patch = unified_diff(before, after);
    assert_eq!(patch, unified_diff(before, after), "deterministic");
    let work = tempfile::tempdir().unwrap();
    let root = work.path().join("repo");
    std::fs::create_dir(&root).unwrap();
    git(&root, &["init", "-q"]);
    materialize(&root, before);
    let patch_file = work.path().join("diff.patch");
    std::fs::write(&patch_file, &patch).unwrap();
    let patch_arg = patch_file.to_str().unwrap();
    git(&root, &["apply", "--check", patch_arg]);
    git(&root, &["apply", patch_arg]);
    let result = TreeInMemory::take(&root).unwrap();
    assert_eq!(result, *after, "patch:\n{patch}");
    patch
}

#[test]
fn modified_text_file() {
    let before = tree(&[("src/lib.rs", MODE_FILE, b"a\nb\nc\nd\ne\nf\ng\nh\ni\n")]);
    let after = tree(&[("src/lib.rs", MODE_FILE, b"a\nb\nc\nd\nE\nf\ng\nh\ni\n")]);
    let patch = assert_applies(&before, &after);
    assert!(patch.starts_with("diff --git a/src/lib.rs b/src/lib.rs\nindex "));
    assert!(patch.contains("--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -2,7 +2,7 @@\n"));
    assert!(patch.contains("\n-e\n+E\n"));
}

#[test]
fn added_file_in_new_directory_and_deleted_file() {
    let before = tree(&[
        ("keep.txt", MODE_FILE, b"k\n"),
        ("old.txt", MODE_FILE, b"bye\n"),
    ]);
    let after = tree(&[
        ("keep.txt", MODE_FILE, b"k\n"),
        ("new/dir/file.txt", MODE_FILE, b"hello\nworld\n"),
    ]);
    let patch = assert_applies(&before, &after);
    assert!(patch.contains("new file mode 100644\n"));
    assert!(patch.contains("--- /dev/null\n+++ b/new/dir/file.txt\n@@ -0,0 +1,2 @@\n"));
    assert!(patch.contains("deleted file mode 100644\n"));
    assert!(patch.contains("--- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n"));
    // Sorted by path.
    assert!(patch.find("new/dir").unwrap() < patch.find("old.txt").unwrap());
}

#[test]
fn binary_added_modified_and_deleted() {
    let big: Vec<u8> = (0..5000u32).map(|i| (i * 31 % 256) as u8).collect();
    let before = tree(&[
        ("img.png", MODE_FILE, b"\x89PNG\r\n\x1a\n\0\0\0old"),
        ("gone.bin", MODE_FILE, b"\0\x01\x02"),
        ("latin1.txt", MODE_FILE, b"caf\xe9\n"),
    ]);
    let after = tree(&[
        (
            "img.png",
            MODE_FILE,
            b"\x89PNG\r\n\x1a\n\0\0\0new and longer",
        ),
        ("big.bin", MODE_FILE, &big),
        ("latin1.txt", MODE_FILE, b"caf\xe9s\n"),
    ]);
    let patch = assert_applies(&before, &after);
    assert!(patch.contains("GIT binary patch\nliteral 5000\n"));
    assert!(patch.contains("\nliteral 0\n"));
    assert!(!patch.contains("@@"), "binary files have no text hunks");
    // Applying in reverse works too, since the reverse literal is included.
    let reverse = assert_applies(&after, &before);
    assert!(reverse.contains("deleted file mode 100644"));
}

#[test]
fn missing_trailing_newline_both_ways() {
    let before = tree(&[
        ("a.txt", MODE_FILE, b"one\ntwo"),
        ("b.txt", MODE_FILE, b"x\ny\n"),
    ]);
    let after = tree(&[
        ("a.txt", MODE_FILE, b"one\ntwo\n"),
        ("b.txt", MODE_FILE, b"x\nz"),
    ]);
    let patch = assert_applies(&before, &after);
    assert!(patch.contains("-two\n\\ No newline at end of file\n+two\n"));
    assert!(patch.contains("-y\n+z\n\\ No newline at end of file\n"));
    assert_applies(&after, &before);
}

#[test]
fn empty_files_added_and_deleted() {
    let before = tree(&[("empty-old", MODE_FILE, b"")]);
    let after = tree(&[("empty-new", MODE_FILE, b"")]);
    let patch = assert_applies(&before, &after);
    assert_eq!(
        patch,
        "diff --git a/empty-new b/empty-new\nnew file mode 100644\n\
         index 0000000000000000000000000000000000000000..e69de29bb2d1d6434b8b29ae775ad8c2e48c5391\n\
         diff --git a/empty-old b/empty-old\ndeleted file mode 100644\n\
         index e69de29bb2d1d6434b8b29ae775ad8c2e48c5391..0000000000000000000000000000000000000000\n"
    );
}

#[test]
fn file_emptied_and_filled() {
    let before = tree(&[("a", MODE_FILE, b"text\n"), ("b", MODE_FILE, b"")]);
    let after = tree(&[("a", MODE_FILE, b""), ("b", MODE_FILE, b"text\n")]);
    assert_applies(&before, &after);
}

#[test]
fn executable_bit_change_with_and_without_content_change() {
    let before = tree(&[
        ("run.sh", MODE_FILE, b"#!/bin/sh\necho hi\n"),
        ("tool", MODE_EXECUTABLE, b"#!/bin/sh\n"),
        ("new.sh", MODE_FILE, b"#!/bin/sh\n"),
    ]);
    let after = tree(&[
        ("run.sh", MODE_EXECUTABLE, b"#!/bin/sh\necho hi\n"),
        ("tool", MODE_FILE, b"#!/bin/sh\nexit 0\n"),
        ("new.sh", MODE_FILE, b"#!/bin/sh\n"),
        ("added.sh", MODE_EXECUTABLE, b"#!/bin/sh\n"),
    ]);
    let patch = assert_applies(&before, &after);
    assert!(patch.contains("diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n"));
    assert!(patch.contains("new file mode 100755\n"));
}

#[test]
fn crlf_and_lone_cr_content() {
    let before = tree(&[("win.txt", MODE_FILE, b"one\r\ntwo\r\nthree\r\n")]);
    let after = tree(&[("win.txt", MODE_FILE, b"one\r\n2\r\nthree\r\nold\rmac\n")]);
    let patch = assert_applies(&before, &after);
    assert!(patch.contains("-two\r\n+2\r\n"));
}

#[test]
fn symlinks_are_diffed_by_target() {
    let before = tree(&[
        ("link", MODE_SYMLINK, b"target-a"),
        ("became-file", MODE_SYMLINK, b"x"),
    ]);
    let after = tree(&[
        ("link", MODE_SYMLINK, b"target-b"),
        ("became-file", MODE_FILE, b"now a file\n"),
        ("new-link", MODE_SYMLINK, b"dir/elsewhere"),
    ]);
    let patch = assert_applies(&before, &after);
    assert!(patch.contains("index "));
    assert!(patch.contains("new file mode 120000\n"));
    assert!(patch.contains("-target-a\n\\ No newline at end of file\n+target-b\n"));
}

#[test]
fn paths_with_spaces_and_special_characters() {
    let before = tree(&[("dir with space/a b.txt", MODE_FILE, b"1\n")]);
    let after = tree(&[
        ("dir with space/a b.txt", MODE_FILE, b"2\n"),
        ("tab\there.txt", MODE_FILE, b"t\n"),
        ("quote\"and\\slash.txt", MODE_FILE, b"q\n"),
        ("caf\u{e9}.txt", MODE_FILE, b"u\n"),
    ]);
    let patch = assert_applies(&before, &after);
    assert!(patch.contains("+++ b/dir with space/a b.txt\t\n"));
    assert!(patch.contains("diff --git \"a/tab\\there.txt\" \"b/tab\\there.txt\"\n"));
    assert!(patch.contains("\"b/caf\\303\\251.txt\""));
}

#[test]
fn no_changes_is_an_empty_patch() {
    let same = tree(&[("a", MODE_FILE, b"a\n")]);
    assert_eq!(unified_diff(&same, &same), "");
}

#[test]
fn many_hunks_in_a_long_file() {
    let old: String = (0..200).map(|i| format!("line {i}\n")).collect();
    let new = old
        .replace("line 10\n", "ten\n")
        .replace("line 100\n", "")
        .replace("line 199\n", "line 199\nextra\n");
    let before = tree(&[("long.txt", MODE_FILE, old.as_bytes())]);
    let after = tree(&[("long.txt", MODE_FILE, new.as_bytes())]);
    let patch = assert_applies(&before, &after);
    assert_eq!(patch.matches("\n@@ ").count(), 3);
}

#[test]
fn quoting_follows_git() {
    assert_eq!(quote_path(b"a/plain name.txt"), "a/plain name.txt");
    assert_eq!(quote_path(b"a/x\ty"), "\"a/x\\ty\"");
    assert_eq!(quote_path("a/\u{e9}".as_bytes()), "\"a/\\303\\251\"");
    assert_eq!(quote_path(b"a/\x01"), "\"a/\\001\"");
    assert_eq!(quote_path(b"a/caf\xe9"), "\"a/caf\\351\"");
}

#[test]
fn names_that_are_not_utf8_apply_byte_for_byte() {
    // Two names that a lossy conversion would merge into one (`x\u{fffd}`), one changed
    // and one added, plus a deletion and a rename-like pair in a non-UTF-8 directory.
    let before = tree_of_bytes(&[
        (b"x\xff", MODE_FILE, b"same\n"),
        (b"caf\xe9/old.txt", MODE_FILE, b"bye\n"),
        (b"latin\xe9.txt", MODE_FILE, b"one\n"),
    ]);
    let after = tree_of_bytes(&[
        (b"x\xff", MODE_FILE, b"same\n"),
        (b"x\xfe", MODE_FILE, b"new\n"),
        (b"caf\xe9/new.txt", MODE_FILE, b"hello\n"),
        (b"latin\xe9.txt", MODE_FILE, b"two\n"),
    ]);
    let patch = assert_applies(&before, &after);
    assert!(
        patch.contains("diff --git \"a/x\\376\" \"b/x\\376\"\n"),
        "{patch}"
    );
    assert!(patch.contains("+++ \"b/caf\\351/new.txt\"\n"), "{patch}");
    assert!(!patch.contains('\u{fffd}'), "{patch}");
    assert_eq!(before.changed_paths(&after).len(), 4);
}
