//! The JSONL transcript: one event per line, written and flushed as it happens, so a run
//! that is killed still leaves every event up to that moment.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Redactor;
use drover_message::{ContentBlock, Image, StopReason, Usage};

/// An MCP tool's name on its server and the name the model calls it by.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpToolName {
    pub tool: String,
    pub name: String,
    /// Why `name` is not `mcp__<server>__<tool>`: `sanitized` or `shortened` (a
    /// transcript of an earlier drover may say `collided`); absent when it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renamed: Option<String>,
}

/// An MCP tool that was not offered: the name it came out as is another tool's too.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpToolLeftOut {
    /// Its own name on its server.
    pub tool: String,
    /// The name it would have been offered under.
    pub name: String,
    /// Why it was left out, naming the tools that share the name.
    pub reason: String,
}

/// A file of project instructions (`CLAUDE.md`, `AGENTS.md`, or one they import) as the
/// model was given it, in `run_start`: a replay and a resume build the same system
/// prompt from these, never from the files of their own workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstructionFile {
    /// Its path relative to the workspace root.
    pub path: String,
    /// The file whose `@path` import brought it in; absent for a file the spec (or the
    /// default list) names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imported_by: Option<String>,
    /// Its text as given (only its head when it was cut).
    pub text: String,
    /// The file's size in bytes when its text was cut at drover's cap; absent when whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut_from: Option<u64>,
}

/// What the project gave the model, in `run_start` (fields of that event): a replay and
/// a resume build the same system prompt and answer `Skill` calls from these alone.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunProject {
    /// The project instructions the model was given, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub instructions: Vec<InstructionFile>,
    /// The skills the task offered, by name: description, body and directory.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub skills: Value,
}

/// The defaults file merged into the spec (`drover.yaml` beside it; docs/defaults.md), in
/// `run_start`: with the spec's text, what makes the spec the run ran, so a replay makes
/// it again without the file, and a resume or `replay --spec` knows the file unchanged.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunDefaults {
    /// The file as it was read (absolute).
    pub path: String,
    pub sha256: String,
    /// Its text.
    pub yaml: String,
}

/// The limits, outputs and start of a run, in its `run_start` (fields of that event).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunSettings {
    /// The commit the workspace started from and whether it was dirty; absent outside
    /// a git repository and in transcripts older than it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<StartCommit>,
    /// The budget in force (the spec's, or `--max-cost-usd`), so a resume keeps it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
    /// The time limit in force (`30m`, `none`; the spec's, or `--timeout`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
    /// The token budget in force (the spec's, or `--max-tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// The run's artifacts directory and every task of the run: what the starting state
    /// left out (their folders and reports), so a resume leaves out the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifacts: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub run_tasks: Vec<String>,
    /// What the files the spec loads by reference held that drover skipped or left out
    /// (a settings file's hook events with no equivalent, an agent file's unknown tool,
    /// a `.mcp.json` key drover does not use): the notes printed when the task was
    /// planned, kept with the run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The rules `permissions_from:` took from settings files, as they applied, so a
    /// replay decides by them without the files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub permissions_from: Vec<BorrowedRules>,
}

/// Where a task in a git repository started: the commit checked out and whether the
/// workspace held anything else (changed, added or untracked files git does not
/// ignore, drover's own outputs left out), in `run_start` and summary.json. A replay or
/// resume of an `isolation: worktree` run starts from `commit` again. Read from a
/// recording it is untrusted: `commit` is checked to be a full object id of a commit
/// of the local repository before git is given it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StartCommit {
    /// The full object id (40 hex digits, 64 in a SHA-256 repository).
    pub commit: String,
    /// The starting workspace was not the commit alone.
    pub dirty: bool,
    /// The repository `repo:` cloned the workspace from; absent for a workspace that was
    /// already on disk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<StartRepository>,
}

