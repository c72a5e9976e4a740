//! `drover bench --proxy`: what the egress proxy costs. A body of --megabytes from a
//! loopback server, downloaded directly and through the proxy by each of its routes
//! (CONNECT, plain HTTP, SOCKS5), the four interleaved for --runs rounds after a warm-up;
//! the proxy runs in a child process (`drover __egress-proxy-bench`), so its peak
//! resident memory is its own, measured by the kernel.

mod client;
mod origin;
mod serve;

use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, bail};
use drover_proxy::{ConnectionEvent, Decision};

use super::child::{Measured, measure_while};
use super::timing::median;
use crate::exit;
use client::{Client, Ports, Route};

pub(crate) use serve::serve;

/// The goals: a download through the proxy within this much of the direct one…
const GOAL_RATIO: f64 = 1.2;
/// …and the proxy's peak resident memory under this.
const GOAL_RSS_MIB: f64 = 16.0;

/// What the rounds measured.
struct Rounds {
    /// Each route's download times, in `Route::ALL`'s order.
    times: Vec<Vec<Duration>>,
    /// Downloads whose body was not the size served.
    short: Vec<String>,
}

/// Measure, print the table; the exit code as for `bench`.
/// What `bench --proxy` was asked for.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Settings {
    pub megabytes: u64,
    pub runs: usize,
    pub check: bool,
    /// The origin's pace in MB/s (a network link's speed), None for as fast as loopback.
    pub origin_mbps: Option<u64>,
}

pub(super) fn run(drover: &Path, settings: Settings) -> i32 {
    let Settings {
        megabytes,
        runs,
        check,
        origin_mbps,
    } = settings;
    match measure(drover, megabytes, runs, origin_mbps) {
        Ok((rounds, measured, events, client)) => {
            print(&rounds, &measured, &events, &client, settings, check)
        }
        Err(error) => {
            crate::esay!("drover: bench --proxy: {error:#}");
            exit::RUNNER_ERROR
        }
    }
}

