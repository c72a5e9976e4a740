//! What one task will do, decided before any task starts: the parts every task has
//! (its spec, rules, model, limits, workspace) and its mode. A replay or a resume is not
//! a live plan with some fields overridden: what only a replay or a resume needs lives in
//! its [`Mode`], so a live run with recorded answers cannot be written down.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use crate::model::remote::RemoteConfig;
use crate::policy::RuleSet;
use crate::record::ReplayJudgement;
use crate::record::transcript::InstructionFile;
use crate::run::recording::{RecordedPatch, RecordedResults, Recording};
use crate::spec::{
    AgentSpec, HooksSpec, Isolation, LoadedSpec, McpServerSpec, ScriptTurn, SkillSpec,
};
use crate::tools::recorded::RecordedAnswers;
use crate::workspace::baseline::IndexSnapshot;
use crate::workspace::instructions::Wanted;

/// Everything needed to run one task.
pub(crate) struct TaskPlan {
    pub spec: LoadedSpec,
    /// The task's permission rules (the spec's and `permissions_from:`'s), parsed once
    /// when the task was planned.
    pub rules: RuleSet,
    /// The rules `permissions_from:` gave, for `run_start` (a replay's: the recorded ones).
    pub borrowed_rules: Vec<crate::record::transcript::BorrowedRules>,
    /// The MCP servers to start (`mcp.servers` and `mcp.config`'s), checked when the
    /// task was planned; none for a replay unless `--mcp` asks.
    pub mcp_servers: BTreeMap<String, McpServerSpec>,
    /// Where `${VAR}` in MCP servers' `env:`/`headers:` takes values from: drover's
    /// environment for a run, only the `--mcp-env` variables for a replay.
    pub mcp_vars: crate::mcp::VarSource,
    /// The task's hooks (`hooks:` and `hooks_from:`'s), checked when it was planned.
    pub hooks: HooksSpec,
    /// The sub-agents (`agents:` and `agents_from:`'s, or a replay's recorded ones).
    pub agents: BTreeMap<String, AgentSpec>,
    /// The skills the `Skill` tool loads (`skills_from:`'s, or a replay's recorded ones).
    pub skills: BTreeMap<String, SkillSpec>,
    /// The project instructions the model is given: read from the task's workspace when
    /// it starts, or the recording's.
    pub instructions: InstructionsPlan,
    /// `output:`'s schema, read and compiled when the task was planned.
    pub output_schema: Option<serde_json::Value>,
    pub model: ModelSource,
    /// The model answering WebFetch's prompts over pages (`tools.web_fetch.model`).
    pub web_fetch_model: Option<ModelSource>,
    pub limits: LoopLimits,
    pub workspace: WorkspacePlan,
    pub mode: Mode,
    /// What planning named and skipped of the files the spec loads by reference
    /// (`hooks_from`, `agents_from`, `mcp.config`): printed then, recorded in `run_start`.
    pub notes: Vec<String>,
}

/// Where a task's project instructions come from.
pub(crate) enum InstructionsPlan {
    /// These files, read from the task's own workspace (its copy or worktree) when it
    /// starts.
    Read(Vec<Wanted>),
    /// The files a recording gave its model, as recorded in `run_start` (a replay, a
    /// resume): the prompt is built from them, never from the workspace's files.
    Recorded(Vec<InstructionFile>),
}

/// Where a task's assistant turns come from.
pub(crate) enum ModelSource {
    Script {
        name: Option<String>,
        turns: Vec<ScriptTurn>,
    },
    /// A recording's model responses (`provider: replay`, or `drover replay`); its
    /// sub-agent and hook runs answer those of the task.
    Recorded(Box<Recording>),
    /// A real provider (anthropic, openai), its key already read.
    Remote(Box<RemoteConfig>),
}

/// The limits the loop stops at (reason `max_turns` or `budget`): the spec's, or the
/// command line's.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct LoopLimits {
    pub max_turns: Option<u32>,
    /// `limits.max_cost_usd`, or `--max-cost-usd`.
    pub max_cost_usd: Option<f64>,
    /// `limits.max_tokens`, or `--max-tokens`.
    pub max_tokens: Option<u64>,
}

