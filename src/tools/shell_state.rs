//! The Bash working directory, which persists between calls like a terminal's would, but
//! never leaves the workspace: a model that `cd`s elsewhere is brought back and told so.

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Where the next Bash command starts. Shared by every call of one run.
#[derive(Debug)]
pub(crate) struct ShellState {
    workspace: PathBuf,
    cwd: Mutex<PathBuf>,
}

/// What became of the working directory after a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CwdChange {
    /// Same directory as before (or the command's final directory is unknown).
    Unchanged,
    /// The command moved to another directory inside the workspace.
    Moved(PathBuf),
    /// The command ended outside the workspace; the next one starts at the root again.
    Reset { outside: PathBuf },
}

impl ShellState {
    /// A state starting at `workspace` (canonical).
    pub(crate) fn new(workspace: PathBuf) -> Self {
        ShellState {
            cwd: Mutex::new(workspace.clone()),
            workspace,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, PathBuf> {
        // Every mutation is a single assignment, so a poisoned lock is still consistent.
        self.cwd.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The directory the shell is in now, as recorded (for the policy, which resolves a
    /// command's relative paths where the command will run).
    pub(crate) fn current(&self) -> PathBuf {
        self.lock().clone()
    }

    /// The directory the next command starts in. A directory deleted since the last
    /// command is replaced by the workspace root (with the reason), so the command can run.
    pub(crate) fn cwd(&self) -> (PathBuf, Option<String>) {
        let mut cwd = self.lock();
        if *cwd != self.workspace && !cwd.is_dir() {
            let note = format!(
                "The previous working directory {} no longer exists; this command ran in the workspace root {}.",
                cwd.display(),
                self.workspace.display()
            );
            *cwd = self.workspace.clone();
            return (cwd.clone(), Some(note));
        }
        (cwd.clone(), None)
    }

    /// Record where a command ended (`pwd -P` output). Outside the workspace (after
    /// resolving symlinks) resets to the root.
    pub(crate) fn update(&self, reported: &Path) -> CwdChange {
        let resolved = reported
            .canonicalize()
            .unwrap_or_else(|_| reported.to_path_buf());
        let mut cwd = self.lock();
        if !resolved.starts_with(&self.workspace) {
            *cwd = self.workspace.clone();
            return CwdChange::Reset { outside: resolved };
        }
        if *cwd == resolved {
            return CwdChange::Unchanged;
        }
        *cwd = resolved.clone();
        CwdChange::Moved(resolved)
    }
}

/// Learns the directory a Bash command ends in without touching its command line or its
/// output: bash sources the file named by `BASH_ENV` before the command, and that file
/// sets an EXIT trap writing `pwd -P` to a private temporary file. The trap keeps the
/// command's exit status; the file unsets `BASH_ENV` (or restores the caller's) so
/// scripts the command runs are not affected.
pub(crate) struct CwdProbe {
    dir: crate::workspace::leftovers::HeldTempDir,
}

const ENV_FILE: &str = "env.sh";
const CWD_FILE: &str = "cwd";

/// `s` quoted for the shell: single quotes, with embedded ones spelled `'\''`.
fn sh_quote(s: &[u8]) -> Vec<u8> {
    let mut out = vec![b'\''];
    for &byte in s {
        if byte == b'\'' {
            out.extend_from_slice(b"'\\''");
        } else {
            out.push(byte);
        }
    }
    out.push(b'\'');
    out
}

impl CwdProbe {
    /// Create the probe's files in `dir` (default: the system's temporary directory). A
    /// sandboxed command can write only to its private temporary directory, so the probe
    /// must live there for the command's exit trap to record its directory.
    pub(crate) fn new_in(dir: Option<&Path>) -> std::io::Result<Self> {
        let dir = crate::workspace::leftovers::HeldTempDir::new_in("bash", dir)?;
        let cwd_file = dir.path().join(CWD_FILE);
        let mut trap = b"builtin pwd -P >| ".to_vec();
        trap.extend(sh_quote(cwd_file.as_os_str().as_bytes()));
        trap.extend_from_slice(b" 2>/dev/null");
        let mut script = b"trap -- ".to_vec();
        script.extend(sh_quote(&trap));
        script.extend_from_slice(b" EXIT\n");
        match std::env::var_os("BASH_ENV") {
            Some(original) => {
                script.extend_from_slice(b"export BASH_ENV=");
                script.extend(sh_quote(original.as_bytes()));
                script.extend_from_slice(b"\n[ -r \"$BASH_ENV\" ] && . \"$BASH_ENV\"\n");
            }
            None => script.extend_from_slice(b"unset BASH_ENV\n"),
        }
        std::fs::write(dir.path().join(ENV_FILE), script)?;
        Ok(CwdProbe { dir })
    }

    /// The environment variable that installs the probe.
    pub(crate) fn env(&self) -> (&'static str, OsString) {
        ("BASH_ENV", self.dir.path().join(ENV_FILE).into_os_string())
    }

    /// The directory the command ended in, when it exited normally (not killed, no
    /// `exec`, no trap of its own replacing the probe's).
    pub(crate) fn final_dir(&self) -> Option<PathBuf> {
        let mut bytes = std::fs::read(self.dir.path().join(CWD_FILE)).ok()?;
        if bytes.last() == Some(&b'\n') {
            bytes.pop();
        }
        if bytes.is_empty() {
            return None;
        }
        Some(PathBuf::from(OsString::from_vec(bytes)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves_inside_and_resets_outside() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        let state = ShellState::new(root.clone());
        assert_eq!(state.cwd(), (root.clone(), None));
        assert_eq!(
            state.update(&root.join("sub")),
            CwdChange::Moved(root.join("sub"))
        );
        assert_eq!(state.update(&root.join("sub")), CwdChange::Unchanged);
        assert_eq!(state.cwd().0, root.join("sub"));
        assert!(matches!(
            state.update(Path::new("/")),
            CwdChange::Reset { .. }
        ));
        assert_eq!(state.cwd().0, root);
    }

    #[test]
    fn quoting_survives_single_quotes() {
        assert_eq!(sh_quote(b"a'b"), b"'a'\\''b'".to_vec());
    }

    #[test]
    fn a_deleted_directory_falls_back_to_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("gone")).unwrap();
        let state = ShellState::new(root.clone());
        state.update(&root.join("gone"));
        std::fs::remove_dir(root.join("gone")).unwrap();
        let (cwd, note) = state.cwd();
        assert_eq!(cwd, root);
        assert!(note.unwrap().contains("no longer exists"));
    }
}
