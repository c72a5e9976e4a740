//! Claude Code-compatible hooks: user commands run at points of the loop (a session
//! starts, a tool is about to run or has run, the agent wants to stop, …), given the
//! event as JSON on stdin, answering with an exit code and optional JSON. What an answer
//! may do is decided by the loop; this module runs hooks and reads their answers.
//!
//! Hooks run like the agent's commands (scrubbed environment, the task's sandbox unless
//! a hook's `sandbox:` says otherwise), because the agent can write the files they run.
//! In a replay they are not run at all: their recorded answers are given again.

mod bound;
mod effect;

use std::collections::VecDeque;
use std::ffi::OsStr;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

pub(crate) use effect::{Combined, Effect, Permission};

use crate::record::Event;
use crate::sandbox::exec::{CommandEnv, run_shell_split};
use crate::spec::{HookEvent, HookMatcher};

/// One hook command, ready to run.
pub(crate) struct HookCommand {
    pub command: String,
    pub timeout: Duration,
    pub env: CommandEnv,
}

/// The hooks of one `matcher` entry.
pub(crate) struct HookEntry {
    pub event: HookEvent,
    /// As written (for the transcript).
    pub matcher: String,
    pub compiled: HookMatcher,
    pub hooks: Vec<HookCommand>,
}

/// What every hook is told about the session, and where its input goes.
#[derive(Debug, Clone)]
pub(crate) struct HookSession {
    pub session_id: String,
    pub transcript_path: PathBuf,
    /// The workspace: the hooks' working directory and `CLAUDE_PROJECT_DIR`.
    pub cwd: PathBuf,
    pub task: String,
    /// A directory only drover writes (see `run::task::commands`), for the input files.
    pub io_dir: PathBuf,
}

/// One hook run, as the transcript records it.
#[derive(Debug, Clone)]
pub(crate) struct HookRun {
    pub event: HookEvent,
    pub matcher: String,
    pub command: String,
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub duration_ms: u64,
    pub stdout: String,
    pub stderr: String,
    pub effect: Effect,
}

impl HookRun {
    /// The transcript event of this run (`tool_use_id` for the tool events).
    pub(crate) fn event(&self, tool_use_id: Option<&str>) -> Event {
        Event::Hook {
            event: self.event.as_str().to_string(),
            matcher: self.matcher.clone(),
            command: self.command.clone(),
            exit_code: self.exit_code,
            timed_out: self.timed_out,
            duration_ms: self.duration_ms,
            decision: self.effect.decision().to_string(),
            reason: self
                .effect
                .block
                .clone()
                .or_else(|| self.effect.stop.clone())
                .or_else(|| self.effect.permission_reason.clone())
                .or_else(|| self.effect.error.clone()),
            tool_use_id: tool_use_id.map(str::to_string),
            stdout: self.stdout.clone(),
            stderr: self.stderr.clone(),
        }
    }
}

/// Where answers come from: the commands, or a recording.
enum Source {
    Live(Vec<HookEntry>),
    Recorded(Mutex<VecDeque<RecordedRun>>),
}

/// A recorded hook run, to be given again in a replay.
struct RecordedRun {
    event: String,
    tool_use_id: Option<String>,
    run: HookRun,
}

/// The task's hooks.
pub(crate) struct Hooks {
    source: Source,
    session: Option<HookSession>,
    runs: AtomicU64,
    /// Numbers each input file, so no two invocations share one.
    inputs: AtomicU64,
}

impl Hooks {
    /// No hooks: every event passes.
    pub(crate) fn none() -> Hooks {
        Hooks {
            source: Source::Live(Vec::new()),
            session: None,
            runs: AtomicU64::new(0),
            inputs: AtomicU64::new(0),
        }
    }

    pub(crate) fn live(entries: Vec<HookEntry>, session: HookSession) -> Hooks {
        Hooks {
            source: Source::Live(entries),
            session: Some(session),
            runs: AtomicU64::new(0),
            inputs: AtomicU64::new(0),
        }
    }

