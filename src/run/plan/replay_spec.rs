//! The spec a replay runs by. A recording may come from anyone (a fork's CI artifacts),
//! and a valid hash chain proves only that drover wrote it: its author really ran drover,
//! with a spec of their choosing. So a replay's spec is not the recorded one with some
//! fields overridden; it is built anew from a fixed safe profile and what the command
//! line says, and the recording contributes data only (the prompt, the rules that decide
//! its calls again inside that profile, the expectations, the limits that can only
//! narrow). Every struct is taken apart without `..`: a field added to the spec later
//! does not compile here until someone decides what a replay does with it, and
//! docs/replay.md has a row for each field (a test below holds the two together).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_saphyr::Spanned;

use crate::spec::{
    CheckSpec, EnvSpec, Isolation, Limits, McpServerSpec, McpSpec, McpTimeouts, ModelSpec,
    Permissions, SandboxSpec, SpecDuration, Switch, TaskSpec, TimeoutLimit,
};

/// The longest a replay runs: a recording's `limits.timeout` can only shorten it (a
/// recorded `none` would otherwise let a replay run for ever).
pub(super) const REPLAY_TIMEOUT: Duration = crate::spec::DEFAULT_TASK_TIMEOUT;

/// What the command line grants a replay beyond the fixed profile.
pub(super) struct Granted {
    /// `--checks`: run the checks, in the replay's sandbox.
    pub checks: bool,
    /// `--mcp`: start the recorded servers, in the replay's sandbox.
    pub mcp: bool,
    /// `--spec FILE`: the user vouches for the spec (its SHA-256 is the recorded one), so
    /// its `setup:` runs (in the replay's sandbox) and its rules are the user's own (no
    /// [`unreadable_in_replays`]).
    pub vouched: bool,
}

/// The top-level directories a replay's commands and tools may still read when the user
/// does not vouch for the spec (`--spec`): where programs, their libraries and their
/// configuration live. Everything else — home directories, other checkouts, `/tmp` (but
/// the replay's own copy and `TMPDIR`, which stay writable), `/srv`, `/var`, `/run`,
/// mounted secrets — is unreadable, enforced by the OS sandbox for commands and
/// drover's file tools alike: with rules chosen by whoever recorded the run, a replayed
/// `cat` or `Read` of a key would put it in the replay's transcript, which CI uploads.
const READABLE_IN_REPLAYS: &[&str] = &[
    "bin", "dev", "etc", "lib", "lib32", "lib64", "libx32", "nix", "opt", "proc", "sbin", "snap",
    "sys", "usr",
];

/// Files under those directories that hold secrets of the machine.
const UNREADABLE_SYSTEM_FILES: &[&str] = &[
    "/etc/shadow",
    "/etc/gshadow",
    "/etc/ssh",
    "/etc/ssl/private",
];

/// What a replay of a recording alone may not read (see [`READABLE_IN_REPLAYS`]): every
/// entry of `/` but those, the machine's secret files, and the original workspace the
/// replay copied (a checkout whose `.git/config` may hold the token `actions/checkout`
/// keeps there), whichever directory it lies in.
pub(super) fn unreadable_in_replays(origin: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir("/")
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|entry| {
                    !READABLE_IN_REPLAYS
                        .iter()
                        .any(|name| entry.file_name() == *name)
                })
                .map(|entry| entry.path())
                .collect()
        })
        .unwrap_or_default();
    paths.extend(UNREADABLE_SYSTEM_FILES.iter().map(PathBuf::from));
    if let Ok(origin) = origin.canonicalize()
        && origin != Path::new("/")
    {
        paths.push(origin);
    }
    paths
}

/// The longest a recorded check or setup step may run in a replay.
const REPLAY_CHECK_TIMEOUT: Duration = REPLAY_TIMEOUT;
/// The longest a recorded MCP server may take to start in a replay.
const REPLAY_MCP_STARTUP: Duration = Duration::from_secs(120);
/// The longest a recorded MCP call may take in a replay.
const REPLAY_MCP_CALL: Duration = Duration::from_secs(600);

/// A value the replay profile sets, written nowhere in the spec.
fn unwritten<T>(value: T) -> Spanned<T> {
    let nowhere = serde_saphyr::Location::UNKNOWN;
    Spanned::new(value, nowhere, nowhere)
}

