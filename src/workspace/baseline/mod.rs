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
mod listing;
mod patch;
mod prefetch;
mod rules;
mod sorted;
pub(crate) mod stat;
mod store;
mod walk;

use std::collections::HashSet;
use std::hash::{Hash, Hasher};
use std::io;
#[cfg(unix)]
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

pub(crate) use compare::Comparison;
use git_index::GitIndex;
pub(crate) use git_index::{IndexSnapshot, repository_top};
use listing::Kind;
use rules::StartRules;
use sorted::SortedPaths;
use stat::StatKey;
use store::Store;
use walk::{Rules, Walked, walk};

use super::file_entry::{MODE_EXECUTABLE, MODE_FILE, MODE_SYMLINK};
use super::walk::Stop;
use super::{RelPath, Roots};

/// Files larger than this are known by metadata only: never copied, read or diffed
/// (a change to one is listed, and named in diff.patch as left out).
pub(crate) const MAX_DIFFED_FILE: u64 = 256 * 1024 * 1024;

/// A git blob id (SHA-1 of `blob <len>\0<content>`): git's name for content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct BlobId(pub [u8; 20]);

impl BlobId {
    /// The id of `content`.
    pub(crate) fn of(content: &[u8]) -> BlobId {
        let mut hasher = store::blob_hasher(content.len() as u64);
        hasher.update(content);
        BlobId(hasher.finalize().into())
    }

    /// 40 lowercase hex digits, as git writes it.
    pub(crate) fn hex(&self) -> String {
        crate::digest::hex(&self.0)
    }
}

/// What the baseline knows of one file's starting content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Content {
    /// Identified by id; `source` says where its bytes are kept.
    Blob { id: BlobId, source: Source },
    /// A symlink's target.
    Link(Vec<u8>),
    /// Larger than [`MAX_DIFFED_FILE`]: only its size is known.
    Large { size: u64 },
}

/// Where the starting content of a file can be read back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// The baseline's own content store.
    Store,
    /// The repository's object database (a clean tracked file).
    Git,
    /// The same path in the directory the workspace was copied from (`isolation:
    /// copy`), which the task does not write: checked against the id when read.
    Origin,
    /// Not kept: a file seen only at the end.
    None,
}

/// How a baseline is taken.
pub(crate) struct StartOptions<'a> {
    /// drover's own paths inside the workspace.
    pub excluded: Exclusions,
    /// For a copied workspace: what it can lean on of its original. The original's build
    /// trees the copy left out count as the starting state's (the agent's builds there
    /// stay out of the diff as they would in the original), and the original stands in
    /// for the content store, so nothing is copied a second time.
    pub origin: Option<CopyOrigin<'a>>,
    /// Which git index vouches for clean files.
    pub index: IndexSource<'a>,
}

/// Where the git index that vouches for clean tracked files comes from.
pub(crate) enum IndexSource<'a> {
    /// The repository's index as it is now: right for a workspace no agent has worked
    /// in yet (a fresh worktree).
    Discover,
    /// An index saved when the run started (None: there was none): right for a
    /// workspace edited in place, whose `.git` an earlier agent could have rewritten.
    Saved(Option<&'a IndexSnapshot>),
}

/// What the starting state of a copied workspace can lean on.
pub(crate) struct CopyOrigin<'a> {
    /// The directory the copy was made from (canonical), when the copy is still as it was
    /// made (not after `setup:` changed it).
    pub dir: Option<&'a Path>,
    /// Its build trees the copy left out.
    pub build_trees: &'a [RelPath],
}

/// drover's own paths inside the workspace, never part of its files: `dirs` are left out
/// only where they are directories, `files` only where they are files (or links), so
/// something else planted at one of those names is diffed. The paths are compared as
/// given (resolve them before any agent runs).
#[derive(Debug, Clone, Default)]
pub(crate) struct Exclusions {
    pub dirs: Vec<PathBuf>,
    pub files: Vec<PathBuf>,
}

impl Exclusions {
    /// Only directories.
    #[cfg(test)]
    pub(crate) fn dirs(dirs: &[PathBuf]) -> Exclusions {
        Exclusions {
            dirs: dirs.to_vec(),
            files: Vec::new(),
        }
    }
}

