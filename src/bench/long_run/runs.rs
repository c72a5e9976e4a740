//! One long run: the mock model started in this process, the task's spec written, drover
//! run on it as a child process measured whole (peak RSS from `wait4`), and what it left
//! read back (summary.json's reason and turns, the compactions, the mock's figures).
//! And the replay of a recorded run, compared with it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, bail};
use serde_json::Value;

use super::figures::Figures;
use super::scenario::Scenario;
use super::server::{MockModel, Settings};
use crate::bench::child::{self, Measured};

/// The variable the specs name for the API key: the mock takes any.
const KEY_ENV: &str = "DROVER_BENCH_MOCK_KEY";

/// Which run: its name (its task's and folder's), what `limits.context` says, and
/// whether the mock enforces the window.
#[derive(Debug, Clone, Copy)]
pub(super) struct Case {
    pub name: &'static str,
    /// The row's label.
    pub label: &'static str,
    /// `limits.context` as YAML (`off`, or a flow mapping).
    pub context: &'static str,
    pub enforced: bool,
}

/// The long run's four cases: unmanaged against the window (must fail cleanly),
/// unmanaged without one (the cost of no management), and each of drover's own
/// strategies against the window (must finish).
pub(super) const CASES: [Case; 4] = [
    Case {
        name: "off-window",
        label: "off, window enforced",
        context: "off",
        enforced: true,
    },
    Case {
        name: "off-unbounded",
        label: "off, no window",
        context: "off",
        enforced: false,
    },
    Case {
        name: "clear",
        label: "clear_tool_results",
        context: "{ strategy: clear_tool_results, window: WINDOW }",
        enforced: true,
    },
    Case {
        name: "summarize",
        label: "summarize",
        context: "{ strategy: summarize, window: WINDOW }",
        enforced: true,
    },
];

/// What one run did and cost.
#[derive(Debug)]
pub(super) struct Outcome {
    pub case: Case,
    pub measured: Measured,
    pub figures: Figures,
    /// summary.json's reason (empty when it could not be read).
    pub reason: String,
    pub message: String,
    /// The model turns summary.json counts.
    pub turns: u64,
    /// Compactions the report counts (0 when it has no `context`).
    pub compactions: u64,
    /// The task's folder in the artifacts directory.
    pub task_dir: PathBuf,
}

/// Run `case` over `repository` with its own mock; files go under `dir/<name>/`.
pub(super) fn run(
    drover: &Path,
    dir: &Path,
    repository: &Path,
    scenario: Scenario,
    window: u64,
    case: Case,
) -> anyhow::Result<Outcome> {
    let mock = MockModel::start(Settings {
        scenario,
        window: case.enforced.then_some(window),
        refuse_at: None,
    })
    .context("cannot start the mock model")?;
    let run_dir = dir.join(case.name);
    let _ = std::fs::remove_dir_all(&run_dir);
    std::fs::create_dir_all(&run_dir)
        .with_context(|| format!("cannot create {}", run_dir.display()))?;
    let spec = run_dir.join("task.yaml");
    let text = spec_text(case, scenario, window, repository, &mock);
    std::fs::write(&spec, text).with_context(|| format!("cannot write {}", spec.display()))?;
    let artifacts = run_dir.join("artifacts");
    let mut command = drover_command(drover, &run_dir, "stderr.txt");
    command
        .arg("run")
        .arg(&spec)
        .args(["--quiet", "--artifacts"])
        .arg(&artifacts);
    let measured =
        child::measure(&mut command).with_context(|| format!("cannot run {}", drover.display()))?;
    let figures = mock.figures();
    let task = first_task(&artifacts)
        .with_context(|| format!("{}: drover exited {:?}", case.name, measured.exit_code))?;
    let field = |name: &str| task[name].as_str().unwrap_or_default().to_string();
    Ok(Outcome {
        case,
        reason: field("reason"),
        message: field("message"),
        turns: task["turns"].as_u64().unwrap_or(0),
        compactions: task["context"]["compactions"].as_u64().unwrap_or(0),
        task_dir: artifacts.join(task_name(case)),
        measured,
        figures,
    })
}

fn task_name(case: Case) -> String {
    format!("long-run-{}", case.name)
}

