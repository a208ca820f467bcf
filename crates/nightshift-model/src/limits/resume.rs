//! The wait and the resume after a usage limit, as a pure machine on the wall clock.
//!
//! Claude Code, as a subscriber, may resume by itself once a 5-hour window resets. Nightshift never
//! adds a second continuation on top of it:
//!
//! - **watch** (the default) lets the client's own resume run and steps in only when no turn has
//!   started by the reset plus the margin (5 s): Escape first (which also cancels a client timer
//!   still pending), 600 ms, then the resume prompt;
//! - **own** cancels the client's timer with Escape as soon as the limit shows, and resumes itself
//!   at the reset plus the margin.
//!
//! The reset is known to the second from the client's own rate-limit data (its statusLine), to
//! the minute from its notice (which drops the seconds: "resets 1:59pm" for 13:59:13): until the
//! exact one comes and replaces it, a resume waits for the end of that minute, so none goes into
//! a window that still refuses it. Every minute of
//! a window a resume comes late is quota the night loses, so the first look is at the due instant
//! itself; and a resume sent too early (a clock a little off) is not a failure: the limit seen
//! again within seconds of the reset is tried again on a short ladder (15 s, 30 s, 60 s), with the
//! reset read again, never into a window that still refuses.
//!
//! Before resuming, the quota must be back where it can be seen (a fresh statusLine sample under
//! 100 %). A session still limited after a resume is retried up to three times, then the limit is
//! marked failed. With no reset time to go by, the wait is 30 minutes. Deadlines are wall-clock
//! instants checked every few seconds, so a machine that slept through the reset resumes within
//! seconds of waking.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Policy {
    Watch,
    Own,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    pub policy: Policy,
    /// How long after the reset to act.
    #[serde(with = "crate::clock::secs")]
    pub margin: Duration,
    /// What is typed to resume.
    pub prompt: String,
    /// Resumes tried before the limit is marked failed.
    pub retries: u32,
    /// The wait when no reset time is known.
    #[serde(with = "crate::clock::secs")]
    pub fallback: Duration,
    /// How long a resume has to start a turn before it counts as failed.
    #[serde(with = "crate::clock::secs")]
    pub verify: Duration,
    /// Without respawn cycles, the context in use (percent) at which the agent is asked for a
    /// handoff (respawn's own `handoff_at` wins when it is armed); 0 turns it off.
    #[serde(default = "default_handoff_at")]
    pub handoff_at: f64,
}

fn default_handoff_at() -> f64 {
    75.0
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            policy: Policy::Watch,
            margin: DEFAULT_MARGIN,
            prompt: "continue".into(),
            retries: 3,
            fallback: Duration::from_secs(30 * 60),
            verify: Duration::from_secs(180),
            handoff_at: default_handoff_at(),
        }
    }
}

/// How long after a reset the resume is due: enough for a clock a little off, little enough that
/// the window's first minute is the night's.
pub const DEFAULT_MARGIN: Duration = Duration::from_secs(5);

/// The waits before a resume again after one the window still refused, the last repeated: the
/// reset was right there, so the next try is seconds away, not another margin.
pub const REFUSED_LADDER: [Duration; 3] = [Duration::from_secs(15), Duration::from_secs(30), Duration::from_secs(60)];

/// What the usage data says about the quota now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quota {
    /// No samples (API-key mode, or before the first answer): go by the clock.
    Unknown,
    Back,
    StillFull,
}

/// What the session actor must do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Press Escape: cancels the client's own pending continuation (own policy, at detection).
    CancelClientTimer,
    /// Escape, 600 ms, then the prompt and Enter.
    Resume { attempt: u32, prompt: String },
    /// The resume is postponed: the data shows the window still full.
    Postponed { until: DateTime<Utc>, reason: String },
    /// Out of retries.
    Failed { reason: String },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub settings: Settings,
    /// When the next resume is due.
    pub due: DateTime<Utc>,
    pub attempts: u32,
    /// When the last resume was sent, while waiting to see it work.
    pub sent_at: Option<DateTime<Utc>>,
    pub failed: bool,
    /// The reset is known to the second, not only to a notice's minute.
    pub exact: bool,
}

