//! `drover publish ARTIFACTS_DIR --branch NAME`: turn the tasks a run passed into
//! commits on a branch — outside the agent, after the run, gated. The agent never held
//! the token; this command, which the user runs as a separate step, reads it from the
//! one variable it is told to (`--token-env`), and pushes only what every gate allows
//! (see `gates`): the commit's tree is the task's recorded starting commit plus its
//! `diff.patch`, made in a private repository (`workbench`), pushed as a fast-forward
//! (or, with `--force`, replacing the branch's head it saw, and no other).
//!
//! Where to push comes from the command line or the CI's own environment
//! (`GITHUB_SERVER_URL`/`GITHUB_REPOSITORY`), never from the artifacts: a recording can
//! be forged, and a URL it names would receive the token.

mod artifacts;
mod gates;
mod options;
mod workbench;

use std::time::{Duration, Instant};

use crate::exit;
use crate::workspace::repo::{Credential, GitFailure, RemoteGit};

use artifacts::PublishedTask;
pub(crate) use gates::Limits;
use gates::{Gate, Refusal};
pub(crate) use options::{PublishOptions, parse_author};
use workbench::Workbench;

/// How one task (or the tasks of one commit) fared.
enum Outcome {
    /// Pushed, or with `--dry-run` made and gated only.
    Pushed {
        commit: String,
    },
    Unchanged,
    /// The branch holds this change already (a publish run twice).
    AlreadyThere {
        head: String,
    },
    Refused(Vec<Refusal>),
}

/// Publish what `options` names; the exit code: 0 when every task was pushed (or had
/// nothing to push), 1 when a gate refused one, 2 on bad input, 3 when git or the
/// remote failed.
pub(crate) fn run(options: &PublishOptions) -> i32 {
    let remote = match options.remote() {
        Ok(remote) => remote,
        Err(message) => {
            crate::esay!("drover: publish: {message}");
            return exit::BAD_INPUT;
        }
    };
    if let Some(problem) = branch_problem(options) {
        crate::esay!("drover: publish: {problem}");
        return exit::BAD_INPUT;
    }
    let tasks = match artifacts::read(&options.artifacts, &options.tasks) {
        Ok(tasks) => tasks,
        Err(error) => {
            crate::esay!("drover: publish: {error}");
            return exit::BAD_INPUT;
        }
    };
    let credential = options.credential();
    let secrets = match &credential {
        Credential::Token { token, .. } => vec![token.clone()],
        Credential::GitConfig | Credential::Helper(_) => Vec::new(),
    };
    let never = || false;
    let git = RemoteGit {
        credential: &credential,
        deadline: Instant::now() + options.timeout,
        timeout: options.timeout,
        secrets,
        stop: &never,
    };
    let groups = options.groups(&tasks);
    let mut planned = Vec::new();
    for group in &groups {
        let names: Vec<&str> = group.iter().map(|task| task.report.name.as_str()).collect();
        let branch = options.branch_for(&names);
        // Every branch is checked before anything is pushed.
        if let Some(problem) = crate::spec::ref_problem(&branch) {
            crate::esay!(
                "drover: publish: --branch gives {branch:?} for {}: {problem}",
                names.join(", ")
            );
            return exit::BAD_INPUT;
        }
        planned.push((group, branch, names.join(", ")));
    }
    let mut code = exit::PASSED;
    for (group, branch, label) in planned {
        let outcome = publish_group(options, &git, &remote, group, &branch);
        let said = say_outcome(options, (&label, &branch, &remote), outcome);
        code = if said == exit::RUNNER_ERROR {
            said
        } else {
            code.max(said)
        };
    }
    code
}

/// Print how the tasks `label` fared on `branch` of `remote`; the exit code it calls for.
fn say_outcome(
    options: &PublishOptions,
    (label, branch, remote): (&str, &str, &str),
    outcome: Result<Outcome, GitFailure>,
) -> i32 {
    let short = |id: &str| id.chars().take(12).collect::<String>();
    match outcome {
        Ok(Outcome::Pushed { commit }) => {
            let done = if options.dry_run {
                "would push (--dry-run)"
            } else {
                "pushed"
            };
            crate::say!(
                "drover: publish {label}: {done} {} to {branch} of {remote}",
                short(&commit)
            );
        }
        Ok(Outcome::AlreadyThere { head }) => crate::say!(
            "drover: publish {label}: {branch} of {remote} holds this change already (at {}), nothing pushed",
            short(&head)
        ),
        Ok(Outcome::Unchanged) => {
            crate::say!("drover: publish {label}: nothing changed, nothing pushed")
        }
        Ok(Outcome::Refused(refusals)) => {
            for refusal in refusals {
                crate::esay!(
                    "drover: publish {label}: refused by the {} gate: {}",
                    refusal.gate,
                    refusal.why
                );
            }
            return exit::FAILED;
        }
        Err(failure) => {
            crate::esay!(
                "drover: publish {label}: git failed: {}",
                describe(&failure, options.timeout)
            );
            return exit::RUNNER_ERROR;
        }
    }
    exit::PASSED
}

