//! Evaluating a spec's `expect:` against what the task changed. Each expectation becomes
//! a [`CheckReport`] named `expect: …`, so JUnit, the summaries and the transcript show
//! it exactly like a check, with no code of their own.

use crate::record::CheckReport;
use crate::spec::{Expectations, PathGlob};
use crate::workspace::RelPath;

/// How many paths a failure message lists before it says "and N more".
const LISTED: usize = 20;

/// One report per expectation the spec sets, in a fixed order (only, max, must_include).
pub(super) fn evaluate(expect: &Expectations, changed: &[RelPath]) -> Vec<CheckReport> {
    let mut reports = Vec::new();
    let Some(files) = &expect.files_changed else {
        return reports;
    };
    if let Some(only) = &files.only {
        let offenders: Vec<&RelPath> = changed
            .iter()
            .filter(|path| !only.iter().any(|glob| glob.is_match(path.to_path())))
            .collect();
        let explanation = if offenders.is_empty() {
            format!(
                "{} changed {} match {}",
                changed.len(),
                files_word(changed.len()),
                globs(only)
            )
        } else {
            format!(
                "{} changed {} outside {}: {}",
                offenders.len(),
                files_word(offenders.len()),
                globs(only),
                list(&offenders)
            )
        };
        reports.push(report(
            "only",
            globs(only),
            offenders.is_empty(),
            explanation,
        ));
    }
    if let Some(max) = files.max {
        let passed = changed.len() <= max;
        let explanation = if passed {
            format!(
                "{} {} changed, within the maximum of {max}",
                changed.len(),
                files_word(changed.len())
            )
        } else {
            let all: Vec<&RelPath> = changed.iter().collect();
            format!(
                "{} files changed, more than the maximum of {max}: {}",
                changed.len(),
                list(&all)
            )
        };
        reports.push(report("max", max.to_string(), passed, explanation));
    }
    if let Some(must) = &files.must_include {
        let missing: Vec<&PathGlob> = must
            .iter()
            .filter(|glob| !changed.iter().any(|path| glob.is_match(path.to_path())))
            .collect();
        let explanation = if missing.is_empty() {
            format!("every one of {} matches a changed file", globs(must))
        } else {
            let names: Vec<&str> = missing.iter().map(|g| g.as_str()).collect();
            let all: Vec<&RelPath> = changed.iter().collect();
            format!(
                "no changed file matches {} (changed: {})",
                names.join(", "),
                if all.is_empty() {
                    "none".to_string()
                } else {
                    list(&all)
                }
            )
        };
        reports.push(report(
            "must_include",
            globs(must),
            missing.is_empty(),
            explanation,
        ));
    }
    reports
}

/// One line for the task's message: which expectation failed and why.
pub(super) fn failure_summary(report: &CheckReport) -> String {
    let name = report.name.strip_prefix("expect: ").unwrap_or(&report.name);
    format!("expectation {name} failed: {}", report.output_tail)
}

fn report(field: &str, value: String, passed: bool, explanation: String) -> CheckReport {
    CheckReport {
        name: format!("expect: files_changed.{field}"),
        command: format!("files_changed.{field}: {value}"),
        exit_code: None,
        passed,
        timed_out: false,
        duration_ms: 0,
        output_tail: explanation,
        expectation: true,
    }
}

fn globs(list: &[PathGlob]) -> String {
    let names: Vec<&str> = list.iter().map(PathGlob::as_str).collect();
    format!("[{}]", names.join(", "))
}

fn files_word(count: usize) -> &'static str {
    if count == 1 { "file" } else { "files" }
}

fn list(paths: &[&RelPath]) -> String {
    let shown: Vec<String> = paths.iter().take(LISTED).map(|p| p.to_string()).collect();
    let mut text = shown.join(", ");
    if paths.len() > LISTED {
        text.push_str(&format!(" and {} more", paths.len() - LISTED));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::FilesChangedExpectation;

    fn globs(list: &[&str]) -> Vec<PathGlob> {
        list.iter()
            .map(|g| PathGlob::try_from(g.to_string()).unwrap())
            .collect()
    }

    fn expect(files: FilesChangedExpectation) -> Expectations {
        Expectations {
            files_changed: Some(files),
        }
    }

    fn changed(paths: &[&str]) -> Vec<RelPath> {
        paths.iter().map(|p| RelPath::from(*p)).collect()
    }

    #[test]
    fn only_lists_the_offenders() {
        let e = expect(FilesChangedExpectation {
            only: Some(globs(&["src/**", "*.md"])),
            ..Default::default()
        });
        let ok = evaluate(&e, &changed(&["src/a.rs", "docs/x.md"]));
        assert_eq!(ok.len(), 1);
        assert!(ok[0].passed);
        assert_eq!(ok[0].name, "expect: files_changed.only");
        assert_eq!(ok[0].command, "files_changed.only: [src/**, *.md]");
        let bad = evaluate(&e, &changed(&["build.rs", "src/a.rs", "tests/t.rs"]));
        assert!(!bad[0].passed);
        assert_eq!(
            bad[0].output_tail,
            "2 changed files outside [src/**, *.md]: build.rs, tests/t.rs"
        );
        assert_eq!(
            failure_summary(&bad[0]),
            "expectation files_changed.only failed: 2 changed files outside [src/**, *.md]: build.rs, tests/t.rs"
        );
    }

    #[test]
    fn max_counts_and_says_how_many() {
        let e = expect(FilesChangedExpectation {
            max: Some(1),
            ..Default::default()
        });
        assert!(evaluate(&e, &changed(&["a"]))[0].passed);
        assert!(evaluate(&e, &[])[0].passed);
        let bad = evaluate(&e, &changed(&["a", "b"]));
        assert!(!bad[0].passed);
        assert!(
            bad[0]
                .output_tail
                .starts_with("2 files changed, more than the maximum of 1"),
            "{}",
            bad[0].output_tail
        );
    }

    #[test]
    fn must_include_names_the_missing_globs() {
        let e = expect(FilesChangedExpectation {
            must_include: Some(globs(&["src/**", "CHANGELOG.md"])),
            ..Default::default()
        });
        assert!(evaluate(&e, &changed(&["src/a.rs", "CHANGELOG.md"]))[0].passed);
        let bad = evaluate(&e, &changed(&["src/a.rs"]));
        assert!(!bad[0].passed);
        assert_eq!(
            bad[0].output_tail,
            "no changed file matches CHANGELOG.md (changed: src/a.rs)"
        );
        let none = evaluate(&e, &[]);
        assert!(none[0].output_tail.contains("(changed: none)"));
    }

    #[test]
    fn no_expectations_no_reports_and_long_lists_are_cut() {
        assert!(evaluate(&Expectations::default(), &changed(&["a"])).is_empty());
        let many: Vec<RelPath> = (0..25)
            .map(|i| RelPath::from(format!("f{i}").as_str()))
            .collect();
        let e = expect(FilesChangedExpectation {
            max: Some(0),
            ..Default::default()
        });
        assert!(evaluate(&e, &many)[0].output_tail.ends_with("and 5 more"));
    }
}
