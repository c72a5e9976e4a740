//! A stdio server's stderr in `mcp-<server>.log`, bounded like setup and hook output
//! (`sandbox::exec::Capture`): its first MiB is written as it comes, so the log can be
//! read while the task runs; once the server is gone, a log past that holds its head,
//! a line saying how many bytes were left out, and its last MiB.

use std::io::{Seek as _, SeekFrom, Write as _};
use std::path::PathBuf;
use std::time::Duration;

use tokio::io::AsyncReadExt as _;
use tokio::task::JoinHandle;

use crate::sandbox::exec::{Capture, KEEP_HEAD_BYTES};

/// How long the end of stderr is waited for once the server's tree is being killed.
const END_GRACE: Duration = Duration::from_secs(5);

/// The task writing one server's log.
pub(crate) struct StderrLog {
    task: JoinHandle<()>,
}

impl StderrLog {
    /// Log what `stderr` says into `file` (the log at `path`, just created).
    pub(crate) fn start(
        stderr: tokio::process::ChildStderr,
        file: std::fs::File,
        path: PathBuf,
    ) -> StderrLog {
        StderrLog {
            task: tokio::spawn(write_log(stderr, file, path)),
        }
    }

    /// Wait for stderr to end (the server's tree is gone or going) and the log to be
    /// complete; past [`END_GRACE`] the log keeps the head it has.
    pub(crate) async fn finish(mut self) {
        if tokio::time::timeout(END_GRACE, &mut self.task)
            .await
            .is_err()
        {
            self.task.abort();
        }
    }
}

async fn write_log(
    mut stderr: tokio::process::ChildStderr,
    mut file: std::fs::File,
    path: PathBuf,
) {
    let mut capture = Capture::default();
    let mut length = 0usize;
    let mut buffer = vec![0u8; 64 << 10];
    loop {
        let read = match stderr.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(read) => read,
        };
        let bytes = &buffer[..read];
        let live = bytes.len().min(KEEP_HEAD_BYTES.saturating_sub(length));
        if live > 0 && file.write_all(&bytes[..live]).is_err() {
            crate::esay!("drover: warning: cannot write {}", path.display());
        }
        length += read;
        capture.push(bytes);
    }
    if length > KEEP_HEAD_BYTES {
        // The whole log again: the head already there, what was left out, the tail.
        let rewritten = file
            .set_len(0)
            .and_then(|()| file.seek(SeekFrom::Start(0)))
            .and_then(|_| file.write_all(capture.render().as_bytes()));
        if rewritten.is_err() {
            crate::esay!("drover: warning: cannot write {}", path.display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_flood_is_logged_by_its_head_and_tail_and_a_short_log_as_it_is() {
        let dir = tempfile::tempdir().unwrap();
        for (bytes, bounded) in [(100usize, false), (5 << 20, true)] {
            let path = dir.path().join(format!("mcp-{bytes}.log"));
            let mut child = tokio::process::Command::new("sh")
                .arg("-c")
                .arg(format!(
                    "echo first >&2; head -c {bytes} /dev/zero | tr '\\0' e >&2; echo >&2; echo last >&2"
                ))
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            let file = std::fs::File::create(&path).unwrap();
            let log = StderrLog::start(child.stderr.take().unwrap(), file, path.clone());
            child.wait().await.unwrap();
            log.finish().await;
            let text = std::fs::read_to_string(&path).unwrap();
            assert!(text.starts_with("first\neee"), "{}", &text[..20]);
            assert!(
                text.ends_with("eee\nlast\n"),
                "{}",
                &text[text.len() - 20..]
            );
            assert_eq!(text.contains("bytes of output omitted"), bounded);
            assert!(text.len() < (2 << 20) + 100, "{}", text.len());
        }
    }
}
