//! `isolation: worktree`: the task works in a detached `git worktree` of its workspace's
//! repository at HEAD (a replay or a resume: at the commit the recorded run started
//! from), removed again however the task ends.
//!
//! The worktree holds what is committed, not the original's uncommitted changes. Git
//! takes locks in the shared repository while it adds or removes a worktree, so drover
//! serializes those operations per repository (tasks run with `--jobs` would otherwise
//! race for `.git/worktrees/`), and retries a few times when another process holds a lock.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use crate::workspace::leftovers::HeldTempDir;

use super::git::{git, stderr_line};

/// Where a workspace sits in its git repository.
#[derive(Debug, Clone)]
pub(crate) struct Repository {
    /// The working tree's top directory.
    pub toplevel: PathBuf,
    /// The repository's shared `.git` directory (the same for all its worktrees): the
    /// key its operations are serialized by.
    pub common_dir: PathBuf,
    /// The workspace relative to `toplevel` (empty when it is the top).
    pub prefix: PathBuf,
}

/// Why a workspace cannot be isolated in a git worktree; each says what to do instead.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WorktreeError {
    #[error("isolation: worktree needs git, which cannot run: {0}")]
    NoGit(#[source] std::io::Error),
    #[error(
        "isolation: worktree needs the workspace {} to be inside a git repository ({git_says}); use isolation: copy, or make it a repository (git init, git commit)",
        workspace.display()
    )]
    NotARepository {
        workspace: PathBuf,
        git_says: String,
    },
    #[error("git rev-parse gave an unexpected answer in {}: {answer:?}", workspace.display())]
    UnexpectedAnswer { workspace: PathBuf, answer: String },
    #[error(
        "isolation: worktree checks out HEAD, but the repository {} has no commit yet; commit first or use isolation: copy",
        repository.display()
    )]
    NoCommit { repository: PathBuf },
    #[error(
        "isolation: worktree checks out HEAD, and the workspace's directory {} is not in it (is it uncommitted?); commit it or use isolation: copy",
        prefix.display()
    )]
    NotCommitted { prefix: PathBuf },
}

