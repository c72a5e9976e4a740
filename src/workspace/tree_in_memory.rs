//! Test support: a whole tree of files read into memory ([`TreeInMemory`]), the model
//! the diff format's and the copy's tests compare workspaces with, and the tests of the
//! walk through it.

use std::collections::BTreeMap;
use std::fs::Metadata;
use std::io;
#[cfg(unix)]
use std::os::unix::ffi::OsStrExt as _;
#[cfg(unix)]
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::RelPath;
use super::file_entry::{FileEntry, MODE_EXECUTABLE, MODE_FILE, MODE_SYMLINK};
use super::walk::{Stop, WalkedEntry, named, stopped, walk_noting_build_trees};

/// A regular file's entry, read beneath `roots`.
fn read_file(roots: &crate::workspace::Roots, at: &Path) -> io::Result<FileEntry> {
    let mut file = roots.open_file(at)?;
    let metadata = file.metadata().map_err(|e| named(at, e))?;
    let mut content = Vec::new();
    io::Read::read_to_end(&mut file, &mut content).map_err(|e| named(at, e))?;
    Ok(FileEntry {
        mode: if is_executable(&metadata) {
            MODE_EXECUTABLE
        } else {
            MODE_FILE
        },
        content,
    })
}

/// Every file of a tree in memory, keyed by relative path, in sorted order: the test
/// model of a workspace (the diff format's and the copy's tests compare trees with it;
/// runs use the on-disk [`Baseline`](super::Baseline)).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct TreeInMemory {
    /// Relative path, as bytes → entry.
    pub files: BTreeMap<RelPath, FileEntry>,
    /// Files that could not be read (relative path, why): reported, never fatal, so one
    /// unreadable file does not cost the diff of everything else.
    pub unreadable: Vec<(RelPath, String)>,
    /// Temp files of atomic writes by drover processes that are gone (killed mid-write):
    /// removed while the tree was read, and not part of it.
    pub leftovers: Vec<RelPath>,
}

impl TreeInMemory {
    /// Read every file under `root` that is not ignored (`.gitignore`, `.ignore`), not
    /// inside `.git` and not in a build tree (see [`walker`](super::walk::walker)). Hidden files count: an agent
    /// can edit `.github/` too. Symlinks are recorded, never followed, so a link out of the
    /// workspace cannot pull files in.
    pub(crate) fn take(root: &Path) -> io::Result<TreeInMemory> {
        TreeInMemory::take_excluding(root, &[])
    }

    /// [`TreeInMemory::take`], leaving out the directories in `excluded` that lie below `root`
    /// (drover's own artifacts directory: its transcripts are not the agent's work).
    ///
    /// Each file is opened beneath a handle on `root`, following no symlink, so a path
    /// that is not what the walk saw is an error rather than a read of something else.
    pub(crate) fn take_excluding(root: &Path, excluded: &[PathBuf]) -> io::Result<TreeInMemory> {
        TreeInMemory::take_until(root, excluded, &|| false)
    }

    /// [`TreeInMemory::take_excluding`], stopping with [`stopped`] as soon as `stop` says so
    /// (a baseline of a huge tree must not outlast a cancelled job).
    pub(crate) fn take_until(
        root: &Path,
        excluded: &[PathBuf],
        stop: Stop<'_>,
    ) -> io::Result<TreeInMemory> {
        let canonical = root.canonicalize().map_err(|e| named(root, e))?;
        let roots = crate::workspace::Roots::new(std::slice::from_ref(&canonical));
        let mut files = BTreeMap::new();
        let mut unreadable = Vec::new();
        let mut leftovers = Vec::new();
        for entry in walk_until(root, excluded, stop)? {
            if stop() {
                return Err(stopped());
            }
            let at = canonical.join(entry.relative.to_path());
            if entry.file_type.is_file()
                && crate::workspace::leftovers::is_stale_write_temp(
                    &entry.path.file_name().unwrap_or_default().to_string_lossy(),
                )
                && std::fs::remove_file(&entry.path).is_ok()
            {
                leftovers.push(entry.relative);
                continue;
            }
            let read = if entry.file_type.is_symlink() {
                roots.read_link(&at).map(|target| FileEntry {
                    mode: MODE_SYMLINK,
                    content: path_bytes(&target),
                })
            } else if entry.file_type.is_file() {
                read_file(&roots, &at)
            } else {
                continue;
            };
            match read {
                Ok(file_entry) => {
                    files.insert(entry.relative, file_entry);
                }
                Err(error) => unreadable.push((entry.relative, error.to_string())),
            }
        }
        Ok(TreeInMemory {
            files,
            unreadable,
            leftovers,
        })
    }

