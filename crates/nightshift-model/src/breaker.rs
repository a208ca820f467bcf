//! The circuit breakers, unrelated to each other.
//!
//! - The **no-progress** breaker stops respawn cycles that achieve nothing. Progress is measured,
//!   not self-reported: the content of the session's working tree changed between two cycles
//!   (the runtime's `git::fingerprint`; the cycle's own notes do not count). Two cycles without progress
//!   half-open it, three open it; progress while half-open closes it.
//! - The **crash-loop** breaker stops restarting an agent that keeps dying: five lives in a row that
//!   ended non-zero within a minute of starting open it, and so do more restarts in a row than the
//!   cap (ten) with the working tree unchanged. Restarts back off on a ladder (2 s, 10 s, 30 s, 2 min,
//!   5 min).
//!
//! An open breaker does not end the night: it waits ([`Backoff`]: 15, 30, 60, then 120 minutes),
//! goes half-open and lets one probe through — a cycle, or a restart — which closes it on progress
//! (the working tree moved; the agent lived past a minute) and opens it again otherwise, for the
//! next, longer wait. After the last wait it stays open until `nightshift breaker reset`, which
//! works at any time; an empty ladder keeps the old "open until I say".
//!
//! - The **budget** breaker stops a run that spent what the user allowed: money (the harness's or
//!   the statusLine's own totals), tokens (a Claude loop's input, output and cache tokens, a Codex
//!   loop's input and output, a terminal session's input and output as its statusLine counts them),
//!   or time (an outer bound on how late a run may end). Loops and terminal sessions alike.
//!
//! All are pure; the session and loop machines feed them and journal their changes.

use std::time::Duration;

use serde::{Deserialize, Serialize};

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
    /// A run that spent what it was allowed.
    Budget,
}

impl BreakerKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NoProgress => "no-progress",
            Self::CrashLoop => "crash-loop",
            Self::Budget => "budget",
        }
    }
}

/// What a run may spend; each ceiling optional.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Budget {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// How long after its start the run may go on (wall clock: time the machine slept counts).
    #[serde(skip_serializing_if = "Option::is_none", with = "crate::clock::opt_secs")]
    pub max_wall_clock: Option<Duration>,
}

impl Budget {
    /// A ceiling on what is spent (money or tokens), which needs every spend measured.
    pub fn has_spend_ceiling(&self) -> bool {
        self.max_cost_usd.is_some() || self.max_tokens.is_some()
    }

    /// Which ceiling `cost`, `tokens` and `elapsed` crossed, said for people; `None` when none.
    pub fn crossed(&self, cost_usd: f64, tokens: u64, elapsed: Duration) -> Option<String> {
        if let Some(max) = self.max_cost_usd.filter(|max| cost_usd >= *max) {
            return Some(format!("spent {} of its {}", crate::units::usd(cost_usd), crate::units::usd(max)));
        }
        if let Some(max) = self.max_tokens.filter(|max| tokens >= *max) {
            return Some(format!("used {tokens} tokens of its {max}"));
        }
        if let Some(max) = self.max_wall_clock.filter(|max| elapsed >= *max) {
            return Some(format!("ran its {}", humantime::format_duration(max)));
        }
        None
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
    /// Half-open after a wait: the next measured cycle start is the probe's baseline, not a verdict
    /// (the time the breaker was open changed nothing, and says nothing).
    pub probing: bool,
}

impl Default for NoProgress {
    fn default() -> Self {
        Self { state: BreakerState::Closed, misses: 0, probing: false }
    }
}

impl NoProgress {
    /// The open breaker's wait is over: half-open, one probe cycle goes through.
    pub fn probe(&mut self) -> Trip {
        self.state = BreakerState::HalfOpen;
        self.probing = true;
        Trip { state: BreakerState::HalfOpen, reason: "after its wait: one probe cycle goes through".into() }
    }

    /// The verdict on one cycle: did the repository move since the last one?
    pub fn record(&mut self, progress: bool) -> Option<Trip> {
        self.probing = false;
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

/// The waits of an open no-progress or crash-loop breaker before each probe, by default: four tries
/// a night, then open until reset.
pub const RETRY: [Duration; 4] = [
    Duration::from_secs(15 * 60),
    Duration::from_secs(30 * 60),
    Duration::from_secs(60 * 60),
    Duration::from_secs(120 * 60),
];

/// An open breaker's wait before it tries again: the tries it has had, and when the next is due
/// (`None`: it waits for no probe — closed, probing now, or out of tries).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backoff<T> {
    tries: u32,
    next: Option<T>,
}

impl<T> Default for Backoff<T> {
    fn default() -> Self {
        Self { tries: 0, next: None }
    }
}

impl<T: Copy + Ord + std::ops::Add<Duration, Output = T>> Backoff<T> {
    /// The breaker opened at `now`: the wait before its next probe, from `ladder` (the next rung
    /// after each try), or `None` when the ladder is spent (it stays open).
    pub fn opened(&mut self, now: T, ladder: &[Duration]) -> Option<Duration> {
        let wait = ladder.get(self.tries as usize).copied();
        self.next = wait.map(|w| now + w);
        wait
    }

