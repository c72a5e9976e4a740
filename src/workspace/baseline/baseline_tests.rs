// Test-only module: its parent includes it under #[cfg(test)].
//! The baseline is checked the way users rely on it: the patch from start to end must
//! `git apply` on a pristine copy and give the end tree byte for byte.

use std::path::Path;
use std::process::Command;

use super::patch::Patch;
use super::*;

fn write(root: &Path, rel: &str, content: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

fn git(dir: &Path, args: &[&str]) {
    let output = Command::new("git")
        .args(["-c", "user.email=t@example.com", "-c", "user.name=t"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git is installed");
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn never() -> bool {
    false
}

/// Every file below `root` but `.git/`, as (path, mode, content).
fn tree(root: &Path) -> Vec<(String, bool, Vec<u8>)> {
    let mut files = Vec::new();
    for entry in ignore::WalkBuilder::new(root)
        .standard_filters(false)
        .hidden(false)
        .filter_entry(|e| e.file_name() != ".git")
        .sort_by_file_name(|a, b| a.cmp(b))
        .build()
    {
        let entry = entry.unwrap();
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            continue;
        }
        let rel = entry
            .path()
            .strip_prefix(root)
            .unwrap()
            .display()
            .to_string();
        let content = if kind.is_symlink() {
            std::fs::read_link(entry.path())
                .unwrap()
                .display()
                .to_string()
                .into_bytes()
        } else {
            std::fs::read(entry.path()).unwrap()
        };
        use std::os::unix::fs::PermissionsExt;
        let executable =
            !kind.is_symlink() && entry.metadata().unwrap().permissions().mode() & 0o111 != 0;
        files.push((rel, executable, content));
    }
    files
}

/// Apply `patch` to `pristine` with git and compare with `expected`.
fn assert_patch_gives(pristine: &Path, patch: &str, expected: &Path) {
    let file = pristine.with_extension("patch");
    std::fs::write(&file, patch).unwrap();
    git(pristine, &["apply", "--check", file.to_str().unwrap()]);
    git(pristine, &["apply", file.to_str().unwrap()]);
    assert_eq!(tree(pristine), tree(expected), "patch:\n{patch}");
}

fn copy_dir(from: &Path, to: &Path) {
    let status = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .unwrap();
    assert!(status.success());
}

/// Start from a workspace, make `change`, and check the diff both ways.
fn round_trip(ws: &Path, change: impl FnOnce(&Path)) -> (Comparison, Patch) {
    let pristine = ws.with_file_name("pristine");
    copy_dir(ws, &pristine);
    let baseline = Baseline::take_until(ws, &[], &never).unwrap();
    change(ws);
    let comparison = baseline.compare_until(&never).unwrap();
    let patch = baseline.patch(&comparison);
    assert!(patch.notes.is_empty(), "{:?}", patch.notes);
    assert_patch_gives(&pristine, &patch.text, ws);
    (comparison, patch)
}

fn every_kind_of_change(ws: &Path) {
    use std::os::unix::fs::PermissionsExt;
    write(ws, "src/lib.rs", "fn a() {}\nfn b() {}\n");
    std::fs::remove_file(ws.join("old.txt")).unwrap();
    std::fs::rename(ws.join("moved.txt"), ws.join("docs/moved.txt")).unwrap();
    std::fs::set_permissions(ws.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink("src/lib.rs", ws.join("link")).unwrap();
    write(ws, "new/file.bin", "\0binary\u{1}");
}

fn starting_files(ws: &Path) {
    write(ws, "src/lib.rs", "fn a() {}\n");
    write(ws, "old.txt", "bye\n");
    write(ws, "moved.txt", "travels\n");
    write(ws, "run.sh", "#!/bin/sh\n");
    write(ws, "docs/readme.md", "# docs\n");
}

#[test]
fn outside_git_every_kind_of_change_applies() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    starting_files(&ws);
    let (comparison, _) = round_trip(&ws, every_kind_of_change);
    let paths: Vec<String> = comparison.paths().iter().map(|p| p.to_string()).collect();
    assert_eq!(
        paths,
        [
            "docs/moved.txt",
            "link",
            "moved.txt",
            "new/file.bin",
            "old.txt",
            "run.sh",
            "src/lib.rs"
        ]
    );
}

#[test]
fn in_git_clean_files_come_from_the_repository_and_the_diff_applies() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    starting_files(&ws);
    git(&ws, &["init", "-q"]);
    git(&ws, &["add", "."]);
    git(&ws, &["commit", "-qm", "start"]);
    // Not racily clean: the index is written again after the files' times are past.
    std::thread::sleep(std::time::Duration::from_millis(20));
    git(&ws, &["update-index", "--refresh"]);
    write(&ws, "dirty.txt", "untracked at the start\n");
    let baseline = Baseline::take_until(&ws, &[], &never).unwrap();
    let lib = &baseline.entries[&RelPath::from("src/lib.rs")];
    assert!(
        matches!(
            lib.content,
            Content::Blob {
                source: Source::Git,
                ..
            }
        ),
        "{lib:?}"
    );
    let dirty = &baseline.entries[&RelPath::from("dirty.txt")];
    assert!(matches!(
        dirty.content,
        Content::Blob {
            source: Source::Store,
            ..
        }
    ));
    drop(baseline);
    round_trip(&ws, every_kind_of_change);
}

#[test]
fn a_workspace_below_the_top_of_a_repository_uses_its_index() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    starting_files(&repo.join("sub"));
    write(&repo, "top.txt", "outside the workspace\n");
    git(&repo, &["init", "-q"]);
    git(&repo, &["update-index", "--index-version", "4"]);
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-qm", "start"]);
    std::thread::sleep(std::time::Duration::from_millis(20));
    git(&repo, &["update-index", "--refresh"]);
    let ws = repo.join("sub");
    let baseline = Baseline::take_until(&ws, &[], &never).unwrap();
    assert!(matches!(
        baseline.entries[&RelPath::from("docs/readme.md")].content,
        Content::Blob {
            source: Source::Git,
            ..
        }
    ));
    assert!(baseline.entries.get(&RelPath::from("top.txt")).is_none());
    write(&ws, "docs/readme.md", "# changed\n");
    let comparison = baseline.compare_until(&never).unwrap();
    let patch = baseline.patch(&comparison);
    assert!(
        patch.text.contains("-# docs\n+# changed\n"),
        "{}",
        patch.text
    );
}

#[test]
fn rules_the_agent_adds_do_not_hide_its_changes() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    write(&ws, "src/lib.rs", "a\n");
    write(&ws, ".gitignore", "*.log\nbuild/\n");
    write(&ws, "build/out.o", "o");
    write(&ws, "node_modules/pkg/index.js", "orig");
    let (comparison, _) = round_trip(&ws, |ws| {
        write(ws, "src/lib.rs", "b\n");
        write(ws, "src/.gitignore", "*\n");
        write(ws, ".ignore", "src/\n");
        write(
            ws,
            "src/CACHEDIR.TAG",
            "Signature: 8a477f597d28d172789f06886806bc55\n",
        );
        write(ws, "src/node_modules/hidden.js", "x");
        write(ws, "src/new.rs", "new\n");
    });
    let paths: Vec<String> = comparison.paths().iter().map(|p| p.to_string()).collect();
    assert_eq!(
        paths,
        [
            ".ignore",
            "src/.gitignore",
            "src/CACHEDIR.TAG",
            "src/lib.rs",
            "src/new.rs",
            "src/node_modules/hidden.js"
        ]
    );
    assert_eq!(comparison.excluded_changes, 0);
}