    /// Carry over from `before` the entries of files this snapshot could not read, so
    /// an unreadable file shows as unchanged rather than deleted.
    pub(crate) fn keep_unreadable_from(&mut self, before: &TreeInMemory) {
        for (path, _) in &self.unreadable {
            if let Some(entry) = before.files.get(path) {
                self.files.insert(path.clone(), entry.clone());
            }
        }
    }

    /// A short identity of the whole tree: equal fingerprints mean equal snapshots, so a
    /// replay can tell whether it starts from the same workspace as the recording.
    pub(crate) fn fingerprint(&self) -> String {
        let mut hasher = Sha256::new();
        for (path, entry) in &self.files {
            // Length prefixes keep (path, content) boundaries unambiguous.
            hasher.update((path.as_bytes().len() as u64).to_be_bytes());
            hasher.update(path.as_bytes());
            hasher.update(entry.mode.to_be_bytes());
            hasher.update((entry.content.len() as u64).to_be_bytes());
            hasher.update(&entry.content);
        }
        crate::digest::hex(&hasher.finalize())
    }

    /// Paths added, changed (content or mode) or deleted between `self` (before) and
    /// `after`, sorted: what the reports list as "files changed".
    pub(crate) fn changed_paths(&self, after: &TreeInMemory) -> Vec<RelPath> {
        let mut changed: Vec<RelPath> = self
            .files
            .iter()
            .filter(|(path, entry)| after.files.get(*path) != Some(entry))
            .map(|(path, _)| path.clone())
            .chain(
                after
                    .files
                    .keys()
                    .filter(|path| !self.files.contains_key(*path))
                    .cloned(),
            )
            .collect();
        changed.sort();
        changed
    }
}

/// Every entry the walk yields below `root`, as [`walk_noting_build_trees`] gives them.
fn walk_until(root: &Path, excluded: &[PathBuf], stop: Stop<'_>) -> io::Result<Vec<WalkedEntry>> {
    walk_noting_build_trees(root, excluded, stop).map(|(entries, _)| entries)
}

