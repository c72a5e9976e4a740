//! `drover bench`: Grep and Glob timed as whole processes (`drover tool …`) against the
//! programs people would otherwise reach for, `rg` and `fd`, on a large tree nobody here
//! wrote. Speed goals are checked here, by printed figures, never by timed tests.

mod batch;
mod batch_specs;
mod cases;
mod child;
mod fleet;
mod long_run;
mod proxy;
mod replay;
mod timing;
mod workspace;

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;

pub(crate) use proxy::serve as egress_proxy_child;

use crate::exit;
use cases::{Case, Reference};

#[derive(Debug, Args)]
/// `drover bench`'s options. They live here, not in `cli`, so the bench depends on
/// nothing above it; `cli` embeds them as the subcommand's arguments.
pub struct BenchArgs {
    /// The tree to search (default: ~/.cargo/registry/src).
    #[arg(long, value_name = "DIR")]
    pub tree: Option<PathBuf>,
    /// Timed runs per case and program, after one warm-up; the median is reported.
    #[arg(long, default_value_t = 5, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub runs: u16,
    /// Exit 1 when a case misses its goal (default: report only).
    #[arg(long)]
    pub check: bool,
    /// Measure whole runs on git repositories drover builds (see --sizes) and on a 2 GB
    /// sparse file, against `git status` and `cp -r --reflink=auto`, instead of the tools.
    #[arg(long)]
    pub workspace: bool,
    /// Where --workspace builds its repositories, --replay its task, --batch its
    /// repository and specs and --long-run its workspace and runs (kept for later runs).
    #[arg(long, value_name = "DIR", default_value = "drover-bench-workspaces")]
    pub scratch: PathBuf,
    /// Time the replay of a recorded run of --calls tool calls against the scripted run
    /// that recorded it (built under --scratch), instead of the tools.
    #[arg(long, conflicts_with = "workspace")]
    pub replay: bool,
    /// Run a batch of --tasks scripted tasks (a Read and an Edit each) over a 1,000-file
    /// repository with `isolation: copy`, then `worktree`, at each of --jobs-list: wall
    /// time, drover's peak RSS and open descriptors, what is left behind, JUnit counts.
    #[arg(long, conflicts_with_all = ["workspace", "replay"])]
    pub batch: bool,
    /// The tasks of each --batch run.
    #[arg(long, value_name = "N", default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub tasks: u32,
    /// The files of the git repository --batch's tasks work on (a smaller one keeps a
    /// quick check quick).
    #[arg(long, value_name = "N", default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub files: u32,
    /// The --jobs values --batch runs with, in order.
    #[arg(long, value_name = "J,J,…", value_delimiter = ',', default_values_t = [1, 4, 16], value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs_list: Vec<u16>,
    /// Download a body of --megabytes from a loopback server directly and through the
    /// egress proxy (CONNECT, plain HTTP, SOCKS5), --runs rounds interleaved: the time
    /// ratio and the proxy process's peak RSS.
    #[arg(long, conflicts_with_all = ["workspace", "replay", "batch"])]
    pub proxy: bool,
    /// With --proxy: send the body at this many MB/s (a network link's pace: 100 is
    /// 800 Mbit/s) instead of as fast as loopback goes.
    #[arg(long, value_name = "N", requires = "proxy", value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub origin_mbps: Option<u64>,
    /// The size of the body --proxy downloads, in MB.
    #[arg(long, value_name = "N", default_value_t = 50, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub megabytes: u64,
    /// The tool calls of the run --replay records.
    #[arg(long, value_name = "N", default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub calls: u32,
    /// The repository sizes --workspace builds, in files.
    #[arg(long, value_name = "N,N,…", value_delimiter = ',', default_values_t = [1000, 10000, 100000])]
    pub sizes: Vec<usize>,
    /// Run a task of --turns model turns, each reading a --result-bytes file, against a
    /// mock Anthropic API on 127.0.0.1 that refuses a request over --window tokens:
    /// without context management (with and without the window), then with each
    /// strategy; request bytes, peak request, drover's peak RSS; then replay the managed
    /// runs (built under --scratch).
    #[arg(long, conflicts_with_all = ["workspace", "replay", "batch", "proxy"])]
    pub long_run: bool,
    /// The model turns of --long-run's task (the last ends it with a text).
    #[arg(long, value_name = "N", default_value_t = 300, value_parser = clap::value_parser!(u32).range(2..=100_000))]
    pub turns: u32,
    /// The window --long-run's mock model enforces, in tokens (request body bytes / 4).
    #[arg(long, value_name = "TOKENS", default_value_t = 32_000)]
    pub window: u64,
    /// The size of each file --long-run's task reads (so of each tool result), in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 4096, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub result_bytes: u32,
    /// Clone a fleet of --repos git repositories (--files files, --commits commits each)
    /// served by `git daemon` on 127.0.0.1 with `git clone`, then run one matrix spec
    /// over them with drover: on the clones as local workspaces, then with `repo:` and a
    /// cold, then a warm `--repo-cache`, then warm with `--repo-checkout copy`; drover's
    /// added time per task against `git clone` (built under --scratch).
    #[arg(long, conflicts_with_all = ["workspace", "replay", "batch", "proxy", "long_run"])]
    pub fleet: bool,
    /// The repositories of --fleet.
    #[arg(long, value_name = "N", default_value_t = 12, value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub repos: u16,
    /// The commits of each --fleet repository (the first adds every file, each later one
    /// rewrites a twentieth of them).
    #[arg(long, value_name = "N", default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub commits: u32,
    /// Internal (end-to-end tests): serve --long-run's mock model on 127.0.0.1 (--window
    /// 0: none), print `listening ADDRESS`, and its figures as JSON once stdin closes.
    #[arg(long, hide = true, conflicts_with_all = ["workspace", "replay", "batch", "proxy", "long_run"])]
    pub mock_model: bool,
    /// Internal: with --mock-model, refuse the request for this turn once as too long.
    #[arg(long, hide = true, value_name = "TURN", requires = "mock_model")]
    pub refuse_at: Option<u32>,
    /// Internal: with --mock-model, write the scenario's files into this directory first.
    #[arg(long, hide = true, value_name = "DIR", requires = "mock_model")]
    pub mock_workspace: Option<PathBuf>,
}

