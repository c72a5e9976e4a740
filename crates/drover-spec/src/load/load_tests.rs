// Test-only module: its parent includes it under #[cfg(test)].
use super::*;

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

const VALID: &str = "version: 1
name: fix-add
prompt: Fix it.
workspace: ../repo
isolation: copy
model:
  provider: script
  script:
    - text: Looking.
      tool_calls:
        - { name: Read, input: { file_path: src/lib.rs } }
    - text: Done.
permissions:
  allow: [Read, \"Edit(src/**)\", \"Bash(cargo test *)\"]
  deny: [\"Bash(git push *)\"]
limits:
  max_turns: 5
  timeout: 2m
  max_cost_usd: 1.5
checks:
  - name: tests
    run: cargo test
    timeout: 10m
";

#[test]
fn a_full_spec_loads_into_types() {
    let dir = tempfile::tempdir().unwrap();
    let spec = load(&write(dir.path(), "a.yaml", VALID)).unwrap();
    assert_eq!(spec.name(), "fix-add");
    assert_eq!(spec.spec.model.value.script.as_ref().unwrap().len(), 2);
    assert_eq!(
        spec.spec.limits.max_turns.as_ref().map(|l| l.value),
        Some(5)
    );
    assert_eq!(
        crate::TimeoutLimit::effective(spec.spec.limits.timeout).unwrap(),
        std::time::Duration::from_secs(120)
    );
    assert_eq!(spec.spec.permissions.allow.len(), 3);
    assert_eq!(spec.workspace_dir(), dir.path().join("../repo"));
    assert_eq!(spec.sha256.len(), 64);
}

fn error_of(text: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "bad.yaml", text);
    load(&path).unwrap_err().to_string()
}

#[test]
fn unknown_keys_are_errors_with_their_position() {
    let text = VALID.replace("isolation: copy", "isolaton: copy");
    let error = error_of(&text);
    assert!(error.contains("bad.yaml:5:1"), "{error}");
    assert!(error.contains("isolaton"), "{error}");
}

#[test]
fn wrong_types_and_syntax_errors_name_line_and_column() {
    let error = error_of(&VALID.replace("max_turns: 5", "max_turns: five"));
    assert!(error.contains("bad.yaml:17:14: max_turns:"), "{error}");
    let error = error_of("version: 1\nname: [unclosed\n");
    assert!(error.contains("bad.yaml:"), "{error}");
}

#[test]
fn bad_values_are_reported_where_they_are() {
    let error = error_of(&VALID.replace("name: fix-add", "name: fix add"));
    assert!(error.contains("bad.yaml:2:"), "{error}");
    assert!(error.contains("invalid task name"), "{error}");
    let error = error_of(&VALID.replace("timeout: 2m", "timeout: soon"));
    assert!(error.contains("invalid duration"), "{error}");
    let error = error_of(&VALID.replace("version: 1", "version: 2"));
    assert!(error.contains("bad.yaml:1:"), "{error}");
}

#[test]
fn provider_fields_are_required_together() {
    let text = "version: 1\nname: a\nprompt: p\nmodel:\n  provider: script\n";
    let error = error_of(text);
    assert!(
        error.contains("bad.yaml:5:") && error.contains("script"),
        "{error}"
    );
    let text = "version: 1\nname: a\nprompt: p\nmodel:\n  provider: replay\n";
    assert!(error_of(text).contains("transcript"));
}

#[test]
fn model_settings_are_range_checked() {
    let text = "version: 1\nname: a\nprompt: p\nmodel:\n  provider: anthropic\n  temperature: 3\n";
    assert!(error_of(text).contains("temperature must be between 0 and 2"));
    let text = "version: 1\nname: a\nprompt: p\nmodel:\n  provider: openai\n  max_tokens: 0\n";
    assert!(error_of(text).contains("max_tokens must be at least 1"));
}

#[test]
fn settings_a_provider_would_ignore_are_errors() {
    let text = "version: 1\nname: a\nprompt: p\nmodel:\n  provider: script\n  base_url: http://127.0.0.1:1\n  script: [{text: hi}]\n";
    let error = error_of(text);
    assert!(
        error.contains("bad.yaml:5:") && error.contains("model.base_url is only read"),
        "{error}"
    );
}

#[test]
fn a_yaml_bomb_is_refused_quickly() {
    // Inside a tool call's input (any JSON), so the keys are not refused first.
    let mut text = String::from(
        "version: 1\nname: bomb\nprompt: p\nmodel:\n  provider: script\n  script:\n    - tool_calls:\n        - name: Read\n          input:\n            a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n",
    );
    for i in 1..12 {
        let prev = format!("*a{}", i - 1);
        let items = [prev.as_str(); 10].join(", ");
        text.push_str(&format!("            a{i}: &a{i} [{items}]\n"));
    }
    let started = std::time::Instant::now();
    let error = error_of(&text);
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    assert!(error.contains("bad.yaml:"), "{error}");
    assert!(
        error.contains(
            "the YAML expands to more than 100000 nodes (aliases?); drover caps specs so a YAML bomb cannot hang it"
        ),
        "{error}"
    );
    assert!(
        !error.contains("budget breached") && !error.contains("Nodes {"),
        "{error}"
    );
}

#[test]
fn budget_errors_keep_their_position_and_plain_words() {
    let mut text = String::from(
        "version: 1\nname: a\nprompt: p\nmodel:\n  provider: script\n  script:\n    - tool_calls:\n        - name: Read\n          input:\n            deep: ",
    );
    text.push_str(&"[".repeat(80));
    text.push_str(&"]".repeat(80));
    text.push('\n');
    let error = error_of(&text);
    assert!(error.contains("bad.yaml:10:"), "{error}");
    assert!(error.contains("nests deeper than 64 levels"), "{error}");
    assert!(!error.contains("Depth {"), "{error}");
}

#[test]
fn a_duplicate_key_is_named_in_plain_words_at_its_position() {
    let error = error_of("version: 1\nname: a\nprompt: p\nname: b\n");
    assert!(error.contains("bad.yaml:4:"), "{error}");
    assert!(
        error.ends_with("key `name` appears twice in the same mapping"),
        "{error}"
    );
    assert!(!error.contains("DuplicateKeyPolicy"), "{error}");
}

#[test]
fn task_names_are_unique_within_a_run() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.yaml", VALID);
    let b = write(dir.path(), "b.yaml", VALID);
    let files = load_every(&[a, b]);
    assert!(files[0].errors.is_empty());
    let message = files[1].errors[0].to_string();
    assert!(
        message.contains("b.yaml:2:") && message.contains("a.yaml:2:"),
        "{message}"
    );
}

