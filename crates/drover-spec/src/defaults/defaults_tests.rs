// Test-only module: its parent includes it under #[cfg(test)].
use std::path::PathBuf;

use super::*;
use crate::load::{collect_spec_files, load, load_every};
use crate::network::NetworkSpec;
use crate::types::{Isolation, PermissionMode, TimeoutLimit};
use crate::values::Switch;

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    path
}

const DEFAULTS: &str = "version: 1
model:
  provider: anthropic
  name: claude-sonnet-4-5
  base_url: http://127.0.0.1:9
permissions:
  allow: [Read, Bash]
  deny: [\"Bash(git push *)\"]
  mode: plan
limits:
  max_turns: 30
  timeout: 20m
sandbox:
  network: true
  limits: { processes: 100, open_files: 64 }
env:
  pass: [NPM_TOKEN]
isolation: worktree
";

const SCRIPT: &str = "model:\n  provider: script\n  script: [{ text: done }]\n";

fn spec(name: &str, extra: &str) -> String {
    format!("version: 1\nname: {name}\nprompt: p\n{extra}")
}

fn rules(list: &[Spanned<String>]) -> Vec<&str> {
    list.iter().map(|rule| rule.value.as_str()).collect()
}

#[test]
fn limits_merge_key_by_key_and_the_specs_value_wins() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "drover.yaml", DEFAULTS);
    let own = load(&write(
        dir.path(),
        "own.yaml",
        &spec("own", "limits:\n  max_turns: 5\n"),
    ))
    .unwrap();
    let limits = &own.spec.limits;
    assert_eq!(limits.max_turns.as_ref().map(|l| l.value), Some(5));
    assert_eq!(
        TimeoutLimit::effective(limits.timeout),
        Some(std::time::Duration::from_secs(20 * 60))
    );
    let plain = load(&write(dir.path(), "plain.yaml", &spec("plain", ""))).unwrap();
    assert_eq!(
        plain.spec.limits.max_turns.as_ref().map(|l| l.value),
        Some(30)
    );
    assert_eq!(
        plain.defaults.as_ref().unwrap().path,
        dir.path().join("drover.yaml")
    );
    assert_eq!(plain.defaults.as_ref().unwrap().sha256.len(), 64);
}

#[test]
fn the_model_is_the_specs_whole_when_it_has_one_else_the_defaults() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "drover.yaml", DEFAULTS);
    let own = load(&write(dir.path(), "own.yaml", &spec("own", SCRIPT))).unwrap();
    let model = &own.spec.model.value;
    assert_eq!(model.provider, crate::Provider::Script);
    // Not the default's base_url or name: a spec's provider never meets them.
    assert_eq!(
        (model.base_url.as_deref(), model.name.as_deref()),
        (None, None)
    );
    assert_eq!(own.position(Some(own.spec.model.referenced)).path, own.path);

    let inherited = load(&write(dir.path(), "inherit.yaml", &spec("inherit", ""))).unwrap();
    let model = &inherited.spec.model.value;
    assert_eq!(model.provider, crate::Provider::Anthropic);
    assert_eq!(model.base_url.as_deref(), Some("http://127.0.0.1:9"));
    assert_eq!(
        inherited
            .position(Some(inherited.spec.model.referenced))
            .to_string(),
        format!("{}:3:3", dir.path().join("drover.yaml").display())
    );
}

#[test]
fn deny_is_the_union_and_allow_is_the_specs_when_it_writes_one() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "drover.yaml", DEFAULTS);
    let load_with = |name: &str, permissions: &str| {
        load(&write(
            dir.path(),
            &format!("{name}.yaml"),
            &spec(name, permissions),
        ))
        .unwrap()
    };
    let own = load_with(
        "own",
        "permissions:\n  allow: [Grep]\n  deny: [\"Read(.env)\"]\n",
    );
    let permissions = &own.spec.permissions;
    assert_eq!(rules(&permissions.allow), vec!["Grep"]);
    assert_eq!(
        rules(&permissions.deny),
        vec!["Bash(git push *)", "Read(.env)"]
    );
    // Each rule is at its own file's line and column.
    let drover_yaml = dir.path().join("drover.yaml");
    assert_eq!(
        own.position(Some(permissions.deny[0].referenced))
            .to_string(),
        format!("{}:8:10", drover_yaml.display())
    );
    assert_eq!(
        own.position(Some(permissions.deny[1].referenced))
            .to_string(),
        format!("{}:6:10", own.path.display())
    );
    // The defaults' mode applies: the spec did not write one.
    assert_eq!(permissions.mode, PermissionMode::Plan);

    let none = load_with("none", "permissions:\n  mode: default\n");
    assert_eq!(rules(&none.spec.permissions.allow), vec!["Read", "Bash"]);
    assert_eq!(none.spec.permissions.mode, PermissionMode::Default);
    let empty = load_with("empty", "permissions:\n  allow: []\n  deny: []\n");
    assert!(empty.spec.permissions.allow.is_empty());
    assert_eq!(
        rules(&empty.spec.permissions.deny),
        vec!["Bash(git push *)"]
    );
}

