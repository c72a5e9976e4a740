//! The private repository `drover publish` makes each commit in: a temp repository of
//! its own (no work tree is ever checked out, no hook or configuration of anyone
//! else's applies), the task's starting commit fetched into it from the remote, the
//! recorded patch applied to that commit's tree in the index (`git apply --cached`, so
//! the commit's tree is exactly the start plus `diff.patch`), and the commit pushed from
//! there. git runs as for a `repo:` clone (`workspace::repo::RemoteGit`): no prompt,
//! a wall clock, a scrubbed environment, the token through a credential helper.

use std::path::{Path, PathBuf};

use crate::workspace::leftovers::HeldTempDir;
use crate::workspace::repo::{GitFailure, RemoteGit};

use super::gates::Change;

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

    /// The commit of `patches` (contents) applied in order to `base`'s tree, with
    /// `message` by `who`. A patch that does not apply is git's failure.
    pub(crate) fn commit(
        &self,
        git: &RemoteGit<'_>,
        base: &str,
        patches: &[&[u8]],
        message: &str,
        who: &Identity,
    ) -> Result<String, GitFailure> {
        git.run(Some(&self.dir), &["read-tree", "--end-of-options", base])?;
        for (index, patch) in patches.iter().enumerate() {
            // Copied in, so git reads what drover read, never a path swapped since.
            let file = self.temp.path().join(format!("{index}.patch"));
            std::fs::write(&file, patch).map_err(GitFailure::Spawn)?;
            git.run(
                Some(&self.dir),
                &[
                    "apply",
                    "--cached",
                    "--whitespace=nowarn",
                    "--",
                    &text(&file),
                ],
            )?;
        }
        let tree = git.run(Some(&self.dir), &["write-tree"])?;
        let tree = String::from_utf8_lossy(&tree).trim().to_string();
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
                "-m",
                message,
            ],
        )?;
        Ok(String::from_utf8_lossy(&commit).trim().to_string())
    }

    /// What `commit` changes against `base`, as the gates judge it.
    pub(crate) fn changes(
        &self,
        git: &RemoteGit<'_>,
        base: &str,
        commit: &str,
    ) -> Result<Vec<Change>, GitFailure> {
        let listed = git.run(
            Some(&self.dir),
            &[
                "diff-tree",
                "-r",
                "-z",
                "--no-renames",
                "--numstat",
                base,
                commit,
            ],
        )?;
        let mut changes = Vec::new();
        for record in listed.split(|byte| *byte == 0).filter(|r| !r.is_empty()) {
            let record = String::from_utf8_lossy(record);
            let mut fields = record.splitn(3, '\t');
            let (Some(added), Some(deleted), Some(path)) =
                (fields.next(), fields.next(), fields.next())
            else {
                continue;
            };
            let lines = added.parse().ok().zip(deleted.parse().ok());
            changes.push(Change {
                path: path.to_string(),
                lines,
                size: 0,
            });
        }
        for change in changes.iter_mut().filter(|change| change.lines.is_none()) {
            change.size = self.size_of(git, commit, &change.path)?;
        }
        Ok(changes)
    }

    /// The size of `path` in `commit` (0 when it is not there: deleted).
    fn size_of(&self, git: &RemoteGit<'_>, commit: &str, path: &str) -> Result<u64, GitFailure> {
        let listed = git.run(
            Some(&self.dir),
            &[
                "--literal-pathspecs",
                "ls-tree",
                "-l",
                "-z",
                commit,
                "--",
                path,
            ],
        )?;
        let listed = String::from_utf8_lossy(&listed);
        Ok(listed
            .split('\t')
            .next()
            .and_then(|meta| meta.split_whitespace().nth(3))
            .and_then(|size| size.parse().ok())
            .unwrap_or(0))
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