/// The long run's scenario, from the command line.
fn scenario(args: &BenchArgs) -> long_run::Scenario {
    long_run::Scenario {
        turns: args.turns,
        result_bytes: args.result_bytes as usize,
    }
}

/// `--mock-model`: serve the mock until stdin closes.
fn mock_model(args: &BenchArgs) -> i32 {
    let settings = long_run::MockSettings {
        scenario: scenario(args),
        window: Some(args.window).filter(|window| *window > 0),
        refuse_at: args.refuse_at,
    };
    long_run::serve_mock(settings, args.mock_workspace.as_deref())
}

/// `--long-run`: build, run, replay, print.
fn long_run(args: &BenchArgs) -> i32 {
    if args.window < crate::spec::MIN_CONTEXT_WINDOW {
        crate::esay!(
            "drover: --window {} is below the smallest window a spec may give ({} tokens)",
            args.window,
            crate::spec::MIN_CONTEXT_WINDOW
        );
        return exit::BAD_INPUT;
    }
    let (drover, scratch) = match drover_and_scratch(args) {
        Ok(found) => found,
        Err(code) => return code,
    };
    let options = long_run::Options {
        scenario: scenario(args),
        window: args.window,
        check: args.check,
    };
    long_run::run(&drover, &scratch, options)
}

/// What `--fleet` measures, from the command line.
fn fleet_options(args: &BenchArgs) -> fleet::Options {
    fleet::Options {
        repos: usize::from(args.repos),
        files: args.files as usize,
        commits: args.commits as usize,
        runs: usize::from(args.runs),
        check: args.check,
    }
}

/// What `--proxy` measures, from the command line.
fn proxy_settings(args: &BenchArgs) -> proxy::Settings {
    proxy::Settings {
        megabytes: args.megabytes,
        runs: usize::from(args.runs),
        check: args.check,
        origin_mbps: args.origin_mbps,
    }
}

/// Run every case and print the table. Exits 0 when it could measure (a missing reference
/// program only skips its cases), 2 for a bad tree, 3 when drover itself failed, and with
/// `--check` 1 when a goal was missed.
pub(crate) fn run(args: &BenchArgs) -> i32 {
    if let Some(code) = other_case(args) {
        return code;
    }
    let tree = match bench_tree(args) {
        Ok(tree) => tree,
        Err(code) => return code,
    };
    let drover = match own_executable() {
        Ok(path) => path,
        Err(code) => return code,
    };
    let mut missing = Vec::new();
    let ripgrep = find_reference(Reference::Ripgrep, &mut missing);
    let fd = find_reference(Reference::Fd, &mut missing);
    print_conditions(&tree, &missing, args.runs);
    let mut failed = false;
    let mut missed = false;
    for case in cases::all() {
        let reference = match case.reference {
            Reference::Ripgrep => ripgrep.as_deref(),
            Reference::Fd => fd.as_deref(),
        };
        let row = measure(&case, &drover, reference, &tree, usize::from(args.runs));
        failed |= row.failed;
        missed |= row.missed;
        crate::say!("{}", row.text);
    }
    if failed {
        exit::RUNNER_ERROR
    } else if missed && args.check {
        exit::FAILED
    } else {
        exit::PASSED
    }
}

