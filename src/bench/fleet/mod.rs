//! `drover bench --fleet`: one matrix spec over --repos repositories served by a real
//! `git daemon` on 127.0.0.1, each task cloning its own (`repo:`). In each round, the
//! reference and drover's runs interleaved: `git clone` of every repository (the
//! reference), drover on the same tasks with the clones as local workspaces (drover's
//! own cost, without repositories), then drover with `repo:` and an empty
//! `--repo-cache` (cold), again with the cache it filled (warm), and warm once more with
//! `--repo-checkout copy` (what a checkout costs where no overlay can be mounted, as
//! without root; reported, no goal). drover's added time
//! per task is a repo run's time less the local run's, divided by the tasks; it is
//! compared with `git clone` of the same repositories in the same round. Figures are
//! printed, never timed tests.

mod daemon;
mod repos;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::exit;
use repos::Shape;

/// Goals: drover's added time per task against `git clone` of the repository.
const COLD_GOAL: f64 = 1.2;
const WARM_GOAL: f64 = 0.2;

/// What `drover bench --fleet` was asked for.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Options {
    pub repos: usize,
    pub files: usize,
    pub commits: usize,
    pub runs: usize,
    pub check: bool,
}

/// The wall times of one round, each for every repository together.
#[derive(Debug, Clone, Copy)]
struct Round {
    clone: Duration,
    /// `git checkout` alone of the same commits, from local clones made without one:
    /// the floor of any checkout, warm or cold.
    checkout: Duration,
    local: Duration,
    cold: Duration,
    warm: Duration,
    /// Warm with `--repo-checkout copy`: the checkout written file by file, as wherever
    /// drover cannot mount an overlay (not root).
    warm_copy: Duration,
}

/// Build, serve, measure, print; the exit code as for `bench`: 3 when a run could not be
/// made or a task did not pass, 1 with --check on a missed goal.
pub(crate) fn run(drover: &Path, scratch: &Path, options: Options) -> i32 {
    let dir = scratch.join("fleet");
    let shape = Shape {
        count: options.repos,
        files: options.files,
        commits: options.commits,
    };
    let served = match repos::build(&dir, shape) {
        Ok(served) => served,
        Err(error) => {
            crate::esay!("drover: cannot build the fleet's repositories: {error}");
            return exit::RUNNER_ERROR;
        }
    };
    let daemon = match daemon::Daemon::start(&served) {
        Ok(daemon) => daemon,
        Err(error) => {
            crate::esay!("drover: cannot serve the fleet: {error}");
            return exit::RUNNER_ERROR;
        }
    };
    let pack_bytes = directory_bytes(&served);
    crate::say!(
        "fleet: {} repositories of {} files and {} commits ({:.1} MB of packs in all), served by git daemon on 127.0.0.1:{}",
        shape.count,
        shape.files,
        shape.commits,
        pack_bytes as f64 / 1e6,
        daemon.port
    );
    let mut rounds = Vec::new();
    for round in 0..=options.runs {
        match measure_round(drover, &dir, &daemon, shape) {
            // The first round warms the page cache and the daemon; it is not counted.
            Ok(measured) if round > 0 => rounds.push(measured),
            Ok(_) => {}
            Err(error) => {
                crate::esay!("drover: the fleet bench failed: {error}");
                return exit::RUNNER_ERROR;
            }
        }
    }
    report(&rounds, shape.count, options.check)
}

/// One round: the clones, then drover on local workspaces (the clones), then with
/// `repo:` and an empty cache, then with the cache it filled.
fn measure_round(
    drover: &Path,
    dir: &Path,
    daemon: &daemon::Daemon,
    shape: Shape,
) -> std::io::Result<Round> {
    let round_dir = dir.join("round");
    if round_dir.exists() {
        std::fs::remove_dir_all(&round_dir)?;
    }
    let clones = round_dir.join("clones");
    std::fs::create_dir_all(&clones)?;
    quiesce();
    let started = Instant::now();
    for index in 0..shape.count {
        let name = Shape::name(index);
        let target = clones.join(&name);
        run_ok(
            Command::new("git")
                .args(["clone", "-q", &daemon.url(&name)])
                .arg(&target),
        )?;
    }
    let clone = started.elapsed();
    let checkout = checkouts(&round_dir, shape)?;
    write_specs(&round_dir, daemon, shape)?;
    let local = timed_run(drover, &round_dir, "local", None)?;
    let cache = round_dir.join("cache");
    let cold = timed_run(drover, &round_dir, "repo", Some((&cache, "auto")))?;
    let warm = timed_run(drover, &round_dir, "repo", Some((&cache, "auto")))?;
    let warm_copy = timed_run(drover, &round_dir, "repo", Some((&cache, "copy")))?;
    Ok(Round {
        clone,
        checkout,
        local,
        cold,
        warm,
        warm_copy,
    })
}

/// The time `git checkout` of every repository's `main` takes on its own, each in a local
/// clone made (untimed) without a checkout.
fn checkouts(round_dir: &Path, shape: Shape) -> std::io::Result<Duration> {
    let bare = round_dir.join("bare");
    let served = round_dir.parent().unwrap_or(round_dir).join("served");
    let mut total = Duration::ZERO;
    for index in 0..shape.count {
        let name = Shape::name(index);
        let target = bare.join(&name);
        run_ok(
            Command::new("git")
                .args(["clone", "-q", "--local", "--no-hardlinks", "--no-checkout"])
                .arg(served.join(format!("{name}.git")))
                .arg(&target),
        )?;
        quiesce();
        let started = Instant::now();
        run_ok(
            Command::new("git")
                .arg("-C")
                .arg(&target)
                .args(["checkout", "-q", "main"]),
        )?;
        total += started.elapsed();
    }
    Ok(total)
}

