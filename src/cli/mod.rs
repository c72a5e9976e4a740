//! The command line (clap). The commands and flags are a contract (README.md, "Command line").

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

mod exec;

pub use exec::{ClaudeFlags, ExecArgs, ExecProvider, IsolationArg, OutputFormat, SwitchArg};

#[derive(Debug, Parser)]
#[command(
    name = "drover",
    version,
    about = "A headless runner for coding agents in CI"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run task specs (files, or directories of *.yaml) and write the artifacts.
    Run(RunArgs),
    /// Run one task given on the command line, without a spec file (as `claude -p`):
    /// the same policy, sandbox, artifacts and exit codes as a spec; the final answer on
    /// stdout.
    Exec(Box<ExecArgs>),
    /// Run a recorded transcript again, with no model and no network.
    #[command(after_help = REPLAY_OUTCOME)]
    Replay(ReplayArgs),
    /// Continue a task stopped by a signal, a kill, a limit or a provider failure: its
    /// recorded turns are replayed without the model, then the live model goes on.
    Resume(ResumeArgs),
    /// Check task specs without running them.
    Validate {
        /// Spec files or directories.
        #[arg(required = true, value_name = "SPEC|DIR")]
        specs: Vec<PathBuf>,
        /// Print each spec merged with its directory's defaults file (drover.yaml), every
        /// setting with the file, line and column it comes from.
        #[arg(long)]
        show_merged: bool,
    },
    /// List the tasks the specs hold, sorted by name (a task's place is its
    /// `--task-index`), without running them: no key or workspace is needed.
    Plan {
        /// Spec files or directories.
        #[arg(required = true, value_name = "SPEC|DIR")]
        specs: Vec<PathBuf>,
        /// One line of JSON: `count`, `names` (for a CI matrix), and `tasks` with each
        /// task's `index`, `name` and `spec`.
        #[arg(long)]
        json: bool,
    },
    /// List the tools offered to models.
    Tools {
        /// Print the Anthropic-format tool definitions (name, description, input_schema).
        #[arg(long)]
        json: bool,
        /// List what this task would offer: the built-in tools and its MCP servers'
        /// (started for the listing), less those its policy withholds.
        #[arg(long, value_name = "SPEC")]
        spec: Option<std::path::PathBuf>,
    },
    /// Permission policy commands.
    Policy {
        #[command(subcommand)]
        command: PolicyCommand,
    },
    /// Reports across runs.
    Report {
        #[command(subcommand)]
        command: ReportCommand,
    },
    /// Transcripts: check their integrity.
    Transcript {
        #[command(subcommand)]
        command: TranscriptCommand,
    },
    /// Internal: apply a sandbox policy, then exec the command (drover runs itself).
    #[command(name = "__sandbox-exec", hide = true)]
    SandboxExec(SandboxExecArgs),
    /// Run one read-only tool call (schema-checked, no policy) and print its result: a
    /// debugging and benchmark aid. Exits 0, or 1 when the result is an error.
    Tool(ToolArgs),
    /// Time Grep and Glob as whole processes against rg and fd on a large tree.
    Bench(crate::bench::BenchArgs),
    /// Push what passed tasks changed as commits on a branch, after the run and outside
    /// the agent, through gates (docs/publish.md).
    Publish(PublishArgs),
    /// Internal: serve the egress proxy for `drover bench --proxy` on 127.0.0.1, allowing
    /// these `host:port` entries; print its port and its events until stdin closes.
    #[command(name = "__egress-proxy-bench", hide = true)]
    EgressProxyBench {
        #[arg(long, value_name = "HOST:PORT")]
        allow: Vec<String>,
    },
}

/// The sandbox launcher's arguments (see `sandbox::launcher`).
#[derive(Debug, Args)]
pub struct SandboxExecArgs {
    /// The policy as JSON.
    #[arg(long, value_name = "JSON")]
    pub policy: String,
    /// Only check that the policy can be enforced: exit 0 if so, 125 if not.
    #[arg(long)]
    pub probe: bool,
    /// Pass stdin and stdout through to the command (an MCP server's channel). The
    /// lifeline is then stdin itself: when drover closes it, the command is killed.
    #[arg(long)]
    pub stdio: bool,
    /// The descriptor of the file holding the command's environment (drover starts the
    /// launcher itself with none, so nothing meant for the command steers the launcher's
    /// own loader). Without it the command gets the launcher's environment.
    #[arg(long, value_name = "FD")]
    pub env_fd: Option<i32>,
    /// For a proxied policy: the port of drover's egress proxy on 127.0.0.1, the one
    /// place the command's TCP sockets may connect to.
    #[arg(long, value_name = "PORT")]
    pub proxy_port: Option<u16>,
    /// For a proxied policy: a descriptor where the launcher reports the connections it
    /// refused (JSON lines), for drover to account for them.
    #[arg(long, value_name = "FD")]
    pub report_fd: Option<i32>,
    /// The program and its arguments.
    #[arg(last = true, value_name = "PROGRAM")]
    pub command: Vec<OsString>,
}

