//! The two circuit breakers, unrelated to each other.
//!
//! - The **no-progress** breaker stops respawn cycles that achieve nothing. Progress is measured,
//!   not self-reported: the content of the session's working tree changed between two cycles
//!   ([`crate::git::fingerprint`]; the cycle's own notes do not count). Two cycles without progress
//!   half-open it, three open it; progress while half-open closes it.
//! - The **crash-loop** breaker stops restarting an agent that keeps dying: five non-zero exits
//!   within ten seconds open it, and only an explicit reset closes it. A clean exit clears the count
//!   but does not un-trip it.
//!
//! Both are pure; the session actor feeds them and journals their changes.

use std::collections::VecDeque;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BreakerState {
    Closed,
    HalfOpen,
    Open,
}

impl BreakerState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Closed => "closed",
            Self::HalfOpen => "half-open",
            Self::Open => "open",
        }
    }
}

/// Which breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BreakerKind {
    /// Respawn cycles that achieve nothing.
    NoProgress,
    /// An agent that keeps dying, or restarts that achieve nothing.
    CrashLoop,
}

impl BreakerKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NoProgress => "no-progress",
            Self::CrashLoop => "crash-loop",
        }
    }
}

/// A breaker's change, for the journal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trip {
    pub state: BreakerState,
    pub reason: String,
}

/// Cycles without progress before half-open, and before open.
pub const NO_PROGRESS_HALF_OPEN: u32 = 2;
pub const NO_PROGRESS_OPEN: u32 = 3;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoProgress {
    pub state: BreakerState,
    misses: u32,
}

impl Default for NoProgress {
    fn default() -> Self {
        Self { state: BreakerState::Closed, misses: 0 }
    }
}

impl NoProgress {
    /// The verdict on one cycle: did the repository move since the last one?
    pub fn record(&mut self, progress: bool) -> Option<Trip> {
        let before = self.state;
        if progress {
            self.misses = 0;
            if self.state == BreakerState::HalfOpen {
                self.state = BreakerState::Closed;
            }
        } else if self.state != BreakerState::Open {
            self.misses += 1;
            if self.misses >= NO_PROGRESS_OPEN {
                self.state = BreakerState::Open;
            } else if self.misses >= NO_PROGRESS_HALF_OPEN {
                self.state = BreakerState::HalfOpen;
            }
        }
        (self.state != before).then(|| Trip {
            state: self.state,
            reason: match self.state {
                BreakerState::Closed => "the repository moved again".to_string(),
                _ => format!("{} cycles in a row without progress in the repository", self.misses),
            },
        })
    }

    pub fn reset(&mut self) -> Option<Trip> {
        let was = self.state;
        *self = Self::default();
        (was != BreakerState::Closed).then(|| Trip { state: BreakerState::Closed, reason: "reset by the user".into() })
    }
}

/// Non-zero exits within the window that trip the crash-loop breaker.
pub const CRASH_LOOP_EXITS: usize = 5;
pub const CRASH_LOOP_WINDOW: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CrashLoop {
    exits: VecDeque<Instant>,
    tripped: bool,
}

impl CrashLoop {
    pub fn is_open(&self) -> bool {
        self.tripped
    }

    /// The agent's process exited with `code` at `now`.
    pub fn record_exit(&mut self, code: i32, now: Instant) -> Option<Trip> {
        if code == 0 {
            // A clean exit clears the count; it does not un-trip the breaker.
            self.exits.clear();
            return None;
        }
        self.exits.push_back(now);
        while self.exits.front().is_some_and(|t| now.saturating_duration_since(*t) > CRASH_LOOP_WINDOW) {
            self.exits.pop_front();
        }
        if !self.tripped && self.exits.len() >= CRASH_LOOP_EXITS {
            self.tripped = true;
            return Some(Trip {
                state: BreakerState::Open,
                reason: format!(
                    "{} non-zero exits within {} s; no more automatic restarts until `nightshift breaker reset`",
                    self.exits.len(),
                    CRASH_LOOP_WINDOW.as_secs()
                ),
            });
        }
        None
    }

    /// Only an explicit reset closes it.
    pub fn reset(&mut self) -> Option<Trip> {
        let was = self.tripped;
        *self = Self::default();
        was.then(|| Trip { state: BreakerState::Closed, reason: "reset by the user".into() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_progress_half_opens_at_two_opens_at_three_and_progress_closes_half_open() {
        let mut b = NoProgress::default();
        assert_eq!(b.record(false), None);
        assert_eq!(b.record(false).unwrap().state, BreakerState::HalfOpen);
        assert_eq!(b.record(true).unwrap().state, BreakerState::Closed, "progress in half-open closes it");
        b.record(false);
        b.record(false);
        let open = b.record(false).unwrap();
        assert_eq!(open.state, BreakerState::Open);
        assert!(open.reason.contains("3 cycles"));
        assert_eq!(b.record(true), None, "open stays open: no cycles run to show progress");
        assert_eq!(b.state, BreakerState::Open);
        assert_eq!(b.reset().unwrap().state, BreakerState::Closed);
    }

    #[test]
    fn crash_loop_trips_on_five_quick_failures_and_a_clean_exit_resets_the_count_not_the_trip() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let mut b = CrashLoop::default();
        for i in 0..4 {
            assert_eq!(b.record_exit(1, t0 + s(i)), None);
        }
        assert_eq!(b.record_exit(0, t0 + s(4)), None, "a clean exit");
        for i in 5..9 {
            assert_eq!(b.record_exit(1, t0 + s(i)), None, "the count started again");
        }
        assert_eq!(b.record_exit(1, t0 + s(9)).unwrap().state, BreakerState::Open);
        assert!(b.is_open());
        assert_eq!(b.record_exit(0, t0 + s(10)), None);
        assert!(b.is_open(), "a clean exit does not un-trip it");
        assert_eq!(b.reset().unwrap().state, BreakerState::Closed);
        assert!(!b.is_open());
    }

    #[test]
    fn slow_failures_never_trip_it() {
        let t0 = Instant::now();
        let mut b = CrashLoop::default();
        for i in 0..20 {
            assert_eq!(b.record_exit(1, t0 + Duration::from_secs(3 * i)), None);
        }
    }
}
