//! Reading the starting content of clean tracked files back from the repository's object
//! database, for the diff. `git cat-file --batch` runs in a private, empty git directory
//! with only the repository's object directory borrowed, so no configuration, hook or
//! filter of the workspace's repository is ever read or run, and every blob is checked
//! against its id before it is used.
//!
//! The object directory is as untrusted as the workspace (an agent working in place can
//! write to it): an answer is read on a thread of its own and waited for with a deadline
//! (a FIFO planted as an object must not hang the task), and a size larger than any file
//! drover diffs is refused before anything is allocated.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::time::Duration;

use super::{BlobId, MAX_DIFFED_FILE};

/// How long one blob may take to arrive before git is stopped.
const ANSWER_DEADLINE: Duration = Duration::from_secs(60);

/// A running `git cat-file --batch`, killed when dropped.
pub(super) struct GitObjects {
    child: Child,
    input: ChildStdin,
    answers: Receiver<io::Result<(String, Vec<u8>)>>,
    /// Set once git was stopped (a deadline passed): later reads fail at once.
    stopped: bool,
    deadline: Duration,
    _home: crate::workspace::leftovers::HeldTempDir,
}

impl GitObjects {
    /// Start reading from `objects` (a repository's object directory).
    pub(super) fn open(objects: &Path) -> io::Result<GitObjects> {
        GitObjects::open_with_deadline(objects, ANSWER_DEADLINE)
    }

    /// [`GitObjects::open`] with another deadline per blob.
    fn open_with_deadline(objects: &Path, deadline: Duration) -> io::Result<GitObjects> {
        let home = private_git_dir()?;
        let mut command = Command::new("git");
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("GIT_") {
                command.env_remove(name);
            }
        }
        let mut child = command
            .arg("cat-file")
            .arg("--batch")
            .env("GIT_DIR", home.path())
            .env("GIT_OBJECT_DIRECTORY", objects)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_NO_REPLACE_OBJECTS", "1")
            .current_dir(home.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let (Some(input), Some(output)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            return Err(io::Error::other("git cat-file started without pipes"));
        };
        let (sender, answers) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("drover-git-objects".into())
            .spawn(move || read_answers(BufReader::new(output), &sender))?;
        Ok(GitObjects {
            child,
            input,
            answers,
            stopped: false,
            deadline,
            _home: home,
        })
    }

    /// The content of blob `id`, verified.
    pub(super) fn get(&mut self, id: &BlobId) -> io::Result<Vec<u8>> {
        if self.stopped {
            return Err(io::Error::other(
                "git was stopped after an earlier blob took too long",
            ));
        }
        writeln!(self.input, "{}", id.hex())?;
        self.input.flush()?;
        let (kind, content) = match self.answers.recv_timeout(self.deadline) {
            Ok(answer) => answer?,
            Err(RecvTimeoutError::Timeout) => {
                self.stop();
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "blob {} did not arrive within {} s (is an object file not a regular file?)",
                        id.hex(),
                        self.deadline.as_secs()
                    ),
                ));
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Err(io::Error::other("git cat-file stopped answering"));
            }
        };
        if kind != "blob" || BlobId::of(&content) != *id {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "the repository's copy of blob {} does not match its id",
                    id.hex()
                ),
            ));
        }
        Ok(content)
    }

    fn stop(&mut self) {
        self.stopped = true;
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for GitObjects {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Read `cat-file --batch` answers until the pipe closes: each is (kind, content), or an
/// error for a missing object or an answer that cannot be a file drover diffs.
fn read_answers(
    mut output: BufReader<ChildStdout>,
    answers: &Sender<io::Result<(String, Vec<u8>)>>,
) {
    loop {
        let mut header = String::new();
        match output.read_line(&mut header) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let mut fields = header.split_whitespace();
        let (Some(_), Some(kind), Some(size)) = (fields.next(), fields.next(), fields.next())
        else {
            // "<id> missing": nothing follows.
            let missing =
                io::Error::new(io::ErrorKind::NotFound, "the blob is not in the repository");
            if answers.send(Err(missing)).is_err() {
                return;
            }
            continue;
        };
        let size: u64 = match size.parse() {
            Ok(size) if size <= MAX_DIFFED_FILE => size,
            // A size no diffed file has: the object is forged or not one drover wants.
            // The stream cannot be trusted past it, so reading ends here.
            _ => {
                let _ = answers.send(Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("the repository answered with an object of size {size}"),
                )));
                return;
            }
        };
        let mut content = Vec::new();
        let read = (&mut output)
            .take(size)
            .read_to_end(&mut content)
            .and_then(|_| {
                let mut newline = [0u8; 1];
                output.read_exact(&mut newline)
            });
        let answer = read.map(|()| (kind.to_string(), content));
        let failed = answer.is_err();
        if answers.send(answer).is_err() || failed {
            return;
        }
    }
}

