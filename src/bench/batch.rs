//! `drover bench --batch`: a batch of N scripted tasks (a Read and an Edit each) over a
//! 1,000-file git repository, run as one `drover run --jobs J` per isolation (`copy`,
//! `worktree`) and number of jobs. What a nightly batch needs to hold: drover's own
//! memory flat in the number of tasks, throughput growing with `--jobs` until the cores
//! or the disk are the limit, nothing left behind, and every task in the JUnit report.

use anyhow::Context;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::batch_specs::{self, ISOLATIONS};
use super::child::{self, Measured};
use super::workspace;
use crate::exit;

/// drover's peak RSS goal at any number of tasks (README, "Benchmarks").
const RSS_GOAL_MIB: f64 = 64.0;

/// What `drover bench --batch` was asked to run.
pub(super) struct Options<'a> {
    pub tasks: usize,
    /// The files of the repository the tasks work on.
    pub files: usize,
    /// The `--jobs` of each run, in order.
    pub jobs: &'a [u16],
    pub check: bool,
}

/// Build the repository and specs under `scratch`, run every isolation × jobs, print the
/// table. Exit 3 when drover could not run a batch, 1 with `check` when a goal was missed
/// (peak RSS, anything left behind, a JUnit count), else 0.
pub(super) fn run(drover: &Path, scratch: &Path, options: &Options) -> i32 {
    let Options {
        tasks,
        files,
        jobs,
        check,
    } = *options;
    let repository = match workspace::build_repository(scratch, files) {
        Ok(repository) => repository.dir,
        Err(error) => {
            crate::esay!("drover: cannot build the {files}-file repository: {error}");
            return exit::RUNNER_ERROR;
        }
    };
    print_conditions(&repository, tasks, files);
    let mut failed = false;
    let mut missed = false;
    for isolation in ISOLATIONS {
        let specs = match batch_specs::write(scratch, &repository, files, isolation, tasks) {
            Ok(specs) => specs,
            Err(error) => {
                crate::esay!("drover: cannot write the batch's specs: {error:#}");
                return exit::RUNNER_ERROR;
            }
        };
        let mut first_rate = None;
        let mut last = None;
        for &j in jobs {
            let batch = Batch {
                drover,
                scratch,
                repository: &repository,
                specs: &specs,
                isolation,
                jobs: j,
                tasks,
            };
            match measure(&batch) {
                Ok(outcome) => {
                    let rate = tasks as f64 / outcome.measured.wall.as_secs_f64().max(1e-9);
                    let first = *first_rate.get_or_insert(rate);
                    let verdict = verdict(&batch, &outcome);
                    crate::say!("{}", row(&batch, &outcome, rate / first, &verdict));
                    print_problems(&batch, &outcome, &verdict);
                    failed |= verdict.drover_failed;
                    missed |= !verdict.problems.is_empty();
                    last = Some(outcome.measured);
                }
                Err(error) => {
                    failed = true;
                    crate::say!("{isolation:<9} {j:>4}  error: {error:#}");
                }
            }
        }
        if let (Some(measured), Some(&j)) = (last, jobs.last()) {
            crate::say!("{:<9} {}", "", limit(&measured, j, isolation));
        }
    }
    print_notes();
    if failed {
        exit::RUNNER_ERROR
    } else if missed && check {
        exit::FAILED
    } else {
        exit::PASSED
    }
}

/// One batch to run: its specs, isolation and number of jobs.
struct Batch<'a> {
    drover: &'a Path,
    scratch: &'a Path,
    repository: &'a Path,
    specs: &'a Path,
    isolation: &'a str,
    jobs: u16,
    tasks: usize,
}

/// What one batch cost and left.
struct Outcome {
    measured: Measured,
    /// Everything left behind: (path, bytes).
    leftovers: Vec<(PathBuf, u64)>,
    /// The JUnit report's counts, or why it could not be read.
    junit: std::io::Result<JunitCounts>,
    /// The end of drover's stderr, for a batch that did not exit 0.
    stderr_tail: String,
}

/// The testcases, failures and errors in a junit.xml.
#[derive(Debug, PartialEq, Eq)]
struct JunitCounts {
    tests: usize,
    failures: usize,
    errors: usize,
}