impl SandboxExecArgs {
    /// What the launcher is asked to do.
    pub fn launch_request(&self) -> crate::LaunchRequest<'_> {
        crate::LaunchRequest {
            policy_json: &self.policy,
            probe: self.probe,
            stdio: self.stdio,
            env_fd: self.env_fd,
            proxy_port: self.proxy_port,
            report_fd: self.report_fd,
            command: &self.command,
        }
    }
}

#[derive(Debug, Args)]
pub struct ToolArgs {
    /// The tool's name (read-only tools only: Read, Glob, Grep, ...).
    #[arg(value_name = "NAME")]
    pub name: String,
    /// The tool input as a JSON object.
    #[arg(long, value_name = "JSON")]
    pub input: String,
    /// The workspace relative paths resolve against (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Spec files or directories.
    #[arg(required = true, value_name = "SPEC|DIR")]
    pub specs: Vec<PathBuf>,
    /// Where to write the artifacts [default: drover-artifacts; with --resume, the
    /// directory holding the resumed task's folder].
    #[arg(long, value_name = "DIR")]
    pub artifacts: Option<PathBuf>,
    /// How many tasks run at once.
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: u16,
    /// Run only shard K of N (1-based), or `auto`: the shard of a Kubernetes Indexed
    /// Job's pod (JOB_COMPLETION_INDEX, with DROVER_SHARD_COUNT or JOB_COMPLETIONS).
    #[arg(long, value_name = "K/N|auto")]
    pub shard: Option<String>,
    /// Run only the tasks of these names (repeat, or separate with commas): one work
    /// item of an orchestrator that runs and retries each task on its own.
    #[arg(long, value_name = "NAME", value_delimiter = ',', conflicts_with_all = ["shard", "task_index"])]
    pub only: Vec<String>,
    /// Run only the N-th task (from 0) of every task the specs hold, sorted by name:
    /// one task per Kubernetes Indexed Job pod or CI matrix cell (`auto`: the pod's
    /// JOB_COMPLETION_INDEX).
    #[arg(long, value_name = "N|auto", conflicts_with_all = ["shard"])]
    pub task_index: Option<String>,
    #[command(flatten)]
    pub settings: TaskSettingsArgs,
    /// Continue the task recorded in DIR/TASK (an artifacts folder) instead of starting
    /// it anew: SPEC must be the one spec it recorded, unchanged. See `drover resume`.
    #[arg(long, value_name = "DIR/TASK", conflicts_with_all = ["shard", "only", "task_index"])]
    pub resume: Option<PathBuf>,
    /// With --resume: end the run at the first replayed result that differs from the
    /// recording (volatile output masked).
    #[arg(long, requires = "resume")]
    pub strict: bool,
    /// With --resume: a regular expression of volatile output to mask before comparing
    /// (repeat for more).
    #[arg(long, value_name = "REGEX", requires = "resume")]
    pub ignore: Vec<String>,
    /// No progress on stderr: only each task's final line and errors.
    #[arg(long, short)]
    pub quiet: bool,
    /// Write each transcript event on stdout as it is written, as a JSON line with its
    /// task, then a line with the run's result; the human lines go to stderr.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The stopped task's artifacts folder (DIR/TASK), or its transcript.jsonl.
    #[arg(value_name = "DIR/TASK")]
    pub task: PathBuf,
    /// The spec to resume [default: the spec file the transcript records]; it must be
    /// the recorded spec, unchanged.
    #[arg(long, value_name = "SPEC")]
    pub spec: Option<PathBuf>,
    /// Where to write the artifacts [default: DIR, where the resumed task replaces the
    /// stopped one among its run's reports].
    #[arg(long, value_name = "DIR")]
    pub artifacts: Option<PathBuf>,
    #[command(flatten)]
    pub settings: TaskSettingsArgs,
    /// End the run at the first replayed result that differs from the recording
    /// (volatile output masked); without it, each drift is reported and the run goes on.
    #[arg(long)]
    pub strict: bool,
    /// A regular expression of volatile output to mask before comparing (repeat for
    /// more), besides the built-in masks and the spec's `replay.ignore`.
    #[arg(long, value_name = "REGEX")]
    pub ignore: Vec<String>,
    /// No progress on stderr: only the final line and errors.
    #[arg(long, short)]
    pub quiet: bool,
    /// Write each transcript event on stdout as it is written, as a JSON line with its
    /// task, then a line with the run's result; the human lines go to stderr.
    #[arg(long)]
    pub json: bool,
}

