// Test-only module: its parent includes it under #[cfg(test)].
//! Test-only module: the start commit and the checks of a recorded one.

use super::*;
use std::process::Command;

fn run(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

/// A repository with one commit: `sub/a.txt`, and `out/` ignored by nothing.
fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    run(dir.path(), &["init", "--quiet"]);
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("sub/a.txt"), "a\n").unwrap();
    run(dir.path(), &["add", "."]);
    run(dir.path(), &["commit", "--quiet", "-m", "one"]);
    dir
}

#[test]
fn only_a_full_lowercase_hex_id_is_an_object_id() {
    assert!(is_object_id(&"a".repeat(40)));
    assert!(is_object_id(&"0123456789abcdef".repeat(4)));
    for forged in [
        "HEAD~1",
        "HEAD",
        "--output=/tmp/x",
        "-p",
        "deadbeef",
        &"A".repeat(40),
        &"a".repeat(41),
        &format!("{} ", "a".repeat(39)),
        &format!("-{}", "a".repeat(39)),
        "",
    ] {
        assert!(!is_object_id(forged), "{forged:?}");
    }
}

#[test]
fn a_clean_checkout_starts_at_its_head_and_drovers_outputs_do_not_dirty_it() {
    let repo = repo();
    let head = run(repo.path(), &["rev-parse", "HEAD"]);
    let start = start_of(repo.path(), &[]).unwrap();
    assert_eq!(start.commit, head);
    assert!(!start.dirty);
    // drover's artifacts, untracked, are left out; anything else untracked is not.
    std::fs::create_dir(repo.path().join("out")).unwrap();
    std::fs::write(repo.path().join("out/summary.json"), "{}").unwrap();
    assert!(
        !start_of(repo.path(), &[repo.path().join("out")])
            .unwrap()
            .dirty
    );
    assert!(start_of(repo.path(), &[]).unwrap().dirty);
    std::fs::write(repo.path().join("sub/new.txt"), "new\n").unwrap();
    assert!(
        start_of(repo.path(), &[repo.path().join("out")])
            .unwrap()
            .dirty
    );
}

#[test]
fn a_changed_file_dirties_only_the_workspace_it_lies_in() {
    let repo = repo();
    std::fs::create_dir(repo.path().join("other")).unwrap();
    std::fs::write(repo.path().join("other/b.txt"), "b\n").unwrap();
    // Untracked outside `sub`: `sub` is still its commit.
    assert!(!start_of(&repo.path().join("sub"), &[]).unwrap().dirty);
    std::fs::write(repo.path().join("sub/a.txt"), "changed\n").unwrap();
    assert!(start_of(&repo.path().join("sub"), &[]).unwrap().dirty);
}

#[test]
fn outside_a_repository_there_is_no_start_commit() {
    let plain = tempfile::tempdir().unwrap();
    assert!(start_of(plain.path(), &[]).is_none());
    assert!(head_commit(plain.path()).is_none());
}

#[test]
fn renames_name_both_paths() {
    let output = b"R  new.txt\0old.txt\0?? x y.txt\0 M a\0";
    assert_eq!(
        porcelain_paths(output),
        vec!["new.txt", "old.txt", "x y.txt", "a"]
    );
}

#[test]
fn a_recorded_commit_is_used_only_when_it_is_a_clean_commit_of_this_repository() {
    let repo = repo();
    let head = run(repo.path(), &["rev-parse", "HEAD"]);
    let start = |commit: &str, dirty: bool| StartCommit {
        commit: commit.to_string(),
        dirty,
        repository: None,
    };
    assert_eq!(
        check_commit(repo.path(), &start(&head, false)).unwrap(),
        head
    );
    let tree = run(repo.path(), &["rev-parse", "HEAD^{tree}"]);
    let error = check_commit(repo.path(), &start(&tree, false)).unwrap_err();
    assert!(
        matches!(error, CommitUnusable::NotACommit { .. }),
        "{error}"
    );
    let error = check_commit(repo.path(), &start(&"0".repeat(40), false)).unwrap_err();
    assert!(matches!(error, CommitUnusable::Missing { .. }), "{error}");
    assert!(error.to_string().contains("shallow clone"), "{error}");
    let error = check_commit(repo.path(), &start(&head, true)).unwrap_err();
    assert!(matches!(error, CommitUnusable::Dirty { .. }), "{error}");
    let plain = tempfile::tempdir().unwrap();
    let error = check_commit(plain.path(), &start(&head, false)).unwrap_err();
    assert!(
        matches!(error, CommitUnusable::NoRepository { .. }),
        "{error}"
    );
}

#[test]
fn a_forged_commit_never_reaches_git() {
    let repo = repo();
    let proof = repo.path().join("written-by-git");
    let forged = format!("--output={}", proof.display());
    for commit in [forged.as_str(), "HEAD~1", "HEAD"] {
        let start = StartCommit {
            commit: commit.to_string(),
            dirty: false,
            repository: None,
        };
        let error = check_commit(repo.path(), &start).unwrap_err();
        assert!(matches!(error, CommitUnusable::NotAnObjectId(_)), "{error}");
        assert!(error.to_string().contains("never given to git"), "{error}");
    }
    assert!(!proof.exists());
}
