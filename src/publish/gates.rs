//! The gates a task's change passes before `drover publish` pushes it, each named in
//! its refusal: the task passed and started from a clean commit; no CI configuration
//! changes (a token that can push a workflow can do whatever the workflow's own token
//! can); no more files or lines than the publish-time limits; no binary file over a size.
//! They judge the commit that would be pushed, as git lists it, not the patch's text.

use std::fmt;

/// One path the commit changes (`git diff-tree --numstat`), with its new size and mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Change {
    /// As git stores it: bytes, not necessarily UTF-8.
    pub path: Vec<u8>,
    /// Lines added and deleted; None for a file git counts as binary.
    pub lines: Option<(u64, u64)>,
    /// The size of the file after the change, in bytes (0: deleted).
    pub size: u64,
}

impl Change {
    /// The path for people (bytes that are not UTF-8 shown as U+FFFD).
    pub(crate) fn shown(&self) -> String {
        String::from_utf8_lossy(&self.path).into_owned()
    }
}

/// The publish-time limits (`--max-files`, `--max-lines`, `--max-blob-bytes`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub max_files: usize,
    pub max_lines: u64,
    pub max_blob_bytes: u64,
}

/// Which gate said no.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gate {
    Passed,
    CleanStart,
    Workflow,
    Files,
    Lines,
    Binary,
    Base,
    FastForward,
    Incomplete,
    Applies,
}

impl fmt::Display for Gate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Gate::Passed => "passed",
            Gate::CleanStart => "clean-start",
            Gate::Workflow => "workflow",
            Gate::Files => "max-files",
            Gate::Lines => "max-lines",
            Gate::Binary => "binary",
            Gate::Base => "base",
            Gate::FastForward => "fast-forward",
            Gate::Incomplete => "incomplete",
            Gate::Applies => "applies",
        })
    }
}

/// A gate's refusal: which, and why, saying what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub gate: Gate,
    pub why: String,
}

/// Paths whose change is a change to CI: GitHub's workflows and actions, and the other
/// hosted CI systems' configuration files.
const CI_DIRECTORIES: &[&str] = &[
    ".github/workflows/",
    ".github/actions/",
    ".circleci/",
    ".buildkite/",
    ".gitlab/",
    ".woodpecker/",
    ".drone/",
    ".azure-pipelines/",
    ".tekton/",
    ".semaphore/",
];
const CI_FILES: &[&str] = &[
    ".gitlab-ci.yml",
    ".travis.yml",
    "azure-pipelines.yml",
    "Jenkinsfile",
    "bitbucket-pipelines.yml",
    ".drone.yml",
    ".woodpecker.yml",
    "appveyor.yml",
    ".appveyor.yml",
    "cloudbuild.yaml",
    "cloudbuild.yml",
    ".github/dependabot.yml",
    ".github/dependabot.yaml",
    ".github/CODEOWNERS",
    "CODEOWNERS",
    "docs/CODEOWNERS",
    ".gitmodules",
    ".cirrus.yml",
    "buildspec.yml",
    "buildspec.yaml",
];

/// Is `path` CI configuration (see the lists above), or the directory of some (a
/// symlink or submodule there could stand for a whole workflows directory)? Compared
/// case-insensitively, as a case-insensitive checkout would read it.
pub(crate) fn is_ci_config(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    let name = lower.rsplit('/').next().unwrap_or(&lower);
    CI_DIRECTORIES.iter().any(|dir| {
        let dir = dir.to_ascii_lowercase();
        let bare = dir.trim_end_matches('/');
        lower.starts_with(&dir) || bare == lower || bare.starts_with(&format!("{lower}/"))
    }) || CI_FILES.iter().any(|file| lower == file.to_ascii_lowercase())
        || lower == ".github"
        || name == "jenkinsfile"
        || name.starts_with("jenkinsfile.")
        || name == ".gitlab-ci.yml"
        // A local action (`uses: ./tools/lint`) runs with the workflow's token.
        || name == "action.yml"
        || name == "action.yaml"
}

