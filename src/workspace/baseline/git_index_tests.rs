// Test-only module: its parent includes it under #[cfg(test)].
use std::process::Command;

use super::*;

fn git(dir: &Path, args: &[&str]) {
    let output = Command::new("git")
        .args(["-c", "user.email=t@example.com", "-c", "user.name=t"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git is installed");
    assert!(output.status.success(), "git {args:?}");
}

fn repo_with(files: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for file in files {
        let path = dir.path().join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, file).unwrap();
    }
    git(dir.path(), &["init", "-q"]);
    git(dir.path(), &["add", "."]);
    dir
}

#[test]
fn reads_every_index_version_with_blob_ids() {
    for version in ["2", "3", "4"] {
        let dir = repo_with(&["a.txt", "dir/b.txt", "dir/sub/c.txt"]);
        git(dir.path(), &["update-index", "--index-version", version]);
        let index = load(dir.path()).unwrap();
        assert_eq!(index.entries.len(), 3, "version {version}");
        let b = &index.entries[&RelPath::from("dir/b.txt")];
        assert_eq!(
            crate::digest::hex(&b.id),
            crate::workspace::diff::blob_id(b"dir/b.txt")
        );
        assert_eq!(b.mode, 0o100644);
    }
}

#[test]
fn entries_git_does_not_vouch_for_are_left_out() {
    let dir = repo_with(&["a.txt", "assumed.txt", "skipped.txt"]);
    git(
        dir.path(),
        &["update-index", "--assume-unchanged", "assumed.txt"],
    );
    git(
        dir.path(),
        &["update-index", "--skip-worktree", "skipped.txt"],
    );
    let index = load(dir.path()).unwrap();
    let names: Vec<String> = index.entries.iter().map(|(p, _)| p.to_string()).collect();
    assert_eq!(names, ["a.txt"]);
}

#[test]
fn a_workspace_below_the_top_sees_its_own_files_relative_to_it() {
    let dir = repo_with(&["top.txt", "sub/x.txt", "subway/y.txt"]);
    let index = load(&dir.path().join("sub")).unwrap();
    let names: Vec<String> = index.entries.iter().map(|(p, _)| p.to_string()).collect();
    assert_eq!(names, ["x.txt"]);
}

#[test]
fn no_repository_or_a_garbled_index_gives_no_help() {
    let plain = tempfile::tempdir().unwrap();
    assert!(load(plain.path()).is_none());
    let dir = repo_with(&["a.txt"]);
    std::fs::write(
        dir.path().join(".git/index"),
        b"DIRC\0\0\0\x02\0\0\0\x05short",
    )
    .unwrap();
    assert!(load(dir.path()).is_none());
}