#[cfg(unix)]
fn is_executable(metadata: &Metadata) -> bool {
    metadata.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn is_executable(_metadata: &Metadata) -> bool {
    false
}

#[cfg(unix)]
fn path_bytes(path: &Path) -> Vec<u8> {
    path.as_os_str().as_bytes().to_vec()
}

#[cfg(not(unix))]
fn path_bytes(path: &Path) -> Vec<u8> {
    path.to_string_lossy().replace('\\', "/").into_bytes()
}

#[cfg(test)]
#[path = "tree_in_memory_unreadable_tests.rs"]
mod unreadable_tests;
#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn write(root: &Path, rel: &str, content: &str) {
        let path = root.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, content).unwrap();
    }

    #[test]
    fn sees_hidden_files_but_not_git_or_ignored_ones() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, "src/lib.rs", "fn x() {}\n");
        write(root, ".github/workflows/ci.yml", "on: push\n");
        write(root, ".git/config", "[core]\n");
        write(root, ".gitignore", "target/\n*.log\n");
        write(root, "target/debug/out", "bin");
        write(root, "run.log", "noise");
        write(root, ".ignore", "secret.txt\n");
        write(root, "secret.txt", "x");
        let snapshot = TreeInMemory::take(root).unwrap();
        let paths: Vec<String> = snapshot.files.keys().map(RelPath::to_string).collect();
        assert_eq!(
            paths,
            [
                ".github/workflows/ci.yml",
                ".gitignore",
                ".ignore",
                "src/lib.rs"
            ]
        );
        assert_eq!(
            snapshot.files[&RelPath::from("src/lib.rs")].content,
            b"fn x() {}\n"
        );
        assert_eq!(snapshot.files[&RelPath::from("src/lib.rs")].mode, MODE_FILE);
    }

    #[cfg(unix)]
    #[test]
    fn records_executables_and_symlinks_without_following() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, "run.sh", "#!/bin/sh\n");
        fs::set_permissions(root.join("run.sh"), fs::Permissions::from_mode(0o744)).unwrap();
        std::os::unix::fs::symlink("/etc", root.join("outside")).unwrap();
        let snapshot = TreeInMemory::take(root).unwrap();
        assert_eq!(
            snapshot.files[&RelPath::from("run.sh")].mode,
            MODE_EXECUTABLE
        );
        let link = &snapshot.files[&RelPath::from("outside")];
        assert_eq!(link.mode, MODE_SYMLINK);
        assert_eq!(link.content, b"/etc");
        assert_eq!(snapshot.files.len(), 2, "the link target is not walked");
    }

    #[test]
    fn fingerprint_changes_with_content_and_is_stable() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "a.txt", "one\n");
        let first = TreeInMemory::take(dir.path()).unwrap();
        let again = TreeInMemory::take(dir.path()).unwrap();
        assert_eq!(first.fingerprint(), again.fingerprint());
        assert_eq!(first.fingerprint().len(), 64);
        assert!(
            first
                .fingerprint()
                .chars()
                .all(|c| matches!(c, '0'..='9' | 'a'..='f'))
        );
        write(dir.path(), "a.txt", "two\n");
        let changed = TreeInMemory::take(dir.path()).unwrap();
        assert_ne!(first.fingerprint(), changed.fingerprint());
        assert_eq!(
            TreeInMemory::default().fingerprint(),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn changed_paths_lists_added_modified_and_deleted_sorted() {
        let entry = |content: &str, mode| FileEntry {
            mode,
            content: content.as_bytes().to_vec(),
        };
        let mut before = TreeInMemory::default();
        before.files.insert("same".into(), entry("x", MODE_FILE));
        before.files.insert("edited".into(), entry("x", MODE_FILE));
        before.files.insert("chmod".into(), entry("x", MODE_FILE));
        before.files.insert("gone".into(), entry("x", MODE_FILE));
        let mut after = before.clone();
        after.files.remove(&RelPath::from("gone"));
        after.files.insert("edited".into(), entry("y", MODE_FILE));
        after
            .files
            .insert("chmod".into(), entry("x", MODE_EXECUTABLE));
        after.files.insert("a/new".into(), entry("z", MODE_FILE));
        assert_eq!(
            before.changed_paths(&after),
            ["a/new", "chmod", "edited", "gone"]
        );
        assert!(before.changed_paths(&before).is_empty());
    }

    #[cfg(unix)]
    #[test]
    fn an_unreadable_file_is_named_with_why_and_the_rest_is_taken() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "locked.txt", "x");
        write(dir.path(), "open.txt", "y");
        let path = dir.path().join("locked.txt");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o000)).unwrap();
        let taken = crate::workspace::permissions_hold::permissions_hold(|| {
            assert!(fs::read(&path).is_err(), "mode 000 binds this test");
            TreeInMemory::take(dir.path()).unwrap()
        });
        assert_eq!(taken.unreadable.len(), 1, "{:?}", taken.unreadable);
        let (name, why) = &taken.unreadable[0];
        assert_eq!(name, &RelPath::from("locked.txt"));
        assert!(why.contains("Permission denied"), "{why}");
        assert_eq!(
            taken.files.keys().collect::<Vec<_>>(),
            [&RelPath::from("open.txt")]
        );
    }

    #[test]
    fn a_malformed_ignore_line_does_not_stop_the_snapshot() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), ".gitignore", "a[\n*.log\n");
        write(dir.path(), "kept.txt", "k");
        write(dir.path(), "noise.log", "n");
        let snapshot = TreeInMemory::take(dir.path()).unwrap();
        let paths: Vec<String> = snapshot.files.keys().map(RelPath::to_string).collect();
        assert_eq!(paths, [".gitignore", "kept.txt"]);
    }

    #[test]
    fn build_trees_are_skipped_without_any_ignore_file() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, "src/lib.rs", "x");
        write(
            root,
            "target/CACHEDIR.TAG",
            "Signature: 8a477f597d28d172789f06886806bc55\n# cargo\n",
        );
        write(root, "target/debug/out", "bin");
        write(root, "web/node_modules/m/i.js", "js");
        write(root, "node_modules/top.js", "js");
        // Not a cache tag: the standard requires the signature.
        write(root, "notes/CACHEDIR.TAG", "just a name\n");
        let snapshot = TreeInMemory::take(root).unwrap();
        let paths: Vec<String> = snapshot.files.keys().map(RelPath::to_string).collect();
        assert_eq!(paths, ["notes/CACHEDIR.TAG", "src/lib.rs"]);
    }

    #[test]
    fn excluded_directories_below_the_root_are_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, "a.txt", "a");
        write(root, "drover-artifacts/t/transcript.jsonl", "{}");
        write(root, "sub/drover-artifacts/kept.txt", "k");
        write(root, "outside-not-excluded/b.txt", "b");
        // Spelled through `..`: compared canonically.
        let excluded = root.join("sub/../drover-artifacts");
        let elsewhere = tempfile::tempdir().unwrap();
        let snapshot = TreeInMemory::take_excluding(
            root,
            &[excluded, elsewhere.path().to_path_buf(), root.to_path_buf()],
        )
        .unwrap();
        let paths: Vec<String> = snapshot.files.keys().map(RelPath::to_string).collect();
        assert_eq!(
            paths,
            [
                "a.txt",
                "outside-not-excluded/b.txt",
                "sub/drover-artifacts/kept.txt"
            ]
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_root_reached_through_a_symlink_is_walked() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::create_dir(&real).unwrap();
        std::fs::write(real.join("a.txt"), "a").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let snapshot = TreeInMemory::take(&link).unwrap();
        assert_eq!(snapshot.files.keys().collect::<Vec<_>>(), [&"a.txt"]);
    }
}