#[test]
fn sandbox_settings_merge_key_by_key_and_a_switch_is_taken_whole() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "drover.yaml", DEFAULTS);
    let sandbox = |name: &str, extra: &str| {
        let path = write(dir.path(), &format!("{name}.yaml"), &spec(name, extra));
        load(&path).unwrap().spec.sandbox
    };
    let Some(SandboxSpec::Settings(merged)) = sandbox(
        "mixed",
        "sandbox:\n  writable: [\"~/.cache\"]\n  limits: { processes: 7 }\n",
    ) else {
        panic!("not settings")
    };
    assert_eq!(merged.network, Some(NetworkSpec::All));
    assert_eq!(merged.writable, vec!["~/.cache".to_string()]);
    assert_eq!(
        (merged.limits.processes, merged.limits.open_files),
        (
            Some(crate::limits::LimitValue(Some(7))),
            Some(crate::limits::LimitValue(Some(64)))
        )
    );
    assert_eq!(
        sandbox("off", "sandbox: off\n"),
        Some(SandboxSpec::Switch(Switch::Off))
    );
    assert_eq!(
        sandbox("on", "sandbox: on\n"),
        Some(SandboxSpec::Switch(Switch::On))
    );
    let Some(SandboxSpec::Settings(inherited)) = sandbox("inherited", "") else {
        panic!("not settings")
    };
    assert_eq!(inherited.network, Some(NetworkSpec::All));
}

#[test]
fn env_and_isolation_are_the_specs_when_it_writes_them() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "drover.yaml", DEFAULTS);
    let inherited = load(&write(dir.path(), "a.yaml", &spec("a", ""))).unwrap();
    assert_eq!(inherited.spec.env.pass, vec!["NPM_TOKEN".to_string()]);
    assert_eq!(inherited.spec.isolation(), Isolation::Worktree);
    let own = load(&write(
        dir.path(),
        "b.yaml",
        &spec("b", "env:\n  pass: []\nisolation: none\n"),
    ))
    .unwrap();
    assert!(own.spec.env.pass.is_empty());
    assert_eq!(own.spec.isolation(), Isolation::None);
}

#[test]
fn a_default_diff_exclude_list_is_the_specs_unless_it_writes_its_own() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "drover.yaml",
        "version: 1\ndiff:\n  exclude: [Cargo.lock]\nisolation: copy\n",
    );
    let excluded = |name: &str, extra: &str| {
        let loaded = load(&write(
            dir.path(),
            &format!("{name}.yaml"),
            &spec(name, extra),
        ))
        .unwrap();
        let diff = loaded
            .spec
            .diff
            .as_ref()
            .map(|diff| diff.value.clone())
            .unwrap_or_default();
        (
            diff.excludes("Cargo.lock"),
            diff.excludes("coverage/x"),
            loaded.position(loaded.spec.diff.as_ref().map(|d| d.referenced)),
        )
    };
    let defaults = dir.path().join("drover.yaml");
    let (lock, coverage, at) = excluded("a", SCRIPT);
    assert!(lock && !coverage);
    assert_eq!(at.path, defaults);
    // `diff: {}` writes no list: the default's applies.
    let (lock, coverage, _) = excluded("b", &format!("{SCRIPT}diff: {{}}\n"));
    assert!(lock && !coverage);
    let (lock, coverage, at) = excluded("c", &format!("{SCRIPT}diff:\n  exclude: [coverage/]\n"));
    assert!(!lock && coverage);
    assert_eq!(at.path, dir.path().join("c.yaml"));
    // An inherited isolation is reported at the defaults file.
    let loaded = load(&dir.path().join("a.yaml")).unwrap();
    let isolation = loaded.spec.isolation_spec.as_ref().unwrap();
    assert_eq!(isolation.value, Isolation::Copy);
    assert_eq!(
        loaded.position(Some(isolation.referenced)).to_string(),
        format!("{}:4:12", defaults.display())
    );
}

