//! The waits the night is in now, per session, as its journal tells them: a usage limit's reset and
//! the resume due after it, an open breaker and its next try, a loop's retry, limit or back-off, the
//! pace's park, a scheduled start; and the sleep Nightshift allowed through them, with the wake
//! alarm it set. The forecast ([`super::forecast`]) says what the burn will bring; this says what
//! already is.
//!
//! A fold over each armed session's events, oldest first ([`of_session`]); pure: the events, the
//! breakers' ladder and the time in. A breaker's next try is not journalled as a time: it is the
//! breaker's own [`Backoff`] over the same ladder, fed the journalled openings and probes, as the
//! session's machine fed it.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::breaker::{Backoff, BreakerKind, BreakerState};
use crate::event::{Automation, Event, EventKind, SessionState, SleepAction, StopKind, WaitKind};
use crate::limits::LimitKind;

/// The events [`of_session`] and [`asleep`] read.
pub const EVENTS: &[&str] = &[
    "state",
    "limit_detected",
    "resume_armed",
    "resume_kept",
    "resume_sent",
    "limit_cleared",
    "limit_failed",
    "stop_requested",
    "automation",
    "breaker",
    "respawn_settings",
    "respawn",
    "restored",
    "adopted",
    "loop_wait",
    "iteration_started",
    "paced",
    "scheduled",
    "schedule_skipped",
    "sleep",
];

/// What a session waits on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitOn {
    /// A usage limit's reset.
    Limit,
    /// An open breaker's next try, or the user's reset.
    Breaker,
    /// A loop's retry of the same iteration after a transient failure.
    Retry,
    /// A loop project's back-off after iterations that settled nothing.
    Backoff,
    /// The pace parks its cycles (a morning reserve, a weekly pace).
    Paced,
    /// Its scheduled start.
    Scheduled,
}

/// A wait one session is in, as its journal says.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionWait {
    pub session: String,
    /// `claude`, `codex`, `generic`.
    pub agent: String,
    pub on: WaitOn,
    /// For a limit, the window it is: `5h`, `7d`, `model`, `extra usage`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<&'static str>,
    #[serde(with = "crate::clock::ts")]
    pub since: DateTime<Utc>,
    /// A limit's reset, when it is known.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "crate::clock::opt_ts")]
    pub resets_at: Option<DateTime<Utc>>,
    /// When Nightshift acts for it next (the resume, the breaker's try, the retry, the start);
    /// `None`: nothing is due by itself.
    #[serde(with = "crate::clock::opt_ts")]
    pub until: Option<DateTime<Utc>>,
    /// What happens then, for people: `a resume`, `one restart (half-open)`, `the start`.
    pub then: String,
    /// What it is, for people: the limit's line, the breaker's reason, the loop's words.
    pub detail: String,
    /// No Nightshift process runs the session now: the wait goes on when one takes it back (the
    /// app, `nightshift restore`, the keeper).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unowned: bool,
}

/// The sleep Nightshift allowed through a wait, while its wake alarm stands.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Asleep {
    /// When it let go of its inhibitors: from then the machine may sleep.
    #[serde(with = "crate::clock::ts")]
    pub since: DateTime<Utc>,
    /// The wake alarm's time.
    #[serde(with = "crate::clock::ts")]
    pub wakes_at: DateTime<Utc>,
    /// What it wakes for (a resume, a breaker's try, a scheduled start).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "crate::clock::opt_ts")]
    pub due: Option<DateTime<Utc>>,
}

/// The plan's name of a limit's window: a 5-hour or 7-day window, or neither; a limit that does not
/// say which is the window its reset fits.
pub fn window_of(kind: LimitKind, since: DateTime<Utc>, resets_at: Option<DateTime<Utc>>) -> &'static str {
    match kind {
        LimitKind::FiveHour => "5h",
        LimitKind::Weekly => "7d",
        LimitKind::Model => "model",
        LimitKind::ExtraUsage => "extra usage",
        LimitKind::Unspecified => match resets_at {
            Some(r) if r - since > chrono::Duration::hours(5) => "7d",
            _ => "5h",
        },
    }
}

#[derive(Debug, Clone)]
struct Limit {
    since: DateTime<Utc>,
    window: &'static str,
    resets_at: Option<DateTime<Utc>>,
    /// When the resume (or, for a loop, the iteration again) is due; `None`: nothing resumes it.
    due: Option<DateTime<Utc>>,
    then: &'static str,
    line: String,
    sent: Option<u32>,
}

#[derive(Debug, Clone)]
struct Breaker {
    kind: BreakerKind,
    state: BreakerState,
    since: DateTime<Utc>,
    reason: String,
    retry: Backoff<DateTime<Utc>>,
}

#[derive(Debug, Clone)]
struct Timed {
    since: DateTime<Utc>,
    until: DateTime<Utc>,
    detail: String,
    project: Option<String>,
}

/// A session's waits as its events leave them.
#[derive(Debug, Default)]
struct Fold {
    limit: Option<Limit>,
    breakers: Vec<Breaker>,
    ladder: Vec<Duration>,
    retry: Option<Timed>,
    backoffs: Vec<Timed>,
    paced: Option<Timed>,
    scheduled: Option<Timed>,
}

