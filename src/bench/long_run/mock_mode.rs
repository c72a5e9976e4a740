//! `drover bench --mock-model` (hidden): the long run's mock model in a process of its
//! own, for the end-to-end tests. It writes the scenario's files into `--workspace` when
//! given, prints `listening 127.0.0.1:PORT`, serves until its stdin closes (the test is
//! done, or gone), then prints its figures as one JSON line.

use std::path::Path;

use super::server::{MockModel, Settings};
use crate::exit;

/// Serve `settings` until stdin closes; the exit code.
pub(crate) fn serve(settings: Settings, workspace: Option<&Path>) -> i32 {
    if let Some(dir) = workspace
        && let Err(error) = settings.scenario.write_files(dir)
    {
        crate::esay!(
            "drover: cannot write the scenario's files in {}: {error}",
            dir.display()
        );
        return exit::RUNNER_ERROR;
    }
    let mock = match MockModel::start(settings) {
        Ok(mock) => mock,
        Err(error) => {
            crate::esay!("drover: cannot listen on 127.0.0.1: {error}");
            return exit::RUNNER_ERROR;
        }
    };
    crate::say!("listening {}", mock.address());
    let _ = std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink());
    match serde_json::to_string(&mock.figures()) {
        Ok(line) => {
            crate::output::say_json(&line);
            exit::PASSED
        }
        Err(error) => {
            crate::esay!("drover: cannot write the mock's figures: {error}");
            exit::RUNNER_ERROR
        }
    }
}
