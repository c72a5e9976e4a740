//! What the diff leaves out, fixed when the task starts: the `.gitignore` and `.ignore`
//! rules and the build trees (`node_modules/`, directories tagged `CACHEDIR.TAG`) that
//! existed then. An agent that adds an ignore file, a cache tag or a `node_modules/`
//! directory next to its changes does not make them vanish: rules it wrote do not count.

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

use crate::workspace::{RelPath, Roots};

/// The signature a `CACHEDIR.TAG` file starts with (the Cache Directory Tagging
/// standard, <https://bford.info/cachedir/>); cargo writes one into `target/`.
const CACHEDIR_SIGNATURE: &[u8] = b"Signature: 8a477f597d28d172789f06886806bc55";

/// Ignore files larger than this are not real ignore files; they are not parsed.
const MAX_IGNORE_FILE: u64 = 1024 * 1024;

/// The exclusion rules of the starting state.
#[derive(Debug)]
pub(super) struct StartRules {
    root: PathBuf,
    /// Per directory (the root is the empty path): `.ignore` then `.gitignore`, the
    /// order of precedence the walker of ripgrep uses.
    dirs: HashMap<RelPath, Vec<Gitignore>>,
    build_trees: HashSet<RelPath>,
}

impl StartRules {
    /// No rules yet, for the workspace at `root` (canonical).
    pub(super) fn new(root: &Path) -> StartRules {
        StartRules {
            root: root.to_path_buf(),
            dirs: HashMap::new(),
            build_trees: HashSet::new(),
        }
    }

    /// Count these directories as build trees of the starting state.
    pub(super) fn add_build_trees(&mut self, trees: &[RelPath]) {
        self.build_trees.extend(trees.iter().cloned());
    }

    /// Learn the ignore files of directory `dir` (read beneath `roots`) and whether it is
    /// a build tree. Called once per directory that is not itself left out, before any
    /// of its entries is judged.
    /// `holds` says whether the directory's listing has an entry of that name (so
    /// absent files cost no open).
    pub(super) fn learn_dir(
        &mut self,
        roots: &Roots,
        dir: &RelPath,
        holds: &dyn Fn(&[u8]) -> bool,
    ) {
        let absolute = self.root.join(dir.to_path());
        if dir.as_bytes().is_empty() {
            // The workspace itself is never a build tree.
        } else if is_build_tree(roots, &absolute, holds(b"CACHEDIR.TAG")) {
            self.build_trees.insert(dir.clone());
            return;
        }
        let mut matchers = Vec::new();
        for name in [".ignore", ".gitignore"] {
            if !holds(name.as_bytes()) {
                continue;
            }
            let Some(text) = read_small(roots, &absolute.join(name)) else {
                continue;
            };
            let mut builder = GitignoreBuilder::new(&absolute);
            for line in text.lines() {
                // A malformed line is skipped; the rest of the file still applies.
                let _ = builder.add_line(None, line);
            }
            if let Ok(matcher) = builder.build()
                && !matcher.is_empty()
            {
                matchers.push(matcher);
            }
        }
        if !matchers.is_empty() {
            self.dirs.insert(dir.clone(), matchers);
        }
    }

    /// Is `path` left out of the diff by the starting rules (its parent directory being
    /// left out is the caller's to know)?
    pub(super) fn excludes(&self, path: &RelPath, is_dir: bool) -> bool {
        if is_dir && self.build_trees.contains(path) {
            return true;
        }
        let absolute = self.root.join(path.to_path());
        let mut dir = path.parent().unwrap_or_else(RelPath::root);
        loop {
            if let Some(matchers) = self.dirs.get(&dir) {
                for matcher in matchers {
                    match matcher.matched(&absolute, is_dir) {
                        Match::Ignore(_) => return true,
                        Match::Whitelist(_) => return false,
                        Match::None => {}
                    }
                }
            }
            match dir.parent() {
                Some(parent) => dir = parent,
                None if !dir.as_bytes().is_empty() => dir = RelPath::root(),
                None => return false,
            }
        }
    }
}

/// A directory no diff should hold: `node_modules`, or one tagged as a cache.
fn is_build_tree(roots: &Roots, dir: &Path, has_tag: bool) -> bool {
    if dir.file_name().is_some_and(|name| name == "node_modules") {
        return true;
    }
    if !has_tag {
        return false;
    }
    let Ok(mut tag) = roots.open_file(&dir.join("CACHEDIR.TAG")) else {
        return false;
    };
    let mut start = [0u8; CACHEDIR_SIGNATURE.len()];
    tag.read_exact(&mut start).is_ok() && start == CACHEDIR_SIGNATURE
}

/// The text of a small regular file beneath `roots`, if there is one.
fn read_small(roots: &Roots, path: &Path) -> Option<String> {
    let file = roots.open_file(path).ok()?;
    let mut text = String::new();
    file.take(MAX_IGNORE_FILE).read_to_string(&mut text).ok()?;
    Some(text)
}
