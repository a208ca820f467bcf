//! The machine's sleep, as the supervisor sees it: gaps between the wall clock and the monotonic
//! clock (which stops while the machine is suspended) are suspends, journalled so the digest and the
//! session pages show when the night was lost to sleep.

use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::time::Instant;

/// How often the clocks are compared.
pub const CHECK_EVERY: Duration = Duration::from_secs(10);
/// A gap shorter than this is scheduling noise or a small clock correction, not a suspend.
pub const MIN_GAP: Duration = Duration::from_secs(30);

/// Compares the two clocks between observations.
#[derive(Debug, Clone)]
pub struct SuspendWatch {
    wall: DateTime<Utc>,
    mono: Instant,
}

impl SuspendWatch {
    pub fn new(wall: DateTime<Utc>, mono: Instant) -> Self {
        Self { wall, mono }
    }

    /// The suspend since the last observation, if there was one: `(asleep from, awake at)`.
    pub fn observe(&mut self, wall: DateTime<Utc>, mono: Instant) -> Option<(DateTime<Utc>, DateTime<Utc>)> {
        let ran = mono.saturating_duration_since(self.mono);
        let went_to_sleep = self.wall + chrono::Duration::from_std(ran).unwrap_or_default();
        self.wall = wall;
        self.mono = mono;
        let gap = (wall - went_to_sleep).to_std().ok()?;
        (gap >= MIN_GAP).then_some((went_to_sleep, wall))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wall_clock_jump_beyond_the_monotonic_one_is_a_suspend() {
        let t0: DateTime<Utc> = "2026-11-30T23:00:00Z".parse().unwrap();
        let m0 = Instant::now();
        let mut w = SuspendWatch::new(t0, m0);
        // Ten seconds on both clocks: awake.
        assert_eq!(w.observe(t0 + chrono::Duration::seconds(10), m0 + Duration::from_secs(10)), None);
        // Ten monotonic seconds but two hours of wall time: asleep for 1 h 59 min 50 s.
        let woke = t0 + chrono::Duration::hours(2);
        let gap = w.observe(woke, m0 + Duration::from_secs(20)).unwrap();
        assert_eq!(gap, (t0 + chrono::Duration::seconds(20), woke));
        // A clock set backwards is not a suspend.
        assert_eq!(w.observe(woke - chrono::Duration::hours(1), m0 + Duration::from_secs(30)), None);
        // Nor is a few seconds of drift.
        let mut w = SuspendWatch::new(t0, m0);
        assert_eq!(w.observe(t0 + chrono::Duration::seconds(25), m0 + Duration::from_secs(10)), None);
    }
}