/// A reset a notice gives to the minute may be anywhere in that minute.
const MINUTE: chrono::Duration = chrono::Duration::seconds(60);

/// Whether `exact`, a reset the client's data gives, is the one a notice gave as the minute
/// `minute`: within that minute (its seconds dropped), or half a minute before it (rounded).
pub fn same_reset(minute: DateTime<Utc>, exact: DateTime<Utc>) -> bool {
    let off = (exact - minute).num_seconds();
    (-30..60).contains(&off)
}

fn due_after(resets_at: Option<DateTime<Utc>>, exact: bool, now: DateTime<Utc>, s: &Settings) -> DateTime<Utc> {
    let margin = chrono::Duration::from_std(s.margin).unwrap_or_default();
    let fallback = chrono::Duration::from_std(s.fallback).unwrap_or_default();
    match resets_at {
        Some(at) if exact => at + margin,
        Some(at) => at + MINUTE + margin,
        None => now + fallback,
    }
}

impl Plan {
    /// A limit was detected at `now`, its reset known to the second (`exact`: the client's data)
    /// or to a notice's minute.
    pub fn new(
        settings: Settings,
        resets_at: Option<DateTime<Utc>>,
        exact: bool,
        now: DateTime<Utc>,
    ) -> (Self, Vec<Effect>) {
        let due = due_after(resets_at, exact, now, &settings);
        let fx = if settings.policy == Policy::Own { vec![Effect::CancelClientTimer] } else { vec![] };
        (Self { settings, due, attempts: 0, sent_at: None, failed: false, exact }, fx)
    }

    /// Time passed (checked every few seconds against the wall clock).
    pub fn tick(&mut self, now: DateTime<Utc>, quota: Quota) -> Vec<Effect> {
        if self.failed {
            return vec![];
        }
        if let Some(sent) = self.sent_at {
            let verify = chrono::Duration::from_std(self.settings.verify).unwrap_or_default();
            if now < sent + verify {
                return vec![];
            }
            // The resume started no turn: still limited, by all signs.
            return self.limited_again(None, now);
        }
        if now < self.due {
            return vec![];
        }
        if quota == Quota::StillFull {
            self.attempts += 1;
            if self.attempts > self.settings.retries {
                return self.fail("the usage data still shows the window full after every retry");
            }
            self.due = now + chrono::Duration::minutes(5);
            return vec![Effect::Postponed {
                until: self.due,
                reason: "the usage data still shows the window full".into(),
            }];
        }
        self.attempts += 1;
        self.sent_at = Some(now);
        vec![Effect::Resume { attempt: self.attempts, prompt: self.settings.prompt.clone() }]
    }

    /// A resume was sent and the session is limited again (a new notice, or no turn started).
    pub fn limited_again(&mut self, resets_at: Option<DateTime<Utc>>, now: DateTime<Utc>) -> Vec<Effect> {
        if self.sent_at.take().is_none() {
            // Not after our resume: the same limit, seen again; a later reset wins.
            let due = due_after(resets_at, self.exact, now, &self.settings);
            if resets_at.is_some() && due > self.due {
                self.due = due;
            }
            return vec![];
        }
        if self.attempts >= self.settings.retries {
            return self.fail(&format!("still limited after {} resumes", self.attempts));
        }
        // Refused at the reset (a clock a little off): soon again, on the ladder; a later reset
        // read since wins.
        let step = REFUSED_LADDER[(self.attempts as usize).saturating_sub(1).min(REFUSED_LADDER.len() - 1)];
        let soon = now + chrono::Duration::from_std(step).unwrap_or_default();
        self.due = match resets_at {
            Some(_) => due_after(resets_at, self.exact, now, &self.settings).max(soon),
            // No reset to go by: the long wait.
            None => due_after(None, false, now, &self.settings),
        };
        vec![]
    }

    /// The reset, now known to the second (the client's rate-limit data): a resume not sent yet
    /// is due at it plus the margin, earlier or later than the notice's minute said.
    pub fn reset_known(&mut self, resets_at: DateTime<Utc>, now: DateTime<Utc>) {
        self.exact = true;
        if self.sent_at.is_none() && !self.failed {
            self.due = due_after(Some(resets_at), true, now, &self.settings);
        }
    }