/// Where the task works and what of it is never the agent's work.
pub(crate) struct WorkspacePlan {
    /// The workspace as the task starts from it.
    pub origin: PathBuf,
    /// In place, in a scratch copy of `origin`, or in a git worktree of its repository.
    pub isolation: Isolation,
    /// Directories that are never part of the workspace's files (copies, snapshots,
    /// diffs) when they lie inside it, besides this run's artifacts directory: a
    /// replay's recorded artifacts.
    pub excluded: Vec<PathBuf>,
    /// What drover itself writes into the artifacts directory during this run: left out
    /// of the diff when it lies inside the workspace. Anything else there, such as files
    /// an agent plants, is diffed.
    /// Shared by every task of the run: one list of the run's folders, not one per task
    /// (a copy per task grew with the square of the tasks).
    pub own_outputs: Arc<OwnOutputs>,
    /// For a task working in place: its repository's index as it was when the run
    /// started (None: there was no repository), the only index its baseline trusts.
    pub saved_index: Option<Arc<IndexSnapshot>>,
    /// A worktree's commit, checked (`workspace::start_commit::check_commit`): the one a
    /// replayed or resumed run started from. None: HEAD.
    pub at_commit: Option<String>,
    /// `repo:`: the clone made when the task starts, whose checkout becomes `origin`.
    pub repo: Option<crate::workspace::repo::RepoRequest>,
}

/// drover's own paths in the artifacts directory, each left out only as what drover
/// makes there: a file planted where a folder goes (or the reverse) is diffed.
#[derive(Debug, Clone, Default)]
pub(crate) struct OwnOutputs {
    /// The artifacts directory (resolved).
    pub artifacts: PathBuf,
    /// Every task's folder.
    pub folders: Vec<PathBuf>,
    /// junit.xml, summary.json, summary.md.
    pub files: Vec<PathBuf>,
}

/// What kind of run the task is, with what only that kind needs.
pub(crate) enum Mode {
    /// A run of the spec.
    Live,
    /// `drover replay`: the recording's model turns through the loop and tools again.
    Replay(Box<ReplayPlan>),
    /// `drover replay --diff-only`: the recorded diff applied instead of the loop.
    DiffOnly(Box<DiffOnlyPlan>),
    /// `drover resume`: the recorded turns replayed, then the live model.
    Resume(Box<ResumePlan>),
}

/// What a replay needs besides the recording its model plays.
pub(crate) struct ReplayPlan {
    /// The recorded results the loop compares its own with.
    pub expectations: RecordedResults,
    /// The recorded results that answer WebFetch and MCP calls instead of reaching out.
    pub answers: Arc<RecordedAnswers>,
    /// The MCP tools the recording used, answered from it (no server runs without
    /// `--mcp`).
    pub replayed_mcp_tools: Vec<String>,
    pub start: RecordedStart,
    pub confinement: ReplayConfinement,
    /// How the recorded run ended and whether the checks run: what decides the outcome.
    pub judgement: ReplayJudgement,
}

/// What `replay --diff-only` needs.
pub(crate) struct DiffOnlyPlan {
    /// The recorded diff.patch, applied instead of replaying the loop and compared with
    /// the diff it leads to.
    pub patch: RecordedPatch,
    /// `--strict`: a diff that differs ends the task with `replay_drift`.
    pub strict: bool,
    pub start: RecordedStart,
    pub confinement: ReplayConfinement,
    /// How the recorded run ended and whether the checks run: what decides the outcome.
    pub judgement: ReplayJudgement,
}

/// The state a recorded run started from.
pub(crate) struct RecordedStart {
    /// The fingerprint of the recorded starting workspace.
    pub fingerprint: String,
    /// The starting workspace is the one the recording named (no `--workspace`): the
    /// task starts only from exactly the recorded state, checked before anything runs
    /// there (a matching fingerprint shows the recording already knew all of it).
    pub from_recording: bool,
    /// Why the recorded start commit could not be where the replay starts (an
    /// `isolation: worktree` run's): warned, and under `--strict` the task's end before
    /// anything runs.
    pub commit_problem: Option<String>,
    /// The commit the recorded run started from, a full hex id (None: none recorded, or
    /// not an id), and whether it was dirty: named when the workspace differs.
    pub commit: Option<crate::record::StartCommit>,
}

/// How far a replay's commands and file tools reach: a recording's rules are not the
/// user's own, so they get less of the machine than a run of the user's spec.
/// Their commands get only `FIXED_ENVIRONMENT` (see `run::task::commands`) of drover's
/// environment, not all of it less what looks secret: a recording's rules must not reach
/// a secret whose name does not look like one (`DATABASE_URL`, say).
pub(crate) struct ReplayConfinement {
    /// Paths they may not read besides what the Read deny rules name: a replay of a
    /// recording alone reads only where programs live (see `run::plan::replay_spec`).
    pub unreadable: Vec<PathBuf>,
    /// When the recording's commands ran under rules naming hosts: what each tried.
    /// The replay's commands then run proxied, every connection refused, and their
    /// attempts are compared with these (see `network::RecordedNetwork`).
    pub network: Option<crate::network::RecordedNetwork>,
}

impl Mode {
    /// The recorded results that answer WebFetch and MCP calls (a replay, a resume).
    pub(crate) fn answers(&self) -> Option<&Arc<RecordedAnswers>> {
        match self {
            Mode::Replay(replay) => Some(&replay.answers),
            Mode::Resume(resume) => Some(&resume.answers),
            Mode::Live | Mode::DiffOnly(_) => None,
        }
    }

