//! `drover exec`: one task from the command line, without a spec file, and the flags of
//! `claude -p` it takes (or refuses, saying what to write instead). README.md, "Command
//! line", documents each.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

#[derive(Debug, Args)]
#[command(after_help = EXAMPLES)]
pub struct ExecArgs {
    /// What the agent is to do. Required, or --prompt-file: drover never reads stdin.
    #[arg(
        value_name = "PROMPT",
        required_unless_present = "prompt_file",
        conflicts_with = "prompt_file"
    )]
    pub prompt: Option<String>,
    /// Read the prompt from FILE (a regular file, not a link; UTF-8, at most 1 MiB).
    #[arg(long, value_name = "FILE")]
    pub prompt_file: Option<PathBuf>,
    /// Rules the task may use, as a spec's permissions.allow: a comma-separated list,
    /// split only at commas outside parentheses (repeat for more). Deny by default.
    #[arg(long, value_name = "RULES")]
    pub allow: Vec<String>,
    /// Rules denied whatever allows them, as a spec's permissions.deny (a list as for
    /// --allow; repeat for more).
    #[arg(long, value_name = "RULES")]
    pub deny: Vec<String>,
    /// Claude Code's --allow: rules separated by commas or blanks outside parentheses,
    /// in one value or several.
    #[arg(long = "allowedTools", visible_alias = "allowed-tools", value_name = "RULES", num_args = 1..)]
    pub allowed_tools: Vec<String>,
    /// Claude Code's --deny, written as --allowedTools is.
    #[arg(long = "disallowedTools", visible_alias = "disallowed-tools", value_name = "RULES", num_args = 1..)]
    pub disallowed_tools: Vec<String>,
    /// The workspace [default: the current directory]. Its defaults file (drover.yaml or
    /// .drover/defaults.yaml, docs/defaults.md) is merged into the task as into a spec
    /// file beside it; the flags win.
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Merge the workspace's defaults file (drover.yaml, or .drover/defaults.yaml) into
    /// the task, as into a spec beside it; the flags win. Off unless asked: the
    /// workspace is often the repository under test, whose files must not choose
    /// drover's settings (its sandbox, its model's endpoint).
    #[arg(long)]
    pub defaults: bool,
    /// Where the task works: in place (none), a scratch copy, or a git worktree at HEAD
    /// [default: none].
    #[arg(long, value_enum, value_name = "MODE")]
    pub isolation: Option<IsolationArg>,
    /// The OS sandbox around commands (Bash, checks); off runs them unconfined [default:
    /// on].
    #[arg(long, value_enum, value_name = "on|off")]
    pub sandbox: Option<SwitchArg>,
    /// Let sandboxed commands use the whole network (default: cut).
    #[arg(long)]
    pub network: bool,
    /// Let sandboxed commands reach HOST, and no other host, through drover's proxy: a
    /// name, *.suffix, an IP address or localhost, optionally :PORT (without one: 443
    /// and 80). Repeat for more; implies the sandbox (docs/sandbox.md, "Network by
    /// name").
    #[arg(long = "allow-host", value_name = "HOST", conflicts_with = "network")]
    pub allow_hosts: Vec<crate::spec::HostPattern>,
    /// Let sandboxed commands reach a package registry's hosts, as --allow-host does:
    /// npm, pypi, crates, go or maven (repeat for more).
    #[arg(long = "registry", value_name = "NAME", conflicts_with = "network")]
    pub registries: Vec<crate::spec::Registry>,
    /// A directory outside the workspace the tools may also touch (repeat for more).
    #[arg(long = "add-dir", value_name = "DIR")]
    pub add_dirs: Vec<PathBuf>,
    /// Model turns at most; the task ends with reason max_turns.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_turns: Option<u32>,
    /// Wall time at most (`90s`, `20m`, `1h 30m`, `none`) [default: 1h].
    #[arg(long, value_name = "DURATION", value_parser = super::parse_timeout)]
    pub(crate) timeout: Option<crate::spec::TimeoutLimit>,
    /// The budget in USD; the task ends with reason budget.
    #[arg(long, value_name = "USD", value_parser = super::parse_usd)]
    pub max_cost_usd: Option<f64>,
    /// Total tokens at most (input, output, cache writes and reads).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_tokens: Option<u64>,
    /// A command run after the loop, as a spec's check: the task fails unless it exits 0
    /// (repeat for more).
    #[arg(long = "check", value_name = "CMD")]
    pub checks: Vec<String>,
    /// The final answer must be JSON valid against the JSON Schema in FILE (a spec's
    /// output.schema).
    #[arg(long, value_name = "FILE")]
    pub output_schema: Option<PathBuf>,
    /// Text added to drover's system prompt (a spec's system).
    #[arg(long, value_name = "TEXT")]
    pub append_system_prompt: Option<String>,
    /// The provider [default: anthropic when ANTHROPIC_API_KEY is set, else openai when
    /// OPENAI_API_KEY is].
    #[arg(long, value_enum, value_name = "P")]
    pub provider: Option<ExecProvider>,
    /// The model [default: claude-sonnet-4-5 (anthropic), gpt-5 (openai)]; sonnet,
    /// opus and haiku name Claude models.
    #[arg(long, value_name = "M")]
    pub model: Option<String>,
    /// The provider's base URL [default: ANTHROPIC_BASE_URL or OPENAI_BASE_URL, else the
    /// provider's own].
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// The variable holding the API key [default: ANTHROPIC_API_KEY or OPENAI_API_KEY];
    /// `none` for a server that needs no key.
    #[arg(long, value_name = "VAR")]
    pub api_key_env: Option<String>,
    /// The task's name: its artifacts folder and JUnit test case [default: exec].
    #[arg(long, value_name = "NAME", value_parser = parse_task_name)]
    pub name: Option<String>,
    /// Where to write the artifacts [default: drover-artifacts].
    #[arg(long, value_name = "DIR")]
    pub artifacts: Option<PathBuf>,
    /// What stdout gets: the final answer (text), one JSON result at the end (json), or
    /// the transcript's events as they happen and then the result (stream-json)
    /// [default: text].
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub output_format: Option<OutputFormat>,
    /// The same as --output-format stream-json.
    #[arg(long, conflicts_with = "output_format")]
    pub json: bool,
    /// Print the task spec these flags make (YAML) and exit without running it: a spec
    /// file to start from, or the one `drover resume` asks for.
    #[arg(long)]
    pub print_spec: bool,
    /// No progress on stderr: only the task's final line and errors.
    #[arg(long, short)]
    pub quiet: bool,
    #[command(flatten)]
    pub claude: ClaudeFlags,
}