#[test]
fn errors_in_the_defaults_file_name_it_at_its_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let spec_path = write(dir.path(), "t.yaml", &spec("t", SCRIPT));
    let error_of = |text: &str| {
        write(dir.path(), "drover.yaml", text);
        load(&spec_path).unwrap_err().to_string()
    };
    let shown = dir.path().join("drover.yaml").display().to_string();
    let error = error_of("version: 1\nlimits:\n  max_turns: 0\n");
    assert!(
        error.starts_with(&format!(
            "{shown}:3:14: limits.max_turns must be at least 1"
        )),
        "{error}"
    );
    let error = error_of("version: 1\nlimits:\n  max_turns: five\n");
    assert!(
        error.starts_with(&format!("{shown}:3:14: max_turns")),
        "{error}"
    );
    let error = error_of("version: 1\nprompt: everyone\n");
    assert!(error.starts_with(&format!("{shown}:2:1: ")), "{error}");
    assert!(error.contains("unknown field `prompt`"), "{error}");
    assert!(
        error.contains(
            "a defaults file holds only model, permissions, limits, sandbox, env, isolation and diff"
        ),
        "{error}"
    );
    let error = error_of("model: { provider: script, script: [{ text: hi }] }\n");
    assert!(error.starts_with(&format!("{shown}:")), "{error}");
    assert!(error.contains("version"), "{error}");
    let error = error_of("version: 2\n");
    assert!(error.contains("unsupported spec version 2"), "{error}");
    let error = error_of("version: 1\nmodel:\n  provider: script\n");
    assert!(
        error.starts_with(&format!("{shown}:3:3: provider script needs `script:`")),
        "{error}"
    );
    let error = error_of("version: 1\npermissions:\n  allow: [Read]\n  permit: [Bash]\n");
    assert!(error.starts_with(&format!("{shown}:4:3: ")), "{error}");
}

#[test]
fn a_spec_with_no_model_anywhere_says_where_it_may_go() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "t.yaml", &spec("t", ""));
    let error = load(&path).unwrap_err().to_string();
    assert!(
        error.contains("t.yaml:1:1: missing field `model`"),
        "{error}"
    );
    assert!(error.contains("drover.yaml beside the spec"), "{error}");
    write(
        dir.path(),
        "drover.yaml",
        "version: 1\nlimits: { max_turns: 3 }\n",
    );
    let error = load(&path).unwrap_err().to_string();
    assert!(
        error.contains("neither the spec nor the defaults file"),
        "{error}"
    );
}

#[test]
fn two_defaults_files_in_one_directory_are_an_error_naming_both() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "t.yaml", &spec("t", ""));
    write(dir.path(), ".drover/defaults.yaml", DEFAULTS);
    let hidden = load(&path).unwrap();
    assert_eq!(
        hidden.defaults.unwrap().path,
        dir.path().join(".drover/defaults.yaml")
    );
    write(dir.path(), "drover.yaml", DEFAULTS);
    let error = load(&path).unwrap_err().to_string();
    assert!(error.contains(".drover/defaults.yaml:1:1: "), "{error}");
    assert!(error.contains("drover.yaml is there too"), "{error}");
}

#[test]
fn only_the_specs_own_directory_is_looked_in() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "drover.yaml", DEFAULTS);
    let nested = write(dir.path(), "sub/t.yaml", &spec("t", SCRIPT));
    let loaded = load(&nested).unwrap();
    assert!(loaded.defaults.is_none());
    assert!(loaded.spec.limits.max_turns.is_none());
}