#[test]
fn directories_expand_to_their_yaml_files_in_order() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "b.yml", VALID);
    write(dir.path(), "a.yaml", VALID);
    write(dir.path(), "notes.txt", "");
    let files = collect_spec_files(&[dir.path().to_path_buf()])
        .unwrap()
        .files;
    let names: Vec<_> = files
        .iter()
        .map(|f| f.file_name().unwrap().to_owned())
        .collect();
    assert_eq!(names, vec!["a.yaml", "b.yml"]);
}

#[test]
fn bad_budgets_and_prices_are_reported() {
    let error = error_of(&VALID.replace("max_cost_usd: 1.5", "max_cost_usd: -1"));
    assert!(error.contains("bad.yaml:19:17"), "{error}");
    assert!(error.contains("positive"), "{error}");
    let error = error_of(&VALID.replace("max_cost_usd: 1.5", "max_tokens: 0"));
    assert!(
        error.contains("limits.max_tokens must be at least 1"),
        "{error}"
    );
    assert!(error.contains("bad.yaml:19:15"), "{error}");
    let error = error_of(&VALID.replace("max_turns: 5", "max_turns: 0"));
    assert!(
        error.contains("limits.max_turns must be at least 1"),
        "{error}"
    );
    assert!(error.contains("bad.yaml:17:14"), "{error}");
    let long = "n".repeat(300);
    let error = error_of(&VALID.replace("name: fix-add", &format!("name: {long}")));
    assert!(error.contains("more than 100"), "{error}");
    assert!(error.contains("bad.yaml:2:7"), "{error}");
    let error = error_of(&VALID.replace(
        "  provider: script\n",
        "  provider: script\n  pricing: { input: 1, output: -2 }\n",
    ));
    assert!(error.contains("bad.yaml:"), "{error}");
    assert!(error.contains("model.pricing.output"), "{error}");
    let error = error_of(&VALID.replace(
        "  provider: script\n",
        "  provider: script\n  pricing: { input: 1, output: 2, per_request: 1 }\n",
    ));
    assert!(error.contains("per_request"), "{error}");
    let error = error_of(&VALID.replace(
        "    - text: Done.\n",
        "    - text: Done.\n      usage: { input_tokens: 10, tokens: 5 }\n",
    ));
    assert!(error.contains("tokens"), "{error}");
    assert!(error.contains("bad.yaml:"), "{error}");
}

