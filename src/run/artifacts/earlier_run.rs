//! An artifacts directory used again: the task folders an earlier run wrote there and
//! this run does not write again are removed, so the directory holds one run — the
//! tasks its summary.json lists — and no stale transcript sits beside the new ones.
//! Only what drover wrote goes: folders the earlier summary.json names that hold a
//! transcript, and the earlier run's junit.xml, summary.json and summary.md (a run
//! that ends before it writes its own must not leave the earlier run's to be read as
//! its own); any other file stays.

use std::path::Path;

/// Remove the earlier run's task folders in `artifacts`: those its summary.json lists
/// that are not among `names` (returned, to be named to the user), and the earlier
/// folders of `names` themselves, which this run writes anew (a file the earlier run
/// left there, such as an `output.json` this run has no answer for, must not pass for
/// this run's).
pub(crate) fn clear_earlier_run(artifacts: &Path, names: &[String]) -> Vec<String> {
    let mut removed = Vec::new();
    for name in crate::record::merge::earlier_task_names(artifacts) {
        if !names.contains(&name) && remove_if_drovers(&artifacts.join(&name)) {
            removed.push(name);
        }
    }
    for name in names {
        remove_if_drovers(&artifacts.join(name));
    }
    for file in super::reports::RUN_FILES {
        let path = artifacts.join(file);
        // A file or a symlink goes (the link itself); a directory by that name is not
        // drover's report, and the report writer replaces it.
        if std::fs::symlink_metadata(&path).is_ok_and(|meta| !meta.is_dir()) {
            let _ = std::fs::remove_file(&path);
        }
    }
    removed
}

/// Remove `folder` if it is a task folder drover wrote: a real directory (a symlink is
/// not followed) holding a transcript.
fn remove_if_drovers(folder: &Path) -> bool {
    let drovers = std::fs::symlink_metadata(folder).is_ok_and(|meta| meta.is_dir())
        && std::fs::symlink_metadata(folder.join("transcript.jsonl"))
            .is_ok_and(|meta| meta.is_file());
    drovers && std::fs::remove_dir_all(folder).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_earlier_runs_own_folders_go() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path();
        for name in ["old", "kept", "again", "nothing-of-drovers"] {
            std::fs::create_dir_all(out.join(name)).unwrap();
        }
        for name in ["old", "kept", "again"] {
            std::fs::write(out.join(name).join("transcript.jsonl"), "{}\n").unwrap();
        }
        std::fs::write(out.join("notes.txt"), "mine").unwrap();
        let task = |name: &str| {
            serde_json::json!({
                "name": name, "spec_path": "s.yaml", "status": "passed", "reason": "end_turn",
                "message": "", "provider": "script", "model": "script", "turns": 1,
                "usage": {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
                "cost_usd": 0.0, "duration_ms": 1, "checks": [], "denials": [],
                "files_changed": [], "final_text": "", "artifacts_dir": "out"
            })
        };
        let summary = serde_json::json!({
            "tasks": [task("old"), task("again"), task("nothing-of-drovers"), task("gone")]
        });
        std::fs::write(out.join("summary.json"), summary.to_string()).unwrap();
        let removed = clear_earlier_run(out, &["again".to_string()]);
        assert_eq!(removed, ["old"]);
        assert!(!out.join("old").exists());
        assert!(
            !out.join("again").exists(),
            "this run's own folder is written anew, not over the old"
        );
        assert!(out.join("kept").exists(), "not the earlier run's");
        assert!(
            out.join("nothing-of-drovers").exists(),
            "no transcript: not drover's"
        );
        assert!(out.join("notes.txt").exists());
        assert!(
            !out.join("summary.json").exists(),
            "the earlier run's reports go: a run that writes none leaves none"
        );
    }
}