/// Find the repository `workspace` belongs to and check it has a commit to check out.
/// The message says what to do instead.
pub(crate) fn locate(workspace: &Path) -> Result<Repository, WorktreeError> {
    let output = git(
        workspace,
        &["rev-parse", "--show-toplevel", "--git-common-dir"],
    )
    .map_err(WorktreeError::NoGit)?;
    if !output.status.success() {
        return Err(WorktreeError::NotARepository {
            workspace: workspace.to_path_buf(),
            git_says: stderr_line(&output),
        });
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let mut lines = text.lines();
    let (Some(toplevel), Some(common_dir)) = (lines.next(), lines.next()) else {
        return Err(WorktreeError::UnexpectedAnswer {
            workspace: workspace.to_path_buf(),
            answer: text.to_string(),
        });
    };
    let canonical = |path: PathBuf| path.canonicalize().unwrap_or(path);
    let toplevel = canonical(PathBuf::from(toplevel));
    let common_dir = canonical(workspace.join(common_dir));
    let workspace = canonical(workspace.to_path_buf());
    let prefix = workspace
        .strip_prefix(&toplevel)
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let head = git(
        &toplevel,
        &["rev-parse", "--verify", "--quiet", "HEAD^{commit}"],
    )
    .map_err(WorktreeError::NoGit)?;
    if !head.status.success() {
        return Err(WorktreeError::NoCommit {
            repository: toplevel,
        });
    }
    if !prefix.as_os_str().is_empty() {
        let tree = format!("HEAD:{}", prefix.to_string_lossy());
        let found = git(&toplevel, &["rev-parse", "--verify", "--quiet", &tree])
            .map_err(WorktreeError::NoGit)?;
        if !found.status.success() {
            return Err(WorktreeError::NotCommitted { prefix });
        }
    }
    Ok(Repository {
        toplevel,
        common_dir,
        prefix,
    })
}

/// A detached worktree, removed (with `git worktree remove --force` and `git worktree
/// prune`) when dropped: on success, failure, error or panic alike.
pub(super) struct Worktree {
    repository: Repository,
    /// The worktree's root, inside `_scratch`.
    root: PathBuf,
    /// The workspace inside the worktree (the same subdirectory as in the original).
    pub dir: PathBuf,
    /// The commit checked out (its full object id).
    pub commit: String,
    /// The scratch directory holding the worktree; dropped after the worktree is removed.
    _scratch: HeldTempDir,
    /// What git wrote into the worktree's `.git` file (`gitdir: …`), to restore it if the
    /// agent rewrote it: git run by a check must find the real repository, not a planted
    /// one with a `core.fsmonitor` command.
    git_link: Vec<u8>,
}

impl Worktree {
    /// Add a detached worktree of `workspace`'s repository at `commit` (a full object id
    /// of a commit the caller checked: see [`super::start_commit::check_commit`]), or
    /// at HEAD, resolved once so the worktree and the commit recorded are the same.
    /// `label` names the worktree's directory, so `git worktree list` says which task it
    /// belongs to.
    pub(super) fn add(
        workspace: &Path,
        label: &str,
        commit: Option<&str>,
    ) -> std::io::Result<Worktree> {
        let repository = locate(workspace).map_err(std::io::Error::other)?;
        let commit = match commit {
            Some(commit) => commit.to_string(),
            None => super::start_commit::head_commit(&repository.toplevel)
                .ok_or_else(|| std::io::Error::other("git rev-parse HEAD gave no commit id"))?,
        };
        let scratch = HeldTempDir::new("wt")?;
        let root = scratch.path().join(label);
        let root_arg = root.to_string_lossy().into_owned();
        let output = serialized(&repository, || {
            // Forget worktrees of killed runs whose directories are gone (drover removes
            // those directories at the start of a run).
            let _ = git(&repository.toplevel, &["worktree", "prune"]);
            git(
                &repository.toplevel,
                &[
                    "worktree",
                    "add",
                    "--quiet",
                    "--detach",
                    "--end-of-options",
                    &root_arg,
                    &commit,
                ],
            )
        })?;
        if !output.status.success() {
            return Err(std::io::Error::other(format!(
                "git worktree add failed: {}",
                stderr_line(&output)
            )));
        }
        // Constructed before anything else can fail, so the worktree is always removed.
        let mut worktree = Worktree {
            dir: root.clone(),
            root,
            repository,
            commit,
            _scratch: scratch,
            git_link: Vec::new(),
        };
        worktree.git_link = std::fs::read(worktree.root.join(".git"))?;
        let dir = worktree.root.join(&worktree.repository.prefix);
        if !dir.is_dir() {
            return Err(std::io::Error::other(format!(
                "the workspace's directory {} is not in the repository's HEAD (is it uncommitted?); commit it or use isolation: copy",
                worktree.repository.prefix.display()
            )));
        }
        worktree.dir = dir.canonicalize()?;
        Ok(worktree)
    }
}

impl Worktree {
    /// Put the worktree's `.git` file back as git wrote it, if anything changed it
    /// (rewritten, replaced by a directory or a symlink). Returns whether it had changed.
    /// Called once the agent's processes are gone, before the checks run.
    pub(super) fn restore_git_link(&self) -> std::io::Result<bool> {
        let link = self.root.join(".git");
        let meta = std::fs::symlink_metadata(&link);
        let intact = meta.as_ref().is_ok_and(|m| m.file_type().is_file())
            && std::fs::read(&link).is_ok_and(|bytes| bytes == self.git_link);
        if intact {
            return Ok(false);
        }
        match meta {
            Ok(m) if m.file_type().is_dir() => std::fs::remove_dir_all(&link)?,
            Ok(_) => std::fs::remove_file(&link)?,
            Err(_) => {}
        }
        crate::workspace::atomic::write_atomic(&link, &self.git_link)?;
        Ok(true)
    }

    /// The worktree's `.git` file.
    pub(super) fn git_link_path(&self) -> PathBuf {
        self.root.join(".git")
    }
}

impl Drop for Worktree {
    fn drop(&mut self) {
        let root = self.root.to_string_lossy().into_owned();
        let repository = self.repository.clone();
        let removed = serialized(&repository, || {
            let removed = git(
                &repository.toplevel,
                &["worktree", "remove", "--force", &root],
            );
            // Whatever git managed, the files go, and prune forgets a worktree whose
            // directory is gone.
            let _ = std::fs::remove_dir_all(&self.root);
            let _ = git(&repository.toplevel, &["worktree", "prune"]);
            removed
        });
        if let Ok(output) = removed
            && !output.status.success()
        {
            crate::esay!(
                "drover: warning: git worktree remove {root}: {}",
                stderr_line(&output)
            );
        }
    }
}

/// Run a git operation that changes the repository's worktree list, one at a time per
/// repository in this process, retrying while another process holds one of git's locks.
fn serialized(
    repository: &Repository,
    operation: impl Fn() -> std::io::Result<Output>,
) -> std::io::Result<Output> {
    static LOCKS: OnceLock<Mutex<HashMap<PathBuf, Arc<Mutex<()>>>>> = OnceLock::new();
    let lock = {
        let mut locks = LOCKS
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        Arc::clone(locks.entry(repository.common_dir.clone()).or_default())
    };
    let _guard = lock.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let mut attempt = 0;
    loop {
        let output = operation()?;
        attempt += 1;
        let locked = String::from_utf8_lossy(&output.stderr).contains(".lock");
        if output.status.success() || !locked || attempt >= 5 {
            return Ok(output);
        }
        std::thread::sleep(Duration::from_millis(100 * attempt));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workspace::git::plain_git;
    use std::process::Command;

    fn repo() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let run = |args: &[&str]| {
            let status = Command::new("git")
                .arg("-C")
                .arg(dir.path())
                .args(args)
                .env("GIT_AUTHOR_NAME", "t")
                .env("GIT_AUTHOR_EMAIL", "t@example.com")
                .env("GIT_COMMITTER_NAME", "t")
                .env("GIT_COMMITTER_EMAIL", "t@example.com")
                .output()
                .unwrap();
            assert!(status.status.success(), "{status:?}");
        };
        run(&["init", "--quiet"]);
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/a.txt"), "a\n").unwrap();
        run(&["add", "."]);
        run(&["commit", "--quiet", "-m", "one"]);
        dir
    }

    fn worktrees(repo: &Path) -> usize {
        let output = git(repo, &["worktree", "list", "--porcelain"]).unwrap();
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter(|l| l.starts_with("worktree "))
            .count()
    }

    #[test]
    fn hooks_fsmonitor_and_filters_of_the_repository_never_run() {
        let repo = repo();
        let proof = repo.path().join("ran");
        let marker = |what: &str| format!("touch {}/{what}; cat", proof.display());
        std::fs::create_dir(&proof).unwrap();
        std::fs::create_dir_all(repo.path().join(".git/info")).unwrap();
        std::fs::write(
            repo.path().join(".git/info/attributes"),
            "*.txt filter=evil\n",
        )
        .unwrap();
        let config = [
            ("filter.evil.smudge", marker("smudge")),
            ("filter.evil.process", marker("process")),
            ("filter.evil.required", "true".to_string()),
            ("core.fsmonitor", marker("fsmonitor")),
        ];
        for (key, value) in &config {
            let status = plain_git(repo.path())
                .args(["config", key, value])
                .status()
                .unwrap();
            assert!(status.success());
        }
        let hooks = repo.path().join(".git/hooks");
        std::fs::create_dir_all(&hooks).unwrap();
        std::fs::write(
            hooks.join("post-checkout"),
            format!("#!/bin/sh\ntouch {}/hook\n", proof.display()),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            hooks.join("post-checkout"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        let worktree = Worktree::add(&repo.path().join("sub"), "task", None).unwrap();
        assert_eq!(
            std::fs::read_to_string(worktree.dir.join("a.txt")).unwrap(),
            "a\n"
        );
        drop(worktree);
        let ran: Vec<_> = std::fs::read_dir(&proof).unwrap().flatten().collect();
        assert!(ran.is_empty(), "the repository made git run: {ran:?}");
    }

    #[test]
    fn a_subdirectory_workspace_works_in_the_same_subdirectory_and_is_removed() {
        let repo = repo();
        std::fs::write(repo.path().join("sub/a.txt"), "uncommitted\n").unwrap();
        let worktree = Worktree::add(&repo.path().join("sub"), "task", None).unwrap();
        assert!(worktree.dir.ends_with("task/sub"), "{:?}", worktree.dir);
        assert_eq!(
            std::fs::read_to_string(worktree.dir.join("a.txt")).unwrap(),
            "a\n",
            "the worktree is HEAD, not the uncommitted state"
        );
        let root = worktree.root.clone();
        assert_eq!(worktrees(repo.path()), 2);
        drop(worktree);
        assert!(!root.exists());
        assert_eq!(worktrees(repo.path()), 1);
    }

    #[test]
    fn a_worktree_at_a_given_commit_holds_that_commit_not_head() {
        let repo = repo();
        let first = crate::workspace::start_commit::head_commit(repo.path()).unwrap();
        std::fs::write(repo.path().join("sub/a.txt"), "later\n").unwrap();
        let status = plain_git(repo.path())
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(["commit", "--quiet", "-am", "two"])
            .status()
            .unwrap();
        assert!(status.success());
        let at_head = Worktree::add(&repo.path().join("sub"), "head", None).unwrap();
        assert_ne!(at_head.commit, first);
        assert_eq!(
            std::fs::read_to_string(at_head.dir.join("a.txt")).unwrap(),
            "later\n"
        );
        let at_first = Worktree::add(&repo.path().join("sub"), "first", Some(&first)).unwrap();
        assert_eq!(at_first.commit, first);
        assert_eq!(
            std::fs::read_to_string(at_first.dir.join("a.txt")).unwrap(),
            "a\n"
        );
    }

    #[test]
    fn concurrent_adds_on_one_repository_do_not_race() {
        let repo = repo();
        let path = repo.path().to_path_buf();
        let handles: Vec<_> = (0..6)
            .map(|i| {
                let path = path.clone();
                std::thread::spawn(move || Worktree::add(&path, &format!("t{i}"), None).map(|_| ()))
            })
            .collect();
        for handle in handles {
            handle.join().unwrap().unwrap();
        }
        assert_eq!(worktrees(repo.path()), 1);
    }

    #[test]
    fn outside_a_repository_or_before_the_first_commit_is_an_error() {
        let plain = tempfile::tempdir().unwrap();
        let error = locate(plain.path()).unwrap_err().to_string();
        assert!(error.contains("git repository"), "{error}");
        Command::new("git")
            .arg("-C")
            .arg(plain.path())
            .args(["init", "--quiet"])
            .output()
            .unwrap();
        let error = locate(plain.path()).unwrap_err().to_string();
        assert!(error.contains("no commit"), "{error}");
    }

    #[test]
    fn a_workspace_directory_missing_from_head_is_an_error() {
        let repo = repo();
        std::fs::create_dir(repo.path().join("new")).unwrap();
        let error = locate(&repo.path().join("new")).unwrap_err().to_string();
        assert!(error.contains("not in it"), "{error}");
        assert!(locate(&repo.path().join("sub")).is_ok());
    }
}
