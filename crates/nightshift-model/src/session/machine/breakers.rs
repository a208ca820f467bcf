//! The session's breakers and the working tree they judge by: the crash-loop breaker (short lives
//! in a row, or restarts that change nothing), the no-progress breaker (cycles that change
//! nothing), each waiting on its ladder before it lets one probe through.

use super::*;
use crate::breaker::{retry_words, Backoff, BreakerKind, Trip, SHORT_LIFE};

/// The two breakers, their waits, and the working tree as they last saw it.
#[derive(Debug, Clone, Default)]
pub(super) struct Breakers {
    crash: CrashLoop,
    progress: NoProgress,
    /// The open breakers' waits before their probes.
    crash_retry: Backoff<Instant>,
    progress_retry: Backoff<Instant>,
    /// The working tree at the last cycle's start.
    cycle_fingerprint: Option<Fingerprint>,
    /// The working tree when the agent was last started again after measured progress.
    life_fingerprint: Option<Fingerprint>,
}

impl Breakers {
    /// The no-progress breaker is open: cycles do not run.
    pub(super) fn progress_open(&self) -> bool {
        self.progress.state == BreakerState::Open
    }

    /// The open or half-open breakers, as the session's options show them.
    pub(super) fn shown(&self) -> Vec<(BreakerKind, BreakerState)> {
        let mut shown = Vec::new();
        if self.crash.is_open() {
            shown.push((BreakerKind::CrashLoop, BreakerState::Open));
        }
        if self.progress.state != BreakerState::Closed {
            shown.push((BreakerKind::NoProgress, self.progress.state));
        }
        shown
    }

    /// When an open breaker lets its next probe through.
    fn next_probe(&self) -> Option<Instant> {
        let progress = self.progress_retry.next().filter(|_| self.progress_open());
        let crash = self.crash_retry.next().filter(|_| self.crash.is_open());
        progress.into_iter().chain(crash).min()
    }

    /// A life ended (`quickly`: non-zero within a minute): the trip, when the strikes open it.
    pub(super) fn life_ended(&mut self, quickly: bool) -> Option<Trip> {
        self.crash.life_ended(quickly)
    }

    /// A restart, with the working tree as it finds it (`None`: it could not be measured, which is
    /// no proof of no progress and does not count towards the cap): its wait, or the trip that opens
    /// the crash-loop breaker; and the trip when the progress closed it.
    pub(super) fn restart(
        &mut self,
        fingerprint: Option<Fingerprint>,
        cap: u32,
        ladder: &[Duration],
    ) -> (Result<Duration, Trip>, Option<Trip>) {
        let progress = fingerprint.is_none() || fingerprint != self.life_fingerprint;
        if fingerprint.is_some() && progress {
            self.life_fingerprint = fingerprint;
        }
        let restart = self.crash.restart(progress, cap, ladder);
        (restart, self.crash.closed_by_progress())
    }

    /// An account switch restarts the agent: it counts against the cap, when the cap allows it.
    pub(super) fn count_switch(&mut self, cap: u32) -> bool {
        let counted = self.crash.can_restart(cap);
        if counted {
            let _ = self.crash.restart(false, cap, &[]);
        }
        counted
    }
}

impl Machine {
    /// The working tree as measured for `purpose`.
    pub(super) fn on_measured(
        &mut self,
        purpose: Purpose,
        fingerprint: Option<Fingerprint>,
        now: Now,
        fx: &mut Vec<Effect>,
    ) {
        let b = &mut self.breakers;
        match purpose {
            Purpose::Baseline => {
                b.life_fingerprint.clone_from(&fingerprint);
                if b.cycle_fingerprint.is_none() {
                    b.cycle_fingerprint = fingerprint;
                }
            }
            Purpose::Restart => self.restart_measured(fingerprint, now, fx),
            Purpose::Cycle(_) => {
                self.cycle_measured(fingerprint, now, fx);
                // The cycle's first step goes out now, unless the measure opened a breaker.
                self.drive(respawn::Input::Measured, now, fx);
            }
        }
    }

    /// A cycle's start measured: against the previous cycle's start, progress or not.
    fn cycle_measured(&mut self, fingerprint: Option<Fingerprint>, now: Now, fx: &mut Vec<Effect>) {
        let b = &mut self.breakers;
        let Some(fingerprint) = fingerprint else { return };
        let before = b.cycle_fingerprint.replace(fingerprint.clone());
        if std::mem::take(&mut b.progress.probing) {
            // The probe cycle's start: its baseline. The next cycle's start is the verdict.
            return;
        }
        let Some(before) = before else { return };
        if let Some(trip) = b.progress.record(before != fingerprint) {
            self.breaker(BreakerKind::NoProgress, trip, now, fx);
            self.refresh_blocker(now, fx);
        }
    }

