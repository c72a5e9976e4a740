//! `limits.context`, `limits.max_identical_calls` and `limits.wrap_up` in a spec:
//! `drover validate` takes the documented forms and refuses a bad value at its
//! `file:line:column` (exit 2), saying what to write instead.

use std::path::Path;
use std::process::Output;

use crate::common::{drover, write_spec};

const HEAD: &str = "version: 1\nname: ctx\nprompt: p\nworkspace: ws\nmodel: { provider: script, script: [{ text: done }] }\nlimits:\n";

/// `drover validate` of a spec whose `limits:` body is `limits`.
fn validate(dir: &Path, limits: &str) -> Output {
    std::fs::create_dir_all(dir.join("ws")).unwrap();
    write_spec(dir, "spec.yaml", &format!("{HEAD}{limits}"));
    drover()
        .current_dir(dir)
        .arg("validate")
        .arg("spec.yaml")
        .output()
        .unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn every_documented_form_is_valid() {
    let dir = tempfile::tempdir().unwrap();
    for limits in [
        "  context: off\n",
        "  context: on\n",
        "  context: false\n",
        "  context: { strategy: summarize }\n",
        "  context: { strategy: server, keep_tool_results: 5 }\n",
        "  context: { strategy: off }\n",
        "  context:\n    strategy: clear_tool_results\n    window: 200000\n    threshold: 70%\n    keep_tool_results: 3\n",
        "  context: { threshold: 0.8, window: 4096 }\n",
        "  max_identical_calls: 3\n",
        "  max_identical_calls: off\n",
        "  wrap_up: true\n  max_turns: 10\n",
    ] {
        let output = validate(dir.path(), limits);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{limits}: {}",
            stderr(&output)
        );
    }
}

#[test]
fn bad_values_are_refused_at_their_line_and_column_saying_what_to_write() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, &str, &[&str]); 9] = [
        (
            "  context: { window: 100 }\n",
            "spec.yaml:7:22:",
            &["limits.context.window is 100 tokens", "at least 4096"],
        ),
        (
            "  context: { threshold: 99% }\n",
            "spec.yaml:7:25:",
            &[
                "limits.context.threshold \"99%\"",
                "between 10% and 95%, such as 70% or 0.7",
            ],
        ),
        (
            "  context: { threshold: 1.5 }\n",
            "spec.yaml:7:25:",
            &["between 10% and 95%"],
        ),
        (
            "  context: { strategy: sumarize }\n",
            "spec.yaml:7:24:",
            &[
                "unknown variant `sumarize`",
                "clear_tool_results, summarize, server, off",
            ],
        ),
        (
            "  context: { windw: 9000 }\n",
            "spec.yaml:7:",
            &[
                "unknown field `windw`",
                "strategy, window, threshold, keep_tool_results",
            ],
        ),
        (
            "  context:\n    keep_tool_results: 0\n",
            "spec.yaml:8:24:",
            &["limits.context.keep_tool_results is 0", "1 to 100"],
        ),
        (
            "  context: sometimes\n",
            "spec.yaml:7:",
            &["\"sometimes\"", "limits.context as off, on, or a mapping"],
        ),
        (
            "  max_identical_calls: 1\n",
            "spec.yaml:7:",
            &[
                "`1`",
                "limits.max_identical_calls as a number of 2 or more",
                "or off",
            ],
        ),
        (
            "  max_identical_calls: never\n",
            "spec.yaml:7:",
            &[
                "\"never\"",
                "limits.max_identical_calls as a number of 2 or more",
            ],
        ),
    ];
    for (limits, place, says) in cases {
        let output = validate(dir.path(), limits);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{limits}: {}",
            stderr(&output)
        );
        let text = stderr(&output);
        assert!(text.contains(place), "{limits}: {text}");
        for part in says {
            assert!(text.contains(part), "{limits}: {part:?} in {text}");
        }
    }
}

#[test]
fn a_defaults_file_gives_them_to_its_specs_and_its_errors_are_its_own() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    let tasks = dir.path().join("tasks");
    std::fs::create_dir_all(&tasks).unwrap();
    write_spec(
        &tasks,
        "drover.yaml",
        "version: 1\nlimits:\n  context: { strategy: summarize, window: 50000 }\n  max_identical_calls: 3\n  wrap_up: true\n",
    );
    write_spec(
        &tasks,
        "t.yaml",
        "version: 1\nname: t\nprompt: p\nworkspace: ../ws\nmodel: { provider: script, script: [{ text: done }] }\n",
    );
    let output = drover()
        .arg("validate")
        .arg(tasks.join("t.yaml"))
        .arg("--show-merged")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let merged = String::from_utf8_lossy(&output.stdout);
    for line in [
        "strategy: summarize",
        "window: 50000",
        "max_identical_calls: 3",
        "wrap_up: true",
    ] {
        assert!(merged.contains(line), "{line}: {merged}");
    }

    write_spec(
        &tasks,
        "drover.yaml",
        "version: 1\nlimits:\n  context: { threshold: 5% }\n",
    );
    let output = drover()
        .arg("validate")
        .arg(tasks.join("t.yaml"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let text = stderr(&output);
    assert!(text.contains("tasks/drover.yaml:3:25:"), "{text}");
    assert!(text.contains("between 10% and 95%"), "{text}");
}