    fn fail(&mut self, reason: &str) -> Vec<Effect> {
        self.failed = true;
        vec![Effect::Failed { reason: reason.to_string() }]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(h: u32, m: u32, s: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 1, h, m, s).unwrap()
    }

    /// Ticks every 5 s from `from` to `to`, collecting effects with their times.
    fn run(plan: &mut Plan, from: DateTime<Utc>, to: DateTime<Utc>, quota: Quota) -> Vec<(DateTime<Utc>, Effect)> {
        let mut out = vec![];
        let mut now = from;
        while now <= to {
            out.extend(plan.tick(now, quota).into_iter().map(|e| (now, e)));
            now += chrono::Duration::seconds(5);
        }
        out
    }

    #[test]
    fn resumes_at_the_reset_plus_the_margin_and_not_before() {
        let (mut plan, fx) = Plan::new(Settings::default(), Some(at(14, 33, 0)), true, at(10, 0, 0));
        assert!(fx.is_empty(), "watch leaves the client's timer alone");
        let fx = run(&mut plan, at(10, 0, 0), at(14, 33, 0), Quota::Back);
        assert!(fx.is_empty(), "{fx:?}");
        let fx = run(&mut plan, at(14, 33, 5), at(14, 33, 30), Quota::Back);
        assert_eq!(fx, [(at(14, 33, 5), Effect::Resume { attempt: 1, prompt: "continue".into() })]);
    }

    #[test]
    fn own_cancels_the_clients_timer_at_once() {
        let settings = Settings { policy: Policy::Own, ..Settings::default() };
        let (_, fx) = Plan::new(settings, Some(at(14, 33, 0)), true, at(10, 0, 0));
        assert_eq!(fx, [Effect::CancelClientTimer]);
    }

    #[test]
    fn a_machine_that_slept_through_the_reset_resumes_at_the_first_check() {
        let (mut plan, _) = Plan::new(Settings::default(), Some(at(14, 33, 0)), true, at(10, 0, 0));
        assert!(plan.tick(at(10, 0, 5), Quota::Back).is_empty());
        // Suspended at 10:00:05, awake at 17:02:11: the clock jumped forward.
        assert_eq!(plan.tick(at(17, 2, 11), Quota::Back), [Effect::Resume { attempt: 1, prompt: "continue".into() }]);
    }

    #[test]
    fn a_full_window_in_the_data_postpones_and_eventually_fails() {
        let (mut plan, _) = Plan::new(Settings::default(), Some(at(14, 33, 0)), true, at(10, 0, 0));
        let fx = run(&mut plan, at(14, 33, 5), at(14, 55, 0), Quota::StillFull);
        let kinds: Vec<&str> = fx
            .iter()
            .map(|(_, e)| match e {
                Effect::Postponed { .. } => "postponed",
                Effect::Failed { .. } => "failed",
                _ => "other",
            })
            .collect();
        assert_eq!(kinds, ["postponed", "postponed", "postponed", "failed"]);
        assert_eq!(fx[1].0, at(14, 38, 5), "every 5 minutes");
        assert!(plan.failed);
        assert!(run(&mut plan, at(15, 0, 0), at(16, 0, 0), Quota::Back).is_empty(), "nothing after failing");
    }

    #[test]
    fn still_limited_after_a_resume_retries_up_to_three_times() {
        let (mut plan, _) = Plan::new(Settings::default(), Some(at(14, 33, 0)), true, at(10, 0, 0));
        let mut now = at(14, 34, 0);
        for attempt in 1..=3 {
            // Tick until the resume goes out.
            let sent = loop {
                if let [effect] = &plan.tick(now, Quota::Unknown)[..] {
                    assert_eq!(effect, &Effect::Resume { attempt, prompt: "continue".into() });
                    break now;
                }
                now += chrono::Duration::seconds(5);
            };
            now = sent + chrono::Duration::seconds(20);
            // The client shows the limit again, with a reset an hour on.
            let fx = plan.limited_again(Some(now + chrono::Duration::hours(1)), now);
            if attempt < 3 {
                assert!(fx.is_empty());
                assert_eq!(plan.due, now + chrono::Duration::hours(1) + chrono::Duration::seconds(5));
            } else {
                assert!(matches!(&fx[..], [Effect::Failed { reason }] if reason.contains("3 resumes")), "{fx:?}");
            }
        }
    }

