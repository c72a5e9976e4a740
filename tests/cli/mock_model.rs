//! The long run's mock model (`drover bench --mock-model`) for end-to-end tests: an
//! Anthropic Messages API on 127.0.0.1 that enforces a context window (a request's body
//! bytes / 4 are its tokens; one over `--window` gets the API's 400 `prompt is too
//! long`) and plays a scenario by its own turn counter (turn k < N reads a 4 KB file
//! of the workspace, every 10th writes `notes/NNN.txt`, turn N ends with a text; a
//! request without tools, or with `tool_choice: none`, gets a summary and uses no
//! turn). Start it, run drover against `base_url`, then `finish` for its figures.

use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::Value;

/// The variable the specs of these tests name for the key; the mock takes any.
pub(crate) const KEY_ENV: &str = "DROVER_TEST_MOCK_MODEL_KEY";

/// A running mock model.
pub(crate) struct MockModel {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    /// `http://127.0.0.1:PORT`, for `model.base_url`.
    pub(crate) base_url: String,
}

impl MockModel {
    /// Start the mock with `bench --mock-model` flags (`--window N` (0: none), `--turns
    /// N`, `--result-bytes N`, `--refuse-at K`), writing the scenario's files
    /// (`src/f00.txt` … `src/f49.txt`) into `workspace` first.
    pub(crate) fn start(workspace: &Path, flags: &[&str]) -> MockModel {
        let mut child = Command::new(assert_cmd::cargo::cargo_bin("drover"))
            .args(["bench", "--mock-model", "--mock-workspace"])
            .arg(workspace)
            .args(flags)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("drover bench --mock-model starts");
        let stdin = child.stdin.take();
        let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
        let mut line = String::new();
        stdout
            .read_line(&mut line)
            .expect("the mock prints its address");
        let address = line
            .trim()
            .strip_prefix("listening ")
            .unwrap_or_else(|| panic!("the mock printed {line:?}, not `listening ADDRESS`"));
        let base_url = format!("http://{address}");
        MockModel {
            child,
            stdin,
            stdout,
            base_url,
        }
    }

    /// Stop the mock: its figures (`turns`, `text_answers`, `refusals`,
    /// `largest_refused_tokens`, `bytes_summed`, `peak_bytes`, `peak_tokens`, `window`,
    /// and `requests`: each accepted request's `turn`, `text`, `bytes`, `tokens`).
    pub(crate) fn finish(mut self) -> Value {
        drop(self.stdin.take());
        let mut line = String::new();
        self.stdout
            .read_line(&mut line)
            .expect("the mock prints its figures");
        let status = self.child.wait().expect("the mock ends");
        assert!(status.success(), "the mock exited {status}");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("figures {line:?}: {e}"))
    }
}

impl Drop for MockModel {
    fn drop(&mut self) {
        // Ended by `finish`, or a test that panicked: do not leave it serving.
        drop(self.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A task spec against the mock: read and write in `ws` (beside the spec), the mock as
/// its Anthropic model, `limits` as the spec's `limits:` mapping (YAML flow, e.g.
/// `{ max_turns: 40, context: off }`).
pub(crate) fn spec(name: &str, mock: &MockModel, limits: &str) -> String {
    format!(
        "version: 1\nname: {name}\nprompt: Read the files under src/ and write notes.\nworkspace: ws\nisolation: copy\nsandbox: off\nmodel:\n  provider: anthropic\n  name: claude-sonnet-4-5\n  base_url: {}\n  api_key_env: {KEY_ENV}\npermissions:\n  allow: [Read, Write]\nlimits: {limits}\n",
        mock.base_url
    )
}

/// `drover run SPEC --artifacts DIR` with the mock's key, finished.
pub(crate) fn run(spec: &Path, artifacts: &Path) -> std::process::Output {
    crate::common::drover_without_proxy()
        .env(KEY_ENV, "mock-key")
        .arg("run")
        .arg(spec)
        .arg("--artifacts")
        .arg(artifacts)
        .output()
        .expect("drover runs")
}
