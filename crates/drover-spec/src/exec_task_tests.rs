// Test-only module: its parent includes it under #[cfg(test)].
use std::path::Path;

use serde_json::json;

use super::*;
use crate::{LoadedSpec, NetworkSpec, PermissionMode, Registry, SandboxSpec, Switch, TimeoutLimit};

fn task() -> ExecTask {
    ExecTask {
        name: "exec".into(),
        prompt: "fix the failing test".into(),
        system: None,
        workspace: "/work/repo".into(),
        isolation: Isolation::None,
        provider: Provider::Anthropic,
        model: "claude-sonnet-4-5".into(),
        base_url: None,
        api_key_env: None,
        allow: vec!["Read".into(), "Edit".into(), "Bash(cargo test *)".into()],
        deny: Vec::new(),
        plan_mode: false,
        additional_directories: Vec::new(),
        sandbox: true,
        network: false,
        allow_hosts: Vec::new(),
        registries: Vec::new(),
        max_turns: None,
        timeout: None,
        max_cost_usd: None,
        max_tokens: None,
        checks: Vec::new(),
        output_schema: None,
        inherits: ExecInherits::default(),
    }
}

fn load(task: &ExecTask) -> LoadedSpec {
    let text = task.to_yaml();
    crate::parse(Path::new("drover-exec.yaml"), text.clone())
        .unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn rules(list: &[serde_saphyr::Spanned<String>]) -> Vec<String> {
    list.iter().map(|rule| rule.value.clone()).collect()
}

#[test]
fn the_smallest_task_is_a_spec_with_its_rules() {
    let spec = load(&task());
    assert_eq!(spec.name(), "exec");
    assert_eq!(spec.spec.prompt, "fix the failing test");
    assert_eq!(
        spec.spec.workspace.as_ref().map(|w| w.value.as_str()),
        Some("/work/repo")
    );
    assert_eq!(spec.spec.isolation(), Isolation::None);
    assert_eq!(spec.spec.model.value.provider, Provider::Anthropic);
    assert_eq!(
        spec.spec.model.value.name.as_deref(),
        Some("claude-sonnet-4-5")
    );
    assert_eq!(
        rules(&spec.spec.permissions.allow),
        ["Read", "Edit", "Bash(cargo test *)"]
    );
    assert!(spec.spec.permissions.deny.is_empty());
    assert_eq!(spec.spec.sandbox, Some(SandboxSpec::Switch(Switch::On)));
    assert!(spec.spec.checks.is_empty() && spec.spec.output.is_none());
}

#[test]
fn every_setting_lands_in_its_field() {
    let mut full = task();
    full.system = Some("Be brief.".into());
    full.isolation = Isolation::Worktree;
    full.provider = Provider::Openai;
    full.model = "qwen2.5-coder:32b".into();
    full.base_url = Some("http://127.0.0.1:11434/v1".into());
    full.api_key_env = Some("none".into());
    full.deny = vec!["Bash(git push *)".into(), "Read(.env)".into()];
    full.plan_mode = true;
    full.additional_directories = vec!["/srv/shared data".into()];
    full.network = true;
    full.max_turns = Some(12);
    full.timeout = Some("20m".into());
    full.max_cost_usd = Some(0.25);
    full.max_tokens = Some(200_000);
    full.checks = vec!["cargo test".into(), "cargo fmt --check".into()];
    full.output_schema = Some(json!({
        "type": "object",
        "required": ["verdict"],
        "properties": {"verdict": {"enum": ["approve", "request_changes"]}, "n": {"maximum": 1.5e3}}
    }));
    let spec = load(&full).spec;
    assert_eq!(spec.system.as_deref(), Some("Be brief."));
    assert_eq!(spec.isolation(), Isolation::Worktree);
    let model = &spec.model.value;
    assert_eq!(model.provider, Provider::Openai);
    assert_eq!(model.name.as_deref(), Some("qwen2.5-coder:32b"));
    assert_eq!(model.base_url.as_deref(), Some("http://127.0.0.1:11434/v1"));
    assert_eq!(model.api_key_env.as_deref(), Some("none"));
    assert_eq!(
        rules(&spec.permissions.deny),
        ["Bash(git push *)", "Read(.env)"]
    );
    assert_eq!(spec.permissions.mode, PermissionMode::Plan);
    assert_eq!(
        spec.permissions.additional_directories,
        ["/srv/shared data"]
    );
    assert!(SandboxSpec::has_network(spec.sandbox.as_ref()));
    assert!(SandboxSpec::is_on(spec.sandbox.as_ref()));
    assert_eq!(spec.limits.max_turns.map(|l| l.value), Some(12));
    assert_eq!(
        TimeoutLimit::effective(spec.limits.timeout),
        Some(std::time::Duration::from_secs(20 * 60))
    );
    assert_eq!(spec.limits.max_cost_usd.map(|l| l.value), Some(0.25));
    assert_eq!(spec.limits.max_tokens.map(|l| l.value), Some(200_000));
    let checks: Vec<(&str, &str)> = spec
        .checks
        .iter()
        .map(|c| (c.name.as_str(), c.run.as_str()))
        .collect();
    assert_eq!(
        checks,
        [
            ("cargo test", "cargo test"),
            ("cargo fmt --check", "cargo fmt --check")
        ]
    );
    assert_eq!(
        spec.output.unwrap().value.schema,
        full.output_schema,
        "the schema is the same JSON value"
    );
}

#[test]
fn the_sandbox_off_is_off_whatever_the_network_says() {
    let mut off = task();
    off.sandbox = false;
    off.network = true;
    let spec = load(&off).spec;
    assert_eq!(spec.sandbox, Some(SandboxSpec::Switch(Switch::Off)));
}

#[test]
fn hosts_and_registries_are_the_sandboxs_network_rules() {
    let mut named = task();
    named.allow_hosts = vec![
        "api.example".parse().unwrap(),
        "[::1]:8080".parse().unwrap(),
    ];
    named.registries = vec![Registry::Npm, Registry::Crates];
    let text = named.to_yaml();
    assert!(
        text.contains(
            "sandbox: { network: { allow: [\"api.example\", \"[::1]:8080\"], registries: [\"npm\", \"crates\"] } }\n"
        ),
        "{text}"
    );
    let spec = load(&named).spec;
    let Some(NetworkSpec::Rules(rules)) = SandboxSpec::network(spec.sandbox.as_ref()) else {
        panic!("{:?}", spec.sandbox)
    };
    assert_eq!(rules.allow, named.allow_hosts);
    assert_eq!(rules.registries, named.registries);
    assert!(rules.deny.is_empty());
    assert!(!SandboxSpec::has_network(spec.sandbox.as_ref()));
    named.allow_hosts.clear();
    let text = named.to_yaml();
    assert!(
        text.contains("sandbox: { network: { registries: [\"npm\", \"crates\"] } }\n"),
        "{text}"
    );
    assert!(SandboxSpec::network_rules(load(&named).spec.sandbox.as_ref()).is_some());
}

#[test]
fn no_text_given_on_the_command_line_can_add_a_key_or_change_another_value() {
    let hostile = [
        "\"\nname: evil\nmodel: {provider: script}\n#",
        "a: b # c",
        "--- \n...\n%YAML 1.2",
        "- [x] {y} & *z !tag |",
        "tab\there\r\nCRLF \\ backslash \\\" quote",
        "nul \u{0} esc \u{1b}[2J del \u{7f} c1 \u{85}\u{9b}",
        "separators \u{2028} \u{2029} bom \u{feff} nonchar \u{fffe}\u{ffff}",
        "bidi \u{202e}txet\u{202c} emoji 🦀 𝕏 CJK 修正",
        "  leading and trailing blanks  ",
        "",
        "'single' ''quotes''",
        "${VAR} $(cmd) `cmd`",
        "::add-mask::x ##[error]y ###[z #[w",
    ];
    for text in hostile {
        let mut odd = task();
        odd.prompt = text.to_string();
        odd.system = Some(text.to_string());
        odd.allow = vec![format!("Bash(echo {text})")];
        odd.checks = vec![format!("check {text}")];
        odd.output_schema =
            Some(json!({"type": "object", "description": text, text: {"const": text}}));
        let spec = load(&odd).spec;
        assert_eq!(spec.prompt, text);
        assert_eq!(spec.system.as_deref(), Some(text));
        assert_eq!(spec.name.value.as_str(), "exec");
        assert_eq!(spec.model.value.provider, Provider::Anthropic);
        assert_eq!(
            rules(&spec.permissions.allow),
            [format!("Bash(echo {text})")]
        );
        assert_eq!(spec.checks[0].run, format!("check {text}"));
        assert_eq!(spec.output.unwrap().value.schema, odd.output_schema);
        let yaml = odd.to_yaml();
        assert!(
            !yaml.contains("##[")
                && !yaml.chars().any(|c| c.is_control() && c != '\n')
                && !yaml.contains(['\u{202e}', '\u{2066}', '\u{2028}']),
            "printable as it is: {yaml}"
        );
    }
}

#[test]
fn the_same_task_gives_the_same_text() {
    assert_eq!(task().to_yaml(), task().to_yaml());
    let text = task().to_yaml();
    assert!(text.starts_with("version: 1\nname: \"exec\"\n"), "{text}");
    assert!(
        text.lines().all(|line| !line.contains('\r')),
        "one value a line: {text}"
    );
}

#[test]
fn what_a_task_inherits_is_left_out_and_the_defaults_apply_as_to_a_spec() {
    let defaults = crate::parse_defaults(
        Path::new("ws/drover.yaml"),
        "version: 1\nmodel: { provider: script, script: [{ text: hi }] }\npermissions:\n  allow: [Read]\n  deny: [\"Bash(rm *)\"]\nsandbox: { network: true }\nisolation: copy\nlimits: { max_turns: 7 }\n".into(),
    )
    .unwrap();
    let mut inheriting = task();
    inheriting.inherits = ExecInherits {
        model: true,
        isolation: true,
        allow: true,
        sandbox: true,
    };
    inheriting.deny = vec!["Write".into()];
    let text = inheriting.to_yaml();
    for key in ["model:", "isolation:", "allow:", "sandbox:"] {
        assert!(!text.contains(key), "{key} in\n{text}");
    }
    let loaded = crate::parse_with_defaults(
        Path::new("ws/drover-exec.yaml"),
        text,
        Some(&defaults),
        crate::Expansion::Written,
    )
    .unwrap();
    let spec = &loaded.spec;
    assert_eq!(spec.model.value.provider, Provider::Script);
    assert_eq!(rules(&spec.permissions.allow), ["Read"]);
    assert_eq!(rules(&spec.permissions.deny), ["Bash(rm *)", "Write"]);
    assert_eq!(spec.isolation(), Isolation::Copy);
    assert_eq!(spec.limits.max_turns.as_ref().map(|l| l.value), Some(7));
    // What the flags set is the spec's own: its allow list is exactly the flags'.
    let own = task();
    let loaded = crate::parse_with_defaults(
        Path::new("ws/drover-exec.yaml"),
        own.to_yaml(),
        Some(&defaults),
        crate::Expansion::Written,
    )
    .unwrap();
    assert_eq!(
        rules(&loaded.spec.permissions.allow),
        ["Read", "Edit", "Bash(cargo test *)"]
    );
    assert_eq!(rules(&loaded.spec.permissions.deny), ["Bash(rm *)"]);
    assert_eq!(loaded.spec.model.value.provider, Provider::Anthropic);
    assert!(matches!(
        loaded.spec.sandbox,
        Some(SandboxSpec::Switch(Switch::On))
    ));
    assert!(defaults.writes(&["permissions", "allow"]));
    assert!(!defaults.writes(&["permissions", "mode"]));
}
