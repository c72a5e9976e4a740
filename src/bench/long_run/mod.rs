//! `drover bench --long-run`: a task of --turns model turns, each reading a 4 KB file
//! (every 10th writing a note), against a mock Anthropic API on 127.0.0.1 that enforces
//! a window (`server`). Run without context management against the window (it must end
//! `context_exhausted`, cleanly), without management and without a window (what the
//! whole run costs when every request resends every result), and with each of drover's
//! own strategies against the window (they must finish, every request inside it); then
//! the managed runs replayed (the same diff, no drift). Figures printed, never timed
//! tests. The mock is also a hidden mode of its own (`mock_mode`) for the end-to-end
//! tests.

mod answer;
mod figures;
mod mock_mode;
mod report;
mod runs;
mod scenario;
mod server;
mod workspace;

use std::path::Path;

pub(crate) use mock_mode::serve as serve_mock;
pub(crate) use scenario::Scenario;
pub(crate) use server::Settings as MockSettings;

use crate::exit;
use report::Verdict;

/// What `drover bench --long-run` was asked for.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Options {
    pub scenario: Scenario,
    /// The window the mock enforces, in tokens.
    pub window: u64,
    pub check: bool,
}

/// Build the workspace, run every case and replay the managed ones, print; the exit
/// code as for `bench`: 3 when a run could not be made, 1 with --check on a missed goal.
pub(crate) fn run(drover: &Path, scratch: &Path, options: Options) -> i32 {
    let dir = scratch.join("long-run");
    let repository = match workspace::build(&dir, &options.scenario) {
        Ok(repository) => repository,
        Err(error) => {
            crate::esay!("drover: cannot build the long run's workspace: {error}");
            return exit::RUNNER_ERROR;
        }
    };
    report::conditions(&options, &repository);
    let mut outcomes = Vec::new();
    for case in runs::CASES {
        match runs::run(
            drover,
            &dir,
            &repository,
            options.scenario,
            options.window,
            case,
        ) {
            Ok(outcome) => {
                report::row(&outcome);
                outcomes.push(outcome);
            }
            Err(error) => {
                crate::esay!("drover: bench --long-run: {}: {error:#}", case.name);
                return exit::RUNNER_ERROR;
            }
        }
    }
    let mut replays = Vec::new();
    for outcome in outcomes.iter().filter(|o| o.case.context != "off") {
        match runs::replay(drover, &dir, &repository, outcome) {
            Ok(replayed) => replays.push((outcome.case, replayed)),
            Err(error) => {
                crate::esay!(
                    "drover: bench --long-run: replaying {}: {error:#}",
                    outcome.case.name
                );
                return exit::RUNNER_ERROR;
            }
        }
    }
    let verdict = Verdict::of(&options, &outcomes, &replays);
    report::goals(&verdict);
    report::notes(&dir);
    if verdict.missed() && options.check {
        exit::FAILED
    } else {
        exit::PASSED
    }
}