/// What `run` overrides in every spec, and `resume` changes from the recorded run (each
/// defaulting then to what the recorded run used; limits count the whole run, recorded
/// turns included, and a task stopped by one resumes only with it raised).
#[derive(Debug, Args)]
pub struct TaskSettingsArgs {
    /// The model provider, for every spec [resume: default the recorded run's].
    #[arg(long, value_enum, value_name = "P")]
    pub provider: Option<ProviderArg>,
    /// The model name, for every spec [resume: default the recorded run's].
    #[arg(long, value_name = "M")]
    pub model: Option<String>,
    /// Override limits.max_turns [resume: of the whole run, default the recorded run's].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_turns: Option<u32>,
    /// Override limits.max_cost_usd, in USD [resume: of the whole run, default the
    /// recorded run's].
    #[arg(long, value_name = "USD", value_parser = parse_usd)]
    pub max_cost_usd: Option<f64>,
    /// Override limits.max_tokens, all four counts together [resume: of the whole run,
    /// default the recorded run's].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_tokens: Option<u64>,
    /// Override limits.timeout (`30m`, `1h 30m`, or `none`) [resume: counted from the
    /// resume, the replayed turns' tools included; default the recorded run's].
    #[arg(long, value_name = "DURATION", value_parser = parse_timeout)]
    pub(crate) timeout: Option<crate::spec::TimeoutLimit>,
    /// Override every spec's workspace [resume: needed for a run recorded in another
    /// workspace; it must be in the recorded starting state].
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// A directory of bare mirrors for `repo:` tasks (also `DROVER_REPO_CACHE`): the next
    /// run fetches what is new instead of cloning; safe to share between tasks and
    /// drover processes.
    #[arg(long, value_name = "DIR")]
    pub repo_cache: Option<PathBuf>,
    /// How a `repo:` task's checkout is made from --repo-cache: `auto`, as root an
    /// overlay of the cache's checkout of the commit where one can be mounted (else a
    /// copy); `copy`, always a copy, no mount.
    #[arg(long, value_enum, value_name = "HOW", default_value = "auto")]
    pub repo_checkout: RepoCheckoutArg,
}

/// `drover publish`'s arguments.
#[derive(Debug, Args)]
pub struct PublishArgs {
    /// The artifacts directory of a `drover run`.
    #[arg(value_name = "ARTIFACTS_DIR")]
    pub artifacts: PathBuf,
    /// The branch to push to; `{task}` in it makes one branch per task (without it, one
    /// commit holds every task's change).
    #[arg(long, value_name = "NAME")]
    pub branch: String,
    /// Only this task (repeatable; default: every task of the run).
    #[arg(long = "task", value_name = "NAME")]
    pub tasks: Vec<String>,
    /// The repository to push to (default: `$GITHUB_SERVER_URL/$GITHUB_REPOSITORY.git`).
    #[arg(long, value_name = "URL")]
    pub remote: Option<String>,
    /// A branch that must still be at the commit the tasks started from.
    #[arg(long, value_name = "BRANCH")]
    pub base: Option<String>,
    /// Replace the branch's head when the new commit does not contain it (only if it is
    /// still the head publish saw).
    #[arg(long)]
    pub force: bool,
    /// Make and gate the commits, push nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Let a change to CI configuration (`.github/workflows/`, …) through.
    #[arg(long)]
    pub allow_workflow_changes: bool,
    /// The most files one commit may change.
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub max_files: usize,
    /// The most lines (added plus deleted) one commit may change.
    #[arg(long, value_name = "N", default_value_t = 5000)]
    pub max_lines: u64,
    /// The largest binary file one commit may add or change, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 1_048_576)]
    pub max_blob_bytes: u64,
    /// The commit message; `{task}`, `{summary}` (the final answer) and `{run}` are filled in.
    #[arg(long, value_name = "TEXT")]
    pub message: Option<String>,
    /// The commits' author and committer, `Name <email>`.
    #[arg(long, value_name = "NAME <EMAIL>")]
    pub author: Option<String>,
    /// The environment variable holding the push token (default GITHUB_TOKEN).
    #[arg(long, value_name = "VAR")]
    pub token_env: Option<String>,
    /// How long git may take in all.
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = humantime::parse_duration)]
    pub timeout: std::time::Duration,
}

