//! `drover bench --workspace`: what a task costs on real-repository-sized workspaces it
//! builds itself — git repositories of 1,000 to 100,000 files and one holding a 2 GB
//! sparse file — next to `git status` and `cp -r --reflink=auto` measured in the same run,
//! with drover's peak memory.

use anyhow::Context;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::timing::median;
use crate::exit;

/// The goals of the README ("Benchmarks", `drover bench --workspace`), on a 2-core machine.
const RSS_GOAL_MIB: f64 = 64.0;
const READ_GOAL_RATIO: f64 = 3.0;
/// The repository size from which the read goal is judged.
const READ_GOAL_FILES: usize = 100_000;
const COPY_GOAL_RATIO: f64 = 1.5;

/// One workspace to measure.
pub(super) struct Workspace {
    name: String,
    /// The repository's top directory.
    pub(super) dir: PathBuf,
    /// Whether the read goal applies: it is set for the 100,000-file repository (and
    /// larger). On small workspaces both programs take milliseconds and the ratio is
    /// drover's fixed cost per run (a transcript, reports, fsyncs), shown but not judged.
    read_goal: bool,
}

/// Build the workspaces under `scratch`, measure, print; the exit code as for `bench`.
pub(super) fn run(drover: &Path, scratch: &Path, sizes: &[usize], runs: usize, check: bool) -> i32 {
    let mut workspaces = Vec::new();
    for &files in sizes {
        match build_repository(scratch, files) {
            Ok(workspace) => workspaces.push(workspace),
            Err(error) => {
                crate::esay!("drover: cannot build the {files}-file repository: {error}");
                return exit::RUNNER_ERROR;
            }
        }
    }
    match build_sparse(scratch) {
        Ok(workspace) => workspaces.push(workspace),
        Err(error) => {
            crate::esay!("drover: cannot build the sparse-file repository: {error}");
            return exit::RUNNER_ERROR;
        }
    }
    crate::say!(
        "runs: {runs} per program and case (median), after one warm-up; peak RSS is drover's VmHWM, sampled every 5 ms"
    );
    crate::say!();
    crate::say!(
        "{:<14} {:>8} {:>9} {:>6} {:>9} {:>8} {:>8} {:>8} {:>6} {:>9}  {}",
        "workspace",
        "read ms",
        "git st ms",
        "ratio",
        "read RSS",
        "copy ms",
        "+copy ms",
        "cp ms",
        "ratio",
        "copy RSS",
        "result"
    );
    let mut failed = false;
    let mut missed = false;
    for workspace in &workspaces {
        match measure(drover, scratch, workspace, runs) {
            Ok(row) => {
                missed |= !row.met;
                crate::say!("{}", row.text);
            }
            Err(error) => {
                failed = true;
                crate::say!("{:<22} error: {error}", workspace.name);
            }
        }
    }
    crate::say!();
    crate::say!(
        "+copy ms is what `isolation: copy` adds to the same run (copy ms − read ms): the copy, hashing the original for the baseline, removing the copy; its ratio is against cp"
    );
    crate::say!(
        "goals: a one-Read run within {READ_GOAL_RATIO}× `git status` (judged from {READ_GOAL_FILES} files); isolation: copy within {COPY_GOAL_RATIO}× `cp -r --reflink=auto`; peak RSS under {RSS_GOAL_MIB} MiB"
    );
    if failed {
        exit::RUNNER_ERROR
    } else if missed && check {
        exit::FAILED
    } else {
        exit::PASSED
    }
}

/// One printed row, and whether it met every goal.
struct Row {
    text: String,
    met: bool,
}

