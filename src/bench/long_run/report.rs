//! The long run's printed table and goals: one row per run as it finishes, then each
//! goal met or missed, with the figures it was judged on.

use std::path::Path;

use super::Options;
use super::runs::{Case, Outcome, Replayed};

/// drover's peak RSS goal in every run (README, "Benchmarks").
const RSS_GOAL_MIB: f64 = 64.0;
/// Request bytes summed without management over those with it, at least.
const BYTES_GOAL_RATIO: f64 = 5.0;

/// An exit code as printed: the number, or `signal` when a signal ended the process.
fn exit_text(code: Option<i32>) -> String {
    code.map_or("signal".to_string(), |code| code.to_string())
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// What the runs were made under, and the table's header.
pub(super) fn conditions(options: &Options, repository: &Path) {
    if cfg!(debug_assertions) {
        crate::say!(
            "note: this drover is a debug build; build with --release for meaningful figures"
        );
    }
    crate::say!(
        "long run: {} model turns over {} (a Read of a {}-byte file each turn, a Write every 10th, then a text), against a mock Anthropic API on 127.0.0.1 that counts a request's body bytes / 4 as its tokens and refuses one over the window ({} tokens) with 400 `prompt is too long`",
        options.scenario.turns,
        repository.display(),
        options.scenario.result_bytes,
        options.window
    );
    crate::say!();
    crate::say!(
        "{:<22} {:>7} {:<18} {:>4} {:>5} {:>8} {:>10} {:>9} {:>8} {:>8} {:>11} {:>9} {:>9} {:>7}",
        "run",
        "window",
        "reason",
        "exit",
        "turns",
        "requests",
        "summed MB",
        "peak KB",
        "peak tok",
        "refusals",
        "compactions",
        "peak RSS",
        "peak anon",
        "wall s"
    );
}

/// One finished run's row.
pub(super) fn row(outcome: &Outcome) {
    let figures = &outcome.figures;
    let measured = &outcome.measured;
    crate::say!(
        "{:<22} {:>7} {:<18} {:>4} {:>5} {:>8} {:>10.2} {:>9.1} {:>8} {:>8} {:>11} {:>6.1}MiB {:>6.1}MiB {:>7.1}",
        outcome.case.label,
        figures.window.map_or("none".to_string(), |w| w.to_string()),
        if outcome.reason.is_empty() {
            "-"
        } else {
            &outcome.reason
        },
        exit_text(measured.exit_code),
        outcome.turns,
        figures.requests.len(),
        figures.bytes_summed as f64 / 1e6,
        figures.peak_bytes as f64 / 1e3,
        figures.peak_tokens,
        figures.refusals,
        outcome.compactions,
        mib(measured.max_rss_kib),
        mib(measured.peak_anon_kib),
        measured.wall.as_secs_f64()
    );
}

/// One goal and whether it was met, or a figure shown without a goal.
pub(super) struct Goal {
    text: String,
    met: Option<bool>,
}

/// Every goal of the long run.
pub(super) struct Verdict {
    goals: Vec<Goal>,
}

impl Verdict {
    pub(super) fn of(
        options: &Options,
        outcomes: &[Outcome],
        replays: &[(Case, Replayed)],
    ) -> Verdict {
        let mut goals = Vec::new();
        let find = |name: &str| outcomes.iter().find(|o| o.case.name == name);
        let window = options.window;
        let turns = options.scenario.turns;
        let off = find("off-window");
        if let Some(off) = off {
            goals.push(unmanaged_fails(off, window));
        }
        let unbounded = find("off-unbounded");
        for managed in outcomes.iter().filter(|o| o.case.context != "off") {
            goals.push(finishes(managed, turns, window));
            if let Some(unbounded) = unbounded {
                goals.extend(savings(unbounded, managed, off));
            }
        }
        goals.push(memory(outcomes));
        for (case, replayed) in replays {
            goals.push(replay_goal(*case, replayed));
        }
        Verdict { goals }
    }

    pub(super) fn missed(&self) -> bool {
        self.goals.iter().any(|goal| goal.met == Some(false))
    }
}

/// Run 1: no management against the window ends `context_exhausted`, exit 1.
fn unmanaged_fails(off: &Outcome, window: u64) -> Goal {
    let figures = &off.figures;
    let met = off.reason == "context_exhausted" && off.measured.exit_code == Some(1);
    Goal {
        text: format!(
            "{}: ends context_exhausted with exit 1 — reached turn {} and the request for turn {} was refused ({} tokens > {window}): {}",
            off.case.label,
            figures.turns,
            figures.turns + 1,
            figures.largest_refused_tokens,
            if off.message.is_empty() {
                "(no message)"
            } else {
                &off.message
            }
        ),
        met: Some(met),
    }
}

/// A managed run finishes every turn, every request inside the window.
fn finishes(managed: &Outcome, turns: u32, window: u64) -> Goal {
    let figures = &managed.figures;
    let met = managed.reason == "end_turn"
        && managed.measured.exit_code == Some(0)
        && figures.turns == turns
        && figures.refusals == 0
        && figures.peak_tokens <= window;
    Goal {
        text: format!(
            "{}: finishes (end_turn, exit 0) after {} of {turns} turns with every request inside the window — peak {} of {window} tokens, {} refused, {} compactions (reason {}, exit {})",
            managed.case.label,
            figures.turns,
            figures.peak_tokens,
            figures.refusals,
            managed.compactions,
            managed.reason,
            exit_text(managed.measured.exit_code)
        ),
        met: Some(met),
    }
}

/// What management saves: the whole run's request bytes against the unmanaged run
/// without a window (the goal), and over the turns the unmanaged run with the window
/// could make (a figure).
fn savings(unbounded: &Outcome, managed: &Outcome, off: Option<&Outcome>) -> Vec<Goal> {
    let ratio = |a: u64, b: u64| a as f64 / (b as f64).max(1.0);
    let whole = ratio(unbounded.figures.bytes_summed, managed.figures.bytes_summed);
    let mut goals = vec![Goal {
        text: format!(
            "request bytes summed over the run, no management / {}: {:.1} MB / {:.1} MB = {whole:.1}× (goal ≥ {BYTES_GOAL_RATIO}×)",
            managed.case.label,
            unbounded.figures.bytes_summed as f64 / 1e6,
            managed.figures.bytes_summed as f64 / 1e6
        ),
        met: Some(whole >= BYTES_GOAL_RATIO),
    }];
    if let Some(off) = off {
        let reached = off.figures.turns;
        let a = unbounded.figures.bytes_through(reached);
        let b = managed.figures.bytes_through(reached);
        goals.push(Goal {
            text: format!(
                "request bytes over the {reached} turns the window allowed without management, no management / {}: {:.2} MB / {:.2} MB = {:.2}×",
                managed.case.label,
                a as f64 / 1e6,
                b as f64 / 1e6,
                ratio(a, b)
            ),
            met: None,
        });
    }
    goals
}

/// drover's peak RSS stays under the goal in every managed run (an unmanaged run
/// without a window holds requests that grow with the turns: shown, not judged).
fn memory(outcomes: &[Outcome]) -> Goal {
    let largest = outcomes
        .iter()
        .filter(|o| o.case.context != "off")
        .max_by_key(|o| o.measured.max_rss_kib)
        .map(|o| (mib(o.measured.max_rss_kib), o.case.label));
    let (peak, label) = largest.unwrap_or((0.0, "-"));
    Goal {
        text: format!(
            "drover's peak RSS in every managed run under {RSS_GOAL_MIB} MiB: largest {peak:.1} MiB ({label})"
        ),
        met: Some(peak < RSS_GOAL_MIB),
    }
}

/// The replay of a managed run: exit 0, the same diff, no drift.
fn replay_goal(case: Case, replayed: &Replayed) -> Goal {
    let met = replayed.exit_code == Some(0) && replayed.same_diff && !replayed.drift;
    Goal {
        text: format!(
            "replay of {}: exit {}, reason {}, diff.patch {}, {}",
            case.label,
            exit_text(replayed.exit_code),
            replayed.reason,
            if replayed.same_diff {
                "byte-identical"
            } else {
                "DIFFERENT (or empty)"
            },
            if replayed.drift { "DRIFT" } else { "no drift" }
        ),
        met: Some(met),
    }
}

/// Print the goals.
pub(super) fn goals(verdict: &Verdict) {
    crate::say!();
    for goal in &verdict.goals {
        let mark = match goal.met {
            Some(true) => "met   ",
            Some(false) => "MISSED",
            None => "figure",
        };
        crate::say!("{mark}  {}", goal.text);
    }
}

/// What the columns mean and where the runs' files are.
pub(super) fn notes(dir: &Path) {
    crate::say!();
    crate::say!(
        "turns: the model turns summary.json counts; requests, summed MB, peak KB, peak tok, refusals: the mock's count of the requests it accepted (body bytes; tokens = bytes / 4) and refused; compactions: summary.json's; peak RSS: the drover process's ru_maxrss (its executable's pages included); peak anon: its heap and stacks (RssAnon, sampled every 50 ms)"
    );
    crate::say!(
        "each run's spec, artifacts, stderr and replay are under {}/<run>/ (off-window, off-unbounded, clear, summarize)",
        dir.display()
    );
}