/// The refusals of the change gates for `changes`.
pub(crate) fn judge_changes(
    changes: &[Change],
    limits: Limits,
    allow_workflow_changes: bool,
) -> Vec<Refusal> {
    let mut refusals = Vec::new();
    let ci: Vec<String> = changes
        .iter()
        .map(Change::shown)
        .filter(|path| is_ci_config(path))
        .collect();
    if !ci.is_empty() && !allow_workflow_changes {
        refusals.push(Refusal {
            gate: Gate::Workflow,
            why: format!(
                "it changes CI configuration ({}); a token that pushes a workflow runs it with the repository's secrets. Review it yourself, or pass --allow-workflow-changes",
                ci.join(", ")
            ),
        });
    }
    if changes.len() > limits.max_files {
        refusals.push(Refusal {
            gate: Gate::Files,
            why: format!(
                "it changes {} files, more than --max-files {}",
                changes.len(),
                limits.max_files
            ),
        });
    }
    let lines: u64 = changes
        .iter()
        .filter_map(|change| change.lines)
        .map(|(added, deleted)| added + deleted)
        .sum();
    if lines > limits.max_lines {
        refusals.push(Refusal {
            gate: Gate::Lines,
            why: format!(
                "it changes {lines} lines, more than --max-lines {}",
                limits.max_lines
            ),
        });
    }
    // Every file counts, text or not: a one-line text file of 50 MB is no smaller.
    let big: Vec<String> = changes
        .iter()
        .filter(|change| change.size > limits.max_blob_bytes)
        .map(|change| format!("{} ({} bytes)", change.shown(), change.size))
        .collect();
    if !big.is_empty() {
        refusals.push(Refusal {
            gate: Gate::Binary,
            why: format!(
                "files over --max-blob-bytes {}: {}",
                limits.max_blob_bytes,
                big.join(", ")
            ),
        });
    }
    refusals
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        max_files: 3,
        max_lines: 10,
        max_blob_bytes: 100,
    };

    fn text(path: &str, added: u64) -> Change {
        Change {
            path: path.as_bytes().to_vec(),
            lines: Some((added, 0)),
            size: 10,
        }
    }

    #[test]
    fn ci_configuration_is_known_by_its_paths_in_any_case() {
        for path in [
            ".github/workflows/ci.yml",
            ".GitHub/Workflows/x.yaml",
            ".github/actions/setup/action.yml",
            ".gitlab-ci.yml",
            "sub/.gitlab-ci.yml",
            "Jenkinsfile",
            "ci/jenkinsfile",
            ".circleci/config.yml",
            "CODEOWNERS",
            "docs/CODEOWNERS",
            ".github",
            ".github/workflows",
            ".circleci",
            "tools/lint/action.yml",
            "Jenkinsfile.release",
            ".gitmodules",
            ".github/dependabot.yaml",
        ] {
            assert!(is_ci_config(path), "{path}");
        }
        for path in [
            "src/workflows/x.yml",
            "github/workflows/x.yml",
            "README.md",
            ".g",
            "docs",
        ] {
            assert!(!is_ci_config(path), "{path}");
        }
    }

    #[test]
    fn each_gate_names_itself_and_a_small_change_passes_them_all() {
        assert!(judge_changes(&[text("src/a.rs", 2)], LIMITS, false).is_empty());
        let workflow = judge_changes(&[text(".github/workflows/ci.yml", 1)], LIMITS, false);
        assert_eq!(workflow[0].gate, Gate::Workflow);
        assert!(workflow[0].why.contains("--allow-workflow-changes"));
        assert!(judge_changes(&[text(".github/workflows/ci.yml", 1)], LIMITS, true).is_empty());
        let many: Vec<Change> = (0..4).map(|i| text(&format!("f{i}"), 1)).collect();
        assert_eq!(judge_changes(&many, LIMITS, false)[0].gate, Gate::Files);
        let long = judge_changes(&[text("a", 11)], LIMITS, false);
        assert_eq!(long[0].gate, Gate::Lines);
        let blob = Change {
            path: b"big.bin".to_vec(),
            lines: None,
            size: 101,
        };
        let binary = judge_changes(&[blob], LIMITS, false);
        assert_eq!(binary[0].gate, Gate::Binary);
        assert!(binary[0].why.contains("big.bin (101 bytes)"));
        let long_line = Change {
            size: 101,
            ..text("one-line.txt", 1)
        };
        assert_eq!(
            judge_changes(&[long_line], LIMITS, false)[0].gate,
            Gate::Binary
        );
        assert_eq!(Gate::FastForward.to_string(), "fast-forward");
    }
}