    /// A replay's hooks: the recorded runs, answered again in order.
    pub(crate) fn recorded(events: &[Event]) -> Hooks {
        let runs = events
            .iter()
            .filter_map(|event| match event {
                Event::Hook {
                    event,
                    matcher,
                    command,
                    exit_code,
                    timed_out,
                    duration_ms,
                    tool_use_id,
                    stdout,
                    stderr,
                    ..
                } => {
                    let kind = crate::spec::HookEvent::parse(event)?;
                    Some(RecordedRun {
                        event: event.clone(),
                        tool_use_id: tool_use_id.clone(),
                        run: HookRun {
                            event: kind,
                            matcher: matcher.clone(),
                            command: command.clone(),
                            exit_code: *exit_code,
                            timed_out: *timed_out,
                            duration_ms: *duration_ms,
                            effect: Effect::of(
                                *exit_code,
                                *timed_out,
                                stdout,
                                stderr,
                                plain_is_context(kind),
                            ),
                            stdout: stdout.clone(),
                            stderr: stderr.clone(),
                        },
                    })
                }
                _ => None,
            })
            .collect();
        Hooks {
            source: Source::Recorded(Mutex::new(runs)),
            session: None,
            runs: AtomicU64::new(0),
            inputs: AtomicU64::new(0),
        }
    }

    /// How many hook runs there have been.
    pub(crate) fn count(&self) -> u64 {
        self.runs.load(Ordering::Relaxed)
    }

    /// Run the hooks of `event` that match `subject` (a tool name, a session source or
    /// end reason; ignored by events without matchers), all at once, each with the
    /// common fields and `fields` on stdin. `tool_use_id` ties a replay's answers to
    /// their call. Results in configuration order.
    pub(crate) async fn run(
        &self,
        event: HookEvent,
        subject: &str,
        tool_use_id: Option<&str>,
        fields: Map<String, Value>,
    ) -> Vec<HookRun> {
        let runs = match &self.source {
            Source::Recorded(queue) => take_recorded(queue, event, tool_use_id),
            Source::Live(entries) => self.run_live(entries, event, subject, fields).await,
        };
        self.runs.fetch_add(runs.len() as u64, Ordering::Relaxed);
        runs
    }

    async fn run_live(
        &self,
        entries: &[HookEntry],
        event: HookEvent,
        subject: &str,
        fields: Map<String, Value>,
    ) -> Vec<HookRun> {
        let matching = matching(entries, event, subject);
        let Some(session) = self.session.as_ref().filter(|_| !matching.is_empty()) else {
            return Vec::new();
        };
        let number = self.inputs.fetch_add(1, Ordering::Relaxed);
        let path = session.io_dir.join(format!(
            "{}-{number}-{}.json",
            event.as_str(),
            std::process::id()
        ));
        let written = serde_json::to_vec(&Value::Object(input_of(session, event, fields)))
            .map_err(std::io::Error::other)
            .and_then(|bytes| write_new(&path, &bytes));
        let runs = matching
            .into_iter()
            .map(|(entry, hook)| run_one(session, entry, hook, event, &written, &path));
        let runs = futures::future::join_all(runs).await;
        let _ = std::fs::remove_file(&path);
        runs
    }
}

/// The hooks of `entries` for `event` whose matcher takes `subject`, each with its entry.
fn matching<'a>(
    entries: &'a [HookEntry],
    event: HookEvent,
    subject: &str,
) -> Vec<(&'a HookEntry, &'a HookCommand)> {
    let has_matcher = matches!(
        event,
        HookEvent::PreToolUse
            | HookEvent::PostToolUse
            | HookEvent::PostToolUseFailure
            | HookEvent::SessionStart
            | HookEvent::SessionEnd
            | HookEvent::PreCompact
    );
    entries
        .iter()
        .filter(|entry| entry.event == event)
        .filter(|entry| {
            !has_matcher
                || entry.compiled.matches(subject)
                // `Task` is Claude Code's former name of `Agent`: either name matches.
                || (subject == crate::policy::AGENT_TOOL
                    && entry.compiled.matches(crate::policy::AGENT_TOOL_ALIAS))
                // Claude Code's own SessionEnd reason for an unattended end.
                || (event == HookEvent::SessionEnd && entry.compiled.matches("other"))
        })
        .flat_map(|entry| entry.hooks.iter().map(move |hook| (entry, hook)))
        .collect()
}

