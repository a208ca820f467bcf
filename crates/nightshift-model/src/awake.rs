//! When the machine must stay awake: a pure policy, decided here for every session and held by the
//! app and headless runs alike, through the runtime's one keeper of logind's idle and sleep
//! inhibitors (`awake::Keeper` there).
//!
//! A session keeps the machine awake while its agent works, while a respawn cycle runs or a restart
//! is due, and while it has an automatic action due within reach: within its armed duration when
//! respawn is armed, within the next 12 hours for auto-resume alone. A session waiting days for a
//! weekly reset, held by the user, waiting on the user, or with nothing armed lets the machine sleep
//! — and says when its next action is, so the window can tell the user what was released and why.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// How far ahead a resume may be, for auto-resume alone, and still hold the machine awake.
pub const AUTO_RESUME_HORIZON: chrono::Duration = chrono::Duration::hours(12);

/// What one session needs of the machine now.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Want {
    pub hold: bool,
    /// Why, for people.
    pub reason: String,
    /// When the session's next automatic action is, if one is planned but out of reach.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "crate::clock::opt_ts")]
    pub next_action: Option<DateTime<Utc>>,
    /// It holds only for an action due then (a limit's resume, a breaker's next try, a scheduled
    /// start), and nothing runs until it: a machine that wakes for it may sleep until then.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "crate::clock::opt_ts")]
    pub parked_until: Option<DateTime<Utc>>,
}

/// What the policy looks at in one session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    pub ended: bool,
    pub held: bool,
    /// The agent is in a turn.
    pub working: bool,
    /// A respawn cycle is running its steps.
    pub cycling: bool,
    /// The agent is down and will be started again soon.
    pub restarting: bool,
    /// The agent waits on the user (a question, a permission).
    pub waiting_for_user: bool,
    /// When Nightshift's resume after a usage limit is due.
    pub resume_due: Option<DateTime<Utc>>,
    /// Respawn is armed until then.
    pub armed_until: Option<DateTime<Utc>>,
    /// Something keeps respawn cycles from running (a breaker, the guard, a limit).
    pub cycles_blocked: bool,
    /// When an open breaker lets its next probe through.
    pub breaker_probe: Option<DateTime<Utc>>,
    /// The pace parks its cycles until then (a morning reserve, a weekly pace).
    pub paced_until: Option<DateTime<Utc>>,
}

fn at(t: DateTime<Utc>) -> String {
    crate::clock::format_ts(t)
}

/// What one session needs of the machine at `now`.
pub fn want(f: &Facts, now: DateTime<Utc>) -> Want {
    let hold = |reason: String| Want { hold: true, reason, ..Want::default() };
    let parked = |reason: String, until: DateTime<Utc>| Want {
        hold: true,
        reason,
        next_action: None,
        parked_until: Some(until),
    };
    let release = |reason: &str| Want { hold: false, reason: reason.to_string(), ..Want::default() };
    if f.ended {
        return release("the session has ended");
    }
    if f.held {
        return release("held by the user: nothing runs by itself");
    }
    if f.working {
        return hold("the agent is working".into());
    }
    if f.cycling {
        return hold("a respawn cycle is running".into());
    }
    if f.restarting {
        return hold("the agent is about to be started again".into());
    }
    if let Some(probe) = f.breaker_probe.filter(|p| f.armed_until.is_some_and(|until| *p <= until)) {
        return parked(format!("an open breaker tries again at {}", at(probe)), probe);
    }
    if let Some(until) = f.paced_until.filter(|u| f.armed_until.is_some_and(|armed| *u <= armed)) {
        return parked(format!("parked by the pace until {}", at(until)), until);
    }
    if let Some(due) = f.resume_due {
        let (horizon, reach) = match f.armed_until {
            Some(until) => (until, format!("after the armed duration ends at {}", at(until))),
            None => (now + AUTO_RESUME_HORIZON, "more than 12 h away".to_string()),
        };
        return if due <= horizon {
            parked(format!("a resume after the usage limit is due at {}", at(due)), due)
        } else {
            Want {
                hold: false,
                reason: format!("the next action, a resume at {}, is {reach}", at(due)),
                next_action: Some(due),
                parked_until: None,
            }
        };
    }
    if f.waiting_for_user {
        return release("waiting for you: nothing runs by itself until you answer");
    }
    match f.armed_until {
        Some(until) if until > now && !f.cycles_blocked => hold(format!("respawn is armed until {}", at(until))),
        Some(_) if f.cycles_blocked => release("respawn cycles are stopped (a breaker or the reserve)"),
        _ => release("nothing is armed or due"),
    }
}

