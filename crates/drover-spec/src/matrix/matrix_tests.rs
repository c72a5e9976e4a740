// Test-only module: its parent includes it under #[cfg(test)].
use std::path::{Path, PathBuf};

use super::entries::MatrixValues;
use super::fields::{SUBSTITUTED, string_fields};
use crate::{Expansion, RecordedTask, SpecFile, load_every, parse_every, parse_with_defaults};

const HEAD: &str = "version: 1
model: { provider: script, script: [ { text: done } ] }
";

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// The file at `dir/spec.yaml` holding `body` after the version and model.
fn file_of(dir: &Path, body: &str) -> SpecFile {
    let path = write(dir, "spec.yaml", &format!("{HEAD}{body}"));
    load_every(&[path]).remove(0)
}

fn errors_of(body: &str) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let file = file_of(dir.path(), body);
    assert!(!file.errors.is_empty(), "no error for {body}");
    file.errors.iter().map(ToString::to_string).collect()
}

fn one_error(body: &str, expected: &[&str]) {
    let errors = errors_of(body);
    let error = &errors[0];
    for part in expected {
        assert!(error.contains(part), "{part:?} not in {error}");
    }
}

const THREE: &str = "name: bump-${{ matrix.service }}
matrix:
  - { service: billing, path: services/billing, version: 1.10 }
  - { service: search, path: \"a b; rm -rf /\", version: 2 }
  - { service: it-s, path: \"it's $(id)\", version: true }
prompt: Bump serde in ${{ matrix.path }} to ${{ matrix.version }}.
system: You work on ${{ matrix.service }}.
workspace: ../${{ matrix.path }}
setup:
  - name: fetch-${{ matrix.service }}
    run: cd ${{ matrix.path }}
checks:
  - name: test-${{ matrix.service }}
    run: cd ${{ matrix.path }} && cargo test
";

#[test]
fn an_inline_matrix_makes_one_task_per_entry_with_its_values() {
    let dir = tempfile::tempdir().unwrap();
    let file = file_of(dir.path(), THREE);
    assert!(file.errors.is_empty(), "{:?}", file.errors);
    let names: Vec<&str> = file.specs.iter().map(|spec| spec.name()).collect();
    assert_eq!(names, ["bump-billing", "bump-search", "bump-it-s"]);
    let billing = &file.specs[0];
    assert_eq!(
        billing.spec.prompt,
        "Bump serde in services/billing to 1.10."
    );
    assert_eq!(billing.spec.system.as_deref(), Some("You work on billing."));
    assert_eq!(
        billing.spec.workspace.as_ref().unwrap().value,
        "../services/billing"
    );
    assert_eq!(billing.spec.setup[0].name, "fetch-billing");
    assert_eq!(billing.spec.checks[0].name, "test-billing");
    // In a shell command, drover's variable; the value is in the command's environment.
    assert_eq!(
        billing.spec.checks[0].run,
        "cd \"${DROVER_MATRIX_path}\" && cargo test"
    );
    assert_eq!(billing.spec.setup[0].run, "cd \"${DROVER_MATRIX_path}\"");
    let values = billing.matrix.as_ref().unwrap();
    assert_eq!(values["version"], "1.10");
    assert_eq!(values["path"], "services/billing");
    let search = &file.specs[1];
    assert_eq!(search.spec.prompt, "Bump serde in a b; rm -rf / to 2.");
    assert_eq!(search.spec.checks[0].run, billing.spec.checks[0].run);
    assert_eq!(
        crate::matrix_env(search.matrix.as_ref().unwrap()),
        [
            (
                "DROVER_MATRIX_path".to_string(),
                "a b; rm -rf /".to_string()
            ),
            ("DROVER_MATRIX_service".to_string(), "search".to_string()),
            ("DROVER_MATRIX_version".to_string(), "2".to_string()),
        ]
    );
    let odd = &file.specs[2];
    assert_eq!(odd.spec.checks[0].run, billing.spec.checks[0].run);
    assert_eq!(odd.matrix.as_ref().unwrap()["version"], "true");
    // Every task carries the file's text, as a run records it.
    assert!(file.specs.iter().all(|spec| spec.text == billing.text));
}

#[test]
fn a_value_is_inserted_as_written_never_read_for_references_or_keys() {
    let dir = tempfile::tempdir().unwrap();
    let file = file_of(
        dir.path(),
        "name: t-${{ matrix.id }}
matrix:
  - { id: a, text: \"${{ matrix.id }}\\nallow: [Bash]\" }
prompt: \"${{ matrix.text }}\"
",
    );
    assert!(file.errors.is_empty(), "{:?}", file.errors);
    let spec = &file.specs[0];
    assert_eq!(spec.spec.prompt, "${{ matrix.id }}\nallow: [Bash]");
    assert!(spec.spec.permissions.allow.is_empty());
}

#[test]
fn a_from_file_beside_the_spec_holds_the_entries() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "services.yaml",
        "- service: billing\n  port: 8080\n- service: search\n  port: 9090\n",
    );
    write(dir.path(), "more.json", "[{\"service\": \"x\"}]");
    let file = file_of(
        dir.path(),
        "name: s-${{ matrix.service }}\nmatrix: { from: services.yaml }\nprompt: p ${{ matrix.port }}\n",
    );
    assert!(file.errors.is_empty(), "{:?}", file.errors);
    let prompts: Vec<&str> = file.specs.iter().map(|s| s.spec.prompt.as_str()).collect();
    assert_eq!(prompts, ["p 8080", "p 9090"]);
    let file = file_of(
        dir.path(),
        "name: s-${{ matrix.service }}\nmatrix: { from: more.json }\nprompt: p\n",
    );
    assert_eq!(file.specs[0].name(), "s-x");
}

#[test]
fn a_from_file_is_read_as_a_spec_is_with_errors_at_its_own_place() {
    let dir = tempfile::tempdir().unwrap();
    let body =
        |file: &str| format!("name: s-${{{{ matrix.a }}}}\nmatrix:\n  from: {file}\nprompt: p\n");
    let file = file_of(dir.path(), &body("missing.yaml"));
    let error = file.errors[0].to_string();
    assert!(error.contains("spec.yaml:5:9: matrix.from:"), "{error}");
    // Every problem of the file after the spec's place that names it, then its own.
    write(dir.path(), "bad.yaml", "- { a: 1 }\n- [ 1, 2 ]\n");
    let error = file_of(dir.path(), &body("bad.yaml")).errors[0].to_string();
    assert!(error.contains("spec.yaml:5:9: matrix.from: "), "{error}");
    assert!(error.contains("bad.yaml:2:3"), "{error}");
    assert!(error.contains("a matrix entry"), "{error}");
    write(dir.path(), "empty.yaml", "[]\n");
    let error = file_of(dir.path(), &body("empty.yaml")).errors[0].to_string();
    assert!(
        error.contains("spec.yaml:5:9: matrix.from: ")
            && error.contains("empty.yaml:1:1: the matrix has no entries"),
        "{error}"
    );
    write(dir.path(), "map.yaml", "a: 1\n");
    let error = file_of(dir.path(), &body("map.yaml")).errors[0].to_string();
    assert!(error.contains("spec.yaml:5:9: matrix.from: "), "{error}");
    assert!(error.contains("map.yaml:1:1"), "{error}");
    write(dir.path(), "syntax.yaml", "- { a: 1\n");
    let error = file_of(dir.path(), &body("syntax.yaml")).errors[0].to_string();
    assert!(error.contains("spec.yaml:5:9: matrix.from: "), "{error}");
    assert!(error.contains("syntax.yaml:"), "{error}");
    let dir_path = dir.path().join("adir");
    std::fs::create_dir(&dir_path).unwrap();
    let error = file_of(dir.path(), &body("adir")).errors[0].to_string();
    assert!(error.contains("spec.yaml:5:9: matrix.from: "), "{error}");
    assert!(error.contains("is a directory"), "{error}");
}

#[test]
fn entries_must_be_maps_of_scalars_and_the_list_neither_empty_nor_huge() {
    one_error(
        "name: t-${{ matrix.a }}\nprompt: p\nmatrix:\n  - a: [1, 2]\n",
        &["spec.yaml:6:5", "a matrix value"],
    );
    one_error(
        "name: t-${{ matrix.a }}\nprompt: p\nmatrix:\n  - a:\n",
        &["spec.yaml:6:", "empty (null)"],
    );
    one_error(
        "name: t-${{ matrix.a }}\nprompt: p\nmatrix:\n  - just-a-string\n",
        &["spec.yaml:6:5", "a matrix entry"],
    );
    one_error(
        "name: t-${{ matrix.a }}\nprompt: p\nmatrix:\n  - { \"bad key\": 1 }\n",
        &["spec.yaml:6:", "matrix key \"bad key\""],
    );
    one_error(
        "name: t-${{ matrix.a }}\nprompt: p\nmatrix: []\n",
        &["spec.yaml:5:9", "the matrix has no entries"],
    );
    one_error(
        "name: t-${{ matrix.a }}\nprompt: p\nmatrix: { form: x.yaml }\n",
        &["spec.yaml:5:", "unknown key `form`"],
    );
    let huge: String = (0..=crate::MAX_MATRIX_ENTRIES)
        .map(|i| format!("  - {{ a: e{i} }}\n"))
        .collect();
    one_error(
        &format!("name: t-${{{{ matrix.a }}}}\nprompt: p\nmatrix:\n{huge}"),
        &["more than 10000 entries"],
    );
}

#[test]
fn a_reference_is_refused_outside_the_substituted_fields() {
    one_error(
        "name: t-${{ matrix.a }}\nprompt: p\nmatrix: [ { a: x } ]\npermissions:\n  allow: [\"Bash(cd ${{ matrix.a }})\"]\n",
        &[
            "spec.yaml:7:11",
            "permissions.allow[0]: ${{ matrix.a }} is not substituted here",
            "name, prompt",
        ],
    );
    one_error(
        "name: t-${{ matrix.a }}\nprompt: p\nmatrix: [ { a: x } ]\nenv: { pass: [\"${{ matrix.a }}\"] }\n",
        &["spec.yaml:6:", "env.pass[0]"],
    );
}

#[test]
fn a_key_no_entry_has_names_the_entry_and_its_keys() {
    one_error(
        "name: t-${{ matrix.a }}\nmatrix:\n  - { a: x, b: 1 }\n  - { a: w }\n  - { a: z }\nprompt: in ${{ matrix.b }}\n",
        &[
            "spec.yaml:8:9",
            "prompt: ${{ matrix.b }}: matrix[1] (",
            "spec.yaml:6:5) has no key `b` (and 1 other entry); it has a",
        ],
    );
}

#[test]
fn references_without_a_matrix_and_malformed_ones_are_refused() {
    one_error(
        "name: t\nprompt: fix ${{ matrix.path }}\n",
        &[
            "spec.yaml:4:9",
            "prompt: ${{ matrix.path }} but the spec has no matrix:",
        ],
    );
    one_error(
        "name: t-${{ matrix.a }}\nmatrix: [ { a: x } ]\nprompt: fix ${{ matrix.a.b }}\n",
        &[
            "spec.yaml:5:9",
            "prompt: `${{ matrix.a.b }}` is not a matrix reference",
        ],
    );
    one_error(
        "name: t-${{ matrix.a\nmatrix: [ { a: x } ]\nprompt: p\n",
        &["spec.yaml:3:7", "not closed"],
    );
    // Other expressions, and written-out references, are text.
    let dir = tempfile::tempdir().unwrap();
    let file = file_of(
        dir.path(),
        "name: t\nprompt: set ${{ github.ref }} and $${{ matrix.os }}\n",
    );
    assert!(file.errors.is_empty(), "{:?}", file.errors);
    assert_eq!(
        file.specs[0].spec.prompt,
        "set ${{ github.ref }} and ${{ matrix.os }}"
    );
}

#[test]
fn task_names_must_use_a_value_be_valid_and_differ() {
    one_error(
        "name: same\nmatrix: [ { a: x }, { a: w } ]\nprompt: ${{ matrix.a }}\n",
        &["spec.yaml:3:7", "needs a name of its own"],
    );
    one_error(
        "name: t-${{ matrix.a }}\nmatrix:\n  - { a: ok }\n  - { a: not ok }\nprompt: p\n",
        &[
            "spec.yaml:3:7",
            "matrix[1] (",
            "spec.yaml:6:5) makes the task name invalid",
        ],
    );
    one_error(
        "name: t-${{ matrix.a }}\nmatrix:\n  - { a: x, b: 1 }\n  - { a: x, b: 2 }\nprompt: p\n",
        &[
            "spec.yaml:3:7",
            "matrix[0] (",
            "spec.yaml:5:5) and matrix[1] (",
            "both make the task name \"t-x\"",
        ],
    );
    one_error(
        "name: \"t ${{ matrix.a }}\"\nmatrix: [ { a: x } ]\nprompt: p\n",
        &["spec.yaml:3:7", "invalid task name"],
    );
}

#[test]
fn a_reference_in_quotes_in_a_shell_command_is_refused_at_its_own_place() {
    one_error(
        "name: t-${{ matrix.a }}\nmatrix: [ { a: x } ]\nprompt: p\nchecks:\n  - name: c\n    run: cd \"${{ matrix.a }}\"\n",
        &["spec.yaml:8:14", "checks[0].run", "inside quotes"],
    );
    // In a block, the line and column of the quoted one, not the block's start nor the
    // first reference to the key.
    one_error(
        "name: t-${{ matrix.a }}\nmatrix: [ { a: x } ]\nprompt: p\nsetup:\n  - name: c\n    run: |\n      cd ${{ matrix.a }}\n      echo \"in ${{ matrix.a }}\"\n",
        &["spec.yaml:10:16", "setup[0].run", "inside quotes"],
    );
}

#[test]
fn a_problem_every_task_shares_is_said_once() {
    let errors = errors_of(
        "name: t-${{ matrix.a }}\nmatrix: [ { a: x }, { a: w }, { a: z } ]\nprompt: p\nretry: { max_attempts: 0 }\n",
    );
    assert_eq!(errors.len(), 1, "{errors:?}");
}

#[test]
fn a_recorded_entry_expands_one_task_without_reading_the_matrix_file() {
    let text = format!(
        "{HEAD}name: s-${{{{ matrix.a }}}}\nmatrix: {{ from: gone.yaml }}\nprompt: p ${{{{ matrix.a }}}}\n"
    );
    let path = Path::new("/nowhere/spec.yaml");
    let values = MatrixValues::from([("a".to_string(), "one".to_string())]);
    let task = |entry| RecordedTask {
        name: "s-one",
        entry,
    };
    let loaded = parse_with_defaults(
        path,
        text.clone(),
        None,
        Expansion::Recorded(task(Some(&values))),
    )
    .unwrap();
    assert_eq!(loaded.name(), "s-one");
    assert_eq!(loaded.spec.prompt, "p one");
    assert_eq!(loaded.matrix.as_ref(), Some(&values));
    let error = parse_with_defaults(path, text.clone(), None, Expansion::Recorded(task(None)))
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("the recording names no matrix entry"),
        "{error}"
    );
    let error = parse_every(path, text).errors[0].to_string();
    assert!(error.contains("matrix.from:"), "{error}");
}

