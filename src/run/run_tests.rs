// Test-only module: its parent includes it under #[cfg(test)].
//! The wings of `run` point one way (see docs/architecture.md, "run"): a wing uses only
//! the wings before it, so planning never reaches the task runner and reading a
//! recording decides nothing.

use std::path::Path;

/// The wings in order: each may use only those before it.
const WINGS: &[&str] = &["recording", "artifacts", "plan", "task", "batch"];

/// The `run` wings named by `crate::run::<wing>` in `text` (its non-test part).
fn wings_used(text: &str) -> Vec<&'static str> {
    let code = text.find("#[cfg(test)]").map_or(text, |at| &text[..at]);
    WINGS
        .iter()
        .copied()
        .filter(|wing| {
            code.match_indices(&format!("crate::run::{wing}"))
                .any(|(at, found)| {
                    let after = code[at + found.len()..].chars().next();
                    !after.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
                })
        })
        .collect()
}

/// Every `.rs` file below `dir` that is not a test file.
fn library_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                dirs.push(path);
            } else if name.ends_with(".rs") && !name.ends_with("_tests.rs") {
                files.push(path);
            }
        }
    }
    files
}

#[test]
fn each_wing_uses_only_the_wings_before_it() {
    let run = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/run");
    let mut problems = Vec::new();
    for (place, wing) in WINGS.iter().enumerate() {
        let dir = run.join(wing);
        assert!(
            dir.is_dir(),
            "src/run/{wing} is gone: update WINGS and the docs"
        );
        for file in library_files(&dir) {
            let text = std::fs::read_to_string(&file).unwrap();
            for used in wings_used(&text) {
                let at = WINGS.iter().position(|w| *w == used).unwrap();
                if at >= place && used != *wing {
                    problems.push(format!(
                        "{}: run::{wing} uses run::{used}, which comes after it",
                        file.strip_prefix(&run).unwrap().display()
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_checker_sees_a_wing_named_and_not_a_longer_name() {
    let text = "use crate::run::plan::TaskPlan;\nuse crate::run::tasking::X;\n#[cfg(test)]\nuse crate::run::batch::x;";
    assert_eq!(wings_used(text), ["plan"]);
}
