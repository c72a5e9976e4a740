// Test-only module: its parent includes it under #[cfg(test)].
use std::path::Path;

use super::*;
use crate::hooks::HookEvent;
use crate::load::{SpecError, parse};
use crate::sandbox::SandboxSpec;
use crate::types::TaskSpec;

const HEAD: &str =
    "version: 1\nname: t\nprompt: p\nmodel: { provider: script, script: [{ text: hi }] }\n";

fn spec(body: &str) -> TaskSpec {
    match parse(Path::new("spec.yaml"), format!("{HEAD}{body}")) {
        Ok(loaded) => loaded.spec,
        Err(error) => panic!("{body}: {error}"),
    }
}

fn error(body: &str) -> String {
    match parse(Path::new("spec.yaml"), format!("{HEAD}{body}")) {
        Ok(loaded) => panic!("{body} was taken: {:?}", loaded.spec.sandbox),
        Err(error @ SpecError::Invalid { .. }) => error.to_string(),
        Err(other) => panic!("{body}: not a value error: {other}"),
    }
}

fn task_network(body: &str) -> Option<NetworkSpec> {
    SandboxSpec::network(spec(body).sandbox.as_ref()).cloned()
}

fn rules(body: &str) -> NetworkRules {
    match task_network(body) {
        Some(NetworkSpec::Rules(rules)) => rules,
        other => panic!("{body}: {other:?}"),
    }
}

fn hosts(patterns: &[HostPattern]) -> Vec<String> {
    patterns.iter().map(ToString::to_string).collect()
}

#[test]
fn false_off_true_and_on_are_the_switches() {
    for (written, network) in [
        ("false", NetworkSpec::Off),
        ("off", NetworkSpec::Off),
        ("\"off\"", NetworkSpec::Off),
        ("true", NetworkSpec::All),
        ("on", NetworkSpec::All),
        ("\"on\"", NetworkSpec::All),
    ] {
        let body = format!("sandbox: {{ network: {written} }}\n");
        assert_eq!(task_network(&body), Some(network), "{written}");
    }
    assert_eq!(
        task_network("sandbox: { limits: { processes: 9 } }\n"),
        None
    );
    assert_eq!(task_network("sandbox: on\n"), None);
}

#[test]
fn a_mapping_holds_allow_deny_and_registries() {
    let rules = rules(
        "sandbox:\n  network:\n    allow: [Example.org, \"*.githubusercontent.com\", \"localhost:8080\", \"[::1]:9\"]\n    deny: [evil.example.org]\n    registries: [npm, crates]\n",
    );
    assert_eq!(
        hosts(&rules.allow),
        [
            "example.org",
            "*.githubusercontent.com",
            "localhost:8080",
            "[::1]:9"
        ]
    );
    assert_eq!(hosts(&rules.deny), ["evil.example.org"]);
    assert_eq!(rules.registries, [Registry::Npm, Registry::Crates]);
    assert_eq!(
        hosts(&rules.allowed()),
        [
            "example.org",
            "*.githubusercontent.com",
            "localhost:8080",
            "[::1]:9",
            "registry.npmjs.org",
            "registry.yarnpkg.com",
            "crates.io",
            "index.crates.io",
            "static.crates.io",
        ]
    );
    assert!(!rules.allows_nothing());
}

#[test]
fn a_block_list_is_read_as_a_flow_list() {
    let rules = rules(
        "sandbox:\n  network:\n    allow:\n      - pypi.org\n      - \"*.pythonhosted.org\"\n    registries:\n      - go\n",
    );
    assert_eq!(hosts(&rules.allow), ["pypi.org", "*.pythonhosted.org"]);
    assert_eq!(rules.registries, [Registry::Go]);
}

#[test]
fn a_registry_host_also_named_in_allow_is_allowed_once() {
    let rules = rules("sandbox: { network: { allow: [pypi.org], registries: [pypi] } }\n");
    assert_eq!(
        hosts(&rules.allowed()),
        ["pypi.org", "files.pythonhosted.org"]
    );
}

#[test]
fn rules_that_allow_nothing_are_legal() {
    for body in [
        "sandbox: { network: {} }\n",
        "sandbox: { network: { allow: [] } }\n",
        "sandbox: { network: { deny: [example.org] } }\n",
    ] {
        let rules = rules(body);
        assert!(rules.allows_nothing(), "{body}");
        assert!(rules.allowed().is_empty(), "{body}");
    }
}

