//! What a replay takes from outside its recording, each from a trusted place: the spec
//! (`--spec`, whose SHA-256 must be the recorded one, else the recorded text as data),
//! the starting workspace (`--workspace`, else the recorded one only beneath the current
//! directory), the MCP servers (`--mcp`, at `--mcp-url`s), and what it says on stderr
//! about the recorded commands it runs or leaves out.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::plan_error::{PlanError, ReplayError, defaults_change};
use crate::record::Event;
use crate::record::transcript::RunDefaults;
use crate::spec;

/// What the command line asks of a replay: everything a replay takes beyond the
/// recording's data comes from here.
pub(crate) struct ReplayOptions {
    pub transcript: PathBuf,
    pub workspace: Option<PathBuf>,
    /// The spec file the run used (`--spec`): the user vouches for it, so its `setup:`
    /// runs (in the replay's sandbox) and its rules are taken as the user's own.
    pub spec: Option<PathBuf>,
    pub strict: bool,
    /// Run the recorded spec's checks too (`--checks`).
    pub checks: bool,
    /// Start the recorded spec's MCP servers rather than answer from the recording
    /// (`--mcp`).
    pub mcp: bool,
    /// The variables of drover's environment the servers' `${VAR}` may take
    /// (`--mcp-env`); every other one is unset.
    pub mcp_env: Vec<String>,
    /// The URL to reach each recorded `url:` server at (`--mcp-url NAME=URL`); one not
    /// given is left out.
    pub mcp_urls: Vec<(String, String)>,
    /// Only errors on stderr (`--quiet`).
    pub quiet: bool,
    /// Regular expressions of volatile output to mask before comparing (`--ignore`).
    pub ignore: Vec<String>,
    /// Apply the recorded diff.patch instead of replaying the loop, and compare the diff
    /// it leads to with it (`--diff-only`).
    pub diff_only: bool,
    pub artifacts: PathBuf,
}

/// What `run_start` recorded of the spec: its path, text and hash, the defaults merged
/// into it, the task and the matrix entry it was expanded from.
pub(super) struct RecordedSpec {
    pub task: String,
    pub path: String,
    pub yaml: String,
    pub sha256: String,
    pub defaults: Option<Box<RunDefaults>>,
    pub matrix: Option<spec::MatrixValues>,
}

impl RecordedSpec {
    /// What `run_start` (`event`) recorded of the spec; nothing of another event.
    pub(super) fn of(event: &Event) -> RecordedSpec {
        match event {
            Event::RunStart {
                task,
                spec_path,
                spec_yaml,
                spec_sha256,
                defaults,
                matrix,
                ..
            } => RecordedSpec {
                task: task.clone(),
                path: spec_path.clone(),
                yaml: spec_yaml.clone(),
                sha256: spec_sha256.clone(),
                defaults: defaults.clone(),
                matrix: matrix.as_deref().cloned(),
            },
            // Asked only of a run_start (`plan_replay` matched it): another event
            // records no spec, and a spec of nothing loads as none.
            _ => RecordedSpec {
                task: String::new(),
                path: String::new(),
                yaml: String::new(),
                sha256: String::new(),
                defaults: None,
                matrix: None,
            },
        }
    }
}

/// The spec the replay takes its data from: the file the user names with `--spec` (its
/// SHA-256 must be the recorded one, and so must its defaults file's; a matrix task is
/// made of the spec's own entry, which the recorded one must be), else the recorded
/// text merged with the recorded defaults, read as a spec at its recorded path: no
/// defaults file is read again, and a matrix task is made of the recorded entry.
pub(super) fn source_spec(
    options: &ReplayOptions,
    recorded: RecordedSpec,
) -> Result<spec::LoadedSpec, PlanError> {
    let RecordedSpec {
        task,
        path: spec_path,
        yaml: spec_yaml,
        sha256: spec_sha256,
        defaults,
        matrix,
    } = recorded;
    let task = spec::RecordedTask {
        name: &task,
        entry: matrix.as_ref(),
    };
    let Some(named) = &options.spec else {
        let expansion = spec::Expansion::Recorded(task);
        return recorded_spec(spec_path, spec_yaml, defaults, expansion).map_err(|source| {
            ReplayError::SpecNoLongerLoads {
                transcript: options.transcript.clone(),
                source,
            }
            .into()
        });
    };
    let expansion = spec::Expansion::Vouched(task);
    let loaded =
        spec::load_recorded(named, expansion).map_err(|source| ReplayError::SpecUnreadable {
            spec: named.clone(),
            source,
        })?;
    if loaded.sha256 != spec_sha256 {
        return Err(ReplayError::SpecDiffers {
            spec: named.clone(),
            transcript: options.transcript.clone(),
            recorded: spec_sha256,
            now: loaded.sha256,
        }
        .into());
    }
    if let Some(change) = defaults_change(defaults.as_deref(), loaded.defaults.as_ref()) {
        return Err(ReplayError::DefaultsDiffer {
            spec: named.clone(),
            transcript: options.transcript.clone(),
            change,
        }
        .into());
    }
    Ok(loaded)
}