    /// The confinement of a replay's commands (None: the spec's own).
    pub(crate) fn confinement(&self) -> Option<&ReplayConfinement> {
        match self {
            Mode::Replay(replay) => Some(&replay.confinement),
            Mode::DiffOnly(diff_only) => Some(&diff_only.confinement),
            Mode::Live | Mode::Resume(_) => None,
        }
    }

    /// The fingerprint the workspace must have when the task starts, and whether a
    /// different one ends the task (`replay_drift`) rather than only warning.
    pub(crate) fn expected_start(&self) -> Option<(&str, bool)> {
        match self {
            Mode::Live => None,
            Mode::Replay(replay) => Some((&replay.start.fingerprint, replay.expectations.strict)),
            Mode::DiffOnly(diff_only) => Some((&diff_only.start.fingerprint, diff_only.strict)),
            // A resumed run was checked before it started; a workspace changed since
            // then cannot be continued.
            Mode::Resume(resume) => Some((&resume.fingerprint, true)),
        }
    }

    /// What decides a replay's outcome: the recorded end and whether the checks run.
    pub(crate) fn replay_judgement(&self) -> Option<&ReplayJudgement> {
        match self {
            Mode::Replay(replay) => Some(&replay.judgement),
            Mode::DiffOnly(diff_only) => Some(&diff_only.judgement),
            Mode::Live | Mode::Resume(_) => None,
        }
    }

    /// A replay's recorded start, and whether its problems end the task (`--strict`).
    pub(crate) fn recorded_start(&self) -> Option<(&RecordedStart, bool)> {
        match self {
            Mode::Replay(replay) => Some((&replay.start, replay.expectations.strict)),
            Mode::DiffOnly(diff_only) => Some((&diff_only.start, diff_only.strict)),
            Mode::Live | Mode::Resume(_) => None,
        }
    }

    /// The recorded start of a replay whose workspace the recording named.
    pub(crate) fn start_from_recording(&self) -> Option<&RecordedStart> {
        let start = match self {
            Mode::Replay(replay) => &replay.start,
            Mode::DiffOnly(diff_only) => &diff_only.start,
            Mode::Live | Mode::Resume(_) => return None,
        };
        start.from_recording.then_some(start)
    }
}

impl TaskPlan {
    /// How many rounds `retry:` allows.
    pub(crate) fn max_attempts(&self) -> u32 {
        self.spec
            .spec
            .retry
            .as_ref()
            .map_or(1, |r| r.value.max_attempts)
    }

    /// The recording's hook and sub-agent runs answer the task's: its model is a
    /// recording.
    pub(crate) fn recording(&self) -> Option<&Recording> {
        match &self.model {
            ModelSource::Recorded(recording) => Some(recording),
            ModelSource::Script { .. } | ModelSource::Remote(_) => None,
        }
    }
}

/// What a resumed task carries of the recording it continues.
pub(crate) struct ResumePlan {
    /// The recording as it was read, kept beside the resumed transcript
    /// (`transcript.before-resume-N.jsonl`): the lines the resume drops stay on record.
    pub recording: Vec<u8>,
    /// Tokens spent before that the replay does not spend again (turns cut short, the
    /// page model's, earlier resumes'): they count toward the task's budget and figures.
    pub spent_before: crate::message::Usage,
    /// The transcript resumed.
    pub transcript: PathBuf,
    /// Its lines kept, written again at the head of the new transcript.
    pub kept: Vec<String>,
    /// Its lines dropped after them.
    pub dropped: usize,
    /// The main agent's events among the kept lines: its turns are played back.
    pub events: Vec<crate::record::Event>,
    /// Each sub-agent run's events among the kept lines, by agent id: played back too.
    pub agent_events: BTreeMap<String, Vec<crate::record::Event>>,
    /// The whole turns replayed before the live model takes over.
    pub turns: u32,
    /// How the recorded run ended; None: it was killed.
    pub previous: Option<crate::record::resume_point::RecordedEnd>,
    /// The recorded results of the main agent's calls, by id.
    pub results: crate::tools::recorded::ResultsById,
    /// The recorded results that answer the replayed WebFetch and MCP calls.
    pub answers: Arc<RecordedAnswers>,
    pub strict: bool,
    pub masks: Arc<crate::record::volatile::Masks>,
    /// The fingerprint the recorded run started from.
    pub fingerprint: String,
    /// The commit the recorded run started from, when its id is a full hex id: named
    /// when the workspace is no longer in the recorded state.
    pub commit: Option<crate::record::StartCommit>,
    /// What the recorded run left out of its starting state as its own outputs, left
    /// out again so the fingerprints can agree.
    pub recorded_outputs: OwnOutputs,
}
