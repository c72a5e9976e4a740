//! The artifacts directory after a run: what its sweep did, told (or the run failed),
//! and `report outputs`, the Action's outputs read from the summary.json drover wrote.

use std::io::{Read as _, Write};
use std::path::Path;

use crate::exit;
use crate::record::github::GithubEnv;
use crate::run::artifacts::{ArtifactsError, Sweep};
use crate::run::batch::Console;

/// How many removed entries are named on stderr; the rest are counted.
const NAMED_ENTRIES: usize = 20;

/// Say what the sweep of the artifacts directory removed (also as a GitHub warning).
/// When the directory cannot be vouched for, or an entry drover did not write cannot
/// be removed, the run fails (exit 3) before any report is written: a report written
/// beside a planted file would vouch for it.
pub(super) fn settle_artifacts(
    swept: &Result<Sweep, ArtifactsError>,
    artifacts: &Path,
    console: &Console,
) -> Result<(), i32> {
    let sweep = match swept {
        Ok(sweep) => sweep,
        Err(error @ ArtifactsError::HoldsWorkspace { .. }) => {
            crate::esay!("drover: {error}");
            return Err(exit::BAD_INPUT);
        }
        Err(error) => {
            crate::esay!("drover: {error}");
            return Err(exit::RUNNER_ERROR);
        }
    };
    if !sweep.removed.is_empty() {
        // Quoted as Rust quotes them: a planted name cannot start a line of its own
        // (a workflow command) or move the cursor.
        let mut named: Vec<String> = sweep
            .removed
            .iter()
            .take(NAMED_ENTRIES)
            .map(|path| format!("{path:?}"))
            .collect();
        if sweep.removed.len() > NAMED_ENTRIES {
            named.push(format!("and {} more", sweep.removed.len() - NAMED_ENTRIES));
        }
        let message = format!(
            "removed {} from the artifacts directory {} that drover did not write (planted or changed during the run, by a command an agent ran?): {}",
            crate::output::counted(sweep.removed.len() as u64, "entry", "entries"),
            artifacts.display(),
            named.join(", ")
        );
        crate::esay!("drover: warning: {message}");
        if GithubEnv::from_env().actions {
            // drover's own workflow command, written as it is (`say!` would keep any line
            // from starting with `::`); the message is one safe line, then escaped.
            let _ = writeln!(
                console.annotations(),
                "::warning title=drover::{}",
                crate::record::github::escape_data(&crate::output::one_line(&message))
            );
        }
    }
    if sweep.stuck.is_empty() {
        return Ok(());
    }
    for (path, error) in &sweep.stuck {
        crate::esay!(
            "drover: cannot remove {path:?} from the artifacts directory {}, and drover did not write it: {error}",
            artifacts.display()
        );
    }
    crate::esay!(
        "drover: the reports are not written: remove what is named above from {} and run again",
        artifacts.display()
    );
    Err(exit::RUNNER_ERROR)
}

/// `drover report outputs DIR`: the Action's step outputs from DIR/summary.json, read
/// beneath a handle on DIR and through no symlink (only a file drover wrote there counts).
pub(super) fn outputs_command(dir: &Path) -> i32 {
    let path = dir.join("summary.json");
    let read = || -> std::io::Result<Vec<u8>> {
        let root = dir.canonicalize()?;
        let roots = crate::workspace::Roots::new(std::slice::from_ref(&root));
        let mut bytes = Vec::new();
        roots
            .open_file(&root.join("summary.json"))?
            .read_to_end(&mut bytes)?;
        Ok(bytes)
    };
    let summary = match read() {
        Ok(summary) => summary,
        Err(error) => {
            crate::esay!(
                "drover: report outputs: cannot read {}: {error}; give the --artifacts directory of a run that wrote its reports",
                path.display()
            );
            return exit::BAD_INPUT;
        }
    };
    match crate::record::step_outputs::step_outputs(&summary, dir) {
        Ok(lines) => {
            crate::output::say_json(lines.trim_end());
            exit::PASSED
        }
        Err(error) => {
            crate::esay!("drover: report outputs: {error}");
            exit::BAD_INPUT
        }
    }
}