/// What a scheduled start that is `due` needs of the machine at `now`: awake when it is due within
/// [`AUTO_RESUME_HORIZON`] (a machine asleep at 23:30 starts its 23:30 job only when it wakes).
pub fn want_scheduled(due: DateTime<Utc>, now: DateTime<Utc>) -> Want {
    if due <= now + AUTO_RESUME_HORIZON {
        Want {
            hold: true,
            reason: format!("a scheduled start is due at {}", at(due)),
            next_action: None,
            parked_until: Some(due),
        }
    } else {
        Want {
            hold: false,
            reason: format!("the scheduled start at {} is more than 12 h away", at(due)),
            next_action: Some(due),
            parked_until: None,
        }
    }
}

/// When the machine may sleep through a wait and be woken for its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SleepSettings {
    /// A wait at least this long lets the machine sleep (30 minutes unless set).
    pub min_wait: chrono::Duration,
    /// On battery, a wait at least this long does (10 minutes unless set): hold nothing that is
    /// not needed.
    pub battery_min_wait: chrono::Duration,
    /// The alarm wakes it this long before the earliest action is due.
    pub lead: chrono::Duration,
    /// A wake alarm can be armed here (the helper, with its capability) and suspend is allowed;
    /// without, every wait is held awake, as before.
    pub can_wake: bool,
}

impl Default for SleepSettings {
    fn default() -> Self {
        Self {
            min_wait: chrono::Duration::minutes(30),
            battery_min_wait: chrono::Duration::minutes(10),
            lead: chrono::Duration::minutes(2),
            can_wake: false,
        }
    }
}

impl SleepSettings {
    /// The settings on this power: on battery, the shorter wait lets the machine sleep.
    pub fn on(self, battery: bool) -> Self {
        if battery {
            Self { min_wait: self.battery_min_wait.min(self.min_wait), ..self }
        } else {
            self
        }
    }

    /// For people: what a night does with its waits under these settings.
    pub fn describe(&self, battery: bool) -> String {
        let minutes = |d: chrono::Duration| d.num_minutes().max(0);
        if !self.can_wake {
            return "every wait is held awake: no wake alarm can be set here".into();
        }
        let wait = self.on(battery).min_wait;
        let power = if battery { "on battery, " } else { "" };
        if wait.num_seconds() % 60 == 0 {
            format!(
                "{power}it sleeps through a wait of {} min or more, and a wake alarm wakes it {} min before",
                minutes(wait),
                minutes(self.lead)
            )
        } else {
            format!(
                "{power}it sleeps through a wait of {} s or more, and a wake alarm wakes it {} s before",
                wait.num_seconds(),
                self.lead.num_seconds()
            )
        }
    }
}

/// What the night as a whole does with the machine now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Night {
    /// Keep it awake: something runs now, or is due soon, or nothing could wake it in time.
    Hold,
    /// Nothing needs it: it sleeps as usual, and nothing is due to wake it for.
    Free,
    /// Everything that needs it waits until `due`, far enough off: let it sleep, and wake it at
    /// `wake_at`, a little before.
    Sleep { wake_at: DateTime<Utc>, due: DateTime<Utc> },
}

/// Whether every session and start that holds the machine is parked until a time at least
/// `min_wait` away; if so the machine sleeps, with an alarm `lead` before the earliest. A wait
/// whose time has passed (a wake that came late) holds: its action runs at once.
pub fn night(wants: &[(String, Want)], now: DateTime<Utc>, s: &SleepSettings) -> Night {
    if !wants.iter().any(|(_, w)| w.hold) {
        return Night::Free;
    }
    match earliest_parked(wants) {
        Some(due) if s.can_wake && due - now >= s.min_wait && due - s.lead > now => {
            Night::Sleep { wake_at: due - s.lead, due }
        }
        _ => Night::Hold,
    }
}

