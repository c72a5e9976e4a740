//! The typed side of the merge: each setting a spec may inherit taken from the file the
//! merged tree names for it (`merged` states the rules; this follows them).

use super::DefaultsSpec;
use super::merged::{Merged, Source};
use crate::limits::LimitsSpec;
use crate::network::{NetworkRules, NetworkSpec};
use crate::sandbox::{SandboxSettings, SandboxSpec};
use crate::types::{EnvSpec, Limits, Permissions, WrittenSpec};

/// `spec` with what it inherits from `defaults`, as `merged` (their merged documents)
/// says. `permissions.deny` is both lists, the defaults' first.
pub(crate) fn apply(
    mut spec: WrittenSpec,
    merged: &Merged,
    defaults: &DefaultsSpec,
) -> WrittenSpec {
    let from_defaults = |path: &[&str]| merged.origin(path) == Some(Source::Defaults);
    if from_defaults(&["model"]) {
        spec.model = defaults.model.clone();
    }
    if from_defaults(&["isolation"]) {
        spec.isolation_spec = defaults.isolation.clone();
    }
    // `diff:` holds one list: the merged tree names its file, or that of `diff:` itself.
    if from_defaults(&["diff"]) || from_defaults(&["diff", "exclude"]) {
        spec.diff = defaults.diff.clone();
    }
    spec.permissions = permissions(merged, spec.permissions, defaults.permissions.as_ref());
    spec.limits = limits(merged, spec.limits, defaults.limits.as_ref());
    spec.sandbox = sandbox(merged, spec.sandbox, defaults.sandbox.as_ref());
    if let Some(env) = &defaults.env {
        spec.env = EnvSpec {
            pass: pick(merged, &["env", "pass"], spec.env.pass, &env.pass),
        };
    }
    spec
}

/// `own`, or `default` when the merged tree says the setting at `path` is the defaults'.
fn pick<T: Clone>(merged: &Merged, path: &[&str], own: T, default: &T) -> T {
    if merged.origin(path) == Some(Source::Defaults) {
        default.clone()
    } else {
        own
    }
}

fn permissions(merged: &Merged, own: Permissions, defaults: Option<&Permissions>) -> Permissions {
    let Some(defaults) = defaults else {
        return own;
    };
    let at = |key| ["permissions", key];
    Permissions {
        allow: pick(merged, &at("allow"), own.allow, &defaults.allow),
        deny: defaults.deny.iter().cloned().chain(own.deny).collect(),
        mode: pick(merged, &at("mode"), own.mode, &defaults.mode),
        additional_directories: pick(
            merged,
            &at("additional_directories"),
            own.additional_directories,
            &defaults.additional_directories,
        ),
        guardrails: pick(
            merged,
            &at("guardrails"),
            own.guardrails,
            &defaults.guardrails,
        ),
    }
}

fn limits(merged: &Merged, own: Limits, defaults: Option<&Limits>) -> Limits {
    let Some(defaults) = defaults else {
        return own;
    };
    let at = |key| ["limits", key];
    Limits {
        max_turns: pick(merged, &at("max_turns"), own.max_turns, &defaults.max_turns),
        timeout: pick(merged, &at("timeout"), own.timeout, &defaults.timeout),
        max_cost_usd: pick(
            merged,
            &at("max_cost_usd"),
            own.max_cost_usd,
            &defaults.max_cost_usd,
        ),
        max_tokens: pick(
            merged,
            &at("max_tokens"),
            own.max_tokens,
            &defaults.max_tokens,
        ),
        max_agent_depth: pick(
            merged,
            &at("max_agent_depth"),
            own.max_agent_depth,
            &defaults.max_agent_depth,
        ),
        context: pick(merged, &at("context"), own.context, &defaults.context),
        max_identical_calls: pick(
            merged,
            &at("max_identical_calls"),
            own.max_identical_calls,
            &defaults.max_identical_calls,
        ),
        wrap_up: pick(merged, &at("wrap_up"), own.wrap_up, &defaults.wrap_up),
    }
}

/// Two sandbox mappings merge key by key (`limits:` too); otherwise (`on`, `off`, or
/// one of them a mapping) the value is the file's the tree names.
fn sandbox(
    merged: &Merged,
    own: Option<SandboxSpec>,
    defaults: Option<&SandboxSpec>,
) -> Option<SandboxSpec> {
    match (own, defaults) {
        (Some(SandboxSpec::Settings(own)), Some(SandboxSpec::Settings(defaults))) => {
            Some(SandboxSpec::Settings(settings(merged, own, defaults)))
        }
        (own, defaults) => pick(merged, &["sandbox"], own, &defaults.cloned()),
    }
}

fn settings(merged: &Merged, own: SandboxSettings, defaults: &SandboxSettings) -> SandboxSettings {
    let at = |key| ["sandbox", key];
    let limit = |key| ["sandbox", "limits", key];
    let (mine, theirs) = (own.limits, defaults.limits);
    SandboxSettings {
        network: network(merged, own.network, defaults.network.as_ref()),
        writable: pick(merged, &at("writable"), own.writable, &defaults.writable),
        limits: LimitsSpec {
            processes: pick(
                merged,
                &limit("processes"),
                mine.processes,
                &theirs.processes,
            ),
            file_size: pick(
                merged,
                &limit("file_size"),
                mine.file_size,
                &theirs.file_size,
            ),
            address_space: pick(
                merged,
                &limit("address_space"),
                mine.address_space,
                &theirs.address_space,
            ),
            open_files: pick(
                merged,
                &limit("open_files"),
                mine.open_files,
                &theirs.open_files,
            ),
        },
    }
}

/// Two rule mappings (`network: {allow, deny, registries}`) merge key by key, their
/// `deny:` lists joined (the defaults' first: a default deny is a floor, as in
/// `permissions.deny`); otherwise (`true`, `false`, or one of them rules) the value is
/// the file's the tree names.
fn network(
    merged: &Merged,
    own: Option<NetworkSpec>,
    defaults: Option<&NetworkSpec>,
) -> Option<NetworkSpec> {
    match (own, defaults) {
        (Some(NetworkSpec::Rules(own)), Some(NetworkSpec::Rules(defaults))) => {
            let at = |key| ["sandbox", "network", key];
            Some(NetworkSpec::Rules(NetworkRules {
                allow: pick(merged, &at("allow"), own.allow, &defaults.allow),
                deny: defaults.deny.iter().cloned().chain(own.deny).collect(),
                registries: pick(
                    merged,
                    &at("registries"),
                    own.registries,
                    &defaults.registries,
                ),
            }))
        }
        (own, defaults) => pick(merged, &["sandbox", "network"], own, &defaults.cloned()),
    }
}
