//! The run's limits, checked before every model request.
//!
//! Only accumulated figures are compared — nothing is estimated — so a run never exceeds
//! a limit by more than the one request in flight when it was reached: the request that
//! crosses a limit completes (its tokens are spent by then), its tool calls run, and no
//! further request is made. Each stop names the limit and the figures, because that
//! message is what a CI user reads in the JUnit failure.

use crate::output::counted;
use std::time::Duration;

use tokio::time::Instant;

use super::AgentConfig;
use crate::message::Usage;
use crate::record::EndReason;

/// What the run has used so far.
pub(super) struct Spent<'a> {
    pub turns: u32,
    pub usage: &'a Usage,
    /// None when the model's price is unknown.
    pub cost_usd: Option<f64>,
}

/// The reason and message to stop with, when a limit has been reached.
pub(super) fn before_request(
    config: &AgentConfig,
    started: Instant,
    spent: &Spent<'_>,
) -> Option<(EndReason, String)> {
    if let Some(limit) = config.max_turns
        && spent.turns >= limit
    {
        return Some((
            EndReason::MaxTurns,
            format!(
                "used {} of max_turns {limit} while the model still had tool calls to follow up",
                counted(spent.turns, "turn", "turns")
            ),
        ));
    }
    if let Some(limit) = config.timeout
        && started.elapsed() >= limit
    {
        return Some(timeout(config, started, spent.turns));
    }
    if let (Some(limit), Some(cost)) = (config.max_cost_usd, spent.cost_usd)
        && cost >= limit
    {
        return Some((
            EndReason::Budget,
            format!(
                "spent ${cost:.4} of limits.max_cost_usd ${} after {} ({} tokens); no further request was made",
                usd(limit),
                counted(spent.turns, "turn", "turns"),
                grouped(spent.usage.total())
            ),
        ));
    }
    if let Some(limit) = config.max_tokens
        && spent.usage.total() >= limit
    {
        return Some((
            EndReason::Budget,
            format!(
                "used {} tokens of limits.max_tokens {} after {}; no further request was made",
                grouped(spent.usage.total()),
                grouped(limit),
                counted(spent.turns, "turn", "turns")
            ),
        ));
    }
    None
}

/// The stop for a run that reached its time limit, with the time it ran.
pub(super) fn timeout(config: &AgentConfig, started: Instant, turns: u32) -> (EndReason, String) {
    let limit = config
        .timeout
        .map(|t| humantime::format_duration(t).to_string())
        .unwrap_or_default();
    (
        EndReason::Timeout,
        format!(
            "ran {} of limits.timeout {limit} after {}",
            seconds(started.elapsed()),
            counted(turns, "turn", "turns")
        ),
    )
}

/// A limit in dollars: cents when they say it all (`3.00`), else every digit given.
fn usd(amount: f64) -> String {
    let cents = format!("{amount:.2}");
    if cents.parse::<f64>().is_ok_and(|rounded| rounded == amount) {
        cents
    } else {
        amount.to_string()
    }
}

/// `201344` → `201,344`: token figures people can read at a glance.
fn grouped(count: u64) -> String {
    let digits = count.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

fn seconds(duration: Duration) -> String {
    format!("{:.1}s", duration.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> AgentConfig {
        AgentConfig {
            clock_from: None,
            max_turns: Some(10),
            max_cost_usd: Some(3.0),
            max_tokens: Some(200_000),
            ..AgentConfig::default()
        }
    }

    #[test]
    fn figures_are_written_for_people() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1_000), "1,000");
        assert_eq!(grouped(201_344), "201,344");
        assert_eq!(grouped(1_234_567), "1,234,567");
        assert_eq!(usd(3.0), "3.00");
        assert_eq!(usd(0.5), "0.50");
        assert_eq!(usd(0.005), "0.005");
    }

    #[test]
    fn each_limit_stops_with_its_reason_and_figures() {
        let started = Instant::now();
        let usage = Usage {
            input_tokens: 201_000,
            output_tokens: 344,
            ..Usage::default()
        };
        let under = Usage::default();
        let spent = |turns, usage, cost_usd| Spent {
            turns,
            usage,
            cost_usd,
        };
        assert!(before_request(&config(), started, &spent(3, &under, Some(1.0))).is_none());
        let (reason, message) =
            before_request(&config(), started, &spent(10, &under, Some(0.0))).unwrap();
        assert_eq!(reason, EndReason::MaxTurns);
        assert!(message.contains("10 turns of max_turns 10"), "{message}");
        let (reason, _) =
            before_request(&config(), started, &spent(12, &under, Some(3.0412))).unwrap();
        assert_eq!(reason, EndReason::MaxTurns, "max_turns is checked first");
        let (reason, message2) =
            before_request(&config(), started, &spent(9, &under, Some(3.0412))).unwrap();
        assert_eq!(reason, EndReason::Budget);
        assert!(
            message2.starts_with("spent $3.0412 of limits.max_cost_usd $3.00 after 9 turns"),
            "{message2}"
        );
        let (reason, message3) =
            before_request(&config(), started, &spent(9, &usage, Some(1.0))).unwrap();
        assert_eq!(reason, EndReason::Budget);
        assert!(
            message3.starts_with("used 201,344 tokens of limits.max_tokens 200,000 after 9 turns"),
            "{message3}"
        );
        // An unknown price never stops a run on cost (load refuses such specs anyway).
        assert!(before_request(&config(), started, &spent(1, &under, None)).is_none());
    }

    #[test]
    fn a_passed_deadline_stops_before_the_request() {
        let config = AgentConfig {
            clock_from: None,
            timeout: Some(Duration::from_millis(1)),
            ..AgentConfig::default()
        };
        let started = Instant::now();
        std::thread::sleep(Duration::from_millis(5));
        let usage = Usage::default();
        let spent = Spent {
            turns: 4,
            usage: &usage,
            cost_usd: Some(0.0),
        };
        let (reason, message) = before_request(&config, started, &spent).unwrap();
        assert_eq!(reason, EndReason::Timeout);
        assert!(
            message.starts_with("ran 0.0s of limits.timeout 1ms after 4 turns"),
            "{message}"
        );
    }
}
