//! The tasks of `drover bench --batch`: N scripted specs per isolation over one 1,000-file
//! repository, each a Read and an Edit of its own file so that every task makes a diff.
//! Written once under the scratch directory and reused by later benches.

use anyhow::Context;
use std::path::{Path, PathBuf};

/// The isolations the batch is run with, in order.
pub(super) const ISOLATIONS: [&str; 2] = ["copy", "worktree"];

/// The directory of `tasks` specs with `isolation` over `repository` (of `files` files),
/// written unless a complete one is there already.
pub(super) fn write(
    scratch: &Path,
    repository: &Path,
    files: usize,
    isolation: &str,
    tasks: usize,
) -> anyhow::Result<PathBuf> {
    let dir = scratch.join(format!("batch-specs-{tasks}-of-{files}/{isolation}"));
    let done = dir.join(".complete");
    if done.exists() {
        return Ok(dir);
    }
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for task in 0..tasks {
        let path = dir.join(format!("t{task:05}.yaml"));
        std::fs::write(&path, spec(repository, files, isolation, task))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    std::fs::write(&done, "").with_context(|| format!("cannot write {}", done.display()))?;
    Ok(dir)
}

/// Task `task`'s spec: read the head of one repository file, then change its first
/// function (the file the workspace bench's repository builder wrote for that number).
fn spec(repository: &Path, files: usize, isolation: &str, task: usize) -> String {
    let n = task % files.max(1);
    let file = format!("src/d{:03}/e{:02}/file{n}.rs", n / 1000, (n / 100) % 10);
    let old = format!("fn f{n}_0() -> u64 {{ 0 * {n} }}");
    let new = format!("fn f{n}_0() -> u64 {{ 1 + 0 * {n} }}");
    format!(
        "version: 1
name: {isolation}-{task:05}
prompt: change one function
workspace: {workspace}
isolation: {isolation}
sandbox: off
model:
  provider: script
  script:
    - tool_calls: [{{ name: Read, input: {{ file_path: {file}, limit: 5 }} }}]
    - tool_calls: [{{ name: Edit, input: {{ file_path: {file}, old_string: \"{old}\", new_string: \"{new}\" }} }}]
    - text: done
permissions:
  allow: [Read, Edit]
",
        workspace = repository.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_spec_loads_and_edits_its_own_file() {
        let text = spec(Path::new("/repo"), 1000, "worktree", 1234);
        let loaded = crate::spec::parse(Path::new("/specs/t.yaml"), text.clone()).unwrap();
        assert_eq!(loaded.name(), "worktree-01234");
        assert!(
            text.contains("file_path: src/d000/e02/file234.rs"),
            "{text}"
        );
        assert!(
            text.contains("old_string: \"fn f234_0() -> u64 { 0 * 234 }\""),
            "{text}"
        );
    }
}
