//! The outcome of tasks and runs, as every report (JUnit, summaries, exit code) reads it.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use drover_message::Usage;

/// A task's outcome: it did its work, it did not, or drover could not run it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Passed,
    Failed,
    Error,
}

impl Status {
    /// The process exit code this outcome calls for (README.md, "Exit codes": 0, 1, 3).
    pub fn exit_code(self) -> i32 {
        match self {
            Status::Passed => 0,
            Status::Failed => 1,
            Status::Error => 3,
        }
    }
}

/// Why a task's run ended: the `reason` of the transcript's `run_end` event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndReason {
    /// The model ended its turn without asking for tools, and every check passed.
    EndTurn,
    MaxTurns,
    Timeout,
    Budget,
    ChecksFailed,
    /// The model's output was cut at its token limit and the task could not go on.
    MaxTokens,
    /// The model refused to continue.
    Refusal,
    ProviderError,
    /// The API refused the request: the conversation no longer fits the context window.
    ContextExhausted,
    ReplayDrift,
    InternalError,
    /// The OS sandbox for shell commands cannot be enforced on this machine; the task
    /// did not run rather than run unsandboxed (`sandbox: off` opts out explicitly).
    SandboxUnavailable,
    /// drover was interrupted (SIGINT/SIGTERM, e.g. a cancelled CI job): the task was cut
    /// short or never started.
    Interrupted,
    /// A `setup:` command failed; the agent never ran (no model request was made).
    SetupFailed,
    /// A required MCP server did not start; the agent never ran.
    McpUnavailable,
    /// The final answer was not valid against `output.schema` after it was sent back
    /// twice.
    InvalidOutput,
    /// A hook ended the run (`continue: false`, or a blocked prompt).
    HookStopped,
    /// The model made the same call with the same result `limits.max_identical_calls`
    /// times in a row after it was told it was repeating itself.
    Loop,
    /// `repo:` could not be cloned or fetched for a reason that may pass (the host down
    /// or unreachable, the connection refused or cut, the time limit); the agent never
    /// ran.
    RepoUnavailable,
    /// The remote refused the clone or fetch for a reason that will come again (no such
    /// ref, authentication refused, not a repository); the agent never ran.
    RepoRefused,
}

impl EndReason {
    /// The task status this reason implies.
    pub fn status(self) -> Status {
        match self {
            EndReason::EndTurn => Status::Passed,
            EndReason::ProviderError
            | EndReason::InternalError
            | EndReason::SandboxUnavailable
            | EndReason::Interrupted
            | EndReason::SetupFailed
            | EndReason::McpUnavailable
            | EndReason::RepoUnavailable
            | EndReason::RepoRefused => Status::Error,
            _ => Status::Failed,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            EndReason::EndTurn => "end_turn",
            EndReason::MaxTurns => "max_turns",
            EndReason::Timeout => "timeout",
            EndReason::Budget => "budget",
            EndReason::ChecksFailed => "checks_failed",
            EndReason::MaxTokens => "max_tokens",
            EndReason::Refusal => "refusal",
            EndReason::ProviderError => "provider_error",
            EndReason::ContextExhausted => "context_exhausted",
            EndReason::ReplayDrift => "replay_drift",
            EndReason::InternalError => "internal_error",
            EndReason::SandboxUnavailable => "sandbox_unavailable",
            EndReason::Interrupted => "interrupted",
            EndReason::SetupFailed => "setup_failed",
            EndReason::McpUnavailable => "mcp_unavailable",
            EndReason::InvalidOutput => "invalid_output",
            EndReason::HookStopped => "hook_stopped",
            EndReason::Loop => "loop",
            EndReason::RepoUnavailable => "repo_unavailable",
            EndReason::RepoRefused => "repo_refused",
        }
    }
}

/// One check command and how it went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckReport {
    pub name: String,
    pub command: String,
    /// None when the command was killed (timeout) or could not start.
    pub exit_code: Option<i32>,
    pub passed: bool,
    pub timed_out: bool,
    pub duration_ms: u64,
    /// The last part of the merged stdout/stderr, for failure messages; for an
    /// expectation, what was found.
    pub output_tail: String,
    /// An `expect:` entry, not a command: `command` is what was expected,
    /// `output_tail` what changed, and there is no exit code.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub expectation: bool,
}