/// `--repo-checkout`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RepoCheckoutArg {
    Auto,
    Copy,
}

/// Why a flag's value was refused: clap prints it after the flag's name.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct BadValue(String);

/// A time limit as specs write it.
fn parse_timeout(text: &str) -> Result<crate::spec::TimeoutLimit, BadValue> {
    crate::spec::TimeoutLimit::try_from(text.to_string()).map_err(|e| BadValue(e.to_string()))
}

/// A budget: a positive number of USD.
fn parse_usd(text: &str) -> Result<f64, BadValue> {
    match text.parse::<f64>() {
        Ok(usd) if usd.is_finite() && usd > 0.0 => Ok(usd),
        _ => Err(BadValue(format!(
            "{text:?} is not a positive amount of USD (e.g. 2.5)"
        ))),
    }
}

/// What `drover replay --help` says of the outcome (docs/replay.md, "What a replay's
/// outcome says").
const REPLAY_OUTCOME: &str = "\
Outcome and exit code:
  Without --checks a replay verifies the recorded turns, not the result: its outcome is
  the recorded one (status and reason, e.g. failed / checks_failed), marked \"as recorded;
  checks not re-run\", and the exit code follows it (passed 0, failed 1, error 3). Only a
  replay that itself ends worse (a --strict drift, a sandbox that cannot be enforced)
  changes it: drift never makes a recorded failure look better.
  With --checks the checks run on the replayed result and decide, as in a run; an end
  they did not decide (max_turns, budget, invalid_output, …) is never made better.
  summary.json says which: a task's \"replay\": {\"checks\": \"not_run\" | \"rerun\",
  \"outcome_from\": \"recording\" | \"replay\", \"recorded\": {status, reason, message}}.