#[test]
fn limits_timeout_defaults_to_an_hour_and_none_disables_it() {
    use crate::{DEFAULT_TASK_TIMEOUT, TimeoutLimit};
    let parse_ok = |text: &str| {
        let dir = tempfile::tempdir().unwrap();
        load(&write(dir.path(), "a.yaml", text)).unwrap()
    };
    let absent = parse_ok(&VALID.replace("  timeout: 2m\n", ""));
    assert_eq!(
        TimeoutLimit::effective(absent.spec.limits.timeout),
        Some(DEFAULT_TASK_TIMEOUT)
    );
    let none = parse_ok(&VALID.replace("timeout: 2m", "timeout: none"));
    assert_eq!(TimeoutLimit::effective(none.spec.limits.timeout), None);
    let error = error_of(&VALID.replace("timeout: 2m", "timeout: never"));
    assert!(error.contains("or none for no limit"), "{error}");
}

#[test]
fn yaml_that_is_no_task_spec_is_skipped_in_a_directory_but_not_when_named() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "task.yaml", VALID);
    std::fs::create_dir_all(dir.path().join(".github/workflows")).unwrap();
    let workflow = dir.path().join(".github/workflows/ci.yml");
    std::fs::write(
        &workflow,
        "name: CI\non: [push]\njobs:\n  test:\n    runs-on: ubuntu-latest\n",
    )
    .unwrap();
    write(dir.path(), "list.yaml", "- a\n- b\n");
    write(
        dir.path(),
        "dependabot.yml",
        "version: 2\nupdates:\n  - package-ecosystem: cargo\n    directory: /\n",
    );
    std::fs::create_dir_all(dir.path().join("target/debug")).unwrap();
    std::fs::write(
        dir.path().join("target/CACHEDIR.TAG"),
        "Signature: 8a477f597d28d172789f06886806bc55",
    )
    .unwrap();
    write(&dir.path().join("target/debug"), "built.yaml", VALID);
    std::os::unix::fs::symlink(dir.path(), dir.path().join("loop")).unwrap();
    write(dir.path(), "multi.yaml", "a: 1\n---\nb: 2\n");
    // A spec with a mistake stays a spec: its error is reported.
    write(dir.path(), "broken.yaml", "version: 1\nprompt: [unclosed\n");
    std::fs::create_dir_all(dir.path().join(".git")).unwrap();
    write(&dir.path().join(".git"), "config.yaml", VALID);
    let found = collect_spec_files(&[dir.path().to_path_buf()]).unwrap();
    let names = |paths: &[PathBuf]| -> Vec<String> {
        paths
            .iter()
            .map(|p| p.strip_prefix(dir.path()).unwrap().display().to_string())
            .collect()
    };
    assert_eq!(names(&found.files), ["broken.yaml", "task.yaml"]);
    assert_eq!(
        names(&found.skipped),
        [
            ".github/workflows/ci.yml",
            "dependabot.yml",
            "list.yaml",
            "multi.yaml"
        ]
    );
    let named = collect_spec_files(std::slice::from_ref(&workflow)).unwrap();
    assert_eq!(named.files, [workflow]);
}