/// A tool call the policy denied.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Denial {
    pub tool_use_id: String,
    pub tool: String,
    pub input: Value,
    pub rule: Option<String>,
    pub reason: String,
}

/// Where one todo stands.
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    Pending,
    InProgress,
    Completed,
}

/// One item of the list, with Claude Code's field names so transcripts and summaries
/// read the same as the model's input (TodoWrite's input schema is derived from it).
#[derive(Serialize, Deserialize, schemars::JsonSchema, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
#[schemars(description = "One item of the todo list.")]
pub struct Todo {
    /// What is to be done, imperative ("Run the tests").
    #[schemars(length(min = 1))]
    pub content: String,
    pub status: TodoStatus,
    /// The same in the present continuous ("Running the tests"), shown while in progress.
    #[serde(rename = "activeForm")]
    #[schemars(length(min = 1))]
    pub active_form: String,
}

/// Everything the reports say about one task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskReport {
    pub name: String,
    /// The spec file the task came from (its JUnit test suite).
    pub spec_path: PathBuf,
    pub status: Status,
    pub reason: EndReason,
    /// One sentence for people: what ended the task, with figures.
    pub message: String,
    pub provider: String,
    pub model: String,
    pub turns: u32,
    pub usage: Usage,
    /// None when the model's price is unknown.
    pub cost_usd: Option<f64>,
    /// Wall time of the task, as `duration_ms` (read as `duration` too, its name in
    /// older summaries, so `report merge` takes them).
    #[serde(rename = "duration_ms", alias = "duration", with = "duration_ms")]
    pub duration: Duration,
    pub checks: Vec<CheckReport>,
    /// The `setup:` commands, in order, as far as they ran.
    #[serde(default)]
    pub setup: Vec<CheckReport>,
    pub denials: Vec<Denial>,
    /// Workspace paths (relative, `/`-separated) the run added, changed or deleted.
    pub files_changed: Vec<String>,
    /// Files added, changed or deleted where the starting ignore rules and build trees
    /// keep them out of the diff and `files_changed`: counted so a reviewer sees them.
    #[serde(default)]
    pub ignored_changes: usize,
    /// Changed paths the spec's `diff.exclude` left out of the diff, `files_changed` and
    /// the expectations: named so nothing is left out silently. Absent when none were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excluded_from_diff: Option<ExcludedFromDiff>,
    /// The connections the task's sandboxed commands tried under rules naming hosts
    /// (absent without such rules, or when none was tried).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<crate::network::NetworkTally>,
    /// The last assistant text, for people reading the report.
    pub final_text: String,
    /// The model's plan as it last wrote it with TodoWrite.
    #[serde(default)]
    pub todos: Vec<Todo>,
    /// Where this task's transcript and diff are.
    pub artifacts_dir: PathBuf,
    /// How many secret values were replaced by `[redacted]` in this task's tool results,
    /// transcript and artifacts.
    #[serde(default)]
    pub redacted: u64,
    /// The task's MCP servers: how each started and how many calls its tools got.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mcp_servers: Vec<McpServerReport>,
    /// Rounds of the agent loop (`retry.max_attempts`); the status is the last one's.
    #[serde(default = "one")]
    pub attempts: u32,
    /// Hook commands run (or, in a replay, answered from the recording).
    #[serde(default)]
    pub hook_runs: u64,
    /// The final answer, valid against `output.schema` (also in `output.json`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<serde_json::Value>,
    /// Each sub-agent run (the `Agent` tool), in the order they ended. The task's
    /// `usage` and `cost_usd` include theirs; its `turns` are the main agent's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<AgentRun>,
    /// Model turns of all sub-agents together (`turns` are the main agent's).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub agent_turns: u32,
    /// A replay's results that differed from the recording (replays only; absent when
    /// none did).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift: Option<super::DriftReport>,
    /// The commit the task's workspace started from and whether it was dirty (absent
    /// outside a git repository).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<super::StartCommit>,
    /// A replay's: whether the checks ran on the replayed result and whose outcome the
    /// status and reason are (absent for a run or a resume).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<super::ReplayJudgement>,
    /// How the conversation was kept inside the model's window (absent when it never
    /// had to be compacted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<crate::context::ContextTally>,
    /// What the model wrote in its wrap-up turn (`limits.wrap_up`) when a limit ended
    /// the run: where the work stands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wrap_up: Option<String>,
    /// When the task started (RFC 3339, UTC): of a task run more than once, `report
    /// merge` keeps the latest (absent in summaries older than it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    /// The task's other runs among the inputs of `report merge` (a retried pod, shard or
    /// `--only` run), earliest first; this report is the latest. Absent when it ran once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub earlier_runs: Vec<EarlierRun>,
}

