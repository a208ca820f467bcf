//! What the session may spend and what it spent: money and tokens as its statusLine reports them,
//! and time since its first start (a restored session's time counts from then). A crossing opens
//! the budget breaker and stops the agent; no restart follows.

use super::*;
use crate::usage::{Sample, Tally};

/// The budget, the spend, and whether it was crossed.
#[derive(Debug, Clone)]
pub(super) struct Budget {
    limits: crate::breaker::Budget,
    /// When the budget's time started.
    from: Now,
    tripped: bool,
    tally: Tally,
    /// What was spent when the current cycle started.
    cycle_start: Option<f64>,
}

impl Budget {
    /// `spent` so far (a restored session's), since `since` when that was before `now`.
    pub(super) fn new(limits: crate::breaker::Budget, spent: Tally, since: Option<DateTime<Utc>>, now: Now) -> Self {
        let from = match since.and_then(|t| (now.wall - t).to_std().ok()) {
            // The monotonic clock cannot tell how long ago that was; the wall clock can.
            Some(ago) => Now { mono: now.mono.checked_sub(ago).unwrap_or(now.mono), wall: now.wall - ago },
            None => now,
        };
        Self { limits, from, tripped: false, tally: spent, cycle_start: None }
    }

    pub(super) fn limits(&self) -> crate::breaker::Budget {
        self.limits
    }

    pub(super) fn spent(&self) -> &Tally {
        &self.tally
    }

    /// A statusLine sample's cost and tokens.
    pub(super) fn add(&mut self, sample: &Sample) {
        self.tally.add(sample);
    }

    /// A respawn cycle starts: its spend counts from here. The cost the statusLine shows now.
    pub(super) fn cycle_started(&mut self) -> Option<f64> {
        self.cycle_start = self.tally.spent;
        self.tally.cost
    }

    /// What the cycle under way has spent.
    pub(super) fn cycle_spent(&self) -> Option<f64> {
        self.tally.spent.zip(self.cycle_start).map(|(now, then)| now - then)
    }

    /// When time alone crosses the budget (with the agent running).
    pub(super) fn deadline(&self) -> Option<Instant> {
        self.limits.max_wall_clock.filter(|_| !self.tripped).map(|max| self.from.mono + max)
    }

    /// Why the budget is crossed now, the first time it is: the machine then opens the budget
    /// breaker and stops the agent (no restart follows).
    pub(super) fn crossed(&mut self, now: Now) -> Option<String> {
        if self.tripped {
            return None;
        }
        // The time the machine slept counts: the bound is on how late the run may go on.
        let elapsed = (now.wall - self.from.wall).to_std().unwrap_or_default();
        let elapsed = elapsed.max(now.mono.saturating_duration_since(self.from.mono));
        let cost = self.tally.spent.unwrap_or(0.0);
        let why = self.limits.crossed(cost, self.tally.tokens_spent, elapsed)?;
        self.tripped = true;
        Some(why)
    }
}