/// The earliest time everything that holds the machine is parked until; `None` when something
/// holds it unparked, or nothing holds it.
fn earliest_parked(wants: &[(String, Want)]) -> Option<DateTime<Utc>> {
    let parked: Option<Vec<DateTime<Utc>>> =
        wants.iter().filter(|(_, w)| w.hold).map(|(_, w)| w.parked_until).collect();
    parked.and_then(|dues| dues.into_iter().min())
}

/// Whether an alarm set for `alarm` still stands at `now`: everything that holds the machine is
/// still parked, and the earliest until the same time. Once the night chose to sleep through a
/// wait, the wait growing short does not take the machine back (the alarm wakes it); something new
/// that needs it, or sooner, does.
pub fn alarm_stands(wants: &[(String, Want)], now: DateTime<Utc>, s: &SleepSettings, alarm: DateTime<Utc>) -> bool {
    s.can_wake && alarm > now && earliest_parked(wants).is_some_and(|due| due - s.lead == alarm)
}

/// For people: the machine sleeps through a wait, woken at `wake_at` for what is due at `due`
/// (said in the user's `zone`).
pub fn sleeping(wake_at: DateTime<Utc>, due: DateTime<Utc>, zone: &crate::clock::Zone) -> String {
    let local = |t: DateTime<Utc>| t.with_timezone(zone).format("%H:%M").to_string();
    format!(
        "Letting it sleep through the wait: everything that needs it waits until {}, and a wake alarm is set for {}.",
        local(due),
        local(wake_at)
    )
}

/// What all of a process's sessions (and scheduled starts) need of the machine, together.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verdict {
    /// What each that needs it awake says (`id: reason`).
    pub holding_for: Vec<String>,
    /// What each that lets it sleep with an action planned says.
    pub released_for: Vec<String>,
}

/// The machine is kept awake while any of `wants` (by session or schedule id) needs it.
pub fn verdict(wants: &[(String, Want)]) -> Verdict {
    let said = |(id, w): &(String, Want)| format!("{id}: {}", w.reason);
    Verdict {
        holding_for: wants.iter().filter(|(_, w)| w.hold).map(said).collect(),
        // A session that lets the machine sleep because its next action is far off says so.
        released_for: wants.iter().filter(|(_, w)| !w.hold && w.next_action.is_some()).map(said).collect(),
    }
}

impl Verdict {
    pub fn hold(&self) -> bool {
        !self.holding_for.is_empty()
    }