#[test]
fn a_link_named_drover_yaml_that_leads_nowhere_fails_closed() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "t.yaml", &spec("t", SCRIPT));
    std::os::unix::fs::symlink(dir.path().join("gone.yaml"), dir.path().join("drover.yaml"))
        .unwrap();
    let error = load(&path).unwrap_err().to_string();
    assert!(error.contains("drover.yaml: cannot read spec"), "{error}");
}

#[test]
fn a_directory_never_yields_its_defaults_file_as_a_task() {
    let dir = tempfile::tempdir().unwrap();
    // Both look like a spec at their top (`version:` and `model:`).
    write(dir.path(), "drover.yaml", DEFAULTS);
    write(dir.path(), "sub/.drover/defaults.yaml", DEFAULTS);
    write(dir.path(), "a.yaml", &spec("a", ""));
    write(dir.path(), "sub/b.yaml", &spec("b", ""));
    let found = collect_spec_files(&[dir.path().to_path_buf()]).unwrap();
    assert_eq!(
        found.files,
        vec![dir.path().join("a.yaml"), dir.path().join("sub/b.yaml")]
    );
    assert!(found.skipped.is_empty(), "{:?}", found.skipped);
    for named in ["drover.yaml", "sub/.drover/defaults.yaml"] {
        let error = collect_spec_files(&[dir.path().join(named)])
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("this is the defaults file of the specs in its directory"),
            "{error}"
        );
    }
    assert!(!is_defaults_file(Path::new("tasks/defaults.yaml")));
    assert!(!is_defaults_file(Path::new("tasks/drover.yml")));
}

#[test]
fn a_bad_defaults_file_is_reported_once_for_its_directory() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "drover.yaml",
        "version: 1\nprompt: hi\nlimits: { max_turns: 0 }\n",
    );
    let files: Vec<PathBuf> = ["a", "b", "c"]
        .iter()
        .map(|name| write(dir.path(), &format!("{name}.yaml"), &spec(name, SCRIPT)))
        .collect();
    let other = write(dir.path(), "other/d.yaml", &spec("d", ""));
    let mut all = files.clone();
    all.push(other);
    let loaded = load_every(&all);
    // The defaults file, once, with every error of it; then the other directory's spec.
    let paths: Vec<&Path> = loaded.iter().map(|file| file.path.as_path()).collect();
    assert_eq!(
        paths,
        [dir.path().join("drover.yaml").as_path(), all[3].as_path()]
    );
    let shown: Vec<String> = loaded
        .iter()
        .flat_map(|file| &file.errors)
        .map(ToString::to_string)
        .collect();
    assert_eq!(shown.len(), 3, "{shown:#?}");
    assert!(
        shown[0].contains("drover.yaml:2:1: unknown field `prompt`")
            && shown[0].contains("a defaults file holds only"),
        "{shown:#?}"
    );
    assert!(
        shown[1].contains("drover.yaml:3:22: limits.max_turns"),
        "{shown:#?}"
    );
    assert!(
        shown[2].contains("d.yaml:1:1: missing field `model`"),
        "{shown:#?}"
    );
}

#[test]
fn recorded_defaults_text_makes_the_same_spec_without_the_file() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "drover.yaml", DEFAULTS);
    let path = write(
        dir.path(),
        "t.yaml",
        &spec("t", "limits: { max_turns: 4 }\n"),
    );
    let loaded = load(&path).unwrap();
    std::fs::remove_file(dir.path().join("drover.yaml")).unwrap();
    let defaults = loaded.defaults.clone().unwrap();
    let again = parse_defaults(&defaults.path, defaults.text.clone()).unwrap();
    assert_eq!(again.sha256, defaults.sha256);
    let replayed = crate::load::parse_with_defaults(
        &path,
        loaded.text.clone(),
        Some(&again),
        crate::Expansion::Written,
    )
    .unwrap();
    assert_eq!(format!("{:?}", replayed.spec), format!("{:?}", loaded.spec));
}

