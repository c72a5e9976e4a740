//! The run-wide reports in the artifacts directory: junit.xml, summary.json and
//! summary.md, and each task folder's result.json.

use std::path::Path;

use crate::record::RunReport;
use crate::record::junit::junit_xml;
use crate::record::summary::{summary_json, summary_md};
use crate::record::task_result::TaskResult;

/// Files every run writes at the top of the artifacts directory; a task's directory
/// (named after the task) must not take their place.
pub(crate) const RUN_FILES: [&str; 3] = ["junit.xml", "summary.json", "summary.md"];

/// Each task folder's outcome for orchestrators.
pub(crate) const RESULT_FILE: &str = "result.json";

/// Write junit.xml, summary.json and summary.md into the artifacts directory.
///
/// The files are written beneath a handle on the directory and follow no symlink: an
/// agent that planted `summary.md -> ../somewhere` (the directory is often inside its
/// workspace) gets its link replaced, not followed. A directory that became a symlink
/// itself is refused.
pub(crate) fn write_reports(report: &RunReport, artifacts: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(artifacts)?;
    if std::fs::symlink_metadata(artifacts)?
        .file_type()
        .is_symlink()
    {
        return Err(std::io::Error::other(format!(
            "{} is a symlink now (was it planted by an agent?); point --artifacts at a real directory",
            artifacts.display()
        )));
    }
    let root = artifacts.canonicalize()?;
    let roots = crate::workspace::Roots::new(std::slice::from_ref(&root));
    let files = [
        ("junit.xml", junit_xml(report)),
        ("summary.json", summary_json(report, crate::VERSION)),
        ("summary.md", summary_md(report)),
    ];
    for (name, content) in files {
        let path = root.join(name);
        match roots.symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => roots.remove_file(&path)?,
            // A directory planted at a report's name is emptied (beneath the handle,
            // following no link) and removed: the report takes its place.
            Ok(meta) if meta.file_type().is_dir() => {
                roots.clear_dir(&path)?;
                std::fs::remove_dir(&path)?;
            }
            _ => {}
        }
        roots.write_atomic(&path, content.as_bytes())?;
    }
    write_results(report, &root, &roots)
}

/// Each task's `result.json`, in its folder, written with the run's reports (after the
/// sweep, so the status is final). A task whose folder is not there (it could not be
/// made) has none; a link or directory planted at the name is replaced, not followed.
fn write_results(
    report: &RunReport,
    root: &Path,
    roots: &crate::workspace::Roots,
) -> std::io::Result<()> {
    for task in &report.tasks {
        let folder = root.join(&task.name);
        match roots.symlink_metadata(&folder) {
            Ok(meta) if meta.file_type().is_dir() => {}
            _ => continue,
        }
        let path = folder.join(RESULT_FILE);
        match roots.symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => roots.remove_file(&path)?,
            Ok(meta) if meta.file_type().is_dir() => {
                roots.clear_dir(&path)?;
                std::fs::remove_dir(&path)?;
            }
            _ => {}
        }
        roots.write_atomic(&path, TaskResult::of(task).json().as_bytes())?;
    }
    Ok(())
}
