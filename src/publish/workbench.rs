//! The private repository `drover publish` makes each commit in: a temp repository of
//! its own (no work tree is ever checked out, no hook or configuration of anyone
//! else's applies), the task's starting commit fetched into it from the remote, the
//! recorded patch applied to that commit's tree in the index (`git apply --cached`, so
//! the commit's tree is exactly the start plus `diff.patch`), and the commit pushed from
//! there. git runs as for a `repo:` clone (`workspace::repo::RemoteGit`): no prompt,
//! a wall clock, a scrubbed environment, the token through a credential helper.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::workspace::leftovers::HeldTempDir;
use crate::workspace::repo::{GitFailure, RemoteGit};

use super::gates::Change;

/// The id of the empty tree, which every SHA-1 repository knows without storing it.
const EMPTY_TREE: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

/// What `Workbench::commit` made.
pub(crate) enum Made {
    Commit(String),
    /// A patch did not apply to the start: git's words.
    NotApplied(String),
}

/// A commit's author and committer.
#[derive(Debug, Clone)]
pub(crate) struct Identity {
    pub name: String,
    pub email: String,
}

/// A temp repository, removed when dropped.
pub(crate) struct Workbench {
    temp: HeldTempDir,
    dir: PathBuf,
}

impl Workbench {
    pub(crate) fn new(git: &RemoteGit<'_>) -> Result<Workbench, GitFailure> {
        let temp = HeldTempDir::new("publish").map_err(GitFailure::Spawn)?;
        let dir = temp.path().join("repo");
        git.run(None, &["init", "--quiet", "--", &text(&dir)])?;
        Ok(Workbench { temp, dir })
    }

    /// Fetch `commits` (full ids) from `remote`.
    pub(crate) fn fetch(
        &self,
        git: &RemoteGit<'_>,
        remote: &str,
        commits: &[&str],
    ) -> Result<(), GitFailure> {
        let mut args = vec![
            "fetch",
            "--quiet",
            "--no-tags",
            "--no-write-fetch-head",
            "--",
            remote,
        ];
        args.extend(commits);
        git.run(Some(&self.dir), &args).map(drop)
    }

    /// The commit `remote`'s branch `branch` points at; None when it has no such branch.
    pub(crate) fn remote_head(
        &self,
        git: &RemoteGit<'_>,
        remote: &str,
        branch: &str,
    ) -> Result<Option<String>, GitFailure> {
        let full = format!("refs/heads/{branch}");
        let listed = git.run(Some(&self.dir), &["ls-remote", "--", remote, &full])?;
        let listed = String::from_utf8_lossy(&listed);
        Ok(listed
            .lines()
            .filter_map(|line| line.split_once('\t'))
            .find(|(_, name)| *name == full)
            .map(|(id, _)| id.to_string()))
    }

    /// The branch `remote`'s HEAD names (its default branch), if it names one.
    pub(crate) fn default_branch(
        &self,
        git: &RemoteGit<'_>,
        remote: &str,
    ) -> Result<Option<String>, GitFailure> {
        let listed = git.run(
            Some(&self.dir),
            &["ls-remote", "--symref", "--", remote, "HEAD"],
        )?;
        let listed = String::from_utf8_lossy(&listed);
        Ok(listed.lines().find_map(|line| {
            let target = line.strip_prefix("ref: refs/heads/")?;
            let (branch, name) = target.split_once('\t')?;
            (name == "HEAD").then(|| branch.to_string())
        }))
    }

    /// The commit of `patches` (contents; empty ones skipped) applied in order to
    /// `base`'s tree, with `message` by `who`; or git's words when one does not apply.
    pub(crate) fn commit(
        &self,
        git: &RemoteGit<'_>,
        base: &str,
        patches: &[&[u8]],
        message: &str,
        who: &Identity,
    ) -> Result<Made, GitFailure> {
        git.run(Some(&self.dir), &["read-tree", "--end-of-options", base])?;
        for (index, patch) in patches.iter().enumerate().filter(|(_, p)| !p.is_empty()) {
            // Copied in, so git reads what drover read, never a path swapped since.
            let file = self.temp.path().join(format!("{index}.patch"));
            std::fs::write(&file, patch).map_err(GitFailure::Spawn)?;
            let applied = git.run(
                Some(&self.dir),
                &[
                    "apply",
                    "--cached",
                    "--whitespace=nowarn",
                    "--",
                    &text(&file),
                ],
            );
            match applied {
                Ok(_) => {}
                Err(GitFailure::Failed(said)) => return Ok(Made::NotApplied(said)),
                Err(failure) => return Err(failure),
            }
        }
        let tree = git.run(Some(&self.dir), &["write-tree"])?;
        let tree = String::from_utf8_lossy(&tree).trim().to_string();
        // From a file: a message of many tasks can outgrow a command line.
        let message_file = self.temp.path().join("message");
        std::fs::write(&message_file, message).map_err(GitFailure::Spawn)?;
        let name = format!("user.name={}", who.name);
        let email = format!("user.email={}", who.email);
        let commit = git.run(
            Some(&self.dir),
            &[
                "-c",
                &name,
                "-c",
                &email,
                "commit-tree",
                &tree,
                "-p",
                base,
                "-F",
                &text(&message_file),
            ],
        )?;
        Ok(Made::Commit(
            String::from_utf8_lossy(&commit).trim().to_string(),
        ))
    }