/// Run the batch as a child with a fresh TMPDIR and artifacts directory, then look at
/// what it left.
fn measure(batch: &Batch) -> anyhow::Result<Outcome> {
    let run_dir = batch
        .scratch
        .join(format!("batch-runs/{}-j{}", batch.isolation, batch.jobs));
    let _ = std::fs::remove_dir_all(&run_dir);
    let tmp = run_dir.join("tmp");
    std::fs::create_dir_all(&tmp).with_context(|| format!("cannot create {}", tmp.display()))?;
    let artifacts = run_dir.join("artifacts");
    let stderr_path = run_dir.join("stderr.txt");
    let stderr = File::create(&stderr_path)
        .with_context(|| format!("cannot create {}", stderr_path.display()))?;
    // Write back what earlier batches left dirty, so none pays for another's writes.
    rustix::fs::sync();
    let mut command = Command::new(batch.drover);
    command
        .arg("run")
        .arg(batch.specs)
        .args(["--jobs", &batch.jobs.to_string(), "--quiet", "--artifacts"])
        .arg(&artifacts)
        .current_dir(&run_dir)
        .env("TMPDIR", &tmp)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr);
    let measured = child::measure(&mut command)
        .with_context(|| format!("cannot run {}", batch.drover.display()))?;
    let stderr_text = std::fs::read_to_string(&stderr_path).unwrap_or_default();
    let stderr_tail: Vec<&str> = stderr_text.lines().rev().take(5).collect();
    let stderr_tail = stderr_tail.into_iter().rev().collect::<Vec<_>>().join("\n");
    Ok(Outcome {
        measured,
        leftovers: leftovers(&run_dir, &tmp, batch.repository),
        junit: junit_counts(&artifacts.join("junit.xml")),
        stderr_tail,
    })
}

/// What a finished batch left behind: anything in its TMPDIR, temp directories
/// (`drover-*`) beside its artifacts directory, atomic-write temp files in it, and
/// worktrees still registered in the repository.
fn leftovers(run_dir: &Path, tmp: &Path, repository: &Path) -> Vec<(PathBuf, u64)> {
    let mut left = Vec::new();
    for path in entries(tmp) {
        let bytes = disk_usage(&path);
        left.push((path, bytes));
    }
    for path in entries(run_dir) {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if name.starts_with("drover-") {
            let bytes = disk_usage(&path);
            left.push((path, bytes));
        }
    }
    for path in entries(&run_dir.join("artifacts")) {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if name.contains(crate::workspace::leftovers::WRITE_TEMP_MARK) && name.ends_with(".tmp") {
            let bytes = disk_usage(&path);
            left.push((path, bytes));
        }
    }
    for path in entries(&repository.join(".git/worktrees")) {
        left.push((path, 0));
    }
    left
}

/// The entries of `dir` (none when it cannot be listed, as when it does not exist).
fn entries(dir: &Path) -> Vec<PathBuf> {
    let Ok(listing) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    listing.flatten().map(|entry| entry.path()).collect()
}

/// The bytes of the files under `path`, symbolic links not followed.
fn disk_usage(path: &Path) -> u64 {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return 0;
    };
    if meta.is_dir() {
        entries(path).iter().map(|entry| disk_usage(entry)).sum()
    } else {
        meta.len()
    }
}

/// Count the `<testcase`, `<failure` and `<error` elements of a junit.xml (attribute
/// values are escaped, so `<` only ever opens a tag).
fn junit_counts(path: &Path) -> std::io::Result<JunitCounts> {
    let text = std::fs::read_to_string(path)?;
    Ok(JunitCounts {
        tests: text.matches("<testcase").count(),
        failures: text.matches("<failure").count(),
        errors: text.matches("<error").count(),
    })
}

/// Which goals a batch missed, and whether drover itself failed.
struct Verdict {
    problems: Vec<String>,
    drover_failed: bool,
}