/// The Read run and the copy run of `workspace` against `git status` and `cp`, in turns.
fn measure(
    drover: &Path,
    scratch: &Path,
    workspace: &Workspace,
    runs: usize,
) -> anyhow::Result<Row> {
    let read_spec = spec(scratch, workspace, "none")?;
    let copy_spec = spec(scratch, workspace, "copy")?;
    let artifacts = scratch.join("artifacts");
    let drover_run = |spec: &Path| -> anyhow::Result<(Duration, u64)> {
        let args = [
            "run".into(),
            spec.display().to_string(),
            "--artifacts".into(),
            artifacts.display().to_string(),
        ];
        sampled(drover, &args, scratch)
    };
    let git_status = || -> anyhow::Result<(Duration, u64)> {
        sampled(
            Path::new("git"),
            &["status".into(), "--porcelain".into()],
            &workspace.dir,
        )
    };
    let copy_target = scratch.join("cp-target");
    let cp_args = cp_args(workspace, &copy_target)?;
    let cp = || -> anyhow::Result<(Duration, u64)> {
        let _ = std::fs::remove_dir_all(&copy_target);
        std::fs::create_dir_all(&copy_target)
            .with_context(|| format!("cannot create {}", copy_target.display()))?;
        sampled(Path::new("cp"), &cp_args, scratch)
    };
    let mut timings = Timings::default();
    for round in 0..=runs {
        let (read_time, read_peak) = drover_run(&read_spec)?;
        let (status_time, _) = git_status()?;
        let (copy_time, copy_peak) = drover_run(&copy_spec)?;
        let (cp_time, _) = cp()?;
        timings.read_rss = timings.read_rss.max(read_peak);
        timings.copy_rss = timings.copy_rss.max(copy_peak);
        if round > 0 {
            timings.read.push(read_time);
            timings.status.push(status_time);
            timings.copy.push(copy_time);
            timings.reference.push(cp_time);
        }
    }
    let _ = std::fs::remove_dir_all(&copy_target);
    Ok(row(workspace, timings))
}

/// The timed runs of one workspace (after the warm-up) and drover's peak memory (KiB).
#[derive(Default)]
struct Timings {
    read: Vec<Duration>,
    status: Vec<Duration>,
    copy: Vec<Duration>,
    reference: Vec<Duration>,
    read_rss: u64,
    copy_rss: u64,
}

/// `cp`'s arguments to copy the same files drover copies (everything but `.git/`) to
/// `copy_target`.
fn cp_args(workspace: &Workspace, copy_target: &Path) -> anyhow::Result<Vec<String>> {
    let mut cp_args: Vec<String> = vec!["-r".into(), "--reflink=auto".into()];
    let listing = std::fs::read_dir(&workspace.dir)
        .with_context(|| format!("cannot list {}", workspace.dir.display()))?;
    for entry in listing {
        let entry = entry.with_context(|| format!("cannot list {}", workspace.dir.display()))?;
        if entry.file_name() != ".git" {
            cp_args.push(entry.path().display().to_string());
        }
    }
    cp_args.push(copy_target.display().to_string());
    Ok(cp_args)
}

/// The printed row of a workspace: the medians, the ratios against the goals, the peaks.
fn row(workspace: &Workspace, mut timings: Timings) -> Row {
    let ms = |times: &mut Vec<Duration>| median(times).map_or(0.0, |d| d.as_secs_f64() * 1000.0);
    let (read_ms, status_ms, copy_ms, cp_ms) = (
        ms(&mut timings.read),
        ms(&mut timings.status),
        ms(&mut timings.copy),
        ms(&mut timings.reference),
    );
    let (read_rss, copy_rss) = (timings.read_rss, timings.copy_rss);
    let read_ratio = read_ms / status_ms.max(0.001);
    let copy_added_ms = (copy_ms - read_ms).max(0.0);
    let copy_ratio = copy_added_ms / cp_ms.max(0.001);
    let mib = |kib: u64| kib as f64 / 1024.0;
    let met = (read_ratio <= READ_GOAL_RATIO || !workspace.read_goal)
        && copy_ratio <= COPY_GOAL_RATIO
        && mib(read_rss) < RSS_GOAL_MIB
        && mib(copy_rss) < RSS_GOAL_MIB;
    Row {
        text: format!(
            "{:<14} {read_ms:>8.0} {status_ms:>9.0} {read_ratio:>5.1}× {:>6.1}MiB {copy_ms:>8.0} {copy_added_ms:>8.0} {cp_ms:>8.0} {copy_ratio:>5.1}× {:>6.1}MiB  {}",
            workspace.name,
            mib(read_rss),
            mib(copy_rss),
            if met { "ok" } else { "MISSED" }
        ),
        met,
    }
}