/// The cases other than the tools' (`--mock-model`, `--long-run`, `--proxy`, `--batch`,
/// `--replay`, `--workspace`): the exit code of the one asked for, None for the tools.
fn other_case(args: &BenchArgs) -> Option<i32> {
    if args.mock_model {
        return Some(mock_model(args));
    }
    if args.long_run {
        return Some(long_run(args));
    }
    if args.fleet {
        return Some(match drover_and_scratch(args) {
            Ok((drover, scratch)) => fleet::run(&drover, &scratch, fleet_options(args)),
            Err(code) => code,
        });
    }
    if args.proxy {
        return Some(match own_executable() {
            Ok(drover) => proxy::run(&drover, proxy_settings(args)),
            Err(code) => code,
        });
    }
    if !(args.batch || args.replay || args.workspace) {
        return None;
    }
    let (drover, scratch) = match drover_and_scratch(args) {
        Ok(found) => found,
        Err(code) => return Some(code),
    };
    let runs = usize::from(args.runs);
    Some(if args.batch {
        let batch = batch::Options {
            tasks: args.tasks as usize,
            files: args.files as usize,
            jobs: &args.jobs_list,
            check: args.check,
        };
        batch::run(&drover, &scratch, &batch)
    } else if args.replay {
        replay::run(&drover, &scratch, args.calls as usize, runs, args.check)
    } else {
        workspace::run(&drover, &scratch, &args.sizes, runs, args.check)
    })
}

/// The tree the tools search (`--tree`, else cargo's registry sources), or the exit code.
fn bench_tree(args: &BenchArgs) -> Result<PathBuf, i32> {
    let Some(tree) = args.tree.clone().or_else(default_tree) else {
        crate::esay!("drover: no --tree given and HOME is not set");
        return Err(exit::BAD_INPUT);
    };
    match tree.canonicalize() {
        Ok(dir) if dir.is_dir() => Ok(dir),
        _ => {
            crate::esay!(
                "drover: the bench tree {} is not a directory (build something with cargo to fill ~/.cargo/registry/src, or pass --tree DIR)",
                tree.display()
            );
            Err(exit::BAD_INPUT)
        }
    }
}

/// What the figures below were measured under: the build, the tree, the reference
/// programs missing, the runs, the machine's load; then the table's header.
fn print_conditions(tree: &Path, missing: &[Reference], runs: u16) {
    if cfg!(debug_assertions) {
        crate::say!(
            "note: this drover is a debug build; build with --release for meaningful figures"
        );
    }
    for line in cases::describe(tree) {
        crate::say!("{line}");
    }
    for reference in missing {
        crate::say!(
            "note: {} not found on PATH; its cases are not compared. Install it with `apt-get install {}` (or `apt-get install ripgrep fd-find`).",
            reference.programs().join(" or "),
            reference.package()
        );
    }
    crate::say!("runs: {runs} per program and case (median), after one warm-up");
    // Other work on the machine skews wall times; say how busy it was.
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
        "{:<30} {:>10} {:>10} {:>7} {:>6}  {:<6} {:>9} {:>15}",
        "case",
        "drover ms",
        "ref ms",
        "ratio",
        "goal",
        "result",
        "min ratio",
        "lines drover/ref"
    );
}

/// drover's own executable, or the exit code.
fn own_executable() -> Result<PathBuf, i32> {
    std::env::current_exe().map_err(|error| {
        crate::esay!("drover: cannot find drover's own executable: {error}");
        exit::RUNNER_ERROR
    })
}

/// drover's own executable and the scratch directory (created), or the exit code.
fn drover_and_scratch(args: &BenchArgs) -> Result<(PathBuf, PathBuf), i32> {
    let drover = own_executable()?;
    std::fs::create_dir_all(&args.scratch).map_err(|error| {
        crate::esay!("drover: cannot create {}: {error}", args.scratch.display());
        exit::BAD_INPUT
    })?;
    let scratch = args.scratch.canonicalize().unwrap_or(args.scratch.clone());
    Ok((drover, scratch))
}

fn default_tree() -> Option<PathBuf> {
    let home = std::env::var_os("HOME")?;
    Some(PathBuf::from(home).join(".cargo/registry/src"))
}

fn find_reference(reference: Reference, missing: &mut Vec<Reference>) -> Option<PathBuf> {
    let found = reference.programs().iter().find_map(|name| on_path(name));
    if found.is_none() {
        missing.push(reference);
    }
    found
}

/// The first executable file called `name` in a directory of PATH.
fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join(name))
        .find(|candidate| {
            std::fs::metadata(candidate)
                .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
        })
}

/// One printed row and what it means for the exit code.
struct Row {
    text: String,
    failed: bool,
    missed: bool,
}