fn verdict(batch: &Batch, outcome: &Outcome) -> Verdict {
    let mut problems = Vec::new();
    let rss_mib = outcome.measured.max_rss_kib as f64 / 1024.0;
    if rss_mib >= RSS_GOAL_MIB {
        problems.push(format!(
            "peak RSS {rss_mib:.1} MiB at {} tasks, over the {RSS_GOAL_MIB} MiB goal",
            batch.tasks
        ));
    }
    if !outcome.leftovers.is_empty() {
        problems.push(format!(
            "{} entries left behind ({} bytes)",
            outcome.leftovers.len(),
            outcome
                .leftovers
                .iter()
                .map(|(_, bytes)| bytes)
                .sum::<u64>()
        ));
    }
    let expected = JunitCounts {
        tests: batch.tasks,
        failures: 0,
        errors: 0,
    };
    match &outcome.junit {
        Ok(counts) if *counts == expected => {}
        Ok(counts) => problems.push(format!(
            "junit.xml has {} tests, {} failures, {} errors; expected {} tests, none failed",
            counts.tests, counts.failures, counts.errors, batch.tasks
        )),
        Err(error) => problems.push(format!("cannot read junit.xml: {error}")),
    }
    let code = outcome.measured.exit_code;
    if code != Some(0) {
        problems.push(format!("drover run exited {code:?}"));
    }
    Verdict {
        problems,
        // Exit 1 is a task that failed (counted above); anything else is drover's.
        drover_failed: !matches!(code, Some(0 | 1)),
    }
}

/// The printed row of one batch.
fn row(batch: &Batch, outcome: &Outcome, speedup: f64, verdict: &Verdict) -> String {
    let measured = &outcome.measured;
    let wall = measured.wall.as_secs_f64();
    let left_bytes: u64 = outcome.leftovers.iter().map(|(_, bytes)| bytes).sum();
    let junit = match &outcome.junit {
        Ok(counts) => format!("{}/{}/{}", counts.tests, counts.failures, counts.errors),
        Err(_) => "missing".to_string(),
    };
    format!(
        "{:<9} {:>4} {:>6} {:>8.1} {:>8.1} {:>6.2}× {:>5.2} {:>8.1} {:>7.1}MiB {:>7.1}MiB {:>6} {:>4}/{:<6} {:>14}  {}",
        batch.isolation,
        batch.jobs,
        batch.tasks,
        wall,
        batch.tasks as f64 / wall.max(1e-9),
        speedup,
        measured.cpu.as_secs_f64() / wall.max(1e-9),
        measured.written_blocks as f64 * 512.0 / 1e6,
        measured.max_rss_kib as f64 / 1024.0,
        measured.peak_anon_kib as f64 / 1024.0,
        measured.peak_fds,
        outcome.leftovers.len(),
        left_bytes,
        junit,
        if verdict.problems.is_empty() {
            "ok"
        } else {
            "FAILED"
        }
    )
}

/// A failed batch's problems, loudly, with what was left and drover's last words.
fn print_problems(batch: &Batch, outcome: &Outcome, verdict: &Verdict) {
    for problem in &verdict.problems {
        crate::say!("  !!! {} --jobs {}: {problem}", batch.isolation, batch.jobs);
    }
    for (path, bytes) in outcome.leftovers.iter().take(5) {
        crate::say!("  !!! left behind: {} ({bytes} bytes)", path.display());
    }
    if outcome.measured.exit_code != Some(0) && !outcome.stderr_tail.is_empty() {
        crate::say!("  !!! drover's stderr ends with:");
        for line in outcome.stderr_tail.lines() {
            crate::say!("  !!!   {line}");
        }
    }
}

/// What held the last (most parallel) batch back: the cores when drover and its
/// children kept them busy, else the disk or waiting (for worktrees, git: the worktrees
/// of one repository are added and removed one at a time).
fn limit(measured: &Measured, jobs: u16, isolation: &str) -> String {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let busy = measured.cpu.as_secs_f64() / measured.wall.as_secs_f64().max(1e-9);
    if busy >= 0.8 * cores as f64 {
        format!("at --jobs {jobs}: {busy:.2} of {cores} cores busy, the cores are the limit")
    } else if isolation == "worktree" {
        format!(
            "at --jobs {jobs}: {busy:.2} of {cores} cores busy, so not the cores: the disk, or waiting for git (one repository's worktrees are added and removed one at a time)"
        )
    } else {
        format!(
            "at --jobs {jobs}: {busy:.2} of {cores} cores busy, so not the cores: the disk (or waiting) is the limit"
        )
    }
}

