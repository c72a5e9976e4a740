//! The workspace's files at one moment, so a run can be diffed against its start and the
//! files it changed can be named without asking git (the workspace need not be a repo).

#[cfg(test)]
use std::collections::BTreeMap;
use std::fs::FileType;
#[cfg(test)]
use std::fs::Metadata;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

#[cfg(test)]
use sha2::{Digest, Sha256};

use super::RelPath;

/// Git's mode for a regular file without execute permission.
pub(crate) const MODE_FILE: u32 = 0o100644;
/// Git's mode for a regular file with an execute bit set.
pub(crate) const MODE_EXECUTABLE: u32 = 0o100755;
/// Git's mode for a symbolic link (its content is the link target).
pub(crate) const MODE_SYMLINK: u32 = 0o120000;

/// One file as git would store it: the diff and the fingerprint only care about these.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileEntry {
    /// Unix mode bits as git writes them: 0o100644, 0o100755 or 0o120000 (symlink).
    pub mode: u32,
    /// File bytes (for a symlink: its target).
    pub content: Vec<u8>,
}

impl FileEntry {
    /// Symlinks are diffed by their target text and cannot become regular files in place.
    pub(crate) fn is_symlink(&self) -> bool {
        self.mode == MODE_SYMLINK
    }
}

/// A regular file's entry, read beneath `roots`.
#[cfg(test)]
fn read_file(roots: &super::Roots, at: &Path) -> io::Result<FileEntry> {
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
#[cfg(test)]
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Snapshot {
    /// Relative path, as bytes → entry.
    pub files: BTreeMap<RelPath, FileEntry>,
    /// Files that could not be read (relative path, why): reported, never fatal, so one
    /// unreadable file does not cost the diff of everything else.
    pub unreadable: Vec<(RelPath, String)>,
    /// Temp files of atomic writes by drover processes that are gone (killed mid-write):
    /// removed while the snapshot was taken, and not part of it.
    pub leftovers: Vec<RelPath>,
}

#[cfg(test)]
impl Snapshot {
    /// Read every file under `root` that is not ignored (`.gitignore`, `.ignore`), not
    /// inside `.git` and not in a build tree (see [`walker`]). Hidden files count: an agent
    /// can edit `.github/` too. Symlinks are recorded, never followed, so a link out of the
    /// workspace cannot pull files in.
    pub(crate) fn take(root: &Path) -> io::Result<Snapshot> {
        Snapshot::take_excluding(root, &[])
    }

    /// [`Snapshot::take`], leaving out the directories in `excluded` that lie below `root`
    /// (drover's own artifacts directory: its transcripts are not the agent's work).
    ///
    /// Each file is opened beneath a handle on `root`, following no symlink, so a path
    /// that is not what the walk saw is an error rather than a read of something else.
    pub(crate) fn take_excluding(root: &Path, excluded: &[PathBuf]) -> io::Result<Snapshot> {
        Snapshot::take_until(root, excluded, &|| false)
    }

    /// [`Snapshot::take_excluding`], stopping with [`stopped`] as soon as `stop` says so
    /// (a baseline of a huge tree must not outlast a cancelled job).
    pub(crate) fn take_until(
        root: &Path,
        excluded: &[PathBuf],
        stop: Stop<'_>,
    ) -> io::Result<Snapshot> {
        let canonical = root.canonicalize().map_err(|e| named(root, e))?;
        let roots = super::Roots::new(std::slice::from_ref(&canonical));
        let mut files = BTreeMap::new();
        let mut unreadable = Vec::new();
        let mut leftovers = Vec::new();
        for entry in walk_until(root, excluded, stop)? {
            if stop() {
                return Err(stopped());
            }
            let at = canonical.join(entry.relative.to_path());
            if entry.file_type.is_file()
                && super::leftovers::is_stale_write_temp(
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
        Ok(Snapshot {
            files,
            unreadable,
            leftovers,
        })
    }

    /// Carry over from `before` the entries of files this snapshot could not read, so
    /// an unreadable file shows as unchanged rather than deleted.
    pub(crate) fn keep_unreadable_from(&mut self, before: &Snapshot) {
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
    pub(crate) fn changed_paths(&self, after: &Snapshot) -> Vec<RelPath> {
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

/// The signature a `CACHEDIR.TAG` file starts with (the Cache Directory Tagging
/// standard, <https://bford.info/cachedir/>); cargo writes one into `target/`.
const CACHEDIR_SIGNATURE: &[u8] = b"Signature: 8a477f597d28d172789f06886806bc55";

/// The one walker configuration for "the workspace's files", shared by snapshots and
/// copies so a copied workspace is exactly what the snapshot of the original sees.
/// Ignore rules come only from files inside the workspace (not the user's global git
/// config or parent directories), so the result does not depend on the machine.
/// Skipped whatever the ignore files say: `.git/`, build trees (directories named
/// `node_modules`, and directories tagged with a `CACHEDIR.TAG` file, like cargo's
/// `target/`), and the directories in `excluded` that lie below `root`.
pub(crate) fn walker(
    root: &Path,
    excluded: &[PathBuf],
    build_trees: Arc<Mutex<Vec<PathBuf>>>,
) -> ignore::WalkBuilder {
    let excluded = excluded_below(root, excluded);
    let root_path = root.to_path_buf();
    let mut builder = ignore::WalkBuilder::new(root);
    builder
        .hidden(false)
        .parents(false)
        .ignore(true)
        .git_ignore(true)
        .git_global(false)
        .git_exclude(false)
        .require_git(false)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(move |entry| {
            if entry.depth() == 0 {
                return true;
            }
            if entry.file_name() == ".git" {
                return false;
            }
            if !entry.file_type().is_some_and(|t| t.is_dir()) {
                return true;
            }
            let is_excluded = entry
                .path()
                .strip_prefix(&root_path)
                .is_ok_and(|rel| excluded.iter().any(|e| e == rel));
            if is_excluded {
                return false;
            }
            if is_build_tree(entry.path()) {
                if let Ok(mut trees) = build_trees.lock() {
                    trees.push(entry.path().to_path_buf());
                }
                return false;
            }
            true
        });
    builder
}

/// `excluded` directories that lie strictly below `root`, relative to it (both
/// canonicalized, so a symlinked or relative spelling still matches). A directory that
/// does not exist (yet) has nothing to leave out.
pub(crate) fn excluded_below(root: &Path, excluded: &[PathBuf]) -> Vec<PathBuf> {
    let Ok(root) = root.canonicalize() else {
        return Vec::new();
    };
    excluded
        .iter()
        .filter_map(|dir| dir.canonicalize().ok())
        .filter_map(|dir| {
            let rel = dir.strip_prefix(&root).ok()?;
            (!rel.as_os_str().is_empty()).then(|| rel.to_path_buf())
        })
        .collect()
}

/// A directory no workspace snapshot or copy should hold: `node_modules`, or one tagged
/// as a cache (`CACHEDIR.TAG` starting with the standard's signature).
fn is_build_tree(dir: &Path) -> bool {
    if dir.file_name().is_some_and(|name| name == "node_modules") {
        return true;
    }
    let Ok(mut tag) = std::fs::File::open(dir.join("CACHEDIR.TAG")) else {
        return false;
    };
    let mut start = [0u8; CACHEDIR_SIGNATURE.len()];
    io::Read::read_exact(&mut tag, &mut start).is_ok() && start == CACHEDIR_SIGNATURE
}

/// One path the walker yielded below the root.
pub(crate) struct WalkedEntry {
    /// Absolute (or root-joined) path on disk.
    pub path: PathBuf,
    /// Relative to the root, as the file system's bytes.
    pub relative: RelPath,
    /// Not followed: a symlink reports as a symlink.
    pub file_type: FileType,
}

/// Asked between entries whether to stop (drover was interrupted).
pub(crate) type Stop<'a> = &'a dyn Fn() -> bool;

/// The error of a walk or copy stopped by [`Stop`].
pub(crate) fn stopped() -> io::Error {
    io::Error::new(io::ErrorKind::Interrupted, "interrupted")
}

/// Everything [`walker`] yields below `root` (the root itself excluded), collected first
/// so callers may write into the tree while using the list; stops with [`stopped`] as
/// soon as `stop` says so.
#[cfg(test)]
pub(crate) fn walk_until(
    root: &Path,
    excluded: &[PathBuf],
    stop: Stop<'_>,
) -> io::Result<Vec<WalkedEntry>> {
    walk_noting_build_trees(root, excluded, stop).map(|(entries, _)| entries)
}

/// [`walk_until`], also returning the build trees it left out (relative to `root`).
pub(crate) fn walk_noting_build_trees(
    root: &Path,
    excluded: &[PathBuf],
    stop: Stop<'_>,
) -> io::Result<(Vec<WalkedEntry>, Vec<RelPath>)> {
    let build_trees: Arc<Mutex<Vec<PathBuf>>> = Arc::default();
    let mut entries = Vec::new();
    for result in walker(root, excluded, Arc::clone(&build_trees)).build() {
        if stop() {
            return Err(stopped());
        }
        let entry = match result {
            Ok(entry) => entry,
            // A malformed line in an ignore file is not worth failing the run over: the
            // walker still applies the rest of the file.
            Err(error) if error.io_error().is_none() => continue,
            Err(error) => return Err(walk_error(root, error)),
        };
        if entry.depth() == 0 {
            continue;
        }
        let Some(file_type) = entry.file_type() else {
            continue;
        };
        let Ok(rel) = entry.path().strip_prefix(root) else {
            continue;
        };
        let relative = RelPath::from_relative(rel);
        entries.push(WalkedEntry {
            path: entry.path().to_path_buf(),
            relative,
            file_type,
        });
    }
    let trees = build_trees
        .lock()
        .map(|trees| {
            trees
                .iter()
                .filter_map(|tree| tree.strip_prefix(root).ok())
                .map(RelPath::from_relative)
                .collect()
        })
        .unwrap_or_default();
    Ok((entries, trees))
}

fn walk_error(root: &Path, error: ignore::Error) -> io::Error {
    let kind = error
        .io_error()
        .map(io::Error::kind)
        .unwrap_or(io::ErrorKind::Other);
    io::Error::new(
        kind,
        format!("reading workspace {}: {error}", root.display()),
    )
}

/// An io error that says which file it is about.
pub(crate) fn named(path: &Path, error: io::Error) -> io::Error {
    io::Error::new(error.kind(), format!("{}: {error}", path.display()))
}

#[cfg(all(test, unix))]
fn is_executable(metadata: &Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    metadata.permissions().mode() & 0o111 != 0
}

#[cfg(all(test, not(unix)))]
fn is_executable(_metadata: &Metadata) -> bool {
    false
}

#[cfg(all(test, unix))]
fn path_bytes(path: &Path) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    path.as_os_str().as_bytes().to_vec()
}

#[cfg(all(test, not(unix)))]
fn path_bytes(path: &Path) -> Vec<u8> {
    path.to_string_lossy().replace('\\', "/").into_bytes()
}

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
        let snapshot = Snapshot::take(root).unwrap();
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
        let snapshot = Snapshot::take(root).unwrap();
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
        let first = Snapshot::take(dir.path()).unwrap();
        let again = Snapshot::take(dir.path()).unwrap();
        assert_eq!(first.fingerprint(), again.fingerprint());
        assert_eq!(first.fingerprint().len(), 64);
        assert!(
            first
                .fingerprint()
                .chars()
                .all(|c| matches!(c, '0'..='9' | 'a'..='f'))
        );
        write(dir.path(), "a.txt", "two\n");
        let changed = Snapshot::take(dir.path()).unwrap();
        assert_ne!(first.fingerprint(), changed.fingerprint());
        assert_eq!(
            Snapshot::default().fingerprint(),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn changed_paths_lists_added_modified_and_deleted_sorted() {
        let entry = |content: &str, mode| FileEntry {
            mode,
            content: content.as_bytes().to_vec(),
        };
        let mut before = Snapshot::default();
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
    fn unreadable_file_is_an_error_naming_it() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "locked.txt", "x");
        let path = dir.path().join("locked.txt");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o000)).unwrap();
        if fs::read(&path).is_ok() {
            crate::esay!("note: running as root, permissions are not enforced; skipping");
            return;
        }
        let error = Snapshot::take(dir.path()).unwrap_err();
        assert!(error.to_string().contains("locked.txt"), "{error}");
    }

    #[test]
    fn a_malformed_ignore_line_does_not_stop_the_snapshot() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), ".gitignore", "a[\n*.log\n");
        write(dir.path(), "kept.txt", "k");
        write(dir.path(), "noise.log", "n");
        let snapshot = Snapshot::take(dir.path()).unwrap();
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
        let snapshot = Snapshot::take(root).unwrap();
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
        let snapshot = Snapshot::take_excluding(
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
        let snapshot = Snapshot::take(&link).unwrap();
        assert_eq!(snapshot.files.keys().collect::<Vec<_>>(), [&"a.txt"]);
    }
}

#[cfg(test)]
#[path = "snapshot_unreadable_tests.rs"]
mod unreadable_tests;