impl Fold {
    fn event(&mut self, e: &Event) {
        let ts = e.ts;
        match &e.kind {
            EventKind::LimitDetected { resets_at, kind, line, .. } => {
                let limit = self.limit.get_or_insert_with(|| Limit {
                    since: ts,
                    window: "5h",
                    resets_at: None,
                    due: None,
                    then: "a resume",
                    line: String::new(),
                    sent: None,
                });
                limit.resets_at = resets_at.or(limit.resets_at);
                limit.window = window_of(*kind, limit.since, limit.resets_at);
                limit.line.clone_from(line);
            }
            EventKind::ResumeArmed { resets_at, due, .. } => {
                let limit = self.limit_at(ts);
                limit.resets_at = resets_at.or(limit.resets_at);
                limit.due = Some(*due);
                limit.then = "a resume";
                limit.sent = None;
            }
            EventKind::ResumeKept { due, .. } => {
                let limit = self.limit_at(ts);
                limit.due = Some(*due);
            }
            EventKind::ResumeSent { attempt } => {
                if let Some(limit) = &mut self.limit {
                    limit.sent = Some(*attempt);
                }
            }
            EventKind::LimitCleared { .. } | EventKind::LimitFailed { .. } => self.limit = None,
            EventKind::Automation { change: Automation::AutoResumeOff, .. } => {
                if let Some(limit) = &mut self.limit {
                    limit.due = None;
                }
            }
            EventKind::StopRequested { kind: StopKind::User, .. } => {
                let ladder = std::mem::take(&mut self.ladder);
                *self = Fold { ladder, ..Fold::default() };
            }
            EventKind::Breaker { breaker, state, reason } => self.breaker(*breaker, *state, reason, ts),
            EventKind::RespawnSettings { settings, .. } => self.ladder.clone_from(&settings.breaker_retry),
            EventKind::Respawn {
                action: crate::respawn::Action::Disarmed | crate::respawn::Action::Expired, ..
            } => self.ladder.clear(),
            // A Nightshift that takes a session back starts its breakers closed.
            EventKind::Restored { .. } | EventKind::Adopted { .. } => self.breakers.clear(),
            EventKind::LoopWait { why, until, project, detail } => {
                let timed =
                    until.map(|until| Timed { since: ts, until, detail: detail.clone(), project: project.clone() });
                match why {
                    WaitKind::Retry => self.retry = timed,
                    WaitKind::Fruitless => {
                        self.backoffs.retain(|b| b.project != *project);
                        self.backoffs.extend(timed);
                    }
                    WaitKind::Limit => match until {
                        Some(until) => {
                            let limit = self.limit_at(ts);
                            limit.due = Some(*until);
                            limit.then = "the iteration again";
                            limit.line.clone_from(detail);
                        }
                        None => self.limit = None,
                    },
                }
            }
            EventKind::IterationStarted { probe: false, project, .. } => {
                self.retry = None;
                self.backoffs.retain(|b| b.project.as_ref() != Some(project));
            }
            EventKind::Paced { until, reason, .. } => {
                self.paced = until.map(|until| Timed { since: ts, until, detail: reason.clone(), project: None });
            }
            EventKind::Scheduled { due, why } => {
                self.scheduled = Some(Timed { since: ts, until: *due, detail: why.clone(), project: None });
            }
            EventKind::ScheduleSkipped { .. } => self.scheduled = None,
            EventKind::State { state, .. } if *state != SessionState::Scheduled => self.scheduled = None,
            _ => {}
        }
    }

    fn limit_at(&mut self, ts: DateTime<Utc>) -> &mut Limit {
        self.limit.get_or_insert_with(|| Limit {
            since: ts,
            window: "5h",
            resets_at: None,
            due: None,
            then: "a resume",
            line: String::new(),
            sent: None,
        })
    }

    /// A breaker's change, as the machine's [`Backoff`] took it: an opened no-progress or
    /// crash-loop breaker waits for its next rung, a probe counts a try, a close starts again.
    fn breaker(&mut self, kind: BreakerKind, state: BreakerState, reason: &str, ts: DateTime<Utc>) {
        let at = match self.breakers.iter().position(|b| b.kind == kind) {
            Some(i) => i,
            None => {
                let retry = Backoff::default();
                self.breakers.push(Breaker { kind, state, since: ts, reason: String::new(), retry });
                self.breakers.len() - 1
            }
        };
        let b = &mut self.breakers[at];
        b.state = state;
        match state {
            BreakerState::Open => {
                b.since = ts;
                reason.clone_into(&mut b.reason);
                if kind != BreakerKind::Budget {
                    b.retry.opened(ts, &self.ladder);
                }
            }
            BreakerState::HalfOpen => {
                // The journal's time of the probe is on the wall clock, the machine's wait on the
                // monotonic one: the probe happened, so it counts whatever the clocks say.
                let probed = b.retry.next().map_or(ts, |next| next.max(ts));
                b.retry.probe_due(probed);
            }
            BreakerState::Closed => {
                b.retry.closed();
            }
        }
    }