#[test]
fn changes_where_the_starting_rules_apply_are_counted_not_diffed() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    write(&ws, "src/lib.rs", "a\n");
    write(&ws, ".gitignore", "*.log\nbuild/\n");
    write(&ws, "build/out.o", "o");
    write(&ws, "keep.log", "k");
    write(&ws, "node_modules/pkg/index.js", "orig");
    let baseline = Baseline::take_until(&ws, &[], &never).unwrap();
    write(&ws, "new.log", "added under a starting rule");
    write(
        &ws,
        "node_modules/pkg/index.js",
        "patched to pass the tests",
    );
    std::fs::remove_file(ws.join("build/out.o")).unwrap();
    std::fs::remove_file(ws.join(".gitignore")).unwrap();
    let comparison = baseline.compare_until(&never).unwrap();
    let paths: Vec<String> = comparison.paths().iter().map(|p| p.to_string()).collect();
    assert_eq!(paths, [".gitignore"]);
    assert_eq!(comparison.excluded_changes, 3);
}

#[test]
fn unchanged_files_are_not_read_again_and_large_ones_never() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    write(&ws, "a.txt", "a\n");
    let big = std::fs::File::create(ws.join("big.bin")).unwrap();
    big.set_len(MAX_DIFFED_FILE + 1).unwrap();
    drop(big);
    let baseline = Baseline::take_until(&ws, &[], &never).unwrap();
    assert_eq!(
        baseline.entries[&RelPath::from("big.bin")].content,
        Content::Large {
            size: MAX_DIFFED_FILE + 1
        }
    );
    let comparison = baseline.compare_until(&never).unwrap();
    assert!(comparison.changes.is_empty());
    let big = std::fs::OpenOptions::new()
        .write(true)
        .open(ws.join("big.bin"))
        .unwrap();
    big.set_len(MAX_DIFFED_FILE + 2).unwrap();
    let comparison = baseline.compare_until(&never).unwrap();
    assert_eq!(comparison.paths(), [RelPath::from("big.bin")]);
    let patch = baseline.patch(&comparison);
    assert_eq!(patch.text, "");
    assert!(
        patch.notes[0].contains("larger than the 256 MiB"),
        "{:?}",
        patch.notes
    );
}