/// The task: read and note until the mock ends it; its model is the mock.
fn spec_text(
    case: Case,
    scenario: Scenario,
    window: u64,
    repository: &Path,
    mock: &MockModel,
) -> String {
    format!(
        "version: 1
name: {name}
prompt: Read the files under src/ one at a time and write what you find under notes/.
workspace: {workspace:?}
isolation: copy
sandbox: off
model:
  provider: anthropic
  name: claude-sonnet-4-5
  base_url: http://{address}
  api_key_env: {KEY_ENV}
permissions:
  allow: [Read, Write]
limits:
  max_turns: {max_turns}
  timeout: none
  context: {context}
",
        name = task_name(case),
        workspace = repository.display().to_string(),
        address = mock.address(),
        max_turns = scenario.turns + 20,
        context = case.context.replace("WINDOW", &window.to_string()),
    )
}

/// drover in `dir`, with the mock's key, no proxy (the mock is on 127.0.0.1), no stdin,
/// its output dropped but for stderr, kept in `dir/<stderr>`.
fn drover_command(drover: &Path, dir: &Path, stderr: &str) -> Command {
    let mut command = Command::new(drover);
    command
        .current_dir(dir)
        .env(KEY_ENV, "mock-key")
        .env_remove("GITHUB_ACTIONS")
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    for var in [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ] {
        command.env_remove(var);
    }
    match std::fs::File::create(dir.join(stderr)) {
        Ok(file) => command.stderr(file),
        Err(_) => command.stderr(Stdio::null()),
    };
    command
}

/// The first task of an artifacts directory's summary.json.
fn first_task(artifacts: &Path) -> anyhow::Result<Value> {
    let path = artifacts.join("summary.json");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let mut summary: Value =
        serde_json::from_str(&text).with_context(|| format!("{} is no JSON", path.display()))?;
    match summary["tasks"].get_mut(0) {
        Some(task) => Ok(task.take()),
        None => bail!("{} lists no task", path.display()),
    }
}

/// What replaying a run showed.
#[derive(Debug)]
pub(super) struct Replayed {
    pub exit_code: Option<i32>,
    /// The replay's diff.patch is the recorded one, byte for byte.
    pub same_diff: bool,
    /// The replay's summary.json reports drift (or could not be read).
    pub drift: bool,
    /// Its reason, for the printed line.
    pub reason: String,
}

/// Replay the transcript of `outcome`'s task over `repository` (its starting state:
/// the run worked on a copy) into `dir/<name>/replay`, and compare.
pub(super) fn replay(
    drover: &Path,
    dir: &Path,
    repository: &Path,
    outcome: &Outcome,
) -> anyhow::Result<Replayed> {
    let run_dir = dir.join(outcome.case.name);
    let artifacts = run_dir.join("replay");
    let _ = std::fs::remove_dir_all(&artifacts);
    let mut command = drover_command(drover, &run_dir, "replay-stderr.txt");
    command
        .arg("replay")
        .arg(outcome.task_dir.join("transcript.jsonl"))
        .arg("--workspace")
        .arg(repository)
        .args(["--quiet", "--artifacts"])
        .arg(&artifacts);
    let status = command.status().context("cannot run drover replay")?;
    let task = first_task(&artifacts)?;
    let recorded = std::fs::read(outcome.task_dir.join("diff.patch"))
        .context("cannot read the recorded diff.patch")?;
    let replayed = std::fs::read(artifacts.join(task_name(outcome.case)).join("diff.patch"))
        .unwrap_or_default();
    Ok(Replayed {
        exit_code: status.code(),
        same_diff: !recorded.is_empty() && recorded == replayed,
        drift: task.get("drift").is_some(),
        reason: task["reason"].as_str().unwrap_or_default().to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_cases_spec_loads_with_its_context_setting() {
        let mock = MockModel::start(Settings {
            scenario: Scenario {
                turns: 300,
                result_bytes: 4096,
            },
            window: None,
            refuse_at: None,
        })
        .unwrap();
        for case in CASES {
            let scenario = Scenario {
                turns: 300,
                result_bytes: 4096,
            };
            let text = spec_text(case, scenario, 32000, Path::new("/w/work space"), &mock);
            let loaded = crate::spec::parse(Path::new("/specs/t.yaml"), text.clone())
                .unwrap_or_else(|e| panic!("{}: {e}\n{text}", case.name));
            assert_eq!(loaded.name(), task_name(case));
            assert!(text.contains("max_turns: 320"), "{text}");
            if case.context != "off" {
                assert!(text.contains("window: 32000 }"), "{text}");
            }
        }
    }
}
