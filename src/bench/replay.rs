//! `drover bench --replay`: a recorded run of many tool calls replayed, against the
//! scripted run that recorded it, measured in the same bench. The two do the same tool
//! work (the replay runs every tool again), so their ratio is what replaying adds:
//! reading and checking the recording, comparing every result.

use anyhow::{Context, bail};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::timing::{median, run_once};
use crate::exit;

/// The goal: a replay costs at most this much more than the run it replays.
const GOAL_RATIO: f64 = 1.2;

/// Build a scripted task of `calls` tool calls (10 a turn: Read, Glob, Grep, LS) under
/// `scratch`, time its run and its replay, print; the exit code as for `bench`.
pub(super) fn run(drover: &Path, scratch: &Path, calls: usize, runs: usize, check: bool) -> i32 {
    match measure(drover, scratch, calls, runs) {
        Ok((run, replay)) => {
            let ratio = replay.as_secs_f64() / run.as_secs_f64().max(1e-9);
            let met = ratio <= GOAL_RATIO;
            crate::say!(
                "runs: {runs} of each (median), after one warm-up; {calls} tool calls in {} turns",
                calls.div_ceil(10)
            );
            crate::say!();
            crate::say!(
                "{:<28} {:>10} {:>10} {:>7} {:>6}  {}",
                "case",
                "replay ms",
                "run ms",
                "ratio",
                "goal",
                "result"
            );
            crate::say!(
                "{:<28} {:>10.0} {:>10.0} {:>7.2} {:>6}  {}",
                format!("replay {calls} calls --strict"),
                replay.as_secs_f64() * 1000.0,
                run.as_secs_f64() * 1000.0,
                ratio,
                format!("{GOAL_RATIO}×"),
                if met { "met" } else { "MISSED" }
            );
            crate::say!();
            crate::say!(
                "run ms is the scripted run that recorded the transcript (the same tools, the same calls); the replay verifies its hash chain, plays it back and compares every result"
            );
            if !met && check {
                exit::FAILED
            } else {
                exit::PASSED
            }
        }
        Err(error) => {
            crate::esay!("drover: bench --replay: {error:#}");
            exit::RUNNER_ERROR
        }
    }
}

fn measure(
    drover: &Path,
    scratch: &Path,
    calls: usize,
    runs: usize,
) -> anyhow::Result<(Duration, Duration)> {
    let spec = write_task(scratch, calls)?;
    let recorded = scratch.join("replay-recorded");
    let replayed = scratch.join("replay-replayed");
    let run_args = vec![
        "run".to_string(),
        spec.display().to_string(),
        "--quiet".into(),
        "--artifacts".into(),
        recorded.display().to_string(),
    ];
    let replay_args = vec![
        "replay".to_string(),
        recorded
            .join("bench-replay/transcript.jsonl")
            .display()
            .to_string(),
        "--strict".into(),
        "--quiet".into(),
        "--artifacts".into(),
        replayed.display().to_string(),
    ];
    let mut run_times = Vec::new();
    let mut replay_times = Vec::new();
    for round in 0..=runs {
        let run = timed(drover, &run_args, scratch)?;
        let replay = timed(drover, &replay_args, scratch)?;
        // The first round warms the caches.
        if round > 0 {
            run_times.push(run);
            replay_times.push(replay);
        }
    }
    let run = median(&mut run_times).context("no run was timed")?;
    let replay = median(&mut replay_times).context("no replay was timed")?;
    Ok((run, replay))
}

fn timed(drover: &Path, args: &[String], dir: &Path) -> anyhow::Result<Duration> {
    let run =
        run_once(drover, args, dir).with_context(|| format!("cannot run drover {}", args[0]))?;
    if run.exit_code != Some(0) {
        bail!(
            "drover {} exited {:?}: {}",
            args[0],
            run.exit_code,
            run.stderr
        );
    }
    Ok(run.wall)
}

/// The task: a small workspace, and a script of `calls` read-only calls.
fn write_task(scratch: &Path, calls: usize) -> anyhow::Result<PathBuf> {
    let ws = scratch.join("replay-workspace");
    std::fs::create_dir_all(ws.join("src"))
        .with_context(|| format!("cannot create {}", ws.display()))?;
    for n in 0..20 {
        let text: String = (0..50)
            .map(|line| format!("pub fn f{n}_{line}() -> u32 {{ {line} }}\n"))
            .collect();
        std::fs::write(ws.join(format!("src/f{n}.rs")), text)
            .with_context(|| format!("cannot write in {}", ws.display()))?;
    }
    let mut script = String::new();
    for turn in 0..calls.div_ceil(10) {
        script.push_str("    - tool_calls:\n");
        for call in 0..10.min(calls - turn * 10) {
            let n = (turn * 10 + call) % 20;
            let input = match call % 4 {
                0 => format!("{{ name: Read, input: {{ file_path: src/f{n}.rs }} }}"),
                1 => "{ name: Glob, input: { pattern: \"src/*.rs\" } }".to_string(),
                2 => format!(
                    "{{ name: Grep, input: {{ pattern: \"f{n}_4\", output_mode: content }} }}"
                ),
                _ => "{ name: LS, input: { path: src } }".to_string(),
            };
            script.push_str(&format!("        - {input}\n"));
        }
    }
    let spec = format!(
        "version: 1\nname: bench-replay\nprompt: read around\nworkspace: replay-workspace\nisolation: copy\nmodel:\n  provider: script\n  script:\n{script}    - text: done\nlimits:\n  max_turns: {}\n",
        calls.div_ceil(10) + 5
    );
    let path = scratch.join("replay-task.yaml");
    std::fs::write(&path, spec).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}