    /// What `commit` changes against `base`, as the gates judge it: counted with no
    /// attributes at all, so a `.gitattributes` of the change itself (`*.txt -diff`)
    /// cannot make text look binary, and sized from the commit's own tree by each
    /// path's exact bytes.
    pub(crate) fn changes(
        &self,
        git: &RemoteGit<'_>,
        base: &str,
        commit: &str,
    ) -> Result<Vec<Change>, GitFailure> {
        let attr_source = format!("--attr-source={EMPTY_TREE}");
        let listed = git.run(
            Some(&self.dir),
            &[
                &attr_source,
                "-c",
                "core.attributesFile=/dev/null",
                "diff-tree",
                "-r",
                "-z",
                "--no-renames",
                "--numstat",
                base,
                commit,
            ],
        )?;
        let sizes = self.sizes(git, commit)?;
        let mut changes = Vec::new();
        for record in listed.split(|byte| *byte == 0).filter(|r| !r.is_empty()) {
            let mut fields = record.splitn(3, |byte| *byte == b'\t');
            let (Some(added), Some(deleted), Some(path)) =
                (fields.next(), fields.next(), fields.next())
            else {
                continue;
            };
            let number = |field: &[u8]| String::from_utf8_lossy(field).parse::<u64>().ok();
            changes.push(Change {
                path: path.to_vec(),
                lines: number(added).zip(number(deleted)),
                // Not in the commit's tree: deleted.
                size: sizes.get(path).copied().unwrap_or(0),
            });
        }
        Ok(changes)
    }

    /// Every file of `commit`'s tree and its size, by the path's exact bytes.
    fn sizes(
        &self,
        git: &RemoteGit<'_>,
        commit: &str,
    ) -> Result<HashMap<Vec<u8>, u64>, GitFailure> {
        let listed = git.run(Some(&self.dir), &["ls-tree", "-r", "-l", "-z", commit])?;
        let mut sizes = HashMap::new();
        for record in listed.split(|byte| *byte == 0).filter(|r| !r.is_empty()) {
            let Some(tab) = record.iter().position(|byte| *byte == b'\t') else {
                continue;
            };
            let (meta, path) = (&record[..tab], &record[tab + 1..]);
            let size = String::from_utf8_lossy(meta)
                .split_whitespace()
                .nth(3)
                .and_then(|size| size.parse().ok())
                .unwrap_or(0);
            sizes.insert(path.to_vec(), size);
        }
        Ok(sizes)
    }

    /// Do `head` and `commit` make the same change: the same tree on the same parent?
    pub(crate) fn same_change(&self, git: &RemoteGit<'_>, head: &str, commit: &str) -> bool {
        let of = |revision: String| {
            git.run(
                Some(&self.dir),
                &["rev-parse", "--verify", "--quiet", &revision],
            )
            .ok()
            .map(|id| String::from_utf8_lossy(&id).trim().to_string())
        };
        let tree = |id: &str| of(format!("{id}^{{tree}}"));
        let parent = |id: &str| of(format!("{id}^1"));
        tree(head).is_some() && tree(head) == tree(commit) && parent(head) == parent(commit)
    }

    /// Is `ancestor` an ancestor of (or the same as) `commit`?
    pub(crate) fn is_ancestor(&self, git: &RemoteGit<'_>, ancestor: &str, commit: &str) -> bool {
        git.run(
            Some(&self.dir),
            &["merge-base", "--is-ancestor", ancestor, commit],
        )
        .is_ok()
    }

    /// Push `commit` to `branch` of `remote`: a fast-forward, or with `lease` (the head
    /// the branch must still have) a replacement of it.
    pub(crate) fn push(
        &self,
        git: &RemoteGit<'_>,
        remote: &str,
        commit: &str,
        branch: &str,
        lease: Option<&str>,
    ) -> Result<(), GitFailure> {
        let target = format!("{commit}:refs/heads/{branch}");
        let lease = lease.map(|head| format!("--force-with-lease=refs/heads/{branch}:{head}"));
        let mut args = vec!["push", "--quiet", "--no-verify"];
        if let Some(lease) = &lease {
            args.push(lease);
        }
        args.extend(["--", remote, &target]);
        git.run(Some(&self.dir), &args).map(drop)
    }
}

fn text(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}
