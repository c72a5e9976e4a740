//! The workspace's starting state, kept on disk and by identity rather than in memory,
//! so a task's memory does not grow with the repository it works on.
//!
//! Each file is known by its metadata and its git blob id. The content of a clean
//! tracked file stays where it is, in the repository's object database (its index entry
//! says so for the price of a `stat`); every other file is copied into a private
//! content-addressed [`Store`]. At the end only files whose metadata changed are read
//! again, and only changed files are loaded, one at a time, to write the diff.

mod compare;
mod git_index;
mod git_objects;
mod patch;
mod rules;
mod stat;
mod store;
mod walk;

use std::collections::{BTreeMap, HashSet};
use std::hash::{Hash, Hasher};
use std::io;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

pub use compare::{Change, Comparison, Now};
pub use patch::Patch;
use rules::StartRules;
use stat::StatKey;
use store::Store;
use walk::{Rules, walk};

use super::snapshot::{MODE_EXECUTABLE, MODE_FILE, MODE_SYMLINK, Stop};
use super::{RelPath, Roots};

/// Files larger than this are known by metadata only: never copied, read or diffed
/// (a change to one is listed, and named in diff.patch as left out).
pub const MAX_DIFFED_FILE: u64 = 256 * 1024 * 1024;

/// A git blob id (SHA-1 of `blob <len>\0<content>`): git's name for content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BlobId(pub [u8; 20]);

impl BlobId {
    /// The id of `content`.
    pub fn of(content: &[u8]) -> BlobId {
        let mut hasher = store::blob_hasher(content.len() as u64);
        hasher.update(content);
        BlobId(hasher.finalize().into())
    }

    /// 40 lowercase hex digits, as git writes it.
    pub fn hex(&self) -> String {
        crate::digest::hex(&self.0)
    }
}

/// What the baseline knows of one file's starting content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    /// Identified by id; the bytes are in the store or the repository's objects.
    Blob { id: BlobId, in_git: bool },
    /// A symlink's target.
    Link(Vec<u8>),
    /// Larger than [`MAX_DIFFED_FILE`]: only its size is known.
    Large { size: u64 },
}

/// One file of the starting state.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Git's mode: 0o100644, 0o100755 or 0o120000.
    pub mode: u32,
    pub content: Content,
    stat: StatKey,
}

/// The starting state of a workspace.
#[derive(Debug)]
pub struct Baseline {
    root: PathBuf,
    excluded: Vec<PathBuf>,
    entries: BTreeMap<RelPath, Entry>,
    rules: StartRules,
    /// Compact identities of the files the rules leave out, to count their changes.
    excluded_keys: HashSet<u128>,
    excluded_paths: HashSet<u128>,
    /// Files that could not be read at the start (path, why): reported, and left out
    /// of the comparison at the end.
    pub unreadable: Vec<(RelPath, String)>,
    /// Temp files of atomic writes by drover processes that are gone (killed
    /// mid-write): removed while the baseline was taken, and not part of it.
    pub leftovers: Vec<RelPath>,
    store: Store,
    /// The repository object directory clean tracked files are read back from.
    objects: Option<PathBuf>,
}

impl Baseline {
    /// The starting state of `root`, leaving out the `excluded` directories below it
    /// (drover's own artifacts); stops with [`stopped`] as soon as `stop` says so.
    pub fn take_until(root: &Path, excluded: &[PathBuf], stop: Stop<'_>) -> io::Result<Baseline> {
        Baseline::take_with_build_trees(root, excluded, &[], stop)
    }