/// What the figures were measured under, and the table's header.
fn print_conditions(repository: &Path, tasks: usize, files: usize) {
    if cfg!(debug_assertions) {
        crate::say!(
            "note: this drover is a debug build; build with --release for meaningful figures"
        );
    }
    crate::say!(
        "batch: {tasks} scripted tasks (a Read and an Edit of one file each, sandbox off) over {} ({files} files), one `drover run SPECS --jobs J --quiet` per row, a fresh TMPDIR each",
        repository.display()
    );
    if let Ok(load) = std::fs::read_to_string("/proc/loadavg") {
        let load: Vec<&str> = load.split_whitespace().take(3).collect();
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        crate::say!(
            "machine: {cores} cores, load average {} (figures are noisy when it nears the core count)",
            load.join(" ")
        );
    }
    crate::say!();
    crate::say!(
        "{:<9} {:>4} {:>6} {:>8} {:>8} {:>7} {:>5} {:>8} {:>10} {:>10} {:>6} {:>11} {:>14}  {}",
        "isolation",
        "jobs",
        "tasks",
        "wall s",
        "tasks/s",
        "speedup",
        "cpu",
        "write MB",
        "peak RSS",
        "peak anon",
        "fds",
        "left/bytes",
        "junit t/f/e",
        "result"
    );
}

fn print_notes() {
    crate::say!();
    crate::say!(
        "speedup: tasks/s against the first --jobs of the same isolation; cpu: CPU time of drover and the processes it waited for (git) over wall time, in cores; write MB: what they wrote to disk"
    );
    crate::say!(
        "peak RSS: the drover process's ru_maxrss (sandboxed commands are separate processes, not counted), including the pages of its executable; peak anon: the most anonymous memory (heap and stacks: what grows with the work) it held, sampled every 50 ms; fds: the most open descriptors of the drover process, sampled every 50 ms"
    );
    crate::say!(
        "left: entries left in the run's TMPDIR, drover-* temp directories beside its artifacts, registered worktrees (goal: 0); junit: testcases/failures/errors (goal: N/0/0); goal: peak RSS under {RSS_GOAL_MIB} MiB"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn junit_counts_count_elements_not_attributes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("junit.xml");
        std::fs::write(
            &path,
            r#"<testsuites tests="3" failures="1" errors="1"><testsuite name="a" tests="3"><testcase name="x"/><testcase name="y"><failure message="&lt;error"/></testcase><testcase name="z"><error message="m"/></testcase></testsuite></testsuites>"#,
        )
        .unwrap();
        assert_eq!(
            junit_counts(&path).unwrap(),
            JunitCounts {
                tests: 3,
                failures: 1,
                errors: 1
            }
        );
        assert!(junit_counts(&dir.path().join("missing.xml")).is_err());
    }

    #[test]
    fn leftovers_are_what_is_in_tmp_and_drover_dirs_beside_the_artifacts() {
        let dir = tempfile::tempdir().unwrap();
        let run_dir = dir.path();
        let tmp = run_dir.join("tmp");
        let repository = run_dir.join("repo");
        std::fs::create_dir_all(tmp.join("drover-tmp-1-x")).unwrap();
        std::fs::write(tmp.join("drover-tmp-1-x/f"), "12345").unwrap();
        std::fs::create_dir_all(run_dir.join("artifacts")).unwrap();
        std::fs::create_dir_all(run_dir.join("drover-stage-1-y")).unwrap();
        std::fs::write(run_dir.join("stderr.txt"), "").unwrap();
        std::fs::create_dir_all(repository.join(".git/worktrees/w1")).unwrap();
        let mut left = leftovers(run_dir, &tmp, &repository);
        left.sort();
        let names: Vec<_> = left
            .iter()
            .map(|(path, bytes)| (path.strip_prefix(run_dir).unwrap().to_path_buf(), *bytes))
            .collect();
        assert_eq!(
            names,
            [
                (PathBuf::from("drover-stage-1-y"), 0),
                (PathBuf::from("repo/.git/worktrees/w1"), 0),
                (PathBuf::from("tmp/drover-tmp-1-x"), 5),
            ]
        );
        std::fs::remove_dir_all(tmp.join("drover-tmp-1-x")).unwrap();
        std::fs::remove_dir_all(run_dir.join("drover-stage-1-y")).unwrap();
        std::fs::remove_dir_all(repository.join(".git/worktrees/w1")).unwrap();
        assert!(leftovers(run_dir, &tmp, &repository).is_empty());
    }
}