#[test]
fn fingerprints_name_the_tree_not_where_it_lives() {
    let dir = tempfile::tempdir().unwrap();
    let one = dir.path().join("one");
    starting_files(&one);
    let two = dir.path().join("two");
    copy_dir(&one, &two);
    let a = Baseline::take_until(&one, &[], &never).unwrap();
    let b = Baseline::take_until(&two, &[], &never).unwrap();
    assert_eq!(a.fingerprint(), b.fingerprint());
    write(&two, "src/lib.rs", "other\n");
    let c = Baseline::take_until(&two, &[], &never).unwrap();
    assert_ne!(a.fingerprint(), c.fingerprint());
}

#[test]
fn a_baseline_stops_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..20 {
        write(dir.path(), &format!("f{i}"), "x");
    }
    let error = Baseline::take_until(dir.path(), &[], &|| true).unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::Interrupted);
}

#[test]
fn a_copy_leans_on_its_original_and_notices_when_it_changed() {
    let dir = tempfile::tempdir().unwrap();
    let origin = dir.path().join("origin");
    starting_files(&origin);
    let copy = dir.path().join("copy");
    copy_dir(&origin, &copy);
    let origin = origin.canonicalize().unwrap();
    let of_copy = CopyOrigin {
        dir: Some(&origin),
        build_trees: &[],
    };
    let options = StartOptions {
        excluded: Exclusions::default(),
        origin: Some(of_copy),
        index: IndexSource::Discover,
    };
    let baseline = Baseline::take(&copy, options, &never).unwrap();
    assert!(matches!(
        baseline.entries[&RelPath::from("src/lib.rs")].content,
        Content::Blob {
            source: Source::Origin,
            ..
        }
    ));
    write(&copy, "src/lib.rs", "fn changed() {}\n");
    let comparison = baseline.compare_until(&never).unwrap();
    let patch = baseline.patch(&comparison);
    assert!(
        patch.text.contains("-fn a() {}\n+fn changed() {}\n"),
        "{}",
        patch.text
    );
    // The original changed behind the task's back: named, never diffed wrongly.
    write(&origin, "src/lib.rs", "someone else's edit\n");
    let patch = baseline.patch(&comparison);
    assert_eq!(patch.text, "");
    assert!(patch.notes[0].contains("changed after the workspace was copied"));
}

