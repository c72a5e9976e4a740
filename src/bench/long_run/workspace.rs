//! The long run's workspace: the scenario's files in a committed git repository (so a
//! run's notes make a diff, and a replay starts where the run did), built once under the
//! scratch directory and rebuilt when the file size asked for changes.

use std::path::{Path, PathBuf};

use super::scenario::Scenario;
use crate::bench::workspace::git;

/// The repository under `dir`, built unless a complete one of the same scenario is there.
pub(super) fn build(dir: &Path, scenario: &Scenario) -> std::io::Result<PathBuf> {
    let repository = dir.join("workspace");
    let done = repository.join(".git/drover-bench-complete");
    let stamp = format!("{} bytes a file\n", scenario.result_bytes);
    if std::fs::read_to_string(&done).is_ok_and(|text| text == stamp) {
        return Ok(repository);
    }
    let _ = std::fs::remove_dir_all(&repository);
    scenario.write_files(&repository)?;
    std::fs::write(
        repository.join("README.md"),
        "# long run\n\nFiles for drover's long-run bench: the model reads them and writes notes/.\n",
    )?;
    git(&repository, &["init", "-q"])?;
    git(&repository, &["add", "."])?;
    git(&repository, &["commit", "-qm", "long run"])?;
    std::fs::write(done, stamp)?;
    Ok(repository)
}
