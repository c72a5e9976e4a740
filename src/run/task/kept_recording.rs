//! A resumed task keeps the recording it continues beside its new transcript
//! (`transcript.before-resume-N.jsonl`), with the copies earlier resumes kept: the lines
//! a resume drops stay on record.

use std::path::Path;

use crate::run::plan::ResumePlan;
use crate::run::recording::same_path;

/// The largest earlier recording a resume carries over.
const MAX_RECORDING: u64 = 1 << 30;

/// The name of the `n`th recording kept beside a resumed transcript.
fn kept_recording_name(n: usize) -> String {
    format!("transcript.before-resume-{n}.jsonl")
}

/// Keep the recording as it was read beside the transcript the resume writes in
/// `task_dir` (after the earlier resumes' copies, carried over when the task's folder
/// is staged elsewhere): the lines the resume drops stay on record.
pub(super) fn keep_recording(resume: &ResumePlan, task_dir: &Path) -> std::io::Result<()> {
    let original = resume.transcript.parent().unwrap_or(Path::new("."));
    let mut n = 1;
    loop {
        let name = kept_recording_name(n);
        let here = task_dir.join(&name);
        if std::fs::symlink_metadata(&here).is_err() {
            let there = original.join(&name);
            if same_path(original, task_dir) {
                break;
            }
            // The folder may be a downloaded artifact: only a plain file of it is kept (a
            // link planted there would copy its target, a secret say, into the artifacts).
            let Ok(kept) = crate::workspace::plain_file::read_plain_file(&there, MAX_RECORDING)
            else {
                break;
            };
            crate::workspace::atomic::write_atomic(&here, &kept)?;
        }
        n += 1;
    }
    crate::workspace::atomic::write_atomic(
        &task_dir.join(kept_recording_name(n)),
        &resume.recording,
    )
}