Start:
  An isolation: worktree run is replayed in a worktree at the commit it started from
  (run_start's start.commit), not from today's checkout; when that commit cannot be used
  (not in this repository, a dirty recorded start), a warning says so and the checkout
  is copied instead (under --strict the task ends before anything runs).";

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// A transcript.jsonl written by `drover run`.
    pub transcript: PathBuf,
    /// The starting workspace (default: the one recorded in the transcript, when it lies
    /// in the current directory and is exactly in the recorded starting state). It is
    /// copied (a worktree run: a worktree of its repository is made at the recorded
    /// commit); the replay never changes it.
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// The spec file the run used (its SHA-256 must be the recorded one): you vouch for
    /// it, so its `setup:` runs (in the replay's sandbox, network off) and its rules are
    /// taken as your own. Without it the recording's setup never runs.
    #[arg(long, value_name = "FILE")]
    pub spec: Option<PathBuf>,
    /// Fail (exit 1) as soon as a tool result differs from the recording (volatile
    /// output masked); without it, each drift is reported and the replay goes on.
    #[arg(long)]
    pub strict: bool,
    /// A regular expression of volatile output to mask in both results before they are
    /// compared, besides the built-in masks and the spec's `replay.ignore` (repeat for
    /// more).
    #[arg(long, value_name = "REGEX")]
    pub ignore: Vec<String>,
    /// Replay no turn: apply the diff.patch recorded beside the transcript to the
    /// starting workspace and compare the diff it leads to with it (with --checks, the
    /// checks then judge it): does the recorded fix still apply, and still pass?
    #[arg(long)]
    pub diff_only: bool,
    /// Also run the checks recorded in the transcript's spec, and let them judge the
    /// replayed result (they run commands; without this flag they are listed, not run,
    /// and the outcome is the recorded one).
    #[arg(long)]
    pub checks: bool,
    /// Start the recorded spec's MCP servers and call them, comparing their results with
    /// the recording (without this flag, MCP calls are answered from the recording).
    #[arg(long)]
    pub mcp: bool,
    /// With --mcp: a variable of drover's environment the recorded servers' `env:` and
    /// `headers:` may take (`${VAR}`); repeat for more. Every other one is left unset,
    /// so a transcript cannot choose which of your secrets go to which server.
    #[arg(long = "mcp-env", value_name = "VAR", requires = "mcp")]
    pub mcp_env: Vec<String>,
    /// With --mcp: connect to the recorded `url:` server NAME at URL (repeat for more).
    /// A `url:` server not given here is left out: a transcript does not choose which
    /// hosts drover connects to.
    #[arg(long = "mcp-url", value_name = "NAME=URL", requires = "mcp", value_parser = parse_mcp_url)]
    pub mcp_urls: Vec<(String, String)>,
    /// Where to write the artifacts.
    #[arg(long, default_value = "drover-artifacts", value_name = "DIR")]
    pub artifacts: PathBuf,
    /// No progress on stderr: only the final line and errors.
    #[arg(long, short)]
    pub quiet: bool,
    /// Write each transcript event on stdout as it is written, as a JSON line with its
    /// task, then a line with the run's result; the human lines go to stderr.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Decide one tool call with a spec's policy: prints JSON, exits 0 (allow) or 1 (deny).
    Check {
        /// The task spec whose permissions decide.
        #[arg(long, value_name = "SPEC")]
        spec: PathBuf,
        /// The tool the call is for (Bash, Read, Edit, …).
        #[arg(long, value_name = "NAME")]
        tool: String,
        /// The tool input as a JSON object.
        #[arg(long, value_name = "JSON")]
        input: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum ReportCommand {
    /// Combine the artifacts of several runs (the shards of one run, one-task runs of an
    /// orchestrator's pods, retries) into one junit.xml and summary. A task found more
    /// than once counts as its latest run; the report lists the earlier ones.
    Merge {
        /// `--artifacts` directories of `drover run`, or task folders inside them (all N
        /// shards of a sharded run).
        #[arg(required = true, value_name = "DIR")]
        dirs: Vec<PathBuf>,
        /// Where to write the merged artifacts (must be empty or absent).
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// Merge the shards that are there when some of a run's shards are missing
        /// (a warning names them; their tasks are not in the report).
        #[arg(long)]
        partial: bool,
    },
    /// Print the GitHub Action's step outputs from DIR/summary.json as lines for
    /// $GITHUB_OUTPUT: `output=` and the final answer of the run's task with
    /// `output.schema` as one line of JSON (DIR when several tasks have one, empty when
    /// none has); `wrap-up=` and each task's wrap-up (`limits.wrap_up`) by task name as
    /// one line of JSON (empty when none has one). Exits 2 when DIR has no summary.json
    /// drover wrote.
    Outputs {
        /// An artifacts directory drover wrote (`--artifacts`, `--out`).
        #[arg(value_name = "DIR")]
        dir: PathBuf,
    },
}

#[derive(Debug, Subcommand)]
pub enum TranscriptCommand {
    /// Check the hash chain: exit 0 when the transcript is whole and unedited, 1 when it
    /// was edited, reordered or cut short, 2 when it cannot be read.
    Verify {
        /// A transcript.jsonl written by drover.
        #[arg(value_name = "TRANSCRIPT")]
        transcript: PathBuf,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ProviderArg {
    Anthropic,
    Openai,
    Script,
    Replay,
}

impl From<ProviderArg> for crate::spec::Provider {
    fn from(value: ProviderArg) -> Self {
        match value {
            ProviderArg::Anthropic => Self::Anthropic,
            ProviderArg::Openai => Self::Openai,
            ProviderArg::Script => Self::Script,
            ProviderArg::Replay => Self::Replay,
        }
    }
}

/// `NAME=URL` for `--mcp-url`.
fn parse_mcp_url(text: &str) -> Result<(String, String), BadValue> {
    match text.split_once('=') {
        // The same checks as a spec's `url:`.
        Some((name, url)) if !name.is_empty() => {
            match crate::mcp::endpoint_problem(url, &Default::default()) {
                None => Ok((name.to_string(), url.to_string())),
                Some(problem) => Err(BadValue(problem)),
            }
        }
        _ => Err(BadValue(format!(
            "expected NAME=URL, as in docs=http://127.0.0.1:3001/mcp, not {text:?}"
        ))),
    }
}