/// The spec a replay runs by: the fixed profile (a scratch copy, the sandbox on with the
/// network off and the default limits, no secrets passed, no extra directories, no hooks,
/// the guardrails on), the recording's data, and what `granted` adds. `source` is the
/// recorded spec, or the spec file the user named (`--spec`), whose text is the same.
// Long: it names every field of TaskSpec once on each side, so that a new field cannot
// reach a replay without a decision here; splitting it would hide that.
pub(super) fn replay_spec(source: TaskSpec, granted: &Granted) -> TaskSpec {
    let TaskSpec {
        version,
        name,
        prompt,
        system,
        workspace: _,
        repo: _,
        isolation_spec: _,
        model,
        permissions,
        permissions_from: _,
        limits,
        sandbox: _,
        env: _,
        setup,
        checks,
        expect,
        diff,
        mcp,
        retry,
        output,
        hooks: _,
        hooks_from: _,
        replay,
        agents: _,
        agents_from: _,
        tools: _,
        instructions: _,
        skills_from: _,
        matrix,
    } = source;
    TaskSpec {
        version,
        name,
        prompt,
        system,
        // The starting workspace is the command line's (`--workspace`) or the recorded
        // one beneath the current directory (see `plan_replay`), never the spec's.
        workspace: None,
        // A replay never clones: the recording is untrusted, and a URL it names would
        // get this machine's credentials; it starts from `--workspace`, a checkout of the
        // recorded commit (docs/replay.md).
        repo: None,
        isolation_spec: Some(unwritten(Isolation::Copy)),
        model: Spanned::new(replay_model(model.value), model.referenced, model.defined),
        permissions: replay_permissions(permissions),
        // The settings files' rules as the recorded run applied them come from
        // `run_start` (see `plan_replay`): no file is read again.
        permissions_from: None,
        limits: replay_limits(limits),
        sandbox: Some(SandboxSpec::Switch(Switch::On)),
        env: EnvSpec::default(),
        setup: if granted.vouched {
            setup.into_iter().map(in_replay_sandbox).collect()
        } else {
            Vec::new()
        },
        checks: if granted.checks {
            checks.into_iter().map(in_replay_sandbox).collect()
        } else {
            Vec::new()
        },
        expect,
        // What the recorded run's diff left out, so the two diffs compare like for like.
        diff,
        mcp: if granted.mcp {
            mcp.map(|mcp| Spanned::new(replay_mcp(mcp.value), mcp.referenced, mcp.defined))
        } else {
            None
        },
        retry,
        output,
        // Hooks never run in a replay: their recorded answers are given again.
        hooks: None,
        hooks_from: None,
        replay,
        // The recorded sub-agents come from `run_start` (their definitions as they ran).
        agents: None,
        agents_from: None,
        // WebFetch is answered from the recording: no page model, no search settings.
        tools: None,
        // The instruction files and skills recorded in `run_start` make the prompt and
        // answer `Skill` calls: no file of the replay's workspace or machine is read.
        instructions: None,
        skills_from: None,
        // Expanded already, with the recorded entry (`run_start`'s `matrix`): data only.
        matrix,
    }
}

/// The recorded model as a label and a price: the name and pricing say what the
/// recorded tokens cost (the budget), nothing reaches out.
fn replay_model(model: ModelSpec) -> ModelSpec {
    let ModelSpec {
        provider,
        name,
        base_url: _,
        api_key_env: _,
        max_tokens,
        temperature,
        path: _,
        retry: _,
        timeouts: _,
        script: _,
        transcript: _,
        pricing,
    } = model;
    ModelSpec {
        provider,
        name,
        base_url: None,
        api_key_env: None,
        max_tokens,
        temperature,
        path: None,
        retry: None,
        timeouts: None,
        script: None,
        transcript: None,
        pricing,
    }
}

/// The recorded rules decide the recorded calls again, inside the replay's sandbox;
/// `additional_directories` is dropped (a replay writes only in its scratch copy) and the
/// guardrails are on whatever the recording says.
fn replay_permissions(permissions: Permissions) -> Permissions {
    let Permissions {
        allow,
        deny,
        mode,
        additional_directories: _,
        guardrails: _,
    } = permissions;
    Permissions {
        allow,
        deny,
        mode,
        additional_directories: Vec::new(),
        guardrails: Switch::On,
    }
}

