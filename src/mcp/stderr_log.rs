//! A stdio server's stderr in `mcp-<server>.log`, bounded like setup and hook output
//! (`sandbox::exec::Capture`): its first MiB is written as it comes, so the log can be
//! read while the task runs; once the server is gone, a log past that holds its head,
//! a line saying how many bytes were left out, and its last MiB. drover's own notes on
//! the lines the server wrote on stdout and drover did not pass on ([`DroppedLines`])
//! are written as they come and again at the end: the first such line, and how many.

use std::io::{Seek as _, SeekFrom, Write as _};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncReadExt as _;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::dropped_lines::DroppedLines;
use crate::sandbox::exec::{Capture, KEEP_HEAD_BYTES};

/// How long the end of stderr is waited for once the server's tree is being killed.
const END_GRACE: Duration = Duration::from_secs(5);

/// The task writing one server's log.
pub(crate) struct StderrLog {
    /// Gives the writer back once stderr has ended.
    task: JoinHandle<Writer>,
    dropped: Arc<DroppedLines>,
}

impl StderrLog {
    /// Log what `stderr` says into `file` (the log at `path`, just created), with
    /// drover's notes on the lines of stdout in `dropped`.
    pub(crate) fn start(
        stderr: tokio::process::ChildStderr,
        file: std::fs::File,
        path: PathBuf,
        dropped: Arc<DroppedLines>,
    ) -> StderrLog {
        let writer = Writer {
            file,
            path,
            dropped: dropped.clone(),
            line_start: true,
            noted: false,
        };
        StderrLog {
            task: tokio::spawn(writer.write_log(stderr)),
            dropped,
        }
    }

    /// Wait for stderr to end (the server's tree is gone or going) and the log to be
    /// complete, with how many lines of stdout were not passed on; past [`END_GRACE`]
    /// the log keeps the head it has.
    pub(crate) async fn finish(mut self) {
        let deadline = Instant::now() + END_GRACE;
        let Ok(Ok(mut writer)) = tokio::time::timeout_at(deadline, &mut self.task).await else {
            self.task.abort();
            return;
        };
        // The relay reads the last of stdout once the server is gone.
        let _ = tokio::time::timeout_at(deadline, self.dropped.relay_end()).await;
        // The first line dropped may have come after stderr ended.
        writer.note_first();
        if let Some(note) = self.dropped.closing_note() {
            writer.note(&note);
        }
    }
}

/// What writes one log.
struct Writer {
    file: std::fs::File,
    path: PathBuf,
    dropped: Arc<DroppedLines>,
    /// The last byte written ended a line.
    line_start: bool,
    /// The note on the first line dropped is in the log.
    noted: bool,
}

impl Writer {
    async fn write_log(mut self, mut stderr: tokio::process::ChildStderr) -> Writer {
        let mut capture = Capture::default();
        let mut length = 0usize;
        let mut buffer = vec![0u8; 64 << 10];
        loop {
            let read = tokio::select! {
                () = self.dropped.first_dropped(), if !self.noted => {
                    self.note_first();
                    continue;
                }
                read = stderr.read(&mut buffer) => read,
            };
            let read = match read {
                Ok(0) | Err(_) => break,
                Ok(read) => read,
            };
            let bytes = &buffer[..read];
            let live = bytes.len().min(KEEP_HEAD_BYTES.saturating_sub(length));
            if live > 0 {
                self.write(&bytes[..live]);
            }
            length += read;
            capture.push(bytes);
        }
        if length > KEEP_HEAD_BYTES {
            // The whole log again: the head already there, what was left out, the tail,
            // and drover's note below.
            let rewritten = self
                .file
                .set_len(0)
                .and_then(|()| self.file.seek(SeekFrom::Start(0)))
                .map(|_| ());
            match rewritten {
                Ok(()) => self.write(capture.render().as_bytes()),
                Err(_) => crate::esay!("drover: warning: cannot write {}", self.path.display()),
            }
            self.noted = false;
        }
        self.note_first();
        self
    }

    /// Write the note on the first line dropped, if one was and it is not written yet.
    fn note_first(&mut self) {
        if self.noted {
            return;
        }
        if let Some(note) = self.dropped.first_note() {
            self.note(&note);
            self.noted = true;
        }
    }

    /// Write one of drover's notes (a whole line) on a line of its own.
    fn note(&mut self, note: &str) {
        if !self.line_start {
            self.write(b"\n");
        }
        self.write(note.as_bytes());
    }

    fn write(&mut self, bytes: &[u8]) {
        if let Some(last) = bytes.last() {
            self.line_start = *last == b'\n';
        }
        if self.file.write_all(bytes).is_err() {
            crate::esay!("drover: warning: cannot write {}", self.path.display());
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
            let dropped = Arc::new(DroppedLines::default());
            dropped.relay_ended();
            let log = StderrLog::start(child.stderr.take().unwrap(), file, path.clone(), dropped);
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

    #[tokio::test]
    async fn the_lines_not_passed_on_are_noted_in_the_log_when_the_first_comes_and_counted_at_the_end()
     {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mcp-noisy.log");
        let mut child = tokio::process::Command::new("sh")
            .arg("-c")
            .arg("printf 'no newline' >&2; sleep 1; echo last >&2")
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let file = std::fs::File::create(&path).unwrap();
        let dropped = Arc::new(DroppedLines::default());
        let log = StderrLog::start(
            child.stderr.take().unwrap(),
            file,
            path.clone(),
            dropped.clone(),
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
        dropped.line(br#"{"level":"info"}"#, 16);
        dropped.line(b"text", 4);
        // The note is there while the server runs.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let live = std::fs::read_to_string(&path).unwrap();
        assert!(
            live.starts_with("no newline\n[drover: the server wrote a line on stdout that is no MCP message drover can read"),
            "{live}"
        );
        child.wait().await.unwrap();
        dropped.line(b"more", 4);
        dropped.relay_ended();
        log.finish().await;
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert!(
            lines[1].ends_with(r#"the first: "{\"level\":\"info\"}"]"#),
            "{text}"
        );
        assert_eq!(lines[2], "last");
        assert_eq!(
            lines[3],
            "[drover: in all, 3 lines the server wrote on stdout were no MCP message drover can read, and not passed on]"
        );
    }
}