/// The recorded spec text merged with the recorded defaults text, each read at its
/// recorded path (so an error names the file that wrote the value).
fn recorded_spec(
    spec_path: String,
    spec_yaml: String,
    defaults: Option<Box<RunDefaults>>,
    expansion: spec::Expansion,
) -> Result<spec::LoadedSpec, spec::SpecError> {
    let defaults = defaults
        .map(|defaults| spec::parse_defaults(Path::new(&defaults.path), defaults.yaml))
        .transpose()?;
    spec::parse_with_defaults(
        Path::new(&spec_path),
        spec_yaml,
        defaults.as_ref(),
        expansion,
    )
}

/// Say on stderr what of the spec's commands the replay runs and what it leaves out, and
/// how to ask for it: the commands come from a recording, so nothing runs unannounced.
pub(super) fn say_what_runs(spec: &spec::LoadedSpec, options: &ReplayOptions) {
    if options.quiet {
        return;
    }
    let say = |line: String| crate::esay!("drover: replay: {line}");
    let task = &spec.spec;
    if !task.setup.is_empty() {
        if options.spec.is_some() {
            for step in &task.setup {
                say(format!(
                    "will run setup step {} in the replay's sandbox (network off): {}",
                    step.name, step.run
                ));
            }
        } else {
            say(format!(
                "not running the {} recorded in the transcript: a replay runs setup only from the spec file you name with --spec (the one the run used)",
                crate::output::counted(task.setup.len() as u64, "setup step", "setup steps")
            ));
        }
    }
    if !task.checks.is_empty() {
        if options.checks {
            for check in &task.checks {
                say(format!("will run check {}: {}", check.name, check.run));
            }
        } else {
            say(format!(
                "not running the {} recorded in the transcript (pass --checks to run them):",
                crate::output::counted(task.checks.len() as u64, "check", "checks")
            ));
            for check in &task.checks {
                say(format!("  {}: {}", check.name, check.run));
            }
        }
    }
    if options.mcp
        && let Some(config) = task.mcp.as_ref().and_then(|mcp| mcp.value.config.as_ref())
    {
        say(format!(
            "the recording's mcp.config ({config}) is not loaded: a replay starts only the servers its transcript spells out"
        ));
    }
}

/// Where the replay starts from: `--workspace`, else the recorded workspace, but only
/// when it lies in the current directory (a recording does not choose what a replay
/// copies and reads: `/`, a home directory, a device). The flag says whether the
/// recording chose it: such a start must then be exactly the recorded one.
pub(super) fn starting_workspace(
    options: &ReplayOptions,
    recorded: &str,
) -> Result<(PathBuf, bool), PlanError> {
    if let Some(workspace) = &options.workspace {
        if !workspace.is_dir() {
            return Err(ReplayError::NoWorkspace {
                workspace: workspace.clone(),
            }
            .into());
        }
        return Ok((workspace.clone(), false));
    }
    let workspace = PathBuf::from(recorded);
    let (Ok(current), Ok(real)) = (
        std::env::current_dir().and_then(|dir| dir.canonicalize()),
        workspace.canonicalize(),
    ) else {
        return Err(ReplayError::NoWorkspace { workspace }.into());
    };
    if !real.is_dir() {
        return Err(ReplayError::NoWorkspace { workspace }.into());
    }
    if !real.starts_with(&current) {
        return Err(ReplayError::WorkspaceNotHere { workspace, current }.into());
    }
    Ok((real, true))
}

/// The replay spec's MCP servers, for `--mcp`: stdio servers as `replay_spec` made them
/// (in the replay's sandbox, in the workspace copy), a `url:` server only at the URL
/// given with `--mcp-url`, each named on stderr.
pub(super) fn replay_servers(
    spec: &spec::LoadedSpec,
    options: &ReplayOptions,
) -> Result<BTreeMap<String, spec::McpServerSpec>, PlanError> {
    let say = |line: String| {
        if !options.quiet {
            crate::esay!("drover: replay: {line}");
        }
    };
    let (mut servers, _) = super::spec_checks::mcp_servers(spec)?;
    servers.retain(|name, server| {
        let Some(recorded) = &server.url else {
            return true;
        };
        match options.mcp_urls.iter().find(|(server, _)| server == name) {
            Some((_, url)) => {
                say(format!(
                    "will connect to MCP server {name} at {url} (recorded: {recorded})"
                ));
                server.url = Some(url.clone());
                true
            }
            None => {
                say(format!(
                    "MCP server {name} ({recorded}) is left out: give --mcp-url {name}=URL to connect to it"
                ));
                false
            }
        }
    });
    for (name, server) in &servers {
        let unset: Vec<String> = server
            .env
            .values()
            .chain(server.headers.values())
            .flat_map(|value| crate::mcp::referenced_vars(value))
            .filter(|var| !options.mcp_env.contains(var))
            .collect();
        if !unset.is_empty() {
            say(format!(
                "MCP server {name} names ${{{}}}, left unset: a replay passes only the variables given with --mcp-env",
                unset.join("}, ${")
            ));
        }
        if let Some(command) = &server.command {
            say(format!(
                "will start MCP server {name}: {command} {}",
                server.args.join(" ")
            ));
        }
        // A recorded command as well: named before it runs, in the replay's sandbox.
        if let Some(helper) = &server.headers_helper {
            say(format!(
                "will run MCP server {name}'s headers_helper in the sandbox: {helper}"
            ));
        }
    }
    Ok(servers)
}