/// The recorded limits, which can only narrow: turns, budget, tokens and depth as
/// recorded, the time limit at most [`REPLAY_TIMEOUT`].
fn replay_limits(limits: Limits) -> Limits {
    let Limits {
        max_turns,
        timeout,
        max_cost_usd,
        max_tokens,
        max_agent_depth,
        context,
        max_identical_calls,
        wrap_up,
    } = limits;
    let timeout = match timeout {
        Some(TimeoutLimit::After(recorded)) if recorded < REPLAY_TIMEOUT => recorded,
        _ => REPLAY_TIMEOUT,
    };
    Limits {
        max_turns,
        timeout: Some(TimeoutLimit::After(timeout)),
        max_cost_usd,
        max_tokens,
        max_agent_depth,
        context,
        max_identical_calls,
        wrap_up,
    }
}

/// A setup step or check as the replay runs it: its command, in the replay's sandbox
/// (network off) whatever its own `sandbox:` said.
fn in_replay_sandbox(check: CheckSpec) -> CheckSpec {
    let CheckSpec {
        name,
        run,
        timeout,
        sandbox: _,
    } = check;
    CheckSpec {
        name,
        run,
        timeout: timeout.map(|timeout| at_most(Some(timeout), REPLAY_CHECK_TIMEOUT)),
        sandbox: Some(SandboxSpec::Switch(Switch::On)),
    }
}

/// The recorded servers (`--mcp`): only those the transcript spells out (no `config:`
/// file on this machine), each as [`replay_server`] says.
fn replay_mcp(mcp: McpSpec) -> McpSpec {
    let McpSpec {
        servers,
        config: _,
        timeouts,
        max_output,
    } = mcp;
    McpSpec {
        servers: servers
            .into_iter()
            .map(|(name, server)| (name, replay_server(server)))
            .collect(),
        config: None,
        timeouts: replay_mcp_timeouts(Some(timeouts)),
        max_output,
    }
}

/// A recorded server: its command and arguments started in the workspace copy, in the
/// replay's sandbox; its `env:` and `headers:` take `${VAR}` only from `--mcp-env`
/// (see `plan_replay`); a `url:` server is reached only at the URL given with
/// `--mcp-url`.
fn replay_server(server: McpServerSpec) -> McpServerSpec {
    let McpServerSpec {
        command,
        args,
        env,
        cwd: _,
        sandbox: _,
        url,
        headers,
        headers_helper,
        required,
        timeouts,
        from_config: _,
    } = server;
    McpServerSpec {
        command,
        args,
        env,
        cwd: None,
        sandbox: None,
        url,
        headers,
        // Run as a recorded stdio server's command is: in the replay's sandbox, with only
        // the `--mcp-env` variables for its `env:`.
        headers_helper,
        required,
        timeouts: timeouts.map(|timeouts| replay_mcp_timeouts(Some(timeouts))),
        // The `${VAR}`s of a recorded server take only `--mcp-env` variables (see
        // `plan_replay`), the user's own grant; its `url:` only `--mcp-url`'s.
        from_config: false,
    }
}

/// Recorded MCP time limits, each at most the replay's (none recorded: the default).
fn replay_mcp_timeouts(timeouts: Option<McpTimeouts>) -> McpTimeouts {
    let McpTimeouts { startup, call } = timeouts.unwrap_or_default();
    McpTimeouts {
        startup: startup.map(|startup| at_most(Some(startup), REPLAY_MCP_STARTUP)),
        call: call.map(|call| at_most(Some(call), REPLAY_MCP_CALL)),
    }
}

/// A recorded duration, or `limit` when it is longer or absent: a recording cannot make
/// a replay wait for ever.
fn at_most(recorded: Option<SpecDuration>, limit: Duration) -> SpecDuration {
    match recorded {
        Some(duration) if duration.0 <= limit => duration,
        _ => SpecDuration(limit),
    }
}

#[cfg(test)]
#[path = "replay_spec_tests.rs"]
mod tests;