/// Start the origin and the proxy, download `runs` rounds (after one warm-up), stop the
/// proxy: the times, what the proxy process cost, its events, and the client used.
fn measure(
    drover: &Path,
    megabytes: u64,
    runs: usize,
    origin_mbps: Option<u64>,
) -> anyhow::Result<(Rounds, Measured, Vec<ConnectionEvent>, Client)> {
    let size = megabytes * 1_000_000;
    let origin = origin::start(size, origin_mbps.map(|mbps| mbps * 1_000_000))
        .context("cannot start the loopback server")?;
    let client = match super::on_path("curl") {
        Some(curl) => Client::Curl(curl),
        None => Client::Own,
    };
    let mut command = Command::new(drover);
    command
        .args(["__egress-proxy-bench", "--allow"])
        .arg(format!("localhost:{origin}"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let (measured, outcome) = measure_while(&mut command, |child| {
        download_rounds(child, &client, origin, size, runs)
    })
    .context("cannot start drover __egress-proxy-bench")?;
    let (rounds, events) = outcome?;
    if measured.exit_code != Some(0) {
        bail!("the proxy process exited {:?}", measured.exit_code);
    }
    Ok((rounds, measured, events, client))
}

/// Learn the proxy's port, download, and collect the events it printed once it ends.
fn download_rounds(
    child: &mut Child,
    client: &Client,
    origin: u16,
    size: u64,
    runs: usize,
) -> anyhow::Result<(Rounds, Vec<ConnectionEvent>)> {
    let stdout = child.stdout.take().context("no pipe from the proxy")?;
    let mut lines = BufReader::new(stdout).lines();
    let first = lines.next().context("the proxy printed nothing")??;
    let proxy = first
        .strip_prefix("port ")
        .and_then(|port| port.parse().ok())
        .with_context(|| format!("the proxy printed {first:?}, not its port"))?;
    // The events arrive while downloading; read them on the side so the pipe never fills.
    let reader = std::thread::spawn(move || lines.map_while(Result::ok).collect::<Vec<_>>());
    let ports = Ports { origin, proxy };
    let mut rounds = Rounds {
        times: vec![Vec::new(); Route::ALL.len()],
        short: Vec::new(),
    };
    for round in 0..=runs {
        // The order turns each round, so no route always runs on another's heels.
        for turn in 0..Route::ALL.len() {
            let index = (turn + round) % Route::ALL.len();
            let route = Route::ALL[index];
            let (wall, bytes) = client::download(client, route, ports)?;
            if bytes != size {
                rounds
                    .short
                    .push(format!("{}: {bytes} of {size} bytes", route.name()));
            }
            if round > 0 {
                rounds.times[index].push(wall);
            }
        }
    }
    drop(child.stdin.take());
    let lines = reader.join().unwrap_or_default();
    let events = lines
        .iter()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    Ok((rounds, events))
}

/// Print the conditions, one row per route, the memory row and the events' check; the
/// exit code.
fn print(
    rounds: &Rounds,
    measured: &Measured,
    events: &[ConnectionEvent],
    client: &Client,
    settings: Settings,
    check: bool,
) -> i32 {
    let Settings {
        megabytes,
        runs,
        origin_mbps,
        ..
    } = settings;
    print_conditions(client, megabytes, runs, origin_mbps);
    let mut missed = print_times(rounds, megabytes);
    missed |= print_memory(measured, runs, megabytes);
    let failed = !rounds.short.is_empty() || !events_add_up(events, runs, megabytes);
    for short in &rounds.short {
        crate::say!("!!! a download came up short: {short}");
    }
    if failed {
        exit::RUNNER_ERROR
    } else if missed && check {
        exit::FAILED
    } else {
        exit::PASSED
    }
}

/// What the figures were measured under, and the table's header.
fn print_conditions(client: &Client, megabytes: u64, runs: usize, origin_mbps: Option<u64>) {
    if cfg!(debug_assertions) {
        crate::say!(
            "note: this drover is a debug build; build with --release for meaningful figures"
        );
    }
    crate::say!(
        "body: {megabytes} MB from a server on 127.0.0.1 {}; client: {}",
        match origin_mbps {
            Some(mbps) => format!("sending at {mbps} MB/s (--origin-mbps: a network link's pace)"),
            None => "as fast as loopback goes (CPU-bound: the proxy's hop competes for the cores)"
                .to_string(),
        },
        match client {
            Client::Curl(path) => format!("{} (one process per download)", path.display()),
            Client::Own => "drover's own (curl is not on PATH)".to_string(),
        }
    );
    crate::say!(
        "runs: {runs} rounds (median), after one warm-up; the four routes take turns going first"
    );
    // The downloads are CPU-bound on loopback: other work on the machine skews them.
    if let Ok(load) = std::fs::read_to_string("/proc/loadavg") {
        let load: Vec<&str> = load.split_whitespace().take(3).collect();
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        crate::say!(
            "machine: {cores} cores, load average {} (the server, the proxy and the client each want a core)",
            load.join(" ")
        );
    }
    crate::say!();
    crate::say!(
        "{:<20} {:>9} {:>8} {:>7} {:>8}  {}",
        "case",
        "ms",
        "MB/s",
        "ratio",
        "goal",
        "result"
    );
}

/// One row per route: the median time, the rate, the ratio to the direct download.
/// Whether a route missed its goal.
fn print_times(rounds: &Rounds, megabytes: u64) -> bool {
    let mut missed = false;
    let mut times = rounds.times.clone();
    let direct = median(&mut times[0]).unwrap_or_default();
    for (index, route) in Route::ALL.iter().enumerate() {
        let taken = median(&mut times[index]).unwrap_or_default();
        let ms = taken.as_secs_f64() * 1000.0;
        let rate = megabytes as f64 / taken.as_secs_f64().max(1e-9);
        if *route == Route::Direct {
            crate::say!(
                "{:<20} {ms:>9.1} {rate:>8.0} {:>7} {:>8}  -",
                route.name(),
                "-",
                "-"
            );
            continue;
        }
        let ratio = taken.as_secs_f64() / direct.as_secs_f64().max(1e-9);
        let met = ratio <= GOAL_RATIO;
        missed |= !met;
        crate::say!(
            "{:<20} {ms:>9.1} {rate:>8.0} {ratio:>7.2} {:>8}  {}",
            route.name(),
            format!("≤{GOAL_RATIO:.2}×"),
            if met { "pass" } else { "MISS" }
        );
    }
    missed
}

/// The proxy process's peak memory against its goal, and what the figure is. Whether it
/// missed.
fn print_memory(measured: &Measured, runs: usize, megabytes: u64) -> bool {
    let rss_mib = measured.max_rss_kib as f64 / 1024.0;
    let met = rss_mib <= GOAL_RSS_MIB;
    crate::say!(
        "{:<20} {:>9} {:>8} {:>7} {:>8}  {}",
        "proxy peak RSS",
        format!("{rss_mib:.1}MiB"),
        "",
        "",
        format!("≤{GOAL_RSS_MIB:.0}MiB"),
        if met { "pass" } else { "MISS" }
    );
    crate::say!();
    crate::say!(
        "peak RSS is the kernel's ru_maxrss of the proxy process (drover __egress-proxy-bench): all it held resident at its peak, the pages of drover's executable it touched included; its heap and stacks alone (RssAnon, sampled every 50 ms) peaked at {:.1} MiB",
        measured.peak_anon_kib as f64 / 1024.0,
    );
    let through = ((runs + 1) * (Route::ALL.len() - 1)) as f64;
    let cpu_ms = measured.cpu.as_secs_f64() * 1000.0;
    crate::say!(
        "the proxy process used {cpu_ms:.0} ms of CPU in all (start-up included): {:.1} ms per download through it, {:.2} ms per MB",
        cpu_ms / through,
        cpu_ms / (through * megabytes as f64)
    );
    !met
}

/// Check that the proxy reported every download through it, allowed, with at least the
/// body's bytes down; print what it reported.
fn events_add_up(events: &[ConnectionEvent], runs: usize, megabytes: u64) -> bool {
    let expected = (runs + 1) * (Route::ALL.len() - 1);
    let allowed = events
        .iter()
        .filter(|event| event.decision == Decision::Allowed)
        .count();
    let down: u64 = events.iter().map(|event| event.bytes_down).sum();
    let whole = events
        .iter()
        .all(|event| event.bytes_down >= megabytes * 1_000_000);
    crate::say!(
        "events: the proxy reported {} connections ({expected} expected), {allowed} allowed, {:.1} MB down in all",
        events.len(),
        down as f64 / 1e6
    );
    let adds_up = events.len() == expected && allowed == expected && whole;
    if !adds_up {
        crate::say!("!!! the proxy's events do not match the downloads made through it");
    }
    adds_up
}