#[test]
fn a_command_of_one_task_refuses_a_matrix_of_several() {
    let text = format!(
        "{HEAD}name: s-${{{{ matrix.a }}}}\nmatrix: [ {{ a: x }}, {{ a: w }} ]\nprompt: p\n"
    );
    let error = crate::parse(Path::new("spec.yaml"), text)
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("spec.yaml:4:9: this spec's matrix makes 2 tasks"),
        "{error}"
    );
}

#[test]
fn a_defaults_file_holds_no_matrix_and_no_reference() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "drover.yaml",
        "version: 1\nmatrix: [ { a: x } ]\n",
    );
    let file = file_of(dir.path(), "name: t\nprompt: p\n");
    let error = file.errors[0].to_string();
    assert!(
        error.contains("drover.yaml:2:1: matrix: belongs in a spec"),
        "{error}"
    );
    write(
        dir.path(),
        "drover.yaml",
        "version: 1\npermissions: { allow: [\"Bash(cd ${{ matrix.a }})\"] }\n",
    );
    let file = file_of(dir.path(), "name: t\nprompt: p\n");
    let error = file.errors[0].to_string();
    assert!(error.contains("drover.yaml:2:"), "{error}");
    assert!(
        error.contains("a defaults file applies to every spec"),
        "{error}"
    );
}