/// Warm up, then alternate drover and reference runs so drift hits both alike.
fn measure(case: &Case, drover: &Path, reference: Option<&Path>, tree: &Path, runs: usize) -> Row {
    match sample(case, drover, reference, tree, runs) {
        Ok(samples) => row(case, samples),
        Err(row) => row,
    }
}

/// The timed runs of one case: drover's, the reference program's (none without one),
/// and the lines each printed last.
struct Samples {
    drover: Vec<Duration>,
    reference: Vec<Duration>,
    lines: (usize, Option<usize>),
}

/// The case run `runs` times on each side after a warm-up, or the error row of the side
/// that failed.
fn sample(
    case: &Case,
    drover: &Path,
    reference: Option<&Path>,
    tree: &Path,
    runs: usize,
) -> Result<Samples, Row> {
    let drover_args: Vec<String> = vec![
        "tool".into(),
        case.tool.into(),
        "--input".into(),
        case.input.clone(),
        "--workspace".into(),
        ".".into(),
    ];
    let reference = reference.map(|program| (program, program.display().to_string()));
    let mut samples = Samples {
        drover: Vec::with_capacity(runs),
        reference: Vec::with_capacity(runs),
        lines: (0, None),
    };
    for round in 0..=runs {
        // Take turns going first, so neither side always runs on the other's heels.
        for drover_turn in [round % 2 == 0, round % 2 == 1] {
            if drover_turn {
                // drover's exit 1 is an error result: the case itself is broken.
                let run = timed(drover, &drover_args, tree, &[0])
                    .map_err(|what| error_row(case, "drover", what))?;
                samples.lines.0 = run.lines;
                if round > 0 {
                    samples.drover.push(run.wall);
                }
            } else if let Some((program, name)) = &reference {
                // rg exits 1 when nothing matched, which is normal here.
                let run = timed(program, &case.args, tree, &[0, 1])
                    .map_err(|what| error_row(case, name, what))?;
                samples.lines.1 = Some(run.lines);
                if round > 0 {
                    samples.reference.push(run.wall);
                }
            }
        }
    }
    Ok(samples)
}

/// The printed row of a measured case: the medians, their ratio against the goal, the
/// ratio of the fastest runs and the lines each side printed.
fn row(case: &Case, mut samples: Samples) -> Row {
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let drover_ms = timing::median(&mut samples.drover).map(ms).unwrap_or(0.0);
    let lines = samples.lines;
    let line_counts = match lines.1 {
        Some(n) => format!("{}/{n}", lines.0),
        None => format!("{}/-", lines.0),
    };
    let Some(reference_ms) = timing::median(&mut samples.reference).map(ms) else {
        return Row {
            text: format!(
                "{:<30} {drover_ms:>10.1} {:>10} {:>7} {:>6}  {:<6} {:>9} {line_counts:>15}",
                case.name,
                "-",
                "-",
                format!("≤{:.2}", case.goal),
                "skip",
                "-"
            ),
            failed: false,
            missed: false,
        };
    };
    let ratio = if reference_ms > 0.0 {
        drover_ms / reference_ms
    } else {
        f64::INFINITY
    };
    let pass = ratio <= case.goal;
    // Fastest against fastest: what each side costs with the least interference from
    // other work on the machine (the goal is judged on the medians).
    let fastest = |times: &[Duration]| times.iter().min().copied().map(ms).unwrap_or(0.0);
    let min_ratio = fastest(&samples.drover) / fastest(&samples.reference).max(f64::MIN_POSITIVE);
    Row {
        text: format!(
            "{:<30} {drover_ms:>10.1} {reference_ms:>10.1} {ratio:>7.2} {:>6}  {:<6} {min_ratio:>9.2} {line_counts:>15}",
            case.name,
            format!("≤{:.2}", case.goal),
            if pass { "pass" } else { "MISS" }
        ),
        failed: false,
        missed: !pass,
    }
}

/// One run of `program`, or what went wrong when it exits with a code not in `accept`.
fn timed(
    program: &Path,
    args: &[String],
    tree: &Path,
    accept: &[i32],
) -> anyhow::Result<timing::Run> {
    match timing::run_once(program, args, tree) {
        Ok(run) if run.exit_code.is_some_and(|code| accept.contains(&code)) => Ok(run),
        Ok(run) if run.stderr.is_empty() => Err(anyhow::anyhow!(
            "exit {:?} (run it by hand to see its output)",
            run.exit_code
        )),
        Ok(run) => Err(anyhow::anyhow!("exit {:?}: {}", run.exit_code, run.stderr)),
        Err(error) => Err(anyhow::Error::new(error).context("cannot run it")),
    }
}

/// The row of a case that could not be measured; drover failing is a runner error.
fn error_row(case: &Case, who: &str, what: anyhow::Error) -> Row {
    Row {
        text: format!("{:<30} error: {who}: {what:#}", case.name),
        failed: who == "drover",
        missed: false,
    }
}