    #[test]
    fn no_reset_time_means_a_30_minute_wait_and_a_resume_that_starts_nothing_counts_as_limited() {
        let (mut plan, _) = Plan::new(Settings::default(), None, false, at(10, 0, 0));
        assert_eq!(plan.due, at(10, 30, 0));
        let fx = run(&mut plan, at(10, 0, 0), at(10, 30, 0), Quota::Unknown);
        assert_eq!(fx.len(), 1);
        // No turn within the verify time: limited again, next try 30 minutes on.
        let fx = run(&mut plan, at(10, 30, 5), at(10, 33, 0), Quota::Unknown);
        assert!(fx.is_empty());
        assert_eq!(plan.due, at(11, 3, 0));
        assert_eq!(plan.attempts, 1);
    }

    #[test]
    fn the_same_limit_seen_again_before_any_resume_only_moves_to_a_later_reset() {
        let (mut plan, _) = Plan::new(Settings::default(), Some(at(14, 33, 0)), true, at(10, 0, 0));
        plan.limited_again(Some(at(13, 0, 0)), at(10, 5, 0));
        assert_eq!(plan.due, at(14, 33, 5), "an earlier reset does not replace a later one");
        plan.limited_again(Some(at(18, 0, 0)), at(10, 6, 0));
        assert_eq!(plan.due, at(18, 0, 5), "the later reset wins");
        assert_eq!(plan.attempts, 0);
    }

    #[test]
    fn the_reset_known_to_the_second_replaces_the_notices_minute() {
        // The notice said 14:33 (its seconds dropped): until the data says, the end of that minute.
        let (mut plan, _) = Plan::new(Settings::default(), Some(at(14, 33, 0)), false, at(10, 0, 0));
        assert_eq!(plan.due, at(14, 34, 5), "never into a window that may still refuse");
        // The client's rate-limit data says 14:33:40, or 14:32:50.
        plan.reset_known(at(14, 33, 40), at(10, 0, 5));
        assert_eq!(plan.due, at(14, 33, 45));
        plan.reset_known(at(14, 32, 50), at(10, 0, 10));
        assert_eq!(plan.due, at(14, 32, 55), "earlier too: it is the exact one");
    }

    #[test]
    fn the_data_names_the_notices_reset_only_within_its_minute() {
        assert!(same_reset(at(14, 12, 0), at(14, 12, 33)), "the seconds the notice dropped");
        assert!(same_reset(at(14, 13, 0), at(14, 12, 33)), "a notice that rounded");
        assert!(!same_reset(at(14, 12, 0), at(14, 10, 48)), "an earlier limit's reset is another one");
        assert!(!same_reset(at(14, 12, 0), at(14, 13, 0)), "the next minute is another one");
    }

    #[test]
    fn a_resume_the_window_still_refused_is_tried_again_within_seconds() {
        // A clock a little off: the resume at the reset plus 5 s is refused, the notice shows the
        // same reset again.
        let (mut plan, _) = Plan::new(Settings::default(), Some(at(14, 33, 0)), true, at(10, 0, 0));
        assert_eq!(plan.tick(at(14, 33, 5), Quota::Unknown).len(), 1);
        assert!(plan.limited_again(Some(at(14, 33, 0)), at(14, 33, 8)).is_empty());
        assert_eq!(plan.due, at(14, 33, 23), "15 s on, not the margin after a reset that has passed");
        assert_eq!(plan.tick(at(14, 33, 23), Quota::Unknown).len(), 1);
        plan.limited_again(Some(at(14, 33, 0)), at(14, 33, 25));
        assert_eq!(plan.due, at(14, 33, 55), "then 30 s");
        // A later reset read meanwhile wins over the ladder.
        assert_eq!(plan.tick(at(14, 33, 55), Quota::Unknown).len(), 1);
        plan.limited_again(Some(at(19, 0, 0)), at(14, 34, 0));
        assert!(plan.failed, "three refusals: the limit is marked failed");
    }
}