#[test]
fn the_merged_view_names_the_file_line_and_column_of_every_value() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "drover.yaml", DEFAULTS);
    let path = write(
        dir.path(),
        "t.yaml",
        &spec(
            "t",
            "limits:\n  max_turns: 5\npermissions:\n  deny: [\"Read(.env)\"]\nsandbox: off\nchecks:\n  - name: tests\n    run: cargo test\n",
        ),
    );
    let loaded = load(&path).unwrap();
    let lines = merged_view(&loaded).unwrap();
    let (spec_file, defaults_file) = (
        path.display().to_string(),
        dir.path().join("drover.yaml").display().to_string(),
    );
    assert_eq!(
        lines[0],
        format!("{spec_file}: task t, with the defaults of {defaults_file}")
    );
    let find = |start: &str| -> String {
        lines
            .iter()
            .find(|line| line.trim_start().starts_with(start))
            .unwrap_or_else(|| panic!("no {start:?} in {lines:#?}"))
            .clone()
    };
    let ends = |line: String, file: &str, at: &str| {
        assert!(
            line.ends_with(&format!("({file}:{at})")),
            "{line}\n{lines:#?}"
        );
    };
    ends(find("name: t"), &spec_file, "2:1");
    ends(find("max_turns: 5"), &spec_file, "5:3");
    ends(find("timeout: 20m"), &defaults_file, "12:3");
    ends(find("model:"), &defaults_file, "2:1");
    ends(find("provider: anthropic"), &defaults_file, "3:3");
    ends(find("- \"Bash(git push *)\""), &defaults_file, "8:10");
    ends(find("- \"Read(.env)\""), &spec_file, "7:10");
    ends(find("allow:"), &defaults_file, "7:3");
    ends(find("sandbox: off"), &spec_file, "8:1");
    ends(find("- name: tests"), &spec_file, "10:5");
    ends(find("run: cargo test"), &spec_file, "11:5");
    ends(find("isolation: worktree"), &defaults_file, "18:1");
    // The defaults' own `version:` is not the spec's.
    ends(find("version: 1"), &spec_file, "1:1");
    assert_eq!(lines.iter().filter(|l| l.contains("version:")).count(), 1);
    // Nested keys are indented under their parent.
    assert!(
        find("max_turns: 5").starts_with("    max_turns"),
        "{lines:#?}"
    );
}

#[test]
fn network_rules_merge_key_by_key_with_deny_lists_joined_as_shown() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "drover.yaml",
        "version: 1\nsandbox:\n  network:\n    deny: [metadata.example]\n    registries: [npm]\n",
    );
    let path = write(
        dir.path(),
        "t.yaml",
        &format!(
            "{}{SCRIPT}",
            spec(
                "t",
                "sandbox:\n  network:\n    allow: [api.example]\n    deny: [\"*.ads.example\"]\n"
            )
        ),
    );
    let loaded = load(&path).unwrap();
    let Some(NetworkSpec::Rules(rules)) =
        SandboxSpec::network(loaded.spec.sandbox.as_ref()).cloned()
    else {
        panic!("{:?}", loaded.spec.sandbox)
    };
    let text = |patterns: &[crate::network::HostPattern]| {
        patterns.iter().map(ToString::to_string).collect::<Vec<_>>()
    };
    assert_eq!(text(&rules.allow), ["api.example"]);
    // The default's deny is a floor: kept beside the spec's, first.
    assert_eq!(text(&rules.deny), ["metadata.example", "*.ads.example"]);
    // A key only the defaults write is theirs.
    assert_eq!(rules.registries, [crate::network::Registry::Npm]);
    let lines = merged_view(&loaded).unwrap();
    let defaults_file = dir.path().join("drover.yaml").display().to_string();
    let spec_file = path.display().to_string();
    let line_of = |start: &str| {
        lines
            .iter()
            .find(|line| line.trim_start().starts_with(start))
            .unwrap_or_else(|| panic!("no {start:?} in {lines:#?}"))
            .clone()
    };
    assert!(line_of("- metadata.example").ends_with(&format!("({defaults_file}:4:12)")));
    assert!(line_of("- \"*.ads.example\"").ends_with(&format!("({spec_file}:7:12)")));
    assert!(line_of("- npm").ends_with(&format!("({defaults_file}:5:18)")));
    // `true` against rules is the spec's value, whole.
    let whole = write(
        dir.path(),
        "w.yaml",
        &format!("{}{SCRIPT}", spec("w", "sandbox: { network: true }\n")),
    );
    assert!(SandboxSpec::has_network(
        load(&whole).unwrap().spec.sandbox.as_ref()
    ));
}
