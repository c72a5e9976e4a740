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
use workbench::{Made, Workbench};

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
pub(crate) fn run(options: &PublishOptions, stop: &(dyn Fn() -> bool + Sync)) -> i32 {
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
    let credential = options.credential(&remote);
    let secrets = secrets_of(&credential);
    let shown_remote = without_userinfo(&remote);
    let Some(deadline) = Instant::now().checked_add(options.timeout) else {
        crate::esay!("drover: publish: --timeout is too long; give one under a century");
        return exit::BAD_INPUT;
    };
    let git = RemoteGit {
        credential: &credential,
        deadline,
        timeout: options.timeout,
        secrets,
        stop,
    };
    if tasks.is_empty() {
        crate::say!("drover: publish: the run has no task to publish");
        return exit::PASSED;
    }
    let groups = options.groups(&tasks);
    let mut planned = Vec::new();
    for group in &groups {
        let names: Vec<&str> = group.iter().map(|task| task.report.name.as_str()).collect();
        let branch = options.branch_for(&names);
        // Every branch is checked before anything is pushed; `HEAD` is a valid ref name
        // that every clone would then find ambiguous.
        let problem = crate::spec::ref_problem(&branch)
            .or_else(|| (branch == "HEAD").then(|| "HEAD is not a branch name".to_string()));
        if let Some(problem) = problem {
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
        let interrupted = matches!(outcome, Err(GitFailure::Interrupted));
        let said = say_outcome(options, (&label, &branch, &shown_remote), outcome);
        if interrupted {
            crate::esay!(
                "drover: publish: interrupted; the push of {label} may or may not have landed, and no later task was published"
            );
            return exit::RUNNER_ERROR;
        }
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
    if let Some(refusal) = moved_base(options, git, &bench, remote, base)? {
        return Ok(Outcome::Refused(vec![refusal]));
    }
    let head = bench.remote_head(git, remote, branch)?;
    let mut wanted = vec![base];
    wanted.extend(head.as_deref());
    bench.fetch(git, remote, &wanted)?;
    let patches: Vec<&[u8]> = group.iter().map(|task| task.patch.as_slice()).collect();
    let message = options.message_for(group);
    let commit = match bench.commit(git, base, &patches, &message, &options.identity())? {
        Made::Commit(commit) => commit,
        Made::NotApplied(said) => {
            return Ok(Outcome::Refused(vec![Refusal {
                gate: Gate::Applies,
                why: format!(
                    "its diff.patch does not apply to the commit it started from: {}",
                    said.trim()
                ),
            }]));
        }
    };
    let changes = bench.changes(git, base, &commit)?;
    let refusals = gates::judge_changes(&changes, options.limits, options.allow_workflow_changes);
    if !refusals.is_empty() {
        return Ok(Outcome::Refused(refusals));
    }
    push(
        options,
        git,
        &bench,
        (remote, branch),
        head.as_deref(),
        commit,
    )
}

/// The `base` gate: the base branch (`--base`, else the remote's default branch) must
/// still be at `start`, the commit the tasks started from — so a start that is no
/// branch's head (a pull request's, a fork's, a commit since replaced) publishes
/// nothing the base branch does not hold already.
fn moved_base(
    options: &PublishOptions,
    git: &RemoteGit<'_>,
    bench: &Workbench,
    remote: &str,
    start: &str,
) -> Result<Option<Refusal>, GitFailure> {
    let base_branch = match &options.base {
        Some(branch) => branch.clone(),
        None => match bench.default_branch(git, remote)? {
            Some(branch) => branch,
            None => {
                return Ok(Some(Refusal {
                    gate: Gate::Base,
                    why: "the remote names no default branch to check the start against; pass --base BRANCH".to_string(),
                }));
            }
        },
    };
    let at = bench.remote_head(git, remote, &base_branch)?;
    if at.as_deref() == Some(start) {
        return Ok(None);
    }
    Ok(Some(Refusal {
        gate: Gate::Base,
        why: format!(
            "{base_branch} is at {}, not at {start} where the task started; run the task again on {base_branch} as it is now, or name the branch it ran on with --base",
            at.as_deref().unwrap_or("nothing (no such branch)")
        ),
    }))
}

/// Push `commit` to `branch`, whose head is `head`: nothing when it holds the same
/// change, a fast-forward, or with `--force` a replacement of exactly `head`.
fn push(
    options: &PublishOptions,
    git: &RemoteGit<'_>,
    bench: &Workbench,
    (remote, branch): (&str, &str),
    head: Option<&str>,
    commit: String,
) -> Result<Outcome, GitFailure> {
    if let Some(head) = head
        && bench.same_change(git, head, &commit)
    {
        return Ok(Outcome::AlreadyThere {
            head: head.to_string(),
        });
    }
    let lease = match head {
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

/// What no message may quote: the token, and the token as HTTP Basic auth carries it
/// (a server echoing the header back).
fn secrets_of(credential: &Credential) -> Vec<String> {
    match credential {
        Credential::Token { username, token } => vec![
            token.clone(),
            base64::Engine::encode(
                &base64::engine::general_purpose::STANDARD,
                format!("{username}:{token}"),
            ),
        ],
        Credential::GitConfig | Credential::Helper(_) => Vec::new(),
    }
}

/// `remote` without a user name or password in it, for messages.
fn without_userinfo(remote: &str) -> String {
    match url::Url::parse(remote) {
        Ok(mut url) if !url.username().is_empty() || url.password().is_some() => {
            let _ = url.set_username("");
            let _ = url.set_password(None);
            url.to_string()
        }
        _ => remote.to_string(),
    }
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