    /// Journals a breaker's change; an opened no-progress or crash-loop breaker waits for its
    /// probe on its ladder (or stays open), one that closed starts the ladder again.
    pub(super) fn breaker(&mut self, kind: BreakerKind, mut trip: Trip, now: Now, fx: &mut Vec<Effect>) {
        let ladder = self.cycles.respawn().map(|r| r.cycle.settings.breaker_retry.clone()).unwrap_or_default();
        let retry = match kind {
            BreakerKind::NoProgress => Some((&mut self.breakers.progress_retry, "one cycle")),
            BreakerKind::CrashLoop => Some((&mut self.breakers.crash_retry, "one restart")),
            BreakerKind::Budget => None,
        };
        if let Some((retry, what)) = retry {
            match trip.state {
                BreakerState::Open => trip.reason.push_str(&retry_words(retry.opened(now.mono, &ladder), what)),
                BreakerState::Closed => retry.closed(),
                BreakerState::HalfOpen => {}
            }
        }
        tracing::info!(breaker = kind.as_str(), state = trip.state.as_str(), "{}", trip.reason);
        self.emit(EventKind::Breaker { breaker: kind, state: trip.state, reason: trip.reason.clone() }, fx);
        self.because(format!("the {} breaker is {}: {}", kind.as_str(), trip.state.as_str(), trip.reason));
    }

    /// An open breaker's wait is over: it lets one probe through (a cycle, or a restart), and the
    /// probe's outcome closes it or opens it again; the crash-loop probe's agent living past a
    /// minute closes it.
    pub(super) fn breaker_tick(&mut self, now: Now, fx: &mut Vec<Effect>) {
        let b = &mut self.breakers;
        if b.progress_open() && b.progress_retry.probe_due(now.mono) {
            let trip = b.progress.probe();
            self.breaker(BreakerKind::NoProgress, trip, now, fx);
            self.refresh_blocker(now, fx);
        }
        let b = &mut self.breakers;
        if b.crash.is_open() && b.crash_retry.probe_due(now.mono) {
            let cap = self.cycles.respawn().map_or(0, |r| r.cycle.settings.max_restarts);
            let trip = b.crash.probe(cap);
            self.breaker(BreakerKind::CrashLoop, trip, now, fx);
            self.breaker_lets_through(now);
        }
        if let Life::Live { since, .. } = self.lives.life() {
            if now.mono.saturating_duration_since(*since) >= SHORT_LIFE {
                if let Some(trip) = self.breakers.crash.lived() {
                    self.breaker(BreakerKind::CrashLoop, trip, now, fx);
                }
            }
        }
    }

    /// When an open breaker's wait, or a probe's life, needs the clock next.
    pub(super) fn breaker_deadline(&self) -> Option<Instant> {
        let lived = match self.lives.life() {
            Life::Live { since, .. } if self.breakers.crash.is_probing() => Some(*since + SHORT_LIFE),
            _ => None,
        };
        [lived, self.breakers.next_probe()].into_iter().flatten().min()
    }

    /// When an open breaker lets its next probe through, on the wall clock.
    pub(super) fn breaker_probe_at(&self, now: Now) -> Option<DateTime<Utc>> {
        let at = self.breakers.next_probe()?;
        Some(now.wall + chrono::Duration::from_std(at.saturating_duration_since(now.mono)).unwrap_or_default())
    }

    /// The user reset the breakers: what was open closes, and a restart it held back happens now.
    pub(super) fn reset_breakers(&mut self, now: Now, fx: &mut Vec<Effect>) {
        let mut reset = Vec::new();
        if let Some(trip) = self.breakers.crash.reset() {
            self.breaker(BreakerKind::CrashLoop, trip, now, fx);
            reset.push("crash_loop");
        }
        if let Some(trip) = self.breakers.progress.reset() {
            self.breaker(BreakerKind::NoProgress, trip, now, fx);
            reset.push("no_progress");
        }
        let said =
            if reset.is_empty() { "no breaker was open".to_string() } else { format!("reset: {}", reset.join(", ")) };
        fx.push(Effect::Reply(said));
        self.breaker_lets_through(now);
        self.refresh_blocker(now, fx);
    }
}
