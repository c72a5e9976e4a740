// Test-only module: its parent includes it under #[cfg(test)].
use super::*;

fn settings(prompt: &str) -> ExecSettings {
    ExecSettings {
        prompt: Some(PromptSource::Text(prompt.to_string())),
        ..ExecSettings::default()
    }
}

fn env_with(names: &'static [&'static str]) -> impl Fn(&str) -> Option<String> {
    move |name| names.contains(&name).then(|| "sk-x".to_string())
}

fn rule(flag: &'static str, rule: &str) -> FlagRule {
    FlagRule {
        flag,
        rule: rule.to_string(),
    }
}

#[test]
fn the_defaults_fill_what_no_flag_gave() {
    let task = settings("fix it")
        .task(env_with(&["ANTHROPIC_API_KEY"]))
        .unwrap();
    assert_eq!(task.name, "exec");
    assert_eq!(task.provider, Provider::Anthropic);
    assert_eq!(task.model, "claude-sonnet-4-5");
    assert_eq!(task.isolation, Isolation::None);
    assert!(task.sandbox && !task.network && !task.plan_mode);
    let here = std::env::current_dir().unwrap().canonicalize().unwrap();
    assert_eq!(task.workspace, here.to_str().unwrap());
    assert!(task.allow.is_empty() && task.checks.is_empty());
}

#[test]
fn the_provider_is_the_one_whose_key_is_set_anthropic_first() {
    let openai = settings("p").task(env_with(&["OPENAI_API_KEY"])).unwrap();
    assert_eq!(
        (openai.provider, openai.model.as_str()),
        (Provider::Openai, "gpt-5")
    );
    let both = settings("p")
        .task(env_with(&["OPENAI_API_KEY", "ANTHROPIC_API_KEY"]))
        .unwrap();
    assert_eq!(both.provider, Provider::Anthropic);
    let none = settings("p").task(env_with(&[])).unwrap_err().to_string();
    assert!(
        none.contains("ANTHROPIC_API_KEY")
            && none.contains("OPENAI_API_KEY")
            && none.contains("--provider"),
        "{none}"
    );
    let given = ExecSettings {
        provider: Some(Provider::Openai),
        model: Some("qwen".into()),
        ..settings("p")
    };
    let task = given.task(env_with(&["ANTHROPIC_API_KEY"])).unwrap();
    assert_eq!(
        (task.provider, task.model.as_str()),
        (Provider::Openai, "qwen")
    );
}

#[test]
fn claude_codes_model_aliases_name_claude_models() {
    let alias = ExecSettings {
        model: Some("haiku".into()),
        ..settings("p")
    };
    let task = alias.task(env_with(&["ANTHROPIC_API_KEY"])).unwrap();
    assert_eq!(task.model, "claude-haiku-4-5");
}

#[test]
fn a_bad_rule_is_named_with_its_flag() {
    let bad = ExecSettings {
        allow: vec![rule("--allow", "Read"), rule("--allowedTools", "Bahs(ls)")],
        ..settings("p")
    };
    let error = bad
        .task(env_with(&["ANTHROPIC_API_KEY"]))
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with("--allowedTools \"Bahs(ls)\" is not a rule: "),
        "{error}"
    );
    let bad = ExecSettings {
        deny: vec![rule("--deny", "Read(a/../b)")],
        ..settings("p")
    };
    let error = bad
        .task(env_with(&["ANTHROPIC_API_KEY"]))
        .unwrap_err()
        .to_string();
    assert!(error.starts_with("--deny \"Read(a/../b)\""), "{error}");
}