    /// When the next probe is due.
    pub fn next(&self) -> Option<T> {
        self.next
    }

    /// Whether a probe is due at `now`: if so, it is counted and the wait is over.
    pub fn probe_due(&mut self, now: T) -> bool {
        if self.next.is_some_and(|t| t <= now) {
            self.next = None;
            self.tries += 1;
            return true;
        }
        false
    }

    /// The breaker closed (progress, or the user's reset): the next opening starts the ladder again.
    pub fn closed(&mut self) {
        self.tries = 0;
        self.next = None;
    }

    pub fn tries(&self) -> u32 {
        self.tries
    }
}

/// What an opened breaker's journal line adds: when it tries again, or that it will not.
pub fn retry_words(wait: Option<Duration>, what: &str) -> String {
    match wait {
        Some(w) => format!("; it tries {what} again in {}", humantime::format_duration(w)),
        None => "; it stays open until `nightshift breaker reset`".into(),
    }
}

/// A life that ends non-zero within this long of its start is a strike.
pub const SHORT_LIFE: Duration = Duration::from_secs(60);
/// Strikes in a row that open the crash-loop breaker.
pub const STRIKES: u32 = 5;
/// The default waits before the first, second, … restart since the working tree last changed (the
/// last one repeats): respawn's `restart_backoff`.
pub const LADDER: [Duration; 5] = [
    Duration::from_secs(2),
    Duration::from_secs(10),
    Duration::from_secs(30),
    Duration::from_secs(120),
    Duration::from_secs(300),
];

/// The crash-loop breaker: stops restarting an agent that keeps dying (five lives in a row that
/// ended badly within a minute), or whose restarts achieve nothing (more restarts than the cap with
/// the working tree unchanged). Restarts back off on a ladder ([`LADDER`] unless the settings give
/// another); measured progress starts it again from the bottom. Open, it waits on the breaker's
/// ladder ([`RETRY`] unless the settings give another: 15, 30, 60, then 120 minutes), goes
/// half-open and lets one restart through ([`CrashLoop::probe`]): an agent that lives past a minute,
/// or a restart after measured progress, closes it ([`CrashLoop::lived`],
/// [`CrashLoop::closed_by_progress`]); anything else opens it again for the next, longer wait. Past
/// the last wait, or with an empty ladder, only the explicit reset closes it, which it does at any
/// time.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CrashLoop {
    strikes: u32,
    restarts: u32,
    tripped: bool,
    /// Half-open after a wait: one restart went through, and what opened the breaker says what
    /// closes it.
    probing: Option<Cause>,
    /// What opened it last.
    cause: Option<Cause>,
    /// A probe's restart came with progress: closed, not said yet.
    closed: bool,
}

/// What opened the crash-loop breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cause {
    /// Lives in a row that ended badly within a minute: a life past a minute closes it.
    ShortLives,
    /// Restarts that changed nothing: a restart after measured progress closes it.
    NoProgress,
}

impl CrashLoop {
    pub fn is_open(&self) -> bool {
        self.tripped
    }

    /// A life ended: `quickly` when it ended non-zero within [`SHORT_LIFE`]; a long or clean life
    /// clears the strikes.
    pub fn life_ended(&mut self, quickly: bool) -> Option<Trip> {
        self.strikes = if quickly { self.strikes + 1 } else { 0 };
        if self.tripped || self.strikes < STRIKES {
            return None;
        }
        self.tripped = true;
        self.probing = None;
        self.cause = Some(Cause::ShortLives);
        Some(Trip {
            state: BreakerState::Open,
            reason: format!(
                "{} lives in a row ended within a minute: no more automatic restarts for now",
                self.strikes
            ),
        })
    }

    /// The agent is to be started again; `progress` says whether the working tree changed since the
    /// last restart. The wait before the restart, or the trip when `cap` restarts in a row changed
    /// nothing.
    pub fn restart(&mut self, progress: bool, cap: u32, ladder: &[Duration]) -> Result<Duration, Trip> {
        if progress {
            self.restarts = 0;
            if self.probing == Some(Cause::NoProgress) {
                // The probe's life moved the working tree: the breaker closes with this restart.
                self.probing = None;
                self.cause = None;
                self.closed = true;
            }
        }
        if self.restarts >= cap {
            self.tripped = true;
            self.probing = None;
            self.cause = Some(Cause::NoProgress);
            return Err(Trip {
                state: BreakerState::Open,
                reason: format!(
                    "{cap} restarts without progress in the working tree: no more automatic restarts for now"
                ),
            });
        }
        let ladder = if ladder.is_empty() { &LADDER[..] } else { ladder };
        let wait = ladder[(self.restarts as usize).min(ladder.len() - 1)];
        self.restarts += 1;
        Ok(wait)
    }