    fn waits(self, session: &str, agent: &str, unowned: bool) -> Vec<SessionWait> {
        let wait = |on, since, until, then: String, detail: String| SessionWait {
            session: session.to_string(),
            agent: agent.to_string(),
            on,
            window: None,
            since,
            resets_at: None,
            until,
            then,
            detail,
            unowned,
        };
        let mut out = Vec::new();
        if let Some(s) = self.scheduled {
            out.push(wait(WaitOn::Scheduled, s.since, Some(s.until), "the start".into(), s.detail));
        }
        if let Some(l) = self.limit {
            let (until, then) = match (l.sent, l.due) {
                (Some(attempt), _) => (None, format!("resume {attempt} sent: waiting for the agent to take it")),
                (None, Some(due)) => (Some(due), l.then.to_string()),
                (None, None) => (None, "nothing by itself: auto-resume is off".to_string()),
            };
            out.push(SessionWait {
                window: Some(l.window),
                resets_at: l.resets_at,
                ..wait(WaitOn::Limit, l.since, until, then, l.line)
            });
        }
        for b in self.breakers.into_iter().filter(|b| b.state == BreakerState::Open) {
            let what = match b.kind {
                BreakerKind::NoProgress => "one cycle",
                BreakerKind::CrashLoop => "one restart",
                BreakerKind::Budget => "",
            };
            let (until, then) = match b.retry.next() {
                Some(next) => (Some(next), format!("{what} (half-open)")),
                None => (None, "nothing until `nightshift breaker reset`".to_string()),
            };
            let detail = format!("the {} breaker is open: {}", b.kind.as_str(), b.reason);
            out.push(wait(WaitOn::Breaker, b.since, until, then, detail));
        }
        if let Some(r) = self.retry {
            out.push(wait(WaitOn::Retry, r.since, Some(r.until), "the iteration again".into(), r.detail));
        }
        for b in self.backoffs {
            let then = match &b.project {
                Some(p) => format!("{p}'s next iteration"),
                None => "the next iteration".into(),
            };
            out.push(wait(WaitOn::Backoff, b.since, Some(b.until), then, b.detail));
        }
        if let Some(p) = self.paced {
            out.push(wait(WaitOn::Paced, p.since, Some(p.until), "cycles again".into(), p.detail));
        }
        out
    }
}

/// The waits of session `session` (of `agent`) from its events, oldest first; `ladder` is its
/// breakers' waits before each try as its contract armed them (empty: none), and `unowned` says no
/// Nightshift process runs it now.
pub fn of_session(
    session: &str,
    agent: &str,
    events: &[Event],
    ladder: &[Duration],
    unowned: bool,
) -> Vec<SessionWait> {
    let mut fold = Fold { ladder: ladder.to_vec(), ..Fold::default() };
    for e in events {
        fold.event(e);
    }
    fold.waits(session, agent, unowned)
}

/// The sleep Nightshift allowed and has not taken back, from the `sleep` events of every session:
/// the last one said it, and its wake alarm is still ahead of `now`.
pub fn asleep<'a>(events: impl IntoIterator<Item = &'a Event>, now: DateTime<Utc>) -> Option<Asleep> {
    let last = events.into_iter().filter(|e| matches!(e.kind, EventKind::Sleep { .. })).max_by_key(|e| e.ts)?;
    match &last.kind {
        EventKind::Sleep { action: SleepAction::Allowed, at, due, .. } if *at > now => {
            Some(Asleep { since: last.ts, wakes_at: *at, due: *due })
        }
        _ => None,
    }
}

/// The lines of `waiting` and the machine's sleep for people, times as `at` says them.
pub fn lines(waiting: &[SessionWait], at: impl Fn(DateTime<Utc>) -> String) -> Vec<String> {
    waiting
        .iter()
        .map(|w| {
            let what = match w.on {
                WaitOn::Limit => match w.window {
                    Some("5h") => "paused on the 5-hour limit".to_string(),
                    Some("7d") => "paused on the 7-day limit".to_string(),
                    Some(window) => format!("paused on the {window} limit"),
                    None => "paused on a usage limit".to_string(),
                },
                WaitOn::Breaker => w.detail.split(':').next().unwrap_or_default().to_string(),
                WaitOn::Retry => "waiting to retry".to_string(),
                WaitOn::Backoff => "backing off".to_string(),
                WaitOn::Paced => "parked by the pace".to_string(),
                WaitOn::Scheduled => "scheduled".to_string(),
            };
            let resets = w.resets_at.map(|r| format!(", resets {}", at(r))).unwrap_or_default();
            let then = match w.until {
                Some(until) => format!("{} at {}", w.then, at(until)),
                None => w.then.clone(),
            };
            let said = match w.on {
                WaitOn::Limit | WaitOn::Breaker => String::new(),
                _ => format!(" ({})", w.detail),
            };
            let unowned = if w.unowned { "; no Nightshift runs it now: once one takes it back" } else { "" };
            format!("{} ({}): {what} since {}{resets} → {then}{said}{unowned}", w.session, w.agent, at(w.since))
        })
        .collect()
}

#[cfg(test)]
#[path = "waits_tests.rs"]
mod tests;
