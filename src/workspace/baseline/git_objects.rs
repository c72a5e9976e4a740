//! Reading the starting content of clean tracked files back from the repository's object
//! database, for the diff. `git cat-file --batch` runs in a private, empty git directory
//! with only the repository's object directory borrowed, so no configuration, hook or
//! filter of the workspace's repository is ever read or run, and every blob is checked
//! against its id before it is used.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use super::BlobId;

/// A running `git cat-file --batch`, killed when dropped.
pub struct GitObjects {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    _home: tempfile::TempDir,
}

impl GitObjects {
    /// Start reading from `objects` (a repository's object directory).
    pub fn open(objects: &Path) -> io::Result<GitObjects> {
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
        Ok(GitObjects {
            child,
            input,
            output: BufReader::new(output),
            _home: home,
        })
    }

    /// The content of blob `id`, verified.
    pub fn get(&mut self, id: &BlobId) -> io::Result<Vec<u8>> {
        writeln!(self.input, "{}", id.hex())?;
        self.input.flush()?;
        let mut header = String::new();
        self.output.read_line(&mut header)?;
        let mut fields = header.split_whitespace();
        let (Some(_), Some(kind), Some(size)) = (fields.next(), fields.next(), fields.next())
        else {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("blob {} is not in the repository", id.hex()),
            ));
        };
        let size: usize = size
            .parse()
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "bad cat-file header"))?;
        let mut content = vec![0u8; size];
        self.output.read_exact(&mut content)?;
        let mut newline = [0u8; 1];
        self.output.read_exact(&mut newline)?;
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
}

impl Drop for GitObjects {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether a `git` executable is on PATH (else the baseline keeps every file itself).
/// Looked up rather than run: starting `git --version` would cost every task a few
/// milliseconds.
pub fn git_available() -> bool {
    use std::os::unix::fs::PermissionsExt;
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
fn private_git_dir() -> io::Result<tempfile::TempDir> {
    let dir = tempfile::Builder::new()
        .prefix(&crate::workspace::leftovers::temp_prefix("git"))
        .tempdir()?;
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