const EXAMPLES: &str = "Examples:
  drover exec \"fix the failing test\" --allow Read,Edit,\"Bash(cargo test *)\" --check \"cargo test\"
  claude -p \"review this\" --allowedTools Read Grep   →   drover exec -p \"review this\" --allowedTools Read Grep
  drover exec \"summarize the diff\" --allow Read --output-format json | jq -r .result";

/// Claude Code's flags that `drover exec` takes for a workflow calling `claude -p`: some
/// change nothing (drover always prints, never asks), `--permission-mode plan` offers
/// only read-only tools, and the rest are refused with what to write instead.
#[derive(Debug, Args)]
#[command(
    next_help_heading = "Claude Code's flags (accepted, or refused with what to write instead)"
)]
pub struct ClaudeFlags {
    /// Accepted, no effect: drover exec always prints and never asks.
    #[arg(short = 'p', long = "print")]
    pub print: bool,
    /// Accepted, no effect (progress is on stderr anyway; --quiet turns it off).
    #[arg(long)]
    pub verbose: bool,
    /// default or dontAsk: no effect (nobody is asked; what no rule allows is denied);
    /// plan: only read-only tools are offered; acceptEdits, bypassPermissions: refused.
    #[arg(long, value_name = "MODE")]
    pub permission_mode: Option<String>,
    /// Refused: drover decides every call by its rules.
    #[arg(long)]
    pub dangerously_skip_permissions: bool,
    /// Refused, as --dangerously-skip-permissions.
    #[arg(long)]
    pub allow_dangerously_skip_permissions: bool,
    /// Refused: exec starts a new task (`drover resume DIR/TASK` continues one).
    #[arg(short = 'c', long = "continue")]
    pub continue_session: bool,
    /// Refused, as --continue.
    #[arg(short = 'r', long, value_name = "ID", num_args = 0..=1, default_missing_value = "")]
    pub resume: Option<String>,
    /// Refused, as --continue.
    #[arg(long, value_name = "ID")]
    pub session_id: Option<String>,
    /// Refused: drover never reads stdin.
    #[arg(long, value_name = "FORMAT")]
    pub input_format: Option<String>,
    /// Refused: MCP servers are a spec's `mcp:`.
    #[arg(long, value_name = "CONFIG", num_args = 1..)]
    pub mcp_config: Vec<String>,
    /// Refused, as --mcp-config.
    #[arg(long)]
    pub strict_mcp_config: bool,
    /// Refused: drover keeps its system prompt; use --append-system-prompt.
    #[arg(long, value_name = "TEXT")]
    pub system_prompt: Option<String>,
    /// Refused, as --system-prompt.
    #[arg(long, value_name = "FILE")]
    pub system_prompt_file: Option<String>,
    /// Refused: nobody is asked; the rules decide.
    #[arg(long, value_name = "TOOL")]
    pub permission_prompt_tool: Option<String>,
    /// Refused: a task uses one model.
    #[arg(long, value_name = "MODEL")]
    pub fallback_model: Option<String>,
    /// Refused: a settings file's rules join a spec's with permissions_from.
    #[arg(long, value_name = "FILE")]
    pub settings: Option<String>,
    /// Refused: sub-agents are a spec's `agents:`.
    #[arg(long, value_name = "JSON")]
    pub agents: Option<String>,
    /// Refused: --json's events are whole transcript events.
    #[arg(long)]
    pub include_partial_messages: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum IsolationArg {
    None,
    Copy,
    Worktree,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SwitchArg {
    On,
    Off,
}

/// The providers exec talks to (a scripted or replayed model needs a spec).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExecProvider {
    Anthropic,
    Openai,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    Text,
    Json,
    StreamJson,
}

/// A task name as specs take it.
fn parse_task_name(text: &str) -> Result<String, super::BadValue> {
    crate::spec::TaskName::try_from(text.to_string())
        .map(|name| name.as_str().to_string())
        .map_err(|e| super::BadValue(e.to_string()))
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn every_flag_of_exec_is_in_the_readme_and_the_docs_for_claude_code() {
        let readme = include_str!("../../README.md");
        let claude_code = include_str!("../../docs/claude-code.md");
        let cli = super::super::Cli::command();
        let exec = cli.find_subcommand("exec").expect("exec is a command");
        let claude_heading = exec
            .get_arguments()
            .filter(|arg| arg.get_help_heading().is_some())
            .count();
        assert!(
            claude_heading >= 15,
            "Claude Code's flags have their heading"
        );
        for arg in exec.get_arguments() {
            let mut names: Vec<String> = arg.get_long().into_iter().map(String::from).collect();
            names.extend(
                arg.get_visible_aliases()
                    .into_iter()
                    .flatten()
                    .map(String::from),
            );
            for name in names.into_iter().filter(|name| name != "help") {
                let flag = format!("--{name}");
                assert!(readme.contains(&flag), "README.md does not name {flag}");
                if arg.get_help_heading().is_some() {
                    assert!(
                        claude_code.contains(&flag),
                        "docs/claude-code.md does not name {flag}"
                    );
                }
            }
        }
    }
}
