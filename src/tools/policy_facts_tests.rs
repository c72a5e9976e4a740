// Test-only module: its parent includes it under #[cfg(test)].
//! The policy (the drover-policy crate) against the facts the built-in tools state: it
//! names no tool type, so these checks live beside the registry that holds the tools.

use std::path::Path;

use serde_json::{Value, json};

use crate::policy::{CallFacts, KNOWN_TOOLS, Policy, Rule, RuleSet, takes_path_specifier};
use crate::tools::Registry;

fn policy(allow: &[&str], deny: &[&str]) -> Policy {
    let rules = |list: &[&str]| -> Vec<Rule> {
        list.iter()
            .map(|r| Rule::try_from(r.to_string()).unwrap())
            .collect()
    };
    let permissions = RuleSet {
        allow: rules(allow),
        deny: rules(deny),
        ..RuleSet::default()
    };
    Policy::new(&permissions, Path::new("/ws"), &[])
}

/// What the policy judges for the built-in tool `name` called with `input`.
fn builtin_facts(name: &str, input: &Value) -> CallFacts {
    Registry::builtin()
        .unwrap()
        .prepare(name, input.clone())
        .unwrap()
        .facts()
}

#[test]
fn tools_that_touch_only_run_state_are_allowed_unless_denied() {
    // The tools say so themselves: the policy names none of them.
    let calls = [
        ("TodoWrite", json!({"todos": []})),
        ("BashOutput", json!({"bash_id": "bash_1"})),
        ("KillShell", json!({"shell_id": "bash_1"})),
    ];
    for (name, input) in &calls {
        let decision = policy(&[], &[]).decide(&builtin_facts(name, input));
        assert!(decision.allowed(), "{name}: {}", decision.reason());
    }
    assert!(
        !policy(&[], &["TodoWrite"])
            .decide(&builtin_facts("TodoWrite", &calls[0].1))
            .allowed()
    );
}

#[test]
fn bash_companions_go_with_bash() {
    let p = policy(&[], &["Bash"]);
    let output = builtin_facts("BashOutput", &json!({"bash_id": "bash_1"})).tool;
    let kill = builtin_facts("KillShell", &json!({"shell_id": "bash_1"})).tool;
    assert!(p.withholds(&output).is_some() && p.withholds(&kill).is_some());
    assert!(policy(&[], &["Edit"]).withholds(&output).is_none());
}

#[test]
fn the_grammar_knows_every_built_in_tool_and_the_families_they_state() {
    // The rule grammar names tools before any registry exists (a spec is checked when
    // it loads); this keeps it in step with the tools' own facts.
    let registry = Registry::builtin().unwrap();
    for name in registry.names() {
        assert!(KNOWN_TOOLS.contains(&name.as_str()), "{name}");
        let facts = registry.facts(&name).unwrap();
        if let Some(family) = &facts.path_family {
            assert!(
                matches!(family.as_str(), "Read" | "Edit"),
                "{name}: {family}"
            );
            assert!(takes_path_specifier(&name) && takes_path_specifier(family));
        }
    }
}
