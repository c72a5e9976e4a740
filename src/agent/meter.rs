//! What the whole task has spent: the main agent and every sub-agent draw on one
//! budget, so `limits.max_cost_usd` and `limits.max_tokens` hold for the task however
//! its work is split between agents (and however many run at once).

use std::sync::Mutex;

use std::collections::BTreeMap;

use crate::message::Usage;
use crate::record::{AgentRun, Denial};

/// The task's spending, shared by its agents, and the record of each sub-agent run.
#[derive(Debug, Default)]
pub(crate) struct Meter {
    inner: Mutex<Totals>,
}

#[derive(Debug, Default)]
struct Totals {
    /// Model turns of every agent.
    turns: u32,
    usage: Usage,
    cost_usd: f64,
    /// A turn's price was unknown: the task's cost is unknown too, never understated.
    unpriced: bool,
    agents: Vec<AgentRun>,
    /// Calls the policy denied in sub-agents.
    denials: Vec<Denial>,
    /// Calls the policy allowed in sub-agents, by tool name.
    calls: BTreeMap<String, u64>,
}

impl Meter {
    fn lock(&self) -> std::sync::MutexGuard<'_, Totals> {
        // Plain numbers: a panic elsewhere cannot leave them half-written.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Count one model turn: its tokens and what they cost (None: price unknown).
    pub(crate) fn add(&self, usage: &Usage, cost_usd: Option<f64>) {
        let mut totals = self.lock();
        totals.turns = totals.turns.saturating_add(1);
        totals.usage.add(usage);
        match cost_usd {
            Some(cost) => totals.cost_usd += cost,
            None => totals.unpriced = true,
        }
    }

    /// Tokens the task paid for in no turn of its own (a resumed task's dropped turns):
    /// they count toward its budget and figures, not its turns.
    pub(crate) fn add_spent(&self, usage: &Usage, cost_usd: Option<f64>) {
        if usage.total() == 0 {
            return;
        }
        let mut totals = self.lock();
        totals.usage.add(usage);
        match cost_usd {
            Some(cost) => totals.cost_usd += cost,
            None => totals.unpriced = true,
        }
    }

    /// Model turns of every agent of the task so far.
    pub(crate) fn turns(&self) -> u32 {
        self.lock().turns
    }

    /// The task's tokens so far.
    pub(crate) fn usage(&self) -> Usage {
        self.lock().usage
    }

    /// The task's cost so far; None once any turn's price was unknown.
    pub(crate) fn cost_usd(&self) -> Option<f64> {
        let totals = self.lock();
        (!totals.unpriced).then_some(totals.cost_usd)
    }

    /// Note a sub-agent run that ended, with the calls it made.
    pub(crate) fn record_agent(
        &self,
        run: AgentRun,
        denials: &[Denial],
        calls: &BTreeMap<String, u64>,
    ) {
        let mut totals = self.lock();
        totals.agents.push(run);
        totals.denials.extend_from_slice(denials);
        for (name, count) in calls {
            *totals.calls.entry(name.clone()).or_default() += count;
        }
    }

    /// The calls sub-agents' policy checks denied.
    pub(crate) fn agent_denials(&self) -> Vec<Denial> {
        self.lock().denials.clone()
    }

    /// The calls sub-agents made that the policy allowed, by tool name.
    pub(crate) fn agent_calls(&self) -> BTreeMap<String, u64> {
        self.lock().calls.clone()
    }

    /// Every sub-agent run so far, in the order they ended.
    pub(crate) fn agents(&self) -> Vec<AgentRun> {
        self.lock().agents.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_unknown_price_makes_the_total_unknown() {
        let meter = Meter::default();
        let usage = Usage {
            input_tokens: 10,
            output_tokens: 5,
            ..Usage::default()
        };
        meter.add(&usage, Some(0.5));
        meter.add(&usage, Some(0.25));
        assert_eq!(meter.cost_usd(), Some(0.75));
        assert_eq!(meter.usage().total(), 30);
        meter.add(&usage, None);
        assert_eq!(meter.cost_usd(), None);
        assert_eq!(meter.usage().total(), 45);
    }

    #[test]
    fn tokens_spent_outside_a_turn_count_but_are_no_turn() {
        let meter = Meter::default();
        let usage = Usage {
            input_tokens: 10,
            ..Usage::default()
        };
        meter.add(&usage, Some(1.0));
        meter.add_spent(&usage, Some(0.5));
        meter.add_spent(&Usage::default(), None);
        assert_eq!(meter.turns(), 1);
        assert_eq!(meter.usage().total(), 20);
        assert_eq!(meter.cost_usd(), Some(1.5), "nothing spent is not unpriced");
    }
}