/// Whether a `git` executable is on PATH (else the baseline keeps every file itself).
/// Looked up rather than run: starting `git --version` would cost every task a few
/// milliseconds.
pub(super) fn git_available() -> bool {
    let Some(path) = std::env::var_os("PATH") else {
        return false;
    };
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join("git"))
        .any(|candidate| {
            std::fs::metadata(candidate)
                .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
        })
}

/// An empty git directory: enough for git to run, holding nothing of the user's.
fn private_git_dir() -> io::Result<crate::workspace::leftovers::HeldTempDir> {
    let dir = crate::workspace::leftovers::HeldTempDir::new("git")?;
    let path: PathBuf = dir.path().to_path_buf();
    std::fs::create_dir_all(path.join("objects"))?;
    std::fs::create_dir_all(path.join("refs"))?;
    std::fs::write(path.join("HEAD"), "ref: refs/heads/main\n")?;
    std::fs::write(
        path.join("config"),
        "[core]\n\trepositoryformatversion = 0\n\tbare = true\n",
    )?;
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo_with_blob(content: &[u8]) -> (tempfile::TempDir, BlobId) {
        let dir = tempfile::tempdir().unwrap();
        let run = |args: &[&str]| {
            let status = Command::new("git")
                .args(args)
                .current_dir(dir.path())
                .stdout(Stdio::null())
                .status()
                .unwrap();
            assert!(status.success());
        };
        run(&["init", "-q"]);
        std::fs::write(dir.path().join("f"), content).unwrap();
        run(&["hash-object", "-w", "f"]);
        (dir, BlobId::of(content))
    }

    fn object_path(repo: &Path, id: &BlobId) -> PathBuf {
        let hex = id.hex();
        repo.join(".git/objects").join(&hex[..2]).join(&hex[2..])
    }

    #[test]
    fn reads_a_blob_and_refuses_a_missing_one() {
        let (repo, id) = repo_with_blob(b"content\n");
        let mut objects = GitObjects::open(&repo.path().join(".git/objects")).unwrap();
        assert_eq!(objects.get(&id).unwrap(), b"content\n");
        let error = objects.get(&BlobId::of(b"never stored")).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::NotFound);
        // Still answering after a missing one.
        assert_eq!(objects.get(&id).unwrap(), b"content\n");
    }

    #[test]
    fn a_fifo_planted_as_an_object_cannot_hang_the_diff() {
        let (repo, id) = repo_with_blob(b"content\n");
        let path = object_path(repo.path(), &id);
        std::fs::remove_file(&path).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &path,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        let mut objects = GitObjects::open_with_deadline(
            &repo.path().join(".git/objects"),
            Duration::from_millis(500),
        )
        .unwrap();
        let error = objects.get(&id).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::TimedOut, "{error}");
        assert!(objects.get(&id).is_err(), "git is stopped after a deadline");
    }

    #[test]
    fn a_forged_huge_object_is_refused_without_allocating_it() {
        use std::io::Write as _;
        let (repo, id) = repo_with_blob(b"content\n");
        let path = object_path(repo.path(), &id);
        std::fs::remove_file(&path).unwrap();
        let mut forged =
            flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        forged.write_all(b"blob 1099511627776\0").unwrap();
        forged.write_all(&[b'A'; 100]).unwrap();
        std::fs::write(&path, forged.finish().unwrap()).unwrap();
        let mut objects = GitObjects::open(&repo.path().join(".git/objects")).unwrap();
        let error = objects.get(&id).unwrap_err();
        assert!(
            error.to_string().contains("1099511627776")
                || error.kind() == io::ErrorKind::InvalidData,
            "{error}"
        );
    }
}