/// One file of the starting state.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    /// Git's mode: 0o100644, 0o100755 or 0o120000.
    pub mode: u32,
    pub content: Content,
    stat: StatKey,
}

/// The starting state of a workspace.
#[derive(Debug)]
pub(crate) struct Baseline {
    root: PathBuf,
    excluded: Exclusions,
    entries: SortedPaths<Entry>,
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
    /// The directory a copied workspace was copied from.
    origin: Option<PathBuf>,
}

impl Baseline {
    /// The starting state of `root`, leaving out the `excluded` directories below it
    /// (drover's own artifacts); stops with [`stopped`] as soon as `stop` says so.
    #[cfg(test)]
    pub(crate) fn take_until(
        root: &Path,
        excluded: &[PathBuf],
        stop: Stop<'_>,
    ) -> io::Result<Baseline> {
        let options = StartOptions {
            excluded: Exclusions::dirs(excluded),
            origin: None,
            index: IndexSource::Discover,
        };
        Baseline::take(root, options, stop)
    }

    /// The starting state of `root` as `options` say (see [`StartOptions`]).
    pub(crate) fn take(
        root: &Path,
        options: StartOptions<'_>,
        stop: Stop<'_>,
    ) -> io::Result<Baseline> {
        let StartOptions {
            excluded,
            origin,
            index,
        } = options;
        let excluded = &excluded;
        let build_trees = origin.as_ref().map_or(&[][..], |origin| origin.build_trees);
        let origin_dir = origin
            .as_ref()
            .and_then(|origin| origin.dir)
            .map(Path::to_path_buf);
        let root = root
            .canonicalize()
            .map_err(|e| super::walk::named(root, e))?;
        let roots = Roots::new(std::slice::from_ref(&root));
        let index = start_index(&root, index);
        let store = Store::new()?;
        let mut rules = StartRules::new(&root);
        rules.add_build_trees(build_trees);
        let reader = Reader {
            root: &root,
            roots: &roots,
            store: &store,
            index: index.as_ref(),
            origin: origin_dir.is_some(),
        };
        let mut collected = Collected {
            entries: Vec::with_capacity(index.as_ref().map_or(0, |i| i.entries.len())),
            ..Collected::default()
        };
        let mut index_cursor = 0;
        walk(
            &root,
            excluded,
            Rules::Learn(&mut rules, &roots),
            stop,
            |walked| {
                reader.collect(walked, &mut index_cursor, &mut collected);
                Ok(())
            },
        )?;
        let objects = index.map(|index| index.objects);
        Ok(Baseline {
            root,
            excluded: excluded.clone(),
            entries: SortedPaths::from_unsorted(collected.entries),
            rules,
            excluded_keys: collected.excluded_keys,
            excluded_paths: collected.excluded_paths,
            unreadable: collected.unreadable,
            leftovers: collected.leftovers,
            store,
            objects,
            origin: origin_dir,
        })
    }