/// The repository a task's workspace was cloned from: its URL without credentials and
/// the ref the spec asked for (the commit it resolved to is the [`StartCommit`]'s).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StartRepository {
    /// The credential-free URL (no password, no user name over HTTP).
    pub url: String,
    /// The branch, tag or commit asked for; absent: the remote's HEAD.
    #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
    pub git_ref: Option<String>,
}

impl StartCommit {
    /// The start in words: `commit abc…` or `https://host/a.git at commit abc… (ref
    /// main)`, `, dirty` when the workspace was not the commit alone.
    pub fn describe(&self) -> String {
        let dirty = if self.dirty { ", dirty" } else { "" };
        match &self.repository {
            None => format!("commit {}{dirty}", self.commit),
            Some(repository) => {
                let asked = repository.git_ref.as_deref().map_or_else(
                    || " (the remote's HEAD)".to_string(),
                    |r| format!(" (ref {r})"),
                );
                format!("{} at commit {}{asked}{dirty}", repository.url, self.commit)
            }
        }
    }
}

/// The rules one settings file gave a task (`permissions_from:`): those that applied,
/// by the list they were written in; the ones left out are in the notes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BorrowedRules {
    /// The settings file, as the spec names it.
    pub file: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ask: Vec<String>,
}

/// One transcript event. The `type` names and the fields listed in the README ("Artifacts", the transcript table) are a
/// contract; fields are only ever added.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    RunStart {
        drover_version: String,
        task: String,
        spec_sha256: String,
        provider: String,
        model: String,
        tools: Vec<String>,
        /// The spec file as given (replay re-reads the spec from `spec_yaml`).
        spec_path: String,
        /// The spec's text, so a replay runs exactly the recorded task.
        spec_yaml: String,
        /// The defaults file merged into the spec, when its directory has one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        defaults: Option<Box<RunDefaults>>,
        /// The matrix entry the task was expanded from (`matrix:`), its values as
        /// substituted: a replay or resume expands the same task from `spec_yaml` with
        /// them, without the matrix's file.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        matrix: Option<Box<std::collections::BTreeMap<String, String>>>,
        /// The workspace the task started from (before any isolation copy).
        workspace: String,
        /// Fingerprint of the starting workspace; replay compares it with its own.
        workspace_sha256: String,
        /// The turn limit in force (the spec's, or `--max-turns`).
        max_turns: Option<u32>,
        /// The OS sandbox around shell commands: `{"enabled": false}`, or `enabled`,
        /// `network`, `writable`, `read_denied`. Null in transcripts older than it.
        #[serde(default, skip_serializing_if = "Value::is_null")]
        sandbox: Value,
        /// Secret variables whose values are not redacted because redacting them would
        /// corrupt ordinary text (a dummy key `x`): names and reasons, never values.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        redaction_skipped: Vec<crate::redact::SkippedSecret>,
        /// `output:`'s schema as the run used it (so a replay needs no schema file).
        #[serde(default, skip_serializing_if = "Value::is_null")]
        output_schema: Value,
        /// The sub-agents the task offered, by name (so a replay needs no agent files).
        #[serde(default, skip_serializing_if = "Value::is_null")]
        agents: Value,
        /// What the project gave the model: its instructions and skills.
        #[serde(flatten)]
        project: Box<RunProject>,
        /// What a resume needs to run on as the recorded run did.
        #[serde(flatten)]
        settings: Box<RunSettings>,
    },
    ModelResponse {
        turn: u32,
        content: Vec<ContentBlock>,
        stop_reason: StopReason,
        usage: Usage,
        /// What this turn's tokens cost in USD; null when the model's price is unknown.
        #[serde(default)]
        cost_usd: Option<f64>,
    },
    /// A provider request failed transiently and is tried again after `delay_ms`.
    Retry {
        /// The attempt that failed, from 1.
        attempt: u32,
        reason: String,
        /// The HTTP status, when the failure was one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<u16>,
        delay_ms: u64,
    },
    ToolCall {
        id: String,
        name: String,
        input: Value,
    },
    Permission {
        tool_use_id: String,
        decision: Decision,
        rule: Option<String>,
        reason: String,
    },
    ToolResult {
        tool_use_id: String,
        is_error: bool,
        content: String,
        /// Images the tool returned (an MCP tool's), which the model received too.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<Image>,
        /// How long the tool ran (0 when it never ran: invalid, denied, cancelled).
        #[serde(default)]
        duration_ms: u64,
    },
    /// A replayed tool result differs from the recorded one.
    ReplayDrift {
        tool_use_id: String,
        expected: String,
        actual: String,
        /// The call's number in the replay, from 1.
        #[serde(default)]
        call: u32,
        #[serde(default)]
        tool: String,
        /// A short unified diff, recorded → replayed, volatile spans masked.
        #[serde(default)]
        diff: String,
    },
    /// One `setup:` command, after it ended.
    Setup {
        name: String,
        command: String,
        exit_code: Option<i32>,
        passed: bool,
        timed_out: bool,
        duration_ms: u64,
        /// The end of its output (redacted), to tell why it failed.
        output_tail: String,
    },
    /// A check starts (its `check` event follows when it ends): `number` of `of`.
    CheckStart {
        name: String,
        command: String,
        number: u32,
        of: u32,
    },
    Check {
        name: String,
        command: String,
        exit_code: Option<i32>,
        passed: bool,
        timed_out: bool,
        duration_ms: u64,
        /// An `expect:` entry: `command` is what was expected, `found` what changed.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        expectation: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        found: Option<String>,
    },
    /// An MCP server started, with its protocol version and the names its tools are
    /// offered under, or could not start, with why.
    McpServer {
        server: String,
        /// `started` or `failed`.
        status: String,
        required: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        protocol_version: Option<String>,
        /// Each tool's own name and the name offered to the model.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tools: Vec<McpToolName>,
        /// The tools not offered because their name would be another's too.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        left_out: Vec<McpToolLeftOut>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// A round of the agent loop begins (`retry.max_attempts`); from the second on,
    /// `failed` names what failed and `message` is what the agent was sent.
    Attempt {
        attempt: u32,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        failed: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// One hook command ran (or, in a replay, its recorded answer was given again).
    Hook {
        event: String,
        matcher: String,
        command: String,
        exit_code: Option<i32>,
        #[serde(default)]
        timed_out: bool,
        duration_ms: u64,
        /// `block`, `stop`, `deny`, `ask`, `allow`, `defer`, `error` or `none`.
        decision: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool_use_id: Option<String>,
        /// What the hook printed (redacted), from which a replay reads its answer again.
        #[serde(default)]
        stdout: String,
        #[serde(default)]
        stderr: String,
    },
    /// A message drover itself added to the conversation as the user: a Stop hook's
    /// reason, failed checks, an invalid final answer, hook context.
    UserMessage { source: String, text: String },
    /// The final answer checked against `output.schema`.
    Output {
        valid: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        value: Option<Value>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        errors: Vec<String>,
    },
    /// A sub-agent starts (its own events follow, each with its `agent_id`).
    AgentStart {
        agent_type: String,
        description: String,
        prompt: String,
        provider: String,
        model: String,
        tools: Vec<String>,
        depth: u32,
    },
    /// A sub-agent ended; its figures count toward the task's limits.
    AgentEnd {
        agent_type: String,
        reason: crate::EndReason,
        message: String,
        turns: u32,
        usage: Usage,
        cost_usd: Option<f64>,
        duration_ms: u64,
    },
    /// A resumed run continues this transcript: the lines before it are the earlier
    /// run's, kept up to the end of its last complete turn; the recorded turns are
    /// replayed (their tools run again, drift reported) and the live model goes on.
    Resume {
        /// The recorded turns replayed before the live model takes over.
        replayed_turns: u32,
        /// The earlier run's lines kept (this event follows them).
        kept_lines: usize,
        /// Its lines dropped after them: a turn cut short, its checks, its `run_end`.
        dropped_lines: usize,
        /// How the earlier run ended; null when it was killed before its `run_end`.
        previous_reason: Option<crate::EndReason>,
        drover_version: String,
        provider: String,
        model: String,
        /// The limits in force from now on (`--max-turns`, `--max-cost-usd` may raise them).
        max_turns: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_cost_usd: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_tokens: Option<u64>,
        /// Tokens spent before the resume that its replay does not spend again (turns
        /// cut short, the page model's, earlier resumes'): counted from the start.
        #[serde(default, skip_serializing_if = "Usage::is_zero")]
        spent_before: Usage,
    },
    /// One connection a sandboxed command tried under rules naming hosts: through
    /// drover's egress proxy (allowed or denied), or around it (denied).
    Network(Box<crate::network::NetworkAttempt>),
    /// A command tried more connections than are recorded one by one: how many more,
    /// and the bytes the allowed ones among them moved.
    NetworkOmitted {
        #[serde(flatten)]
        origin: crate::network::NetworkOrigin,
        allowed: u64,
        denied: u64,
        #[serde(default)]
        bytes: u64,
    },
    /// The conversation was made smaller to stay inside the model's window.
    Compaction(Box<crate::context::Compaction>),
    /// A limit is about to end the run: the model gets one last turn, without tools, to
    /// say where the work stands (`limits.wrap_up`); its answer is the next
    /// `model_response`, and the run then ends with `reason`.
    WrapUp {
        /// Model turns before it.
        turn: u32,
        reason: crate::EndReason,
        /// What ends the run, in a sentence with figures.
        message: String,
        /// What the model was asked.
        prompt: String,
    },
    RunEnd {
        status: crate::Status,
        reason: crate::EndReason,
        /// What ended the run, in a sentence with figures.
        message: String,
        turns: u32,
        usage: Usage,
        cost_usd: Option<f64>,
        /// The model's plan as it last wrote it with TodoWrite (empty when it kept none).
        #[serde(default)]
        todos: Vec<crate::Todo>,
        /// How many secret values were replaced by `[redacted]` in this task's tool
        /// results, transcript and artifacts up to this event.
        #[serde(default)]
        redacted: u64,
        /// Model turns of all sub-agents together (absent when there were none).
        #[serde(default, skip_serializing_if = "is_zero")]
        agent_turns: u32,
    },
}

fn is_zero(count: &u32) -> bool {
    *count == 0
}

impl Event {
    /// The `check` event of a check (or expectation) that ran.
    pub fn check(report: &crate::CheckReport) -> Event {
        Event::Check {
            name: report.name.clone(),
            command: report.command.clone(),
            exit_code: report.exit_code,
            passed: report.passed,
            timed_out: report.timed_out,
            duration_ms: report.duration_ms,
            expectation: report.expectation,
            found: report.expectation.then(|| report.output_tail.clone()),
        }
    }

    /// The `setup` event of a setup step that ran.
    pub fn setup(report: &crate::CheckReport) -> Event {
        Event::Setup {
            name: report.name.clone(),
            command: report.command.clone(),
            exit_code: report.exit_code,
            passed: report.passed,
            timed_out: report.timed_out,
            duration_ms: report.duration_ms,
            output_tail: report.output_tail.clone(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Allow,
    Deny,
}

/// A transcript line: the event plus its timestamp (and, as written, `prev`: see
/// [`super::chain`]; put first in the text, ignored when reading events back).
#[derive(Serialize, Deserialize)]
struct Line {
    #[serde(flatten)]
    event: Event,
    ts: String,
    /// Set on a sub-agent's events: which agent (see [`AgentScope`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    agent_id: Option<String>,
    /// The parent's `Agent` call that started the sub-agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    parent_tool_use_id: Option<String>,
}

/// Whose events a writer writes: a sub-agent's carry its id and the parent's call that
/// started it, so a reader can fold them under that call (the main agent's carry none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentScope {
    pub agent_id: String,
    pub parent_tool_use_id: String,
}

/// An event read back with the agent that wrote it (None: the main agent).
#[derive(Debug, Clone)]
pub struct ScopedEvent {
    pub scope: Option<AgentScope>,
    pub event: Event,
}

/// Why a transcript could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum TranscriptError {
    #[error("cannot write transcript {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read transcript {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}:{line}: not a transcript event: {message}")]
    Parse {
        path: PathBuf,
        line: usize,
        message: String,
    },
}

/// Called with every event once it is written: how progress output follows a run
/// without the loop knowing anything about terminals.
pub type EventObserver = Box<dyn FnMut(&Event) + Send>;

/// Called with every line once it is written to the file, as written (redacted, with its
/// `prev`; without the newline): how `--json` shows the transcript itself while the run
/// goes on, so what a consumer reads is what the file holds.
pub type LineTap = Box<dyn FnMut(&str) + Send>;

/// Appends events to a transcript file, one flushed line each. A sub-agent writes to
/// the same file through a [`TranscriptWriter::scoped`] writer: one hash chain, lines
/// in the order they were written, each sub-agent line marked with its agent.
pub struct TranscriptWriter {
    shared: Arc<std::sync::Mutex<Shared>>,
    scope: Option<AgentScope>,
}

/// What every writer of one transcript shares.
struct Shared {
    file: File,
    path: PathBuf,
    observer: Option<EventObserver>,
    tap: Option<LineTap>,
    /// Secret values replaced in every line before it is written.
    redactor: Option<Arc<Redactor>>,
    /// The SHA-256 of the last line written: the next line's `prev`.
    prev: String,
    /// A resumed run: which of its events are not written (see [`Muted`]).
    muted: Muted,
    /// `run_end` is written: it stays the last line, whatever a writer shared with a
    /// task's background work (a proxy recording a late connection) still sends.
    ended: bool,
}

/// What a resumed run leaves out of the transcript it continues: its own `run_start`
/// always (the recorded one stands), and, while it replays the recorded turns, every
/// event that repeats a recorded one. Drift, the resume itself and the run's end are
/// always written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Muted {
    #[default]
    Nothing,
    RunStart,
    Replayed,
}

impl Muted {
    fn hides(self, event: &Event) -> bool {
        match self {
            Muted::Nothing => false,
            Muted::RunStart => matches!(event, Event::RunStart { .. }),
            Muted::Replayed => !matches!(
                event,
                Event::ReplayDrift { .. } | Event::Resume { .. } | Event::RunEnd { .. }
            ),
        }
    }
}

impl TranscriptWriter {
    pub fn create(path: &Path) -> Result<Self, TranscriptError> {
        let file = File::create(path).map_err(|source| TranscriptError::Write {
            path: path.to_path_buf(),
            source,
        })?;
        let shared = Shared {
            file,
            path: path.to_path_buf(),
            observer: None,
            tap: None,
            redactor: None,
            prev: super::chain::genesis(),
            muted: Muted::Nothing,
            ended: false,
        };
        Ok(TranscriptWriter {
            shared: Arc::new(std::sync::Mutex::new(shared)),
            scope: None,
        })
    }

    /// Continue a recorded transcript at `path`: its `kept` lines (verified, without
    /// their newlines) are written again and the chain goes on from the last. The file
    /// is replaced atomically (temp file, fsync, rename), so the recording is never
    /// lost: until the rename it is there as it was. `replaying`: events that repeat
    /// the recorded turns are left out until [`TranscriptWriter::go_live`].
    pub fn resume(path: &Path, kept: &[String], replaying: bool) -> Result<Self, TranscriptError> {
        let failed = |source| TranscriptError::Write {
            path: path.to_path_buf(),
            source,
        };
        let dir = path.parent().unwrap_or(Path::new("."));
        let mut temp = tempfile::Builder::new()
            .prefix(".transcript.resume")
            .tempfile_in(dir)
            .map_err(failed)?;
        let mut prev = super::chain::genesis();
        for line in kept {
            temp.write_all(line.as_bytes())
                .and_then(|()| temp.write_all(b"\n"))
                .map_err(failed)?;
            prev = super::chain::sha256_hex(line.as_bytes());
        }
        temp.as_file().sync_all().map_err(failed)?;
        let file = temp.persist(path).map_err(|e| failed(e.error))?;
        let shared = Shared {
            file,
            path: path.to_path_buf(),
            observer: None,
            tap: None,
            redactor: None,
            prev,
            muted: if replaying {
                Muted::Replayed
            } else {
                Muted::RunStart
            },
            ended: false,
        };
        Ok(TranscriptWriter {
            shared: Arc::new(std::sync::Mutex::new(shared)),
            scope: None,
        })
    }

    /// A resumed run has replayed the recorded turns: from now on every event is new
    /// and written (but its own `run_start`).
    pub fn go_live(&self) {
        let mut shared = self.lock();
        if shared.muted == Muted::Replayed {
            shared.muted = Muted::RunStart;
        }
    }

    /// A writer to the same transcript whose events are the sub-agent `scope`'s.
    pub fn scoped(&self, scope: AgentScope) -> TranscriptWriter {
        TranscriptWriter {
            shared: Arc::clone(&self.shared),
            scope: Some(scope),
        }
    }

    /// Another writer to the same transcript, for the same agent.
    pub fn share(&self) -> TranscriptWriter {
        TranscriptWriter {
            shared: Arc::clone(&self.shared),
            scope: self.scope.clone(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        // A writer that panicked mid-line left at worst a partial line, which the chain
        // check reports; the lines after it are still worth writing.
        self.shared
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Redact every line written from now on with `redactor`: the last pass that keeps
    /// secret values out of the transcript whatever event carries them.
    pub fn redact_with(&mut self, redactor: Arc<Redactor>) {
        self.lock().redactor = Some(redactor);
    }

    /// Show every event written from now on to `observer` too (a sub-agent's, but for
    /// its model turns).
    pub fn observe(&mut self, observer: EventObserver) {
        self.lock().observer = Some(observer);
    }

    /// Hand every line written from now on to `tap` too, as written (see [`LineTap`]).
    pub fn tap(&mut self, tap: LineTap) {
        self.lock().tap = Some(tap);
    }

    /// Write one event as one line, secret values redacted, and flush it to the OS before
    /// returning.
    pub fn write(&mut self, event: Event) -> Result<(), TranscriptError> {
        let scope = self.scope.clone();
        let mut shared = self.lock();
        let shared = &mut *shared;
        if shared.ended {
            return Ok(());
        }
        if scope.is_none() && matches!(event, Event::RunEnd { .. }) {
            shared.ended = true;
        }
        if shared.muted.hides(&event) {
            // Not written again, but shown: progress follows the replay of the recorded
            // turns (their tools run again) and counts their tokens and cost.
            let shown = !matches!(event, Event::RunStart { .. })
                && (scope.is_none() || !matches!(event, Event::ModelResponse { .. }));
            if shown && let Some(observer) = &mut shared.observer {
                observer(&event);
            }
            return Ok(());
        }
        let mut line = Line {
            event,
            ts: humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
            agent_id: scope.as_ref().map(|s| s.agent_id.clone()),
            parent_tool_use_id: scope.as_ref().map(|s| s.parent_tool_use_id.clone()),
        };
        // Serializing our own enum of plain data cannot fail; fall back to an error
        // event rather than losing the line if it ever did.
        let mut text = serde_json::to_string(&line).unwrap_or_else(|e| {
            format!(
                r#"{{"type":"internal_error","ts":"{}","message":"{e}"}}"#,
                line.ts
            )
        });
        if let Some(redactor) = &shared.redactor
            && let Some((redacted, event)) = redact_line(redactor, &text, &line)
        {
            text = redacted;
            // Progress output shows the redacted event too.
            if let Some(event) = event {
                line.event = event;
            }
        }
        let mut text = super::chain::chain_line(&text, &shared.prev);
        shared.prev = super::chain::sha256_hex(text.as_bytes());
        let line_end = text.len();
        text.push('\n');
        shared
            .file
            .write_all(text.as_bytes())
            .and_then(|()| shared.file.flush())
            .map_err(|source| TranscriptError::Write {
                path: shared.path.clone(),
                source,
            })?;
        if let Some(tap) = &mut shared.tap {
            tap(&text[..line_end]);
        }
        // Progress follows the main agent's turns; a sub-agent's calls, denials and
        // end show there too, its turns do not.
        let shown = scope.is_none() || !matches!(line.event, Event::ModelResponse { .. });
        if shown && let Some(observer) = &mut shared.observer {
            observer(&line.event);
        }
        Ok(())
    }
}

/// A transcript line with its secret values redacted, and the event it now holds; None
/// when the line held none. Redacted value by value, never drover's own field names nor
/// the event's `type`: a value chosen to match one (a header a repository's helper
/// printed) must not turn the line into one a replay cannot read.
fn redact_line(redactor: &Redactor, text: &str, line: &Line) -> Option<(String, Option<Event>)> {
    if let std::borrow::Cow::Borrowed(_) = redactor.redact(text) {
        return None;
    }
    let mut value = serde_json::to_value(line).ok()?;
    if let serde_json::Value::Object(fields) = &mut value {
        for (name, item) in fields.iter_mut() {
            if name != "type" {
                redactor.redact_json(item);
            }
        }
    }
    let event = serde_json::from_value::<Line>(value.clone())
        .ok()
        .map(|line| line.event);
    let text = serde_json::to_string(&value).ok()?;
    Some((text, event))
}

/// Reads a whole transcript back into events.
pub struct TranscriptReader;

impl TranscriptReader {
    /// The main agent's events (a sub-agent's are left out: see [`Self::read_scoped`]).
    #[cfg(test)]
    pub fn read(path: &Path) -> Result<Vec<Event>, TranscriptError> {
        Ok(Self::read_scoped(path)?
            .into_iter()
            .filter(|scoped| scoped.scope.is_none())
            .map(|scoped| scoped.event)
            .collect())
    }

    /// Every event, each with the agent that wrote it.
    pub fn read_scoped(path: &Path) -> Result<Vec<ScopedEvent>, TranscriptError> {
        let file = File::open(path).map_err(|source| TranscriptError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let mut events = Vec::new();
        for (index, line) in BufReader::new(file).lines().enumerate() {
            let line = line.map_err(|source| TranscriptError::Read {
                path: path.to_path_buf(),
                source,
            })?;
            if line.trim().is_empty() {
                continue;
            }
            let event = Self::parse_line(&line).map_err(|e| TranscriptError::Parse {
                path: path.to_path_buf(),
                line: index + 1,
                message: e.to_string(),
            })?;
            events.push(event);
        }
        Ok(events)
    }

    /// One transcript line's event, with the agent that wrote it.
    pub fn parse_line(line: &str) -> Result<ScopedEvent, serde_json::Error> {
        let parsed: Line = serde_json::from_str(line)?;
        let scope = match (parsed.agent_id, parsed.parent_tool_use_id) {
            (Some(agent_id), parent) => Some(AgentScope {
                agent_id,
                parent_tool_use_id: parent.unwrap_or_default(),
            }),
            (None, _) => None,
        };
        Ok(ScopedEvent {
            scope,
            event: parsed.event,
        })
    }
}

#[cfg(test)]
#[path = "transcript_tests.rs"]
mod tests;