    /// [`Baseline::take_until`] for a copy that left out `build_trees` of its original:
    /// they count as the starting state's build trees, so the agent's builds there stay
    /// out of the diff as they would in the original.
    pub fn take_with_build_trees(
        root: &Path,
        excluded: &[PathBuf],
        build_trees: &[RelPath],
        stop: Stop<'_>,
    ) -> io::Result<Baseline> {
        let root = root
            .canonicalize()
            .map_err(|e| super::snapshot::named(root, e))?;
        let roots = Roots::new(std::slice::from_ref(&root));
        let index = git_index::load(&root).filter(|_| git_objects::git_available());
        let store = Store::new()?;
        let mut rules = StartRules::new(&root);
        rules.add_build_trees(build_trees);
        let mut entries = BTreeMap::new();
        let mut excluded_keys = HashSet::new();
        let mut excluded_paths = HashSet::new();
        let mut unreadable = Vec::new();
        let mut leftovers = Vec::new();
        walk(
            &root,
            excluded,
            Rules::Learn(&mut rules, &roots),
            stop,
            |walked| {
                if walked.file_type.is_file() && is_stale_temp(&walked.relative) {
                    let at = root.join(walked.relative.to_path());
                    if std::fs::remove_file(at).is_ok() {
                        leftovers.push(walked.relative);
                        return Ok(());
                    }
                }
                let Some(metadata) = &walked.metadata else {
                    return Ok(()); // a directory
                };
                if walked.excluded {
                    excluded_keys.insert(excluded_key(&walked.relative, metadata));
                    excluded_paths.insert(path_key(&walked.relative));
                    return Ok(());
                }
                let at = root.join(walked.relative.to_path());
                let stat = StatKey::of(metadata);
                let read = if walked.file_type.is_symlink() {
                    roots.read_link(&at).map(|target| Entry {
                        mode: MODE_SYMLINK,
                        content: Content::Link(os_bytes(&target)),
                        stat,
                    })
                } else if walked.file_type.is_file() {
                    let clean = index.as_ref().and_then(|index| {
                        let entry = index.entries.get(&walked.relative)?;
                        (entry.mode == git_mode(&stat) && entry.stat.matches(&stat, index.written))
                            .then_some(BlobId(entry.id))
                    });
                    start_file(&roots, &store, &at, stat, clean)
                } else {
                    return Ok(());
                };
                match read {
                    Ok(entry) => {
                        entries.insert(walked.relative, entry);
                    }
                    Err(error) => unreadable.push((walked.relative, error.to_string())),
                }
                Ok(())
            },
        )?;
        let objects = index.map(|index| index.objects);
        Ok(Baseline {
            root,
            excluded: excluded.to_vec(),
            entries,
            rules,
            excluded_keys,
            excluded_paths,
            unreadable,
            leftovers,
            store,
            objects,
        })
    }

    /// A short identity of the whole starting tree (paths, modes and blob ids): equal
    /// fingerprints mean equal trees, so a replay can tell whether it starts from the
    /// same workspace as the recording.
    pub fn fingerprint(&self) -> String {
        let mut hasher = Sha256::new();
        for (path, entry) in &self.entries {
            // Length prefixes keep the fields' boundaries unambiguous.
            hasher.update((path.as_bytes().len() as u64).to_be_bytes());
            hasher.update(path.as_bytes());
            hasher.update(entry.mode.to_be_bytes());
            match &entry.content {
                Content::Blob { id, .. } => hasher.update(id.0),
                Content::Link(target) => hasher.update(BlobId::of(target).0),
                Content::Large { size } => {
                    hasher.update(b"large");
                    hasher.update(size.to_be_bytes());
                }
            }
        }
        crate::digest::hex(&hasher.finalize())
    }

    /// How many files the starting state holds (ignored ones not counted).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the starting state holds no file at all.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// The entry of one regular file at the start: taken on the index's word when `clean`
/// names its blob, else copied into the store (or, when too large, known by size).
fn start_file(
    roots: &Roots,
    store: &Store,
    at: &Path,
    stat: StatKey,
    clean: Option<BlobId>,
) -> io::Result<Entry> {
    let mode = git_mode(&stat);
    let content = if stat.size > MAX_DIFFED_FILE {
        Content::Large { size: stat.size }
    } else if let Some(id) = clean {
        Content::Blob { id, in_git: true }
    } else {
        let mut file = roots.open_file(at)?;
        let id = store
            .put(&mut file, stat.size)
            .map_err(|e| super::snapshot::named(at, e))?;
        Content::Blob { id, in_git: false }
    };
    Ok(Entry {
        mode,
        content,
        stat,
    })
}

/// Git's mode for a regular file with these permission bits.
fn git_mode(stat: &StatKey) -> u32 {
    if stat.mode & 0o111 != 0 {
        MODE_EXECUTABLE
    } else {
        MODE_FILE
    }
}

fn is_stale_temp(path: &RelPath) -> bool {
    let bytes = path.as_bytes();
    let name = bytes.rsplit(|&b| b == b'/').next().unwrap_or(bytes);
    super::leftovers::is_stale_write_temp(&String::from_utf8_lossy(name))
}

/// A 128-bit identity of an excluded file's path and metadata.
fn excluded_key(path: &RelPath, metadata: &std::fs::Metadata) -> u128 {
    let stat = StatKey::of(metadata);
    wide_hash(&(path, stat))
}

fn path_key(path: &RelPath) -> u128 {
    wide_hash(path)
}

/// Two differently seeded 64-bit hashes side by side: collisions among a workspace's
/// files are out of reach in practice.
fn wide_hash(value: &impl Hash) -> u128 {
    let half = |seed: u8| {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        seed.hash(&mut hasher);
        value.hash(&mut hasher);
        hasher.finish()
    };
    (u128::from(half(0)) << 64) | u128::from(half(1))
}

#[cfg(unix)]
fn os_bytes(path: &Path) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    path.as_os_str().as_bytes().to_vec()
}

#[cfg(not(unix))]
fn os_bytes(path: &Path) -> Vec<u8> {
    path.to_string_lossy().replace('\\', "/").into_bytes()
}

#[cfg(test)]
mod tests;
