//! What a command's `sandbox.network` makes of its sandbox policy and its environment:
//! no network, the whole network, or (rules naming hosts) a proxied policy plus the
//! rules every one of its launches gets a proxy for (see `crate::network`).

use std::sync::Arc;

use serde_json::{Value, json};

use crate::network::{NetworkGate, NetworkRecorder};
use crate::policy::{EgressRules, EntryData};
use crate::sandbox::launch_network::NetworkOpener;
use crate::sandbox::{SandboxError, SandboxPolicy};
use crate::spec::{HostPattern, NetworkRules, NetworkSpec};

/// `policy` with the network `network` says.
pub(super) fn with_network(mut policy: SandboxPolicy, network: &NetworkSpec) -> SandboxPolicy {
    (policy.network, policy.proxied) = match network {
        NetworkSpec::Off => (false, false),
        NetworkSpec::All => (true, false),
        NetworkSpec::Rules(_) => (false, true),
    };
    policy
}

/// The gate for commands under `network` (None unless it is rules), recording to
/// `recorder`.
pub(super) fn gate(
    network: &NetworkSpec,
    recorder: &NetworkRecorder,
) -> Result<Option<Arc<dyn NetworkOpener>>, SandboxError> {
    let NetworkSpec::Rules(rules) = network else {
        return Ok(None);
    };
    let compiled = compile(rules).map_err(|e| {
        SandboxError::Unenforceable(format!(
            "the network rules cannot be compiled ({e}); check the spec with drover validate"
        ))
    })?;
    Ok(Some(Arc::new(NetworkGate::new(compiled, recorder.clone()))))
}

fn entries(patterns: &[HostPattern]) -> Vec<EntryData> {
    patterns
        .iter()
        .map(|pattern| (pattern.host.clone(), pattern.port))
        .collect()
}

/// The proxy's rules: the `allow:` and `deny:` entries, and each registry's hosts
/// named after it in events.
fn compile(rules: &NetworkRules) -> Result<EgressRules, crate::policy::EgressRuleError> {
    let mut compiled = EgressRules::new(&entries(&rules.allow), &entries(&rules.deny))?;
    for registry in &rules.registries {
        let hosts: Vec<EntryData> = registry
            .hosts()
            .iter()
            .map(|host| ((*host).to_string(), None))
            .collect();
        compiled = compiled.with_preset(&format!("registries: {}", registry.name()), &hosts)?;
    }
    Ok(compiled)
}

/// What `run_start` records of the task's network: `false`, `true`, or the rules.
pub(super) fn summary(network: &NetworkSpec) -> Value {
    match network {
        NetworkSpec::Off => json!(false),
        NetworkSpec::All => json!(true),
        NetworkSpec::Rules(rules) => json!({
            "allow": rules.allow.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "deny": rules.deny.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "registries": rules.registries.iter().map(|r| r.name()).collect::<Vec<_>>(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(yaml: &str) -> NetworkSpec {
        serde_saphyr::from_str(yaml).unwrap()
    }

    #[test]
    fn rules_compile_with_their_registries_named() {
        let network =
            rules("{allow: [\"localhost:8080\"], deny: [evil.example], registries: [npm]}");
        let NetworkSpec::Rules(written) = &network else {
            panic!("rules");
        };
        let compiled = compile(written).unwrap();
        assert!(compiled.judge("localhost", 8080).allowed());
        assert!(!compiled.judge("localhost", 8081).allowed());
        assert!(!compiled.judge("evil.example", 443).allowed());
        let npm = compiled.judge("registry.npmjs.org", 443);
        assert!(npm.allowed());
        assert!(npm.rule().unwrap().contains("registries: npm"), "{npm:?}");
        assert_eq!(
            summary(&network),
            json!({"allow": ["localhost:8080"], "deny": ["evil.example"], "registries": ["npm"]})
        );
    }
}
