use super::*;
use crate::breaker::RETRY;
use crate::event::SessionId;

fn t(s: &str) -> DateTime<Utc> {
    format!("2026-12-02T{s}:00Z").parse().unwrap()
}

fn ev(at: &str, kind: EventKind) -> Event {
    Event { ts: t(at), session: SessionId::from("s0000001".to_string()), kind }
}

fn breaker(at: &str, breaker: BreakerKind, state: BreakerState) -> Event {
    ev(at, EventKind::Breaker { breaker, state, reason: "5 lives in a row ended within a minute".into() })
}

/// A wait as the tests compare it: on what, since, until, then.
type Seen = (WaitOn, DateTime<Utc>, Option<DateTime<Utc>>, String);

fn waits(events: &[Event], ladder: &[Duration]) -> Vec<Seen> {
    of_session("s0000001", "claude", events, ladder, false)
        .into_iter()
        .map(|w| (w.on, w.since, w.until, w.then))
        .collect()
}

#[test]
fn an_open_breaker_tries_again_on_its_ladder_and_stays_open_past_it() {
    let open = breaker("00:40", BreakerKind::CrashLoop, BreakerState::Open);
    assert_eq!(
        waits(std::slice::from_ref(&open), &RETRY),
        [(WaitOn::Breaker, t("00:40"), Some(t("00:55")), "one restart (half-open)".into())]
    );
    // The probe went through at 00:55 and failed: open again, for the second rung (30 min).
    let again = [
        open.clone(),
        breaker("00:55", BreakerKind::CrashLoop, BreakerState::HalfOpen),
        breaker("00:56", BreakerKind::CrashLoop, BreakerState::Open),
    ];
    assert_eq!(
        waits(&again, &RETRY),
        [(WaitOn::Breaker, t("00:56"), Some(t("01:26")), "one restart (half-open)".into())]
    );
    // Half-open now: the probe is under way, nothing is waited for.
    assert!(waits(&again[..2], &RETRY).is_empty());
    // Closed by progress, or reset; or a Nightshift that took the session back: no wait.
    let closed = [open.clone(), breaker("00:50", BreakerKind::CrashLoop, BreakerState::Closed)];
    assert!(waits(&closed, &RETRY).is_empty());
    let restored =
        [open.clone(), ev("00:50", EventKind::Restored { reason: "respawn was armed".into(), down_secs: 60 })];
    assert!(waits(&restored, &RETRY).is_empty());
    // No ladder (respawn not armed, or disarmed): open until the user resets it.
    let until_reset = (WaitOn::Breaker, t("00:40"), None, "nothing until `nightshift breaker reset`".to_string());
    assert_eq!(waits(std::slice::from_ref(&open), &[]), std::slice::from_ref(&until_reset));
    let disarmed = [
        ev(
            "00:30",
            EventKind::Respawn { action: crate::respawn::Action::Disarmed, cycle: None, reason: None, cost_usd: None },
        ),
        open.clone(),
    ];
    assert_eq!(waits(&disarmed, &RETRY), std::slice::from_ref(&until_reset));
    // A spent budget never tries again.
    let budget = breaker("00:40", BreakerKind::Budget, BreakerState::Open);
    assert_eq!(waits(&[budget], &RETRY), [until_reset]);
    let words = of_session("s0000001", "claude", &[open], &RETRY, false);
    assert_eq!(words[0].detail, "the crash-loop breaker is open: 5 lives in a row ended within a minute");
    let line = lines(&words, |t| t.format("%H:%M").to_string());
    assert_eq!(
        line,
        ["s0000001 (claude): the crash-loop breaker is open since 00:40 → one restart (half-open) at 00:55"]
    );
}