#[test]
fn the_spec_hash_is_lowercase_hex_sha256() {
    assert_eq!(
        read::sha256_hex(b""),
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
    assert_eq!(
        read::sha256_hex(b"abc"),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
}

/// Every problem of a file, at its line and column: each unknown key (at the top, nested,
/// in a flow mapping, in a list item), then what the spec left without them gets wrong.
#[test]
fn every_unknown_key_and_every_bad_value_is_reported() {
    let text = VALID
        .replace("isolation: copy", "isolaton: copy")
        .replace("  max_turns: 5", "  max_turns: 0\n  max_turnz: 5")
        .replace(
            "{ name: Read, input: { file_path: src/lib.rs } }",
            "{ name: Read, input: { file_path: src/lib.rs }, why: x }",
        )
        .replace("    timeout: 10m", "    timeout: 10m\n    retries: 2")
        .replace("  max_cost_usd: 1.5", "  max_cost_usd: -1");
    let dir = tempfile::tempdir().unwrap();
    let file = parse_every(&dir.path().join("bad.yaml"), text);
    let errors: Vec<String> = file.errors.iter().map(ToString::to_string).collect();
    let at = |needle: &str| {
        errors
            .iter()
            .find(|e| e.contains(needle))
            .unwrap_or_else(|| panic!("{needle}: {errors:#?}"))
            .clone()
    };
    assert!(at("isolaton").contains("bad.yaml:5:1:"), "{errors:#?}");
    assert!(at("`why`").contains("bad.yaml:11:59:"), "{errors:#?}");
    assert!(at("max_turnz").contains("bad.yaml:18:3:"), "{errors:#?}");
    assert!(at("retries").contains("bad.yaml:25:5:"), "{errors:#?}");
    assert!(at("limits.max_turns must be at least 1").contains("bad.yaml:17:14:"));
    assert!(at("max_cost_usd must be a positive number").contains("bad.yaml:20:17:"));
    assert_eq!(errors.len(), 6, "{errors:#?}");
    // What remains is the spec as written, for the checks that come after.
    let spec = file.specs.into_iter().next().unwrap();
    assert_eq!(spec.spec.permissions.allow.len(), 3);
    assert_eq!(spec.text.lines().nth(4), Some("isolaton: copy"));
}

/// A syntax or type error is the parser's last word on a file: after it nothing is
/// reported that the parser could not see, but the unknown keys before it are.
#[test]
fn a_wrong_type_after_an_unknown_key_ends_the_file_with_both() {
    let text = VALID
        .replace("isolation: copy", "isolaton: copy")
        .replace("max_turns: 5", "max_turns: five");
    let dir = tempfile::tempdir().unwrap();
    let file = parse_every(&dir.path().join("bad.yaml"), text);
    let errors: Vec<String> = file.errors.iter().map(ToString::to_string).collect();
    assert_eq!(errors.len(), 2, "{errors:#?}");
    assert!(errors[0].contains("bad.yaml:5:1:") && errors[0].contains("isolaton"));
    assert!(errors[1].contains("bad.yaml:17:14:"), "{errors:#?}");
    assert!(file.specs.is_empty());
    // A misspelled key's right spelling is missing, and both are said.
    let file = parse_every(
        &dir.path().join("bad.yaml"),
        "version: 1\nname: a\nprompt: p\nmodel:\n  provder: script\n".to_string(),
    );
    let errors: Vec<String> = file.errors.iter().map(ToString::to_string).collect();
    assert!(errors[0].contains("bad.yaml:5:3:") && errors[0].contains("provder"));
    assert!(errors[1].contains("provider"), "{errors:#?}");
}