/// A run of a task that a later run of it replaced in `report merge`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EarlierRun {
    pub status: Status,
    pub reason: EndReason,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    /// The input of `report merge` it came from (its artifacts are not copied).
    pub from: PathBuf,
}

fn is_zero(count: &u32) -> bool {
    *count == 0
}

/// One run of a sub-agent, for summary.json and the transcript's `agent_end`.
/// What `diff.exclude` left out: how many paths, and the first [`EXCLUDED_LISTED`] of
/// them (a glob like `target/` can match a whole build tree).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExcludedFromDiff {
    pub count: usize,
    pub paths: Vec<String>,
}

/// How many paths left out of the diff a report names.
pub const EXCLUDED_LISTED: usize = 100;

impl ExcludedFromDiff {
    /// The report of `paths` (sorted), naming at most [`EXCLUDED_LISTED`]; None when
    /// there are none.
    pub fn of(paths: &[String]) -> Option<ExcludedFromDiff> {
        (!paths.is_empty()).then(|| ExcludedFromDiff {
            count: paths.len(),
            paths: paths.iter().take(EXCLUDED_LISTED).cloned().collect(),
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentRun {
    pub agent_id: String,
    /// Its name in `agents:` (the call's `subagent_type`).
    pub agent_type: String,
    pub parent_tool_use_id: String,
    /// 1 for the main agent's sub-agents, 2 for theirs.
    pub depth: u32,
    pub reason: EndReason,
    pub turns: u32,
    pub usage: Usage,
    /// None when its model's price is unknown.
    pub cost_usd: Option<f64>,
    pub duration_ms: u64,
}

fn one() -> u32 {
    1
}

/// One MCP server of a task, for summary.json.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpServerReport {
    pub name: String,
    /// `started` or `failed`.
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    /// Tools offered to the model.
    pub tools: usize,
    /// Calls of its tools the policy allowed and drover made.
    pub calls: u64,
}

/// All tasks of one `drover run` or `drover replay`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    pub tasks: Vec<TaskReport>,
    /// The shard this run was (`--shard K/N`); None for a whole run or a merge.
    #[serde(default)]
    pub shard: Option<ShardId>,
}

/// Which shard of how many a run was: `index` is 1-based, as `--shard K/N` says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ShardId {
    pub index: usize,
    pub count: usize,
}

impl RunReport {
    /// The worst outcome of any task (passed when there are none).
    pub fn status(&self) -> Status {
        self.tasks
            .iter()
            .map(|task| task.status)
            .max()
            .unwrap_or(Status::Passed)
    }
}

mod duration_ms {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(
        duration: &Duration,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(u64::try_from(duration.as_millis()).unwrap_or(u64::MAX))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Duration, D::Error> {
        Ok(Duration::from_millis(u64::deserialize(deserializer)?))
    }
}

/// Is `name` a task name as specs allow them (`[A-Za-z0-9._-]`, not `.` or `..`), so
/// safe as one part of a path? Every reader of an artifacts directory from elsewhere
/// checks a task's name with it before using it as a folder's.
pub fn is_plain_task_name(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}