    /// Whether one more restart without progress stays within `cap` (a deliberate one, such as an
    /// account switch, is not made past it).
    pub fn can_restart(&self, cap: u32) -> bool {
        !self.tripped && self.restarts < cap
    }

    /// The explicit reset closes it at any time; the counts start again.
    pub fn reset(&mut self) -> Option<Trip> {
        let was = self.tripped || self.probing.is_some();
        *self = Self::default();
        was.then(|| Trip { state: BreakerState::Closed, reason: "reset by the user".into() })
    }

    /// The open breaker's wait is over: half-open, one restart goes through. One more short life,
    /// or one more restart without progress at `cap`, opens it again.
    pub fn probe(&mut self, cap: u32) -> Trip {
        self.tripped = false;
        self.probing = self.cause;
        match self.cause {
            Some(Cause::ShortLives) => self.strikes = STRIKES - 1,
            _ => self.restarts = cap,
        }
        Trip { state: BreakerState::HalfOpen, reason: "after its wait: the agent is started once more".into() }
    }

    /// A probe of short lives is under way (its agent's first minute decides).
    pub fn is_probing(&self) -> bool {
        self.probing == Some(Cause::ShortLives)
    }

    /// The probe's agent lived past [`SHORT_LIFE`]: a loop of short lives is broken.
    pub fn lived(&mut self) -> Option<Trip> {
        if self.probing != Some(Cause::ShortLives) {
            return None;
        }
        *self = Self::default();
        Some(Trip {
            state: BreakerState::Closed,
            reason: "the agent started after the wait lived past a minute".into(),
        })
    }

    /// The probe of restarts without progress was answered by progress: closed (said once).
    pub fn closed_by_progress(&mut self) -> Option<Trip> {
        std::mem::take(&mut self.closed)
            .then(|| Trip { state: BreakerState::Closed, reason: "the working tree moved again".into() })
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
    fn five_short_lives_in_a_row_open_it_and_a_long_one_clears_the_count() {
        let mut b = CrashLoop::default();
        for _ in 0..4 {
            assert_eq!(b.life_ended(true), None);
        }
        assert_eq!(b.life_ended(false), None, "a long life");
        for _ in 0..4 {
            assert_eq!(b.life_ended(true), None, "the count started again");
        }
        let open = b.life_ended(true).unwrap();
        assert_eq!(open.state, BreakerState::Open);
        assert!(b.is_open());
        assert_eq!(b.life_ended(false), None);
        assert!(b.is_open(), "a clean life does not close it");
        assert_eq!(b.reset().unwrap().state, BreakerState::Closed);
        assert!(!b.is_open());
    }

    #[test]
    fn restarts_climb_the_ladder_until_the_cap_and_progress_starts_it_again() {
        let mut b = CrashLoop::default();
        let waits: Vec<u64> = (0..6).map(|_| b.restart(false, 10, &LADDER).unwrap().as_secs()).collect();
        assert_eq!(waits, [2, 10, 30, 120, 300, 300]);
        assert_eq!(b.restart(true, 10, &LADDER).unwrap().as_secs(), 2, "progress: from the bottom again");
        for _ in 0..9 {
            b.restart(false, 10, &LADDER).unwrap();
        }
        let trip = b.restart(false, 10, &LADDER).unwrap_err();
        assert!(trip.reason.contains("10 restarts without progress"), "{}", trip.reason);
        assert!(b.is_open());
    }

    #[test]
    fn the_budget_names_the_ceiling_it_crossed() {
        let none = Budget::default();
        assert!(!none.has_spend_ceiling());
        assert_eq!(none.crossed(1e9, u64::MAX, Duration::MAX), None, "no ceiling, no trip");
        let b =
            Budget { max_cost_usd: Some(2.0), max_tokens: Some(1000), max_wall_clock: Some(Duration::from_secs(3600)) };
        assert!(b.has_spend_ceiling());
        assert_eq!(b.crossed(1.99, 999, Duration::from_secs(3599)), None);
        assert_eq!(b.crossed(2.0, 0, Duration::ZERO).as_deref(), Some("spent $2.00 of its $2.00"));
        assert_eq!(b.crossed(0.0, 1000, Duration::ZERO).as_deref(), Some("used 1000 tokens of its 1000"));
        assert_eq!(b.crossed(0.0, 0, Duration::from_secs(3600)).as_deref(), Some("ran its 1h"));
        let clock_only = Budget { max_wall_clock: Some(Duration::from_secs(60)), ..Budget::default() };
        assert!(!clock_only.has_spend_ceiling(), "the clock does not depend on what a child said");
    }
}