#[test]
fn an_empty_prompt_a_check_given_twice_and_a_missing_workspace_are_refused() {
    let env = || env_with(&["ANTHROPIC_API_KEY"]);
    assert!(matches!(
        settings("  \n").task(env()),
        Err(ExecError::EmptyPrompt)
    ));
    let twice = ExecSettings {
        checks: vec!["cargo test".into(), "cargo test".into()],
        ..settings("p")
    };
    assert!(matches!(twice.task(env()), Err(ExecError::CheckTwice(_))));
    let nowhere = ExecSettings {
        workspace: Some("/no/such/dir".into()),
        ..settings("p")
    };
    let error = nowhere.task(env()).unwrap_err().to_string();
    assert!(error.starts_with("--workspace /no/such/dir"), "{error}");
}

#[test]
fn a_prompt_or_schema_file_is_read_through_no_link() {
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("secret");
    std::fs::write(&secret, "TOKEN=1").unwrap();
    let link = dir.path().join("prompt.md");
    std::os::unix::fs::symlink(&secret, &link).unwrap();
    let env = || env_with(&["ANTHROPIC_API_KEY"]);
    let linked = ExecSettings {
        prompt: Some(PromptSource::File(link.clone())),
        ..ExecSettings::default()
    };
    let error = linked.task(env()).unwrap_err().to_string();
    assert!(error.starts_with("--prompt-file: "), "{error}");
    let schema = ExecSettings {
        output_schema: Some(link),
        ..settings("p")
    };
    assert!(schema.task(env()).is_err());
    let file = dir.path().join("real.md");
    std::fs::write(&file, "Fix the test.\n").unwrap();
    let real = ExecSettings {
        prompt: Some(PromptSource::File(file)),
        ..ExecSettings::default()
    };
    assert_eq!(real.task(env()).unwrap().prompt, "Fix the test.\n");
}

#[test]
fn an_output_schema_must_be_a_json_schema() {
    let dir = tempfile::tempdir().unwrap();
    let env = || env_with(&["ANTHROPIC_API_KEY"]);
    for (text, ok) in [
        ("{\"type\":\"object\"}", true),
        ("true", true),
        ("[1]", false),
        ("{x", false),
    ] {
        let path = dir.path().join("schema.json");
        std::fs::write(&path, text).unwrap();
        let given = ExecSettings {
            output_schema: Some(path),
            ..settings("p")
        };
        assert_eq!(given.task(env()).is_ok(), ok, "{text}");
    }
}

#[test]
fn hosts_and_registries_reach_the_task_and_need_the_sandbox() {
    let named = ExecSettings {
        allow_hosts: vec!["api.example".parse().unwrap()],
        registries: vec![Registry::Pypi],
        ..settings("p")
    };
    let task = named
        .clone()
        .task(env_with(&["ANTHROPIC_API_KEY"]))
        .unwrap();
    assert!(task.sandbox && !task.network);
    assert_eq!(task.allow_hosts, named.allow_hosts);
    assert_eq!(task.registries, [Registry::Pypi]);
    for (flag, settings) in [
        (
            "--allow-host",
            ExecSettings {
                sandbox: Some(false),
                registries: Vec::new(),
                ..named.clone()
            },
        ),
        (
            "--registry",
            ExecSettings {
                sandbox: Some(false),
                allow_hosts: Vec::new(),
                ..named.clone()
            },
        ),
    ] {
        let error = settings
            .task(env_with(&["ANTHROPIC_API_KEY"]))
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with(&format!("{flag} needs the sandbox"))
                && error.contains("drop --sandbox off"),
            "{error}"
        );
    }
}

#[test]
fn a_host_or_registry_flag_writes_the_sandbox_the_defaults_file_would() {
    let defaults = crate::spec::parse_defaults(
        Path::new("drover.yaml"),
        "version: 1\nsandbox: { network: true }\n".to_string(),
    )
    .unwrap();
    assert!(settings("p").inheriting(&defaults).inherits.sandbox);
    for named in [
        ExecSettings {
            allow_hosts: vec!["api.example".parse().unwrap()],
            ..settings("p")
        },
        ExecSettings {
            registries: vec![Registry::Go],
            ..settings("p")
        },
    ] {
        assert!(!named.inheriting(&defaults).inherits.sandbox);
    }
}