#[test]
fn a_loop_waits_for_its_retry_its_limit_and_a_projects_back_off_until_the_iteration_starts() {
    let retry = ev(
        "01:00",
        EventKind::LoopWait {
            why: WaitKind::Retry,
            until: Some(t("01:05")),
            project: None,
            detail: "retry 1 in 5m: overloaded".into(),
        },
    );
    let backoff = ev(
        "01:00",
        EventKind::LoopWait {
            why: WaitKind::Fruitless,
            until: Some(t("01:30")),
            project: Some("api".into()),
            detail: "3 iterations in a row settled nothing: backing off 30m".into(),
        },
    );
    assert_eq!(
        waits(&[retry.clone(), backoff.clone()], &[]),
        [
            (WaitOn::Retry, t("01:00"), Some(t("01:05")), "the iteration again".into()),
            (WaitOn::Backoff, t("01:00"), Some(t("01:30")), "api's next iteration".into()),
        ]
    );
    let started = ev(
        "01:05",
        EventKind::IterationStarted { iteration: 4, attempt: 2, project: "api".into(), task: None, probe: false },
    );
    assert!(waits(&[retry.clone(), backoff.clone(), started], &[]).is_empty());
    let probe = ev(
        "01:05",
        EventKind::IterationStarted { iteration: 4, attempt: 2, project: "api".into(), task: None, probe: true },
    );
    assert_eq!(waits(&[retry, probe], &[]).len(), 1, "a probe is not the iteration");

    // A loop's limit: one wait, the iteration again after the reset's margin.
    let limit = [
        ev(
            "01:00",
            EventKind::LimitDetected {
                resets_at: Some(t("04:00")),
                source: crate::limits::Source::Stream,
                kind: LimitKind::Unspecified,
                line: "usage limit".into(),
            },
        ),
        ev(
            "01:00",
            EventKind::LoopWait {
                why: WaitKind::Limit,
                until: Some(t("04:01")),
                project: None,
                detail: "a usage limit: the iteration runs again then".into(),
            },
        ),
    ];
    let found = of_session("s0000001", "claude", &limit, &[], false);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!((found[0].window, found[0].resets_at, found[0].until), (Some("5h"), Some(t("04:00")), Some(t("04:01"))));
    assert_eq!(found[0].then, "the iteration again");
    let cleared =
        [&limit[..], &[ev("04:02", EventKind::LimitCleared { reason: "the limit's reset has passed".into() })][..]]
            .concat();
    assert!(waits(&cleared, &[]).is_empty());
}

#[test]
fn a_schedule_a_park_and_a_resume_turned_off_are_waits_too() {
    let scheduled = [
        ev("22:00", EventKind::Scheduled { due: t("23:30"), why: "at 23:30".into() }),
        ev("22:00", EventKind::state(SessionState::Scheduled, "starts at 23:30")),
    ];
    assert_eq!(waits(&scheduled, &[]), [(WaitOn::Scheduled, t("22:00"), Some(t("23:30")), "the start".into())]);
    let started =
        [&scheduled[..], &[ev("23:30", EventKind::state(SessionState::Starting, "scheduled start"))][..]].concat();
    assert!(waits(&started, &[]).is_empty());

    let parked = ev(
        "05:00",
        EventKind::Paced {
            until: Some(t("09:00")),
            kind: crate::limits::pace::PaceKind::MorningReserve,
            reason: "to keep 20% of the 5-hour window for the morning".into(),
        },
    );
    assert_eq!(
        waits(std::slice::from_ref(&parked), &[]),
        [(WaitOn::Paced, t("05:00"), Some(t("09:00")), "cycles again".into())]
    );
    let ended = ev(
        "06:00",
        EventKind::Paced { until: None, kind: crate::limits::pace::PaceKind::MorningReserve, reason: "".into() },
    );
    assert!(waits(&[parked, ended], &[]).is_empty());

    // A limit whose resume the user turned off waits for nothing; a weekly one is the 7-day window.
    let weekly = [
        ev(
            "01:00",
            EventKind::LimitDetected {
                resets_at: Some("2026-12-04T09:00:00Z".parse().unwrap()),
                source: crate::limits::Source::Text,
                kind: LimitKind::Weekly,
                line: "weekly limit".into(),
            },
        ),
        ev("01:01", EventKind::Automation { change: Automation::AutoResumeOff, source: "cli".into(), detail: None }),
    ];
    let found = of_session("s0000001", "claude", &weekly, &[], true);
    assert_eq!((found[0].window, found[0].until), (Some("7d"), None));
    assert_eq!(found[0].then, "nothing by itself: auto-resume is off");
    assert!(lines(&found, |t| t.format("%a %H:%M").to_string())[0].ends_with("once one takes it back"));
}

#[test]
fn the_last_sleep_word_of_any_session_stands_while_its_alarm_is_ahead() {
    let allowed = |at: &str, wake: &str| {
        ev(at, EventKind::Sleep { action: SleepAction::Allowed, at: t(wake), due: Some(t("04:01")), reason: "".into() })
    };
    let cancelled =
        ev("02:00", EventKind::Sleep { action: SleepAction::Cancelled, at: t("03:59"), due: None, reason: "".into() });
    let first = allowed("01:00", "03:59");
    assert_eq!(
        asleep([&first], t("01:30")),
        Some(Asleep { since: t("01:00"), wakes_at: t("03:59"), due: Some(t("04:01")) })
    );
    assert_eq!(asleep([&first, &cancelled], t("02:30")), None, "taken back");
    assert_eq!(asleep([&cancelled, &first], t("02:30")), None, "by time, not by order");
    assert_eq!(asleep([&first], t("04:00")), None, "its alarm is past");
    assert_eq!(
        asleep([&first, &cancelled, &allowed("02:10", "05:58")], t("02:30")).map(|a| a.wakes_at),
        Some(t("05:58"))
    );
}