/// A spec running one Read in `workspace` with the given isolation.
fn spec(scratch: &Path, workspace: &Workspace, isolation: &str) -> anyhow::Result<PathBuf> {
    let path = scratch.join(format!("{}-{isolation}.yaml", workspace.name));
    let text = format!(
        "version: 1\nname: {}-{isolation}\nprompt: read one file\nworkspace: {}\nisolation: {isolation}\nsandbox: off\nmodel:\n  provider: script\n  script:\n    - tool_calls: [{{ name: Read, input: {{ file_path: README.md, limit: 5 }} }}]\n    - text: done\npermissions:\n  allow: [Read]\n",
        workspace.name,
        workspace.dir.display()
    );
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

/// Run a program to completion, returning its wall time and peak RSS (KiB). The wait is
/// a blocking `wait` (the time is exact); a second thread samples the memory meanwhile.
fn sampled(program: &Path, args: &[String], dir: &Path) -> anyhow::Result<(Duration, u64)> {
    // Write back what earlier runs left dirty first, so no case pays for another's
    // writes (a copy's pages would otherwise be flushed during the next timed command).
    rustix::fs::sync();
    let start = Instant::now();
    let mut child = Command::new(program)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| program.display().to_string())?;
    let pid = child.id();
    let done = std::sync::atomic::AtomicBool::new(false);
    let (status, wall, peak) = std::thread::scope(|scope| {
        let sampler = scope.spawn(|| {
            let mut peak = 0;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                if let Some(kib) = peak_kib(pid) {
                    peak = peak.max(kib);
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            peak
        });
        let status = child.wait();
        let wall = start.elapsed();
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        (status, wall, sampler.join().unwrap_or(0))
    });
    let status = status.with_context(|| program.display().to_string())?;
    if !status.success() {
        anyhow::bail!("{} {} failed: {status}", program.display(), args.join(" "));
    }
    Ok((wall, peak))
}

fn peak_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// A committed git repository of `files` source-like files (about 6 KB each, 100 per
/// directory), built once and reused by later benches (`--batch` uses the 1,000-file one).
pub(super) fn build_repository(scratch: &Path, files: usize) -> std::io::Result<Workspace> {
    let name = format!("repo-{files}");
    let dir = scratch.join(&name);
    let read_goal = files >= READ_GOAL_FILES;
    let done = dir.join(".git/drover-bench-complete");
    if done.exists() {
        return Ok(Workspace {
            name,
            dir,
            read_goal,
        });
    }
    let _ = std::fs::remove_dir_all(&dir);
    crate::say!("building {name} …");
    for i in 0..files {
        let sub = dir.join(format!("src/d{:03}/e{:02}", i / 1000, (i / 100) % 10));
        std::fs::create_dir_all(&sub)?;
        let mut file = std::fs::File::create(sub.join(format!("file{i}.rs")))?;
        for line in 0..(100 + i % 100) {
            writeln!(
                file,
                "fn f{i}_{line}() -> u64 {{ {line} * {i} }} // filler text"
            )?;
        }
    }
    std::fs::write(
        dir.join("README.md"),
        "# bench\nline\nline\nline\nline\nline\n",
    )?;
    git(&dir, &["init", "-q"])?;
    git(&dir, &["add", "."])?;
    git(&dir, &["commit", "-qm", "bench"])?;
    // The index written again once the files' times are past: nothing racily clean.
    std::thread::sleep(Duration::from_millis(1100));
    git(&dir, &["update-index", "--refresh", "-q"])?;
    std::fs::write(done, "")?;
    Ok(Workspace {
        name,
        dir,
        read_goal,
    })
}

/// A small repository with a 2 GB sparse file in it (untracked: no one commits that).
fn build_sparse(scratch: &Path) -> std::io::Result<Workspace> {
    let name = "sparse-2gb".to_string();
    let dir = scratch.join(&name);
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join("README.md"), "# sparse\nline\nline\nline\nline\n")?;
    if !dir.join(".git").exists() {
        git(&dir, &["init", "-q"])?;
        git(&dir, &["add", "README.md"])?;
        git(&dir, &["commit", "-qm", "bench"])?;
    }
    let big = std::fs::File::create(dir.join("asset.bin"))?;
    big.set_len(2 * 1024 * 1024 * 1024)?;
    Ok(Workspace {
        name,
        dir,
        read_goal: false,
    })
}

/// Run git in `dir` with an identity of its own, its output dropped; an error when it fails.
pub(super) fn git(dir: &Path, args: &[&str]) -> std::io::Result<()> {
    let status = Command::new("git")
        .args([
            "-c",
            "user.email=bench@drover.invalid",
            "-c",
            "user.name=bench",
        ])
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .status()?;
    if status.success() {
        Ok(())
    } else {
        Err(std::io::Error::other(format!("git {args:?} failed")))
    }
}