#[test]
fn every_sandbox_of_a_spec_takes_the_same_shape() {
    let body = "\
sandbox: { network: { allow: [a.example] } }
setup:
  - name: deps
    run: npm ci
    sandbox: { network: { registries: [npm] } }
checks:
  - name: tests
    run: cargo test
    sandbox: { network: { allow: [\"localhost:5432\"], deny: [b.example] } }
hooks:
  PostToolUse:
    - hooks: [{ type: command, command: ./fmt.sh, sandbox: { network: { allow: [c.example] } } }]
mcp:
  servers:
    docs:
      command: docs-server
      sandbox: { network: { allow: [\"*.docs.example\"] } }
";
    let spec = spec(body);
    let allow_of = |sandbox: Option<&SandboxSpec>| {
        hosts(&SandboxSpec::network_rules(sandbox).unwrap().allowed())
    };
    assert_eq!(allow_of(spec.sandbox.as_ref()), ["a.example"]);
    assert_eq!(
        allow_of(spec.setup[0].sandbox.as_ref()),
        ["registry.npmjs.org", "registry.yarnpkg.com"]
    );
    assert_eq!(
        allow_of(spec.checks[0].sandbox.as_ref()),
        ["localhost:5432"]
    );
    let hooks = spec.hooks.as_ref().unwrap();
    let hook = &hooks.value[&HookEvent::PostToolUse][0].hooks[0];
    assert_eq!(allow_of(hook.sandbox.as_ref()), ["c.example"]);
    let server = &spec.mcp.as_ref().unwrap().value.servers["docs"];
    assert_eq!(allow_of(server.sandbox.as_ref()), ["*.docs.example"]);
}

#[test]
fn a_bad_entry_is_refused_at_its_line_and_column_naming_its_list_and_index() {
    let message =
        error("sandbox:\n  network:\n    allow:\n      - example.org\n      - https://x.org\n");
    assert!(
        message.starts_with("spec.yaml:9:9: sandbox.network.allow[1]: \"https://x.org\" must be a host name, not a URL: write \"x.org\""),
        "{message}"
    );
    let message = error("sandbox: { network: { deny: [a.example, b.example, \"x:0\"] } }\n");
    assert!(
        message.starts_with("spec.yaml:5:52: sandbox.network.deny[2]: \"x:0\": port 0"),
        "{message}"
    );
    let message = error("sandbox: { network: { registries: [npm, npmm] } }\n");
    assert!(
        message.starts_with("spec.yaml:5:41: sandbox.network.registries[1]: \"npmm\" is not a registry drover knows; write one of npm, pypi, crates, go, maven"),
        "{message}"
    );
}

#[test]
fn each_refused_form_is_a_spec_error() {
    for (entry, says) in [
        ("\"https://x.org\"", "not a URL"),
        ("example.org/path", "without a path"),
        ("user@example.org", "credentials"),
        ("\"*\"", "would allow every host"),
        ("\"*.10.0.0.5\"", "not of an IP address"),
        ("\"example.org:0\"", "port 0"),
        ("\"example.org:70000\"", "is not a port"),
        ("\"::1\"", "in brackets: [::1]"),
        ("\"\"", "the host is empty"),
        ("8080", "reads as the IPv4 address"),
    ] {
        for list in ["allow", "deny"] {
            let message = error(&format!(
                "sandbox: {{ network: {{ {list}: [{entry}] }} }}\n"
            ));
            assert!(
                message.starts_with("spec.yaml:5:")
                    && message.contains(&format!("sandbox.network.{list}[0]: "))
                    && message.contains(says),
                "{entry} in {list}: {message}"
            );
        }
    }
}

#[test]
fn an_unquoted_wildcard_is_told_to_be_quoted() {
    let message = error("sandbox:\n  network:\n    allow:\n      - *.example.org\n");
    assert_eq!(
        message,
        "spec.yaml:8:9: *.example.org is read as a YAML alias (`*name` repeats the value marked `&name`); to write a value that starts with `*`, quote it: \"*.example.org\""
    );
}

#[test]
fn the_shape_itself_is_checked() {
    let message = error("sandbox: { network: maybe }\n");
    assert!(
        message.contains(
            "expected false, true, or a mapping such as { allow: [example.org], registries: [npm] }"
        ),
        "{message}"
    );
    assert!(
        error("sandbox: { network: [a.example] }\n").contains("expected false, true, or a mapping")
    );
    let message = error("sandbox:\n  network:\n    allow: example.org\n");
    assert!(
        message.contains("expected sandbox.network.allow to be a list of hosts"),
        "{message}"
    );
    let message = error("sandbox:\n  network:\n    alow: [example.org]\n");
    assert!(
        message.starts_with(
            "spec.yaml:7:5: unknown field `alow`, expected one of allow, deny, registries"
        ),
        "{message}"
    );
    assert_eq!(
        error("sandbox: { network: { allow: [{ host: x }] } }\n"),
        "spec.yaml:5:31: sandbox.network.allow[0]: expected string scalar"
    );
}

#[test]
fn the_rules_are_recorded_as_written_canonically() {
    let network = task_network(
        "sandbox: { network: { allow: [Example.org, \"[::1]:8080\"], deny: [\"*.Bad.example\"], registries: [go] } }\n",
    )
    .unwrap();
    assert_eq!(
        serde_json::to_value(&network).unwrap(),
        serde_json::json!({
            "allow": ["example.org", "[::1]:8080"],
            "deny": ["*.bad.example"],
            "registries": ["go"],
        })
    );
    assert_eq!(serde_json::to_value(NetworkSpec::All).unwrap(), true);
    assert_eq!(serde_json::to_value(NetworkSpec::Off).unwrap(), false);
}

#[test]
fn only_true_or_no_sandbox_is_the_whole_network() {
    let whole = |body: &str| SandboxSpec::has_network(spec(body).sandbox.as_ref());
    assert!(whole("sandbox: { network: true }\n"));
    assert!(whole("sandbox: off\n"));
    assert!(!whole(""));
    assert!(!whole("sandbox: on\n"));
    assert!(!whole("sandbox: { network: false }\n"));
    assert!(!whole("sandbox: { writable: [/opt/out] }\n"));
    assert!(!whole("sandbox: { network: { allow: [a.example] } }\n"));
}

#[test]
fn an_allow_list_is_inherited_by_commands_that_set_no_network_and_true_by_those_without_a_sandbox_of_their_own()
 {
    let sandbox = |text: &str| spec(&format!("sandbox: {text}\n")).sandbox;
    let list = sandbox("{ network: { allow: [a.example] } }");
    let whole = sandbox("{ network: true }");
    let own_list = sandbox("{ network: { allow: [b.example] } }");
    let own_off = sandbox("{ network: false }");
    let own_limits = sandbox("{ limits: { processes: 9 } }");
    let on = sandbox("on");
    let off = sandbox("off");
    let list_rules = SandboxSpec::network(list.as_ref()).cloned().unwrap();
    let own_rules = SandboxSpec::network(own_list.as_ref()).cloned().unwrap();
    for setup in [false, true] {
        let of = |own: &Option<SandboxSpec>, task: &Option<SandboxSpec>| {
            SandboxSpec::command_network(own.as_ref(), task.as_ref(), setup)
        };
        // Nothing of its own: the task's allow-list.
        assert_eq!(of(&None, &list), list_rules);
        assert_eq!(of(&own_limits, &list), list_rules);
        assert_eq!(of(&on, &list), list_rules);
        // Its own network wins.
        assert_eq!(of(&own_list, &list), own_rules);
        assert_eq!(of(&own_off, &list), NetworkSpec::Off);
        assert_eq!(of(&whole, &list), NetworkSpec::All);
        // A sandbox of its own without network: none, whatever the task's `true`.
        assert_eq!(of(&own_limits, &whole), NetworkSpec::Off);
        assert_eq!(of(&on, &on), NetworkSpec::Off, "a replay's setup steps");
        // Unsandboxed: nothing confines it.
        assert_eq!(of(&off, &list), NetworkSpec::All);
    }
    // No sandbox of its own: the task's sandbox as it is, its `true` included (a
    // check is confined like the agent); a setup step the whole network anyway.
    assert_eq!(
        SandboxSpec::command_network(None, whole.as_ref(), false),
        NetworkSpec::All
    );
    // No sandbox of its own and no network to inherit: the default, the whole network
    // for a setup step, none for the others.
    for task in [&whole, &None, &on, &off, &own_off] {
        assert_eq!(
            SandboxSpec::command_network(None, task.as_ref(), true),
            NetworkSpec::All
        );
        if task == &whole {
            continue;
        }
        assert_eq!(
            SandboxSpec::command_network(None, task.as_ref(), false),
            NetworkSpec::Off
        );
    }
}

#[test]
fn a_network_that_allows_nothing_is_noted_where_it_is_written() {
    let spec = spec(
        "\
sandbox: { network: {} }
setup:
  - name: deps
    run: npm ci
    sandbox: { network: { registries: [npm] } }
checks:
  - name: tests
    run: cargo test
    sandbox: { network: { allow: [] } }
hooks:
  Stop:
    - hooks: [{ type: command, command: ./a.sh }, { type: command, command: ./b.sh, sandbox: { network: { deny: [x.example] } } }]
mcp:
  servers:
    docs: { command: docs, sandbox: { network: false } }
",
    );
    let places: Vec<String> = spec.sandboxes().into_iter().map(|(at, _)| at).collect();
    assert_eq!(
        places,
        [
            "sandbox",
            "setup[0].sandbox",
            "checks[0].sandbox",
            "hooks.Stop[0].hooks[1].sandbox",
            "mcp.servers.docs.sandbox",
        ]
    );
    let notes = spec.network_notes();
    let noted: Vec<&str> = notes
        .iter()
        .map(|note| note.split(".network allows no host").next().unwrap())
        .collect();
    assert_eq!(
        noted,
        [
            "sandbox",
            "checks[0].sandbox",
            "hooks.Stop[0].hooks[1].sandbox"
        ]
    );
    assert!(notes[0].ends_with(
        "every connection its commands make is refused; name hosts in allow: or registries:, or write network: false"
    ));
}