/// Make a chain of `depth` directories called `name` below `root`, each created relative
/// to its parent (the full path is longer than the kernel takes in one call).
fn deep_chain(root: &Path, name: &str, depth: usize) {
    use rustix::fs::{Mode, OFlags};
    let mut fd = rustix::fs::open(root, OFlags::DIRECTORY | OFlags::RDONLY, Mode::empty()).unwrap();
    for _ in 0..depth {
        rustix::fs::mkdirat(&fd, name, Mode::from_raw_mode(0o755)).unwrap();
        fd = rustix::fs::openat(&fd, name, OFlags::DIRECTORY | OFlags::RDONLY, Mode::empty())
            .unwrap();
    }
    let file = rustix::fs::openat(
        &fd,
        "deep.txt",
        OFlags::CREATE | OFlags::WRONLY,
        Mode::from_raw_mode(0o644),
    )
    .unwrap();
    rustix::io::write(&file, b"deep\n").unwrap();
}

#[test]
fn a_tree_too_deep_to_open_is_reported_and_the_rest_still_diffed() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    starting_files(&ws);
    let baseline = Baseline::take_until(&ws, &[], &never).unwrap();
    // 300 levels of 30 characters: over the kernel's 4096-byte path limit.
    deep_chain(&ws, &"d".repeat(30), 300);
    write(&ws, "src/lib.rs", "fn changed() {}\n");
    let comparison = baseline.compare_until(&never).unwrap();
    let paths: Vec<String> = comparison.paths().iter().map(|p| p.to_string()).collect();
    assert_eq!(paths, ["src/lib.rs"]);
    assert_eq!(
        comparison.unreadable.len(),
        1,
        "{:?}",
        comparison.unreadable
    );
    assert!(
        comparison.unreadable[0]
            .1
            .to_lowercase()
            .contains("too long")
    );
}

#[test]
fn a_directory_that_cannot_be_listed_is_reported_not_taken_as_deleted() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    starting_files(&ws);
    let baseline = Baseline::take_until(&ws, &[], &never).unwrap();
    std::fs::set_permissions(ws.join("docs"), std::fs::Permissions::from_mode(0o000)).unwrap();
    let comparison = crate::workspace::permissions_hold::permissions_hold(|| {
        assert!(
            std::fs::read_dir(ws.join("docs")).is_err(),
            "mode 000 binds this test"
        );
        baseline.compare_until(&never)
    });
    std::fs::set_permissions(ws.join("docs"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let comparison = comparison.unwrap();
    assert!(comparison.changes.is_empty(), "{:?}", comparison.changes);
    assert_eq!(comparison.unreadable[0].0, "docs");
}

#[test]
fn only_the_workspaces_own_git_directory_is_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    starting_files(&ws);
    write(&ws, ".git/config", "[core]\n");
    let baseline = Baseline::take_until(&ws, &[], &never).unwrap();
    write(&ws, ".git/hooks/post-checkout", "#!/bin/sh\n");
    write(&ws, "sub/.git/payload.sh", "echo planted\n");
    write(&ws, "deeper/.git", "gitdir: /tmp/elsewhere\n");
    // (git apply refuses patches touching `.git` paths: the reviewer sees them, and
    // applying them takes a deliberate step.)
    let comparison = baseline.compare_until(&never).unwrap();
    let paths: Vec<String> = comparison.paths().iter().map(|p| p.to_string()).collect();
    assert_eq!(paths, ["deeper/.git", "sub/.git/payload.sh"]);
}