#[test]
fn the_walk_and_the_substitution_name_the_same_fields() {
    let dir = tempfile::tempdir().unwrap();
    let file = file_of(dir.path(), THREE);
    let mut spec = file.specs[0].spec.clone();
    // repo: (which takes the place of workspace:) brings its own fields.
    let with_repo = file_of(
        dir.path(),
        "name: r-${{ matrix.id }}\nmatrix: [ { id: a } ]\nprompt: p\nrepo: { url: \"file:///srv/${{ matrix.id }}.git\", ref: main, path: co }\n",
    );
    assert!(with_repo.errors.is_empty(), "{:?}", with_repo.errors);
    spec.repo = with_repo.specs[0].spec.repo.clone();
    let mut named: Vec<&str> = string_fields(&mut spec).iter().map(|f| f.field).collect();
    named.push("name");
    named.sort();
    named.dedup();
    let mut listed = SUBSTITUTED.to_vec();
    listed.sort();
    assert_eq!(named, listed);
}

#[test]
fn a_value_in_a_path_field_is_a_relative_path_within() {
    for value in ["/etc", "../up", "a/../../b", "/"] {
        one_error(
            &format!(
                "name: t-${{{{ matrix.id }}}}\nmatrix:\n  - {{ id: ok, dir: fine/sub }}\n  - {{ id: bad, dir: \"{value}\" }}\nprompt: p\nworkspace: ws/${{{{ matrix.dir }}}}\n"
            ),
            &[
                "spec.yaml:8:12",
                "workspace: matrix[1] (",
                &format!("makes ${{{{ matrix.dir }}}} {value:?}"),
                "relative path without `..`",
            ],
        );
    }
    // The spec itself may leave its directory; a value may not.
    let dir = tempfile::tempdir().unwrap();
    let file = file_of(
        dir.path(),
        "name: t-${{ matrix.id }}\nmatrix: [ { id: a, dir: x..y/.z } ]\nprompt: p\nworkspace: ../${{ matrix.dir }}\n",
    );
    assert!(file.errors.is_empty(), "{:?}", file.errors);
    assert_eq!(
        file.specs[0].spec.workspace.as_ref().unwrap().value,
        "../x..y/.z"
    );
}