/// What the hooks of `event` read on stdin: the session's common fields and `fields`.
fn input_of(
    session: &HookSession,
    event: HookEvent,
    fields: Map<String, Value>,
) -> Map<String, Value> {
    let mut input = Map::new();
    input.insert("session_id".into(), json!(session.session_id));
    input.insert(
        "transcript_path".into(),
        json!(session.transcript_path.display().to_string()),
    );
    input.insert("cwd".into(), json!(session.cwd.display().to_string()));
    input.insert("permission_mode".into(), json!("dontAsk"));
    input.insert("hook_event_name".into(), json!(event.as_str()));
    input.extend(fields);
    input
}

/// Run one hook command on the input file at `path` (if `written`), and read its answer.
async fn run_one(
    session: &HookSession,
    entry: &HookEntry,
    hook: &HookCommand,
    event: HookEvent,
    written: &std::io::Result<()>,
    path: &std::path::Path,
) -> HookRun {
    let started = Instant::now();
    let outcome = match written {
        Ok(()) => {
            let extra: [(&str, &OsStr); 2] = [
                ("CLAUDE_PROJECT_DIR", session.cwd.as_os_str()),
                ("DROVER_TASK", OsStr::new(&session.task)),
            ];
            run_shell_split(
                &hook.command,
                &session.cwd,
                hook.timeout,
                &extra,
                &hook.env,
                path,
            )
            .await
        }
        Err(error) => Err(std::io::Error::new(error.kind(), error.to_string())),
    };
    let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let (exit_code, timed_out, stdout, stderr, effect) = match outcome {
        Ok(out) => {
            // The answer is read from what the transcript keeps, as a replay reads it.
            let stdout = bound::bounded(out.stdout, out.stdout_omitted);
            let stderr = bound::bounded(out.stderr, out.stderr_omitted);
            let effect = Effect::of(
                out.exit_code,
                out.timed_out,
                &stdout,
                &stderr,
                plain_is_context(event),
            );
            (out.exit_code, out.timed_out, stdout, stderr, effect)
        }
        Err(error) => {
            let message = format!("drover could not start the hook: {error}");
            // A guard that could not run is no consent: a PreToolUse hook
            // drover failed to start denies the call (fail closed).
            let refused = (event == HookEvent::PreToolUse).then_some(Permission::Deny);
            let effect = Effect {
                error: Some(message.clone()),
                permission: refused,
                permission_reason: refused.map(|_| message.clone()),
                ..Effect::default()
            };
            (None, false, String::new(), message, effect)
        }
    };
    HookRun {
        event,
        matcher: entry.matcher.clone(),
        command: hook.command.clone(),
        exit_code,
        timed_out,
        duration_ms,
        stdout,
        stderr,
        effect,
    }
}

/// Write `bytes` to a file that must not exist yet, readable by the hooks only through
/// the directory (which only drover writes).
fn write_new(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    file.write_all(bytes)
}

/// Whether plain stdout is context for the model (Claude Code: these two events only).
fn plain_is_context(event: HookEvent) -> bool {
    matches!(
        event,
        HookEvent::SessionStart | HookEvent::UserPromptSubmit | HookEvent::PreCompact
    )
}

fn take_recorded(
    queue: &Mutex<VecDeque<RecordedRun>>,
    event: HookEvent,
    tool_use_id: Option<&str>,
) -> Vec<HookRun> {
    let mut queue = match queue.lock() {
        Ok(queue) => queue,
        Err(poisoned) => poisoned.into_inner(),
    };
    let mut runs = Vec::new();
    while let Some(front) = queue.front() {
        if front.event != event.as_str() || front.tool_use_id.as_deref() != tool_use_id {
            break;
        }
        if let Some(recorded) = queue.pop_front() {
            runs.push(recorded.run);
        }
    }
    runs
}