    /// For people: whether the machine is kept awake and for what, `holding` saying whether the
    /// inhibitors could be taken.
    pub fn reason(&self, holding: bool) -> String {
        match (self.holding_for.len(), holding) {
            (0, _) if !self.released_for.is_empty() => {
                format!("No session needs it now ({}).", self.released_for.join("; "))
            }
            (0, _) => "No session needs it now; the machine sleeps as usual.".into(),
            (n, true) => format!(
                "Keeping it awake (idle and sleep, not the display) for {n} session(s): {}.",
                self.holding_for.join("; ")
            ),
            (n, false) => format!("{n} session(s) need it, but the machine could not be kept awake."),
        }
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_scheduled_start_keeps_the_machine_awake_within_twelve_hours() {
        let now: DateTime<Utc> = "2026-12-01T21:00:00Z".parse().unwrap();
        let soon = want_scheduled(now + chrono::Duration::hours(2), now);
        assert!(soon.hold && soon.reason.contains("scheduled start"), "{soon:?}");
        let far = want_scheduled(now + chrono::Duration::hours(13), now);
        assert!(!far.hold && far.next_action == Some(now + chrono::Duration::hours(13)), "{far:?}");
    }
    use super::*;

    #[test]
    fn the_verdict_holds_for_any_session_that_needs_it_and_names_the_far_ones() {
        let want = |hold, reason: &str, next: Option<DateTime<Utc>>| Want {
            hold,
            reason: reason.into(),
            next_action: next,
            ..Want::default()
        };
        let weekly = Some(now() + chrono::Duration::days(3));
        let wants = vec![
            ("a".to_string(), want(false, "a weekly reset far off", weekly)),
            ("b".to_string(), want(true, "the agent is working", None)),
            ("c".to_string(), want(false, "nothing is armed or due", None)),
        ];
        let v = verdict(&wants);
        assert!(v.hold());
        assert_eq!(
            v.reason(true),
            "Keeping it awake (idle and sleep, not the display) for 1 session(s): b: the agent is working."
        );
        assert_eq!(v.reason(false), "1 session(s) need it, but the machine could not be kept awake.");
        let v = verdict(&wants[..1]);
        assert!(!v.hold());
        assert_eq!(v.reason(false), "No session needs it now (a: a weekly reset far off).");
        assert_eq!(verdict(&[]).reason(false), "No session needs it now; the machine sleeps as usual.");
    }

    fn now() -> DateTime<Utc> {
        "2026-12-01T23:00:00Z".parse().unwrap()
    }

    /// A session armed for the night, waiting for a limit's reset `wait` from now.
    fn waiting(wait: chrono::Duration) -> Want {
        let f = Facts {
            resume_due: Some(now() + wait),
            armed_until: Some(now() + chrono::Duration::hours(9)),
            ..Facts::default()
        };
        want(&f, now())
    }

    const WAKES: SleepSettings = SleepSettings {
        min_wait: chrono::Duration::minutes(30),
        battery_min_wait: chrono::Duration::minutes(10),
        lead: chrono::Duration::minutes(2),
        can_wake: true,
    };

    #[test]
    fn a_three_hour_wait_sleeps_with_an_alarm_two_minutes_before_the_reset() {
        let three_hours = waiting(chrono::Duration::hours(3));
        assert!(three_hours.hold, "the session alone still holds: it is the night that decides");
        let reset = now() + chrono::Duration::hours(3);
        assert_eq!(three_hours.parked_until, Some(reset));
        let wants = vec![("a".to_string(), three_hours)];
        assert_eq!(
            night(&wants, now(), &WAKES),
            Night::Sleep { wake_at: reset - chrono::Duration::minutes(2), due: reset }
        );
        assert_eq!(night(&wants, now(), &SleepSettings { can_wake: false, ..WAKES }), Night::Hold, "no alarm: held");
    }

    #[test]
    fn a_ten_minute_wait_holds() {
        let wants = vec![("a".to_string(), waiting(chrono::Duration::minutes(10)))];
        assert_eq!(night(&wants, now(), &WAKES), Night::Hold);
    }

    #[test]
    fn a_session_that_arms_in_the_middle_takes_the_hold_again() {
        let mut wants = vec![("a".to_string(), waiting(chrono::Duration::hours(3)))];
        assert!(matches!(night(&wants, now(), &WAKES), Night::Sleep { .. }));
        let working = want(&Facts { working: true, ..Facts::default() }, now());
        wants.push(("b".to_string(), working));
        assert_eq!(night(&wants, now(), &WAKES), Night::Hold, "b works now");
        let schedule = want_scheduled(now() + chrono::Duration::hours(1), now());
        let wants = vec![("a".to_string(), waiting(chrono::Duration::hours(3))), ("s".to_string(), schedule)];
        let start = now() + chrono::Duration::hours(1);
        assert_eq!(
            night(&wants, now(), &WAKES),
            Night::Sleep { wake_at: start - chrono::Duration::minutes(2), due: start },
            "the earliest wakes it"
        );
    }

    #[test]
    fn a_wake_that_came_late_holds_so_the_resume_runs_at_once() {
        let wants = vec![("a".to_string(), waiting(chrono::Duration::hours(3)))];
        let late = now() + chrono::Duration::hours(3) + chrono::Duration::minutes(7);
        assert_eq!(night(&wants, late, &WAKES), Night::Hold);
        assert_eq!(night(&[], now(), &WAKES), Night::Free, "nothing needs it: no alarm either");
    }

    #[test]
    fn an_alarm_set_stands_as_the_wait_grows_short_until_something_new_needs_the_machine() {
        let reset = now() + chrono::Duration::hours(3);
        let wants = vec![("a".to_string(), waiting(chrono::Duration::hours(3)))];
        let Night::Sleep { wake_at, .. } = night(&wants, now(), &WAKES) else { panic!() };
        // Ten minutes before the reset: a new decision would hold, the alarm set stands.
        let late = reset - chrono::Duration::minutes(10);
        assert_eq!(night(&wants, late, &WAKES), Night::Hold);
        assert!(alarm_stands(&wants, late, &WAKES, wake_at));
        // Past its time (it went off, or was missed), it stands no more.
        assert!(!alarm_stands(&wants, wake_at, &WAKES, wake_at));
        // A session that starts working, or a wait that ends sooner, takes the machine back.
        let mut busy = wants.clone();
        busy.push(("b".to_string(), want(&Facts { working: true, ..Facts::default() }, now())));
        assert!(!alarm_stands(&busy, late, &WAKES, wake_at));
        let mut sooner = wants.clone();
        sooner.push(("c".to_string(), waiting(chrono::Duration::hours(1))));
        assert!(!alarm_stands(&sooner, now(), &WAKES, wake_at));
    }

    #[test]
    fn on_battery_a_shorter_wait_sleeps_and_the_settings_say_so() {
        let wants = vec![("a".to_string(), waiting(chrono::Duration::minutes(15)))];
        assert_eq!(night(&wants, now(), &WAKES.on(false)), Night::Hold, "on mains, 15 min is held");
        let reset = now() + chrono::Duration::minutes(15);
        assert_eq!(
            night(&wants, now(), &WAKES.on(true)),
            Night::Sleep { wake_at: reset - chrono::Duration::minutes(2), due: reset },
            "on battery it is not needed"
        );
        assert_eq!(
            WAKES.describe(true),
            "on battery, it sleeps through a wait of 10 min or more, and a wake alarm wakes it 2 min before"
        );
        assert_eq!(
            SleepSettings { can_wake: false, ..WAKES }.describe(true),
            "every wait is held awake: no wake alarm can be set here"
        );
        // An alarm is never set for a time already past: a lead longer than the wait holds.
        let long_lead =
            SleepSettings { min_wait: chrono::Duration::minutes(1), lead: chrono::Duration::hours(1), ..WAKES };
        assert_eq!(night(&wants, now(), &long_lead), Night::Hold);
    }

    #[test]
    fn the_policy_table() {
        let h = chrono::Duration::hours;
        let armed = Some(now() + h(8));
        let cases: [(&str, Facts, bool); 12] = [
            ("working, nothing armed", Facts { working: true, ..Facts::default() }, true),
            ("idle, nothing armed", Facts::default(), false),
            ("idle, respawn armed", Facts { armed_until: armed, ..Facts::default() }, true),
            ("respawn's duration over", Facts { armed_until: Some(now() - h(1)), ..Facts::default() }, false),
            (
                "a breaker stopped the cycles",
                Facts { armed_until: armed, cycles_blocked: true, ..Facts::default() },
                false,
            ),
            ("a cycle runs", Facts { cycling: true, ..Facts::default() }, true),
            ("a restart is due", Facts { restarting: true, ..Facts::default() }, true),
            ("held", Facts { held: true, working: true, ..Facts::default() }, false),
            ("ended", Facts { ended: true, ..Facts::default() }, false),
            ("auto-resume, resume in 2 h", Facts { resume_due: Some(now() + h(2)), ..Facts::default() }, true),
            ("auto-resume, resume in 60 h", Facts { resume_due: Some(now() + h(60)), ..Facts::default() }, false),
            (
                "respawn, resume after the armed duration",
                Facts { resume_due: Some(now() + h(9)), armed_until: armed, cycles_blocked: true, ..Facts::default() },
                false,
            ),
        ];
        for (name, facts, hold) in cases {
            let w = want(&facts, now());
            assert_eq!(w.hold, hold, "{name}: {}", w.reason);
        }
        let far = want(&Facts { resume_due: Some(now() + h(60)), ..Facts::default() }, now());
        assert_eq!(far.next_action, Some(now() + h(60)));
        assert!(far.reason.contains("more than 12 h away"), "{}", far.reason);
    }
}