#[test]
fn yaml_1_1_booleans_and_null_are_refused_unless_quoted() {
    for word in [
        "NO", "off", "yes", "True", "On", "y", "N", "oFf", "~", "null",
    ] {
        let errors = errors_of(&format!(
            "name: t-${{{{ matrix.a }}}}\nprompt: p\nmatrix:\n  - {{ a: x, flag: {word} }}\n"
        ));
        assert!(errors[0].contains("spec.yaml:6:"), "{word}: {errors:?}");
        assert!(errors[0].contains("quote it"), "{word}: {errors:?}");
    }
    let dir = tempfile::tempdir().unwrap();
    let file = file_of(
        dir.path(),
        "name: t-${{ matrix.a }}\nprompt: p ${{ matrix.b }} ${{ matrix.c }} ${{ matrix.d }} ${{ matrix.e }}\nmatrix:\n  - { a: x, b: \"NO\", c: 'off', d: true, e: 1.10 }\n",
    );
    assert!(file.errors.is_empty(), "{:?}", file.errors);
    assert_eq!(file.specs[0].spec.prompt, "p NO off true 1.10");
}

#[test]
fn values_hold_no_nul_nor_more_than_32_kib_and_keys_name_one_variable_each() {
    one_error(
        "name: t-${{ matrix.a }}\nprompt: p\nmatrix:\n  - { a: x, b: \"one\\0two\" }\n",
        &["spec.yaml:6:", "NUL"],
    );
    let big = "x".repeat(crate::MAX_MATRIX_VALUE_BYTES + 1);
    one_error(
        &format!("name: t-${{{{ matrix.a }}}}\nprompt: p\nmatrix:\n  - {{ a: x, b: {big} }}\n"),
        &["spec.yaml:6:", "32769 bytes, more than the 32768"],
    );
    one_error(
        "name: t-${{ matrix.a }}\nprompt: p\nmatrix:\n  - { a: x, b-c: 1 }\n  - { a: w, b_c: 2 }\n",
        &[
            "spec.yaml:7:",
            "matrix keys `b-c` and `b_c` both give setup steps and checks the variable DROVER_MATRIX_b_c",
        ],
    );
    // The same rules for a file's entries, after the spec's place that names it.
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "nul.json", "[{\"a\": \"x\\u0000y\"}]");
    let file = file_of(
        dir.path(),
        "name: t-${{ matrix.a }}\nprompt: p\nmatrix: { from: nul.json }\n",
    );
    let error = file.errors[0].to_string();
    assert!(error.contains("matrix.from: "), "{error}");
    assert!(error.contains("nul.json:1:"), "{error}");
    assert!(error.contains("NUL"), "{error}");
}

#[test]
fn names_that_differ_only_in_case_are_refused() {
    one_error(
        "name: t-${{ matrix.a }}\nmatrix:\n  - { a: Billing }\n  - { a: billing }\nprompt: p\n",
        &[
            "spec.yaml:3:7",
            "makes the task name \"t-Billing\" and matrix[1] (",
            "makes \"t-billing\"",
            "differ only in case",
        ],
    );
}