/// `local/fleet.yaml` (the clones as workspaces) and `repo/fleet.yaml` (each task
/// cloning its repository), one matrix over the same entries (`repos.yaml`).
fn write_specs(round_dir: &Path, daemon: &daemon::Daemon, shape: Shape) -> std::io::Result<()> {
    let entries: String = (0..shape.count)
        .map(|index| format!("- {{ repo: {} }}\n", Shape::name(index)))
        .collect();
    let base = |name: &str| {
        format!(
            "version: 1\nname: fleet-${{{{ matrix.repo }}}}\nmatrix: {{ from: ../repos.yaml }}\nprompt: Say done.\nmodel:\n  provider: script\n  script:\n    - text: done\n{name}"
        )
    };
    std::fs::write(round_dir.join("repos.yaml"), entries)?;
    for (folder, tail) in [
        (
            "local",
            "workspace: ../clones/${{ matrix.repo }}\n".to_string(),
        ),
        (
            "repo",
            format!(
                "repo:\n  url: git://127.0.0.1:{}/${{{{ matrix.repo }}}}.git\n",
                daemon.port
            ),
        ),
    ] {
        std::fs::create_dir_all(round_dir.join(folder))?;
        std::fs::write(round_dir.join(folder).join("fleet.yaml"), base(&tail))?;
    }
    Ok(())
}

/// `drover run <variant>/ --jobs 1 [--repo-cache CACHE --repo-checkout HOW]`: its wall
/// time; an error unless every task passed.
fn timed_run(
    drover: &Path,
    round_dir: &Path,
    variant: &str,
    cache: Option<(&Path, &str)>,
) -> std::io::Result<Duration> {
    let artifacts = round_dir.join(format!(
        "out-{variant}-{}-{}",
        cache.is_some_and(|(c, _)| c.exists()),
        cache.map_or("none", |(_, how)| how)
    ));
    let mut command = Command::new(drover);
    command
        .arg("run")
        .arg(round_dir.join(variant))
        .args(["--jobs", "1", "--quiet", "--artifacts"])
        .arg(&artifacts);
    if let Some((cache, how)) = cache {
        command
            .arg("--repo-cache")
            .arg(cache)
            .args(["--repo-checkout", how]);
    }
    quiesce();
    let started = Instant::now();
    run_ok(&mut command)?;
    Ok(started.elapsed())
}

/// Write every dirty page out before a timed phase, so that no phase pays for the
/// writeback of the one before it (a clone's 30 MB land on disk after it ends).
fn quiesce() {
    rustix::fs::sync();
}

fn run_ok(command: &mut Command) -> std::io::Result<()> {
    let output = command.output()?;
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let tail: Vec<&str> = stderr.lines().rev().take(5).collect();
    Err(std::io::Error::other(format!(
        "{:?} exited {}: {}",
        command.get_program(),
        output.status,
        tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
    )))
}

/// The medians, per task, and the verdicts.
fn report(rounds: &[Round], tasks: usize, check: bool) -> i32 {
    let per_task = |pick: fn(&Round) -> Duration| -> Vec<f64> {
        rounds
            .iter()
            .map(|round| pick(round).as_secs_f64() * 1000.0 / tasks as f64)
            .collect()
    };
    let clone = median(per_task(|r| r.clone));
    let checkout = median(per_task(|r| r.checkout));
    let local = median(per_task(|r| r.local));
    let added = |pick: fn(&Round) -> Duration| {
        median(
            rounds
                .iter()
                .map(|r| (pick(r).saturating_sub(r.local)).as_secs_f64() * 1000.0 / tasks as f64)
                .collect(),
        )
    };
    let cold_added = added(|r| r.cold);
    let warm_added = added(|r| r.warm);
    let copy_added = added(|r| r.warm_copy);
    crate::say!(
        "rounds: {} (median; one warm-up round before them), per task, --jobs 1",
        rounds.len()
    );
    crate::say!("  git clone                      {clone:>8.1} ms   (the reference)");
    crate::say!(
        "  git checkout alone             {checkout:>8.1} ms   ({:.2}× git clone: what any checkout pays, warm or cold)",
        checkout / clone.max(f64::MIN_POSITIVE)
    );
    crate::say!(
        "  drover, local workspace        {local:>8.1} ms   (drover's own cost, no repository)"
    );
    let mut missed = false;
    for (what, added, goal) in [
        ("drover added, cold --repo-cache", cold_added, COLD_GOAL),
        ("drover added, warm --repo-cache", warm_added, WARM_GOAL),
    ] {
        let ratio = if clone > 0.0 {
            added / clone
        } else {
            f64::INFINITY
        };
        let met = ratio <= goal;
        missed |= !met;
        crate::say!(
            "  {what}  {added:>8.1} ms   {ratio:.2}× git clone (goal ≤ {goal}×: {})",
            if met { "met" } else { "MISSED" }
        );
    }
    crate::say!(
        "  drover added, warm, copy        {copy_added:>8.1} ms   {:.2}× git clone (--repo-checkout copy, as without root: no goal)",
        copy_added / clone.max(f64::MIN_POSITIVE)
    );
    if missed && check {
        exit::FAILED
    } else {
        exit::PASSED
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

/// The bytes of every file under `dir` (the repositories' packs and objects).
fn directory_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack: Vec<PathBuf> = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&next) else {
            continue;
        };
        for entry in entries.flatten() {
            match entry.file_type() {
                Ok(kind) if kind.is_dir() => stack.push(entry.path()),
                Ok(kind) if kind.is_file() => {
                    total += entry.metadata().map_or(0, |meta| meta.len());
                }
                _ => {}
            }
        }
    }
    total
}
