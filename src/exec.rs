//! PLACEHOLDER — to be implemented.
use std::path::Path;
use std::time::Duration;

/// How a shell command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellOutcome {
    /// None when killed by a signal or the timeout.
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    /// stdout and stderr merged in the order written, possibly cut in the middle.
    pub output: String,
}

/// Run `command` with `bash -c` in `cwd`, stdin closed, killed with its whole process
/// group at `timeout`.
pub async fn run_shell(_command: &str, _cwd: &Path, _timeout: Duration) -> std::io::Result<ShellOutcome> {
    todo!()
}
