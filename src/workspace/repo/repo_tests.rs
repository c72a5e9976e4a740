use std::collections::HashSet;
use std::os::unix::fs::MetadataExt as _;
use std::process::Command;

use super::*;

/// A repository with two commits on `main`, a tag `v1` on the first and a branch `dev`.
fn origin() -> (tempfile::TempDir, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let output = Command::new("git")
            .arg("-C")
            .arg(dir.path())
            .args(args)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        String::from_utf8_lossy(&output.stdout).trim().to_string()
    };
    run(&["init", "--quiet", "--initial-branch=main"]);
    std::fs::write(dir.path().join("a.txt"), "one\n").unwrap();
    run(&["add", "."]);
    run(&["commit", "--quiet", "-m", "one"]);
    run(&["tag", "-a", "-m", "v1", "v1"]);
    let first = run(&["rev-parse", "HEAD"]);
    run(&["branch", "dev"]);
    std::fs::write(dir.path().join("a.txt"), "two\n").unwrap();
    run(&["commit", "--quiet", "-am", "two"]);
    let second = run(&["rev-parse", "HEAD"]);
    (dir, first, second)
}

fn request(origin: &Path, git_ref: Option<&str>) -> RepoRequest {
    let url = url::Url::from_file_path(origin).unwrap().to_string();
    RepoRequest {
        url: RepoUrl::parse(&url).unwrap(),
        git_ref: git_ref.map(|r| GitRef::new(r).unwrap()),
        depth: None,
        path: None,
        credential: Credential::GitConfig,
        timeout: Duration::from_secs(60),
        cache: None,
        overlay: false,
        checkouts: None,
        at_commit: None,
    }
}

fn never() -> bool {
    false
}

#[test]
fn branches_tags_commits_and_head_are_checked_out() {
    let (origin, first, second) = origin();
    let head = check_out(&request(origin.path(), None), &never).unwrap();
    assert_eq!(head.commit, second);
    assert_eq!(
        std::fs::read_to_string(head.dir.join("a.txt")).unwrap(),
        "two\n"
    );
    for (asked, commit) in [
        ("dev", &first),
        ("v1", &first),
        (&first[..10], &first),
        (first.as_str(), &first),
    ] {
        let checkout = check_out(&request(origin.path(), Some(asked)), &never).unwrap();
        assert_eq!(&checkout.commit, commit, "{asked}");
        assert_eq!(
            std::fs::read_to_string(checkout.dir.join("a.txt")).unwrap(),
            "one\n"
        );
    }
    let error = check_out(&request(origin.path(), Some("nope")), &never)
        .err()
        .unwrap();
    assert_eq!(error.kind, RepoErrorKind::Refused);
    assert!(
        error.message.contains("nope") && error.message.contains("main"),
        "{}",
        error.message
    );
}

#[test]
fn a_temp_checkout_goes_with_its_task_and_a_path_must_be_empty() {
    let (origin, ..) = origin();
    let checkout = check_out(&request(origin.path(), None), &never).unwrap();
    let dir = checkout.dir.clone();
    drop(checkout);
    assert!(!dir.exists());
    let place = tempfile::tempdir().unwrap();
    std::fs::write(place.path().join("keep.txt"), "mine").unwrap();
    let mut asked = request(origin.path(), None);
    asked.path = Some(place.path().to_path_buf());
    let error = check_out(&asked, &never).err().unwrap();
    assert!(
        error.message.contains("not an empty directory"),
        "{}",
        error.message
    );
    assert_eq!(
        std::fs::read_to_string(place.path().join("keep.txt")).unwrap(),
        "mine"
    );
}

/// Every inode of the regular files below `dir`.
fn inodes(dir: &Path) -> HashSet<(u64, u64)> {
    let mut found = HashSet::new();
    for entry in walkdir(dir) {
        let meta = std::fs::symlink_metadata(&entry).unwrap();
        if meta.is_file() {
            found.insert((meta.dev(), meta.ino()));
        }
    }
    found
}

fn walkdir(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if entry.file_type().unwrap().is_dir() {
            out.extend(walkdir(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn a_cached_checkout_shares_no_file_with_the_mirror() {
    let (origin, _, second) = origin();
    let cache = tempfile::tempdir().unwrap();
    let mut asked = request(origin.path(), None);
    asked.cache = Some(cache.path().to_path_buf());
    let checkout = check_out(&asked, &never).unwrap();
    assert_eq!(checkout.commit, second);
    let (mirror, _) = cache::mirror_paths(cache.path(), &asked.url.clean);
    assert!(mirror.join("HEAD").is_file());
    let shared: Vec<_> = inodes(&mirror)
        .intersection(&inodes(&checkout.dir))
        .copied()
        .collect();
    assert!(shared.is_empty(), "{shared:?}");
    let config = std::fs::read_to_string(checkout.dir.join(".git/config")).unwrap();
    assert!(config.contains(&asked.url.clean), "{config}");
    assert!(!std::path::Path::new(&checkout.dir.join(".git/objects/info/alternates")).exists());
}