    /// A short identity of the whole starting tree (paths, modes and blob ids): equal
    /// fingerprints mean equal trees, so a replay can tell whether it starts from the
    /// same workspace as the recording.
    pub(crate) fn fingerprint(&self) -> String {
        let mut hasher = Sha256::new();
        for (path, entry) in self.entries.iter() {
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
}

/// The entry of one regular file at the start: taken on the index's word when `clean`
/// names its blob, hashed when a copy's `origin` keeps the content, else copied into the
/// store (or, when too large, known by size).
/// What the start's walk needs to read an entry: where, through which handle, the store
/// for the bytes it keeps, the git index that spares reading clean files, and whether
/// the workspace is a copy of an origin.
struct Reader<'r> {
    root: &'r Path,
    roots: &'r Roots,
    store: &'r Store,
    index: Option<&'r GitIndex>,
    origin: bool,
}

/// What the start's walk collects.
#[derive(Default)]
struct Collected {
    entries: Vec<(RelPath, Entry)>,
    excluded_keys: HashSet<u128>,
    excluded_paths: HashSet<u128>,
    unreadable: Vec<(RelPath, String)>,
    leftovers: Vec<RelPath>,
}

impl Reader<'_> {
    /// One walked entry into `collected`: a killed write's temp file removed, an
    /// unreadable directory or file noted, a left-out file keyed, a file or link read.
    /// `cursor` walks the index's sorted entries along with the walk.
    fn collect(&self, walked: Walked, cursor: &mut usize, collected: &mut Collected) {
        let root = self.root;
        if walked.kind == Kind::File && is_stale_temp(&walked.relative) {
            let at = root.join(walked.relative.to_path());
            if std::fs::remove_file(at).is_ok() {
                collected.leftovers.push(walked.relative);
                return;
            }
        }
        if let Some(why) = walked.unreadable {
            if !walked.excluded {
                collected.unreadable.push((walked.relative, why));
            }
            return;
        }
        let Some(stat) = walked.stat else {
            return; // a directory
        };
        if walked.excluded {
            collected
                .excluded_keys
                .insert(excluded_key(&walked.relative, &stat));
            collected.excluded_paths.insert(path_key(&walked.relative));
            return;
        }
        let read = if walked.kind == Kind::Symlink {
            let at = root.join(walked.relative.to_path());
            self.roots.read_link(&at).map(|target| Entry {
                mode: MODE_SYMLINK,
                content: Content::Link(os_bytes(&target)),
                stat,
            })
        } else if walked.kind == Kind::File {
            let clean = self
                .index
                .and_then(|index| clean_id(index, &walked.relative, cursor, &stat));
            let at = || root.join(walked.relative.to_path());
            start_file(self.roots, self.store, at, stat, clean, self.origin)
        } else {
            return;
        };
        match read {
            Ok(entry) => {
                collected.entries.push((walked.relative, entry));
            }
            Err(error) => collected
                .unreadable
                .push((walked.relative, error.to_string())),
        }
    }
}

/// The git index whose clean entries spare reading files, if any is to be used (and git
/// can give their blobs later).
fn start_index(root: &Path, index: IndexSource<'_>) -> Option<GitIndex> {
    match index {
        IndexSource::Discover => git_index::load(root),
        IndexSource::Saved(Some(saved)) => git_index::load_saved(saved, root),
        IndexSource::Saved(None) => None,
    }
    .filter(|_| git_objects::git_available())
}

/// The blob id the index gives `relative` when its entry is clean (same mode and stat,
/// not racily written); `cursor` walks the sorted entries along with the walk.
fn clean_id(
    index: &GitIndex,
    relative: &RelPath,
    cursor: &mut usize,
    stat: &StatKey,
) -> Option<BlobId> {
    let at = index.entries.position_from(relative, cursor)?;
    let (_, entry) = index.entries.at(at)?;
    (entry.mode == git_mode(stat) && entry.stat.matches(stat, index.written))
        .then_some(BlobId(entry.id))
}

fn start_file(
    roots: &Roots,
    store: &Store,
    at: impl FnOnce() -> PathBuf,
    stat: StatKey,
    clean: Option<BlobId>,
    origin: bool,
) -> io::Result<Entry> {
    let mode = git_mode(&stat);
    let content = if stat.size > MAX_DIFFED_FILE {
        Content::Large { size: stat.size }
    } else if let Some(id) = clean {
        Content::Blob {
            id,
            source: Source::Git,
        }
    } else if origin {
        let at = at();
        let mut file = roots.open_file(&at)?;
        let id =
            store::hash_reader(&mut file, stat.size).map_err(|e| super::walk::named(&at, e))?;
        Content::Blob {
            id,
            source: Source::Origin,
        }
    } else {
        let at = at();
        let mut file = roots.open_file(&at)?;
        let id = store
            .put(&mut file, stat.size)
            .map_err(|e| super::walk::named(&at, e))?;
        Content::Blob {
            id,
            source: Source::Store,
        }
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
fn excluded_key(path: &RelPath, stat: &StatKey) -> u128 {
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
    path.as_os_str().as_bytes().to_vec()
}

#[cfg(not(unix))]
fn os_bytes(path: &Path) -> Vec<u8> {
    path.to_string_lossy().replace('\\', "/").into_bytes()
}

#[cfg(test)]
#[path = "baseline_tests.rs"]
mod tests;
