// Test-only module: its parent includes it under #[cfg(test)].
use std::path::{Path, PathBuf};

use crate::matrix::MatrixValues;
use crate::{Expansion, RecordedTask, load_recorded, parse_with_defaults};

const HEAD: &str = "version: 1
model: { provider: script, script: [ { text: done } ] }
";

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// A spec with an inline matrix of two entries, at `dir/spec.yaml`.
fn inline_spec(dir: &Path) -> PathBuf {
    write(
        dir,
        "spec.yaml",
        &format!(
            "{HEAD}name: s-${{{{ matrix.id }}}}\nmatrix:\n  - {{ id: one, path: a }}\n  - {{ id: two, path: b }}\nprompt: p\nchecks:\n  - name: c\n    run: cd ${{{{ matrix.path }}}}\n"
        ),
    )
}

fn entry(pairs: &[(&str, &str)]) -> MatrixValues {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn a_vouched_spec_makes_the_recorded_task_of_its_own_entry_and_refuses_a_forged_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = inline_spec(dir.path());
    let vouched = |name, entry| Expansion::Vouched(RecordedTask { name, entry });
    let honest = entry(&[("id", "two"), ("path", "b")]);
    let loaded = load_recorded(&path, vouched("s-two", Some(&honest))).unwrap();
    assert_eq!(loaded.name(), "s-two");
    assert_eq!(loaded.matrix.as_ref(), Some(&honest));
    // The recording's entry says another path for the same task: refused.
    let forged = entry(&[("id", "two"), ("path", "/etc")]);
    let error = load_recorded(&path, vouched("s-two", Some(&forged)))
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("spec.yaml:5:3: the recording's matrix entry is not the spec's")
            && error.contains("differs in `path`"),
        "{error}"
    );
    // A task the spec's matrix does not make.
    let other = entry(&[("id", "three"), ("path", "c")]);
    let error = load_recorded(&path, vouched("s-three", Some(&other)))
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("the spec's matrix makes no task named \"s-three\""),
        "{error}"
    );
}

/// The recorded task `name` of `entry`, from a spec the user vouches for or not.
fn recorded_as<'a>(vouched: bool, name: &'a str, entry: Option<&'a MatrixValues>) -> Expansion<'a> {
    let task = RecordedTask { name, entry };
    if vouched {
        Expansion::Vouched(task)
    } else {
        Expansion::Recorded(task)
    }
}

#[test]
fn a_recorded_entry_is_checked_as_a_written_one_and_must_make_the_recorded_task() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "spec.yaml",
        &format!(
            "{HEAD}name: s-${{{{ matrix.id }}}}\nmatrix: {{ from: gone.yaml }}\nprompt: p\nworkspace: ${{{{ matrix.dir }}}}\n"
        ),
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let good = entry(&[("id", "one"), ("dir", "a")]);
    for vouched in [true, false] {
        // The file is gone: the recorded entry, whose task is the recorded one.
        let loaded = parse_with_defaults(
            &path,
            text.clone(),
            None,
            recorded_as(vouched, "s-one", Some(&good)),
        );
        assert_eq!(loaded.unwrap().name(), "s-one");
        let error = parse_with_defaults(
            &path,
            text.clone(),
            None,
            recorded_as(vouched, "s-two", Some(&good)),
        )
        .unwrap_err()
        .to_string();
        assert!(
            error.contains("the recording's matrix entry makes the task \"s-one\", not the recording's task \"s-two\""),
            "{error}"
        );
        for (bad, says) in [
            (
                entry(&[("id", "one"), ("dir", "a"), ("bad key", "x")]),
                "matrix key \"bad key\"",
            ),
            (entry(&[("id", "one"), ("dir", "a\0b")]), "NUL"),
            (
                entry(&[("id", "one"), ("dir", &"x".repeat(40_000))]),
                "more than the 32768",
            ),
            (
                entry(&[("id", "one"), ("dir", "a"), ("d-x", "1"), ("d_x", "2")]),
                "both give",
            ),
            (
                entry(&[("id", "one"), ("dir", "/etc")]),
                "relative path without `..`",
            ),
        ] {
            let error = parse_with_defaults(
                &path,
                text.clone(),
                None,
                recorded_as(vouched, "s-one", Some(&bad)),
            )
            .unwrap_err()
            .to_string();
            assert!(error.contains(says), "{says}: {error}");
        }
    }
    // With the file there, a vouched spec reads it: the recorded entry must be in it.
    write(dir.path(), "gone.yaml", "- { id: one, dir: b }\n");
    let error = load_recorded(
        &path,
        Expansion::Vouched(RecordedTask {
            name: "s-one",
            entry: Some(&good),
        }),
    )
    .unwrap_err()
    .to_string();
    assert!(error.contains("is not the spec's"), "{error}");
}

#[test]
fn a_recording_never_chooses_the_repository_a_vouched_spec_clones() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "spec.yaml",
        &format!(
            "{HEAD}name: s-${{{{ matrix.id }}}}\nmatrix: {{ from: gone.yaml }}\nprompt: p\nrepo: {{ url: \"${{{{ matrix.url }}}}\" }}\n"
        ),
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let forged = entry(&[("id", "one"), ("url", "https://attacker.example/x.git")]);
    // resume and replay --spec: the file is gone, so only the recording could say which
    // repository to fetch (with this machine's credentials): refused.
    let error = parse_with_defaults(
        &path,
        text.clone(),
        None,
        recorded_as(true, "s-one", Some(&forged)),
    )
    .unwrap_err()
    .to_string();
    assert!(
        error.contains("an entry from the recording cannot choose the repository"),
        "{error}"
    );
    // A plain replay never clones: the recorded entry makes its task as before.
    let loaded = parse_with_defaults(
        &path,
        text,
        None,
        recorded_as(false, "s-one", Some(&forged)),
    );
    assert_eq!(loaded.unwrap().name(), "s-one");
}

#[test]
fn a_credential_in_a_matrix_value_of_repo_url_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "spec.yaml",
        &format!(
            "{HEAD}name: s-${{{{ matrix.id }}}}\nmatrix:\n  - {{ id: a, url: \"file:///srv/a.git\" }}\n  - {{ id: b, url: \"https://alice:SECRET@example.com/b.git\" }}\nprompt: p\nrepo: {{ url: \"${{{{ matrix.url }}}}\" }}\n"
        ),
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let error = parse_with_defaults(&path, text, None, Expansion::Written)
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("the matrix puts a user name or password into the URL of task s-b"),
        "{error}"
    );
    assert!(!error.contains("SECRET"), "{error}");
}