/// Gate, commit and push the tasks of one branch.
fn publish_group(
    options: &PublishOptions,
    git: &RemoteGit<'_>,
    remote: &str,
    group: &[&PublishedTask],
    branch: &str,
) -> Result<Outcome, GitFailure> {
    let mut refusals: Vec<Refusal> = group.iter().flat_map(|task| task.refusals()).collect();
    let bases: Vec<&str> = group.iter().filter_map(|task| task.base()).collect();
    if refusals.is_empty() && bases.windows(2).any(|pair| pair[0] != pair[1]) {
        refusals.push(Refusal {
            gate: Gate::CleanStart,
            why: "its tasks started from different commits, so no one commit holds them all; put {task} in --branch".to_string(),
        });
    }
    let (Some(base), true) = (bases.first().copied(), refusals.is_empty()) else {
        return Ok(Outcome::Refused(refusals));
    };
    if group.iter().all(|task| task.patch.is_empty()) {
        return Ok(Outcome::Unchanged);
    }
    let bench = Workbench::new(git)?;
    let head = bench.remote_head(git, remote, branch)?;
    if let Some(base_branch) = &options.base {
        let at = bench.remote_head(git, remote, base_branch)?;
        if at.as_deref() != Some(base) {
            refusals.push(Refusal {
                gate: Gate::Base,
                why: format!(
                    "--base {base_branch} is at {}, not at {base} where the task started; run the task again on the branch as it is now",
                    at.as_deref().unwrap_or("nothing (no such branch)")
                ),
            });
            return Ok(Outcome::Refused(refusals));
        }
    }
    let mut wanted = vec![base];
    wanted.extend(head.as_deref());
    bench.fetch(git, remote, &wanted)?;
    let patches: Vec<&[u8]> = group.iter().map(|task| task.patch.as_slice()).collect();
    let message = options.message_for(group);
    let commit = bench.commit(git, base, &patches, &message, &options.identity())?;
    let changes = bench.changes(git, base, &commit)?;
    refusals.extend(gates::judge_changes(
        &changes,
        options.limits,
        options.allow_workflow_changes,
    ));
    if !refusals.is_empty() {
        return Ok(Outcome::Refused(refusals));
    }
    if let Some(head) = head.as_deref()
        && bench.same_change(git, head, &commit)
    {
        return Ok(Outcome::AlreadyThere {
            head: head.to_string(),
        });
    }
    let lease = match head.as_deref() {
        Some(head) if !bench.is_ancestor(git, head, &commit) => {
            if !options.force {
                return Ok(Outcome::Refused(vec![Refusal {
                    gate: Gate::FastForward,
                    why: format!(
                        "branch {branch} is at {head}, which the new commit does not contain; --force replaces it (only if it is still at {head})"
                    ),
                }]));
            }
            Some(head)
        }
        _ => None,
    };
    if !options.dry_run {
        bench.push(git, remote, &commit, branch, lease)?;
    }
    Ok(Outcome::Pushed { commit })
}

/// What is wrong with `--branch` (or `--base`) as a branch name, with `{task}` standing
/// for a task's name.
fn branch_problem(options: &PublishOptions) -> Option<String> {
    let named = [
        ("--branch", Some(options.branch.replace("{task}", "task"))),
        ("--base", options.base.clone()),
    ];
    named.into_iter().find_map(|(flag, name)| {
        let problem = crate::spec::ref_problem(name.as_deref()?)?;
        Some(format!("{flag}: {problem}"))
    })
}

/// git's failure, said for a person.
fn describe(failure: &GitFailure, timeout: Duration) -> String {
    match failure {
        GitFailure::Spawn(error) => format!("git could not be run ({error}); install git"),
        GitFailure::TimedOut(_) => format!(
            "git took longer than --timeout ({}s) and was stopped",
            timeout.as_secs()
        ),
        GitFailure::Interrupted => "interrupted".to_string(),
        GitFailure::Failed(said) => said.trim().to_string(),
    }
}
