use super::*;

fn t(s: &str) -> DateTime<Utc> {
    s.parse().unwrap()
}

fn sample(five: f64, five_reset: &str, seven: f64, seven_reset: &str, cost: Option<f64>) -> Sample {
    Sample {
        five_hour_pct: Some(five),
        five_hour_resets_at: Some(t(five_reset)),
        seven_day_pct: Some(seven),
        seven_day_resets_at: Some(t(seven_reset)),
        cost_usd: cost,
        ..Sample::default()
    }
}

const NOW: &str = "2026-12-02T00:30:00Z";
const MORNING: &str = "2026-12-02T08:00:00Z";
const WEEK: &str = "2026-12-04T09:00:00Z";

#[test]
fn a_window_that_fills_at_0210_waits_for_its_0400_reset_then_fills_again() {
    let reset = "2026-12-02T04:00:00Z";
    let samples = vec![
        ("a".to_string(), t("2026-12-01T23:30:00Z"), sample(20.0, reset, 40.0, WEEK, Some(1.0))),
        ("a".to_string(), t("2026-12-02T00:00:00Z"), sample(35.0, reset, 40.5, WEEK, Some(1.3))),
        ("a".to_string(), t(NOW), sample(50.0, reset, 41.0, WEEK, Some(1.6))),
    ];
    let plan = forecast(&samples, 1, t(NOW), t(MORNING));
    assert_eq!(plan.five_hour.burn_pct_per_hour, Some(30.0));
    assert_eq!(plan.five_hour.full_at, Some(t("2026-12-02T02:10:00Z")));
    let waits: Vec<(DateTime<Utc>, DateTime<Utc>, bool)> =
        plan.waits.iter().map(|w| (w.from, w.until, w.resumes)).collect();
    assert_eq!(
        waits,
        [
            (t("2026-12-02T02:10:00Z"), t("2026-12-02T04:00:00Z"), true),
            // From zero at 04:00, 30 %/h: full at 07:20, and its reset (09:00) is past the morning.
            (t("2026-12-02T07:20:00Z"), t("2026-12-02T09:00:00Z"), false),
        ]
    );
    assert_eq!(plan.resumes, 1);
    assert_eq!((plan.stops_at, plan.stops_why.as_str()), (t(MORNING), "the morning"));
    assert_eq!(plan.seven_day.full_at, None, "41 % at 1 %/h lasts the night");
    // $0.60 an hour; 7.5 h to the morning less 1 h 50 min and 40 min of waits = 5 h of work.
    assert!((plan.cost_per_hour.unwrap() - 0.6).abs() < 1e-9, "{:?}", plan.cost_per_hour);
    assert!((plan.expected_usd.unwrap() - 3.0).abs() < 1e-9, "{:?}", plan.expected_usd);
    let text = plan.text(&Utc);
    assert!(text.contains("5-hour window: 50 % used, burning 30.0 %/h → full at 02:10, resets 04:00"), "{text}");
    assert!(
        text.contains("Limit waits: 02:10–04:00 (then a resume), 07:20–09:00 (past the morning) → 1 resume(s)"),
        "{text}"
    );
    assert!(text.contains("Expected spend: about $3.00"), "{text}");
}

#[test]
fn a_seven_day_window_that_runs_out_before_morning_stops_the_night() {
    let samples = vec![
        ("a".to_string(), t("2026-12-01T23:30:00Z"), sample(10.0, "2026-12-02T03:00:00Z", 94.0, WEEK, None)),
        ("a".to_string(), t(NOW), sample(15.0, "2026-12-02T03:00:00Z", 96.0, WEEK, None)),
    ];
    let plan = forecast(&samples, 2, t(NOW), t(MORNING));
    assert_eq!(plan.seven_day.full_at, Some(t("2026-12-02T02:30:00Z")));
    assert_eq!((plan.stops_at, plan.stops_why.as_str()), (t("2026-12-02T02:30:00Z"), "the 7-day window runs out"));
    assert_eq!(plan.waits.len(), 1, "{:?}", plan.waits);
    assert_eq!((plan.waits[0].window, plan.waits[0].until, plan.waits[0].resumes), ("7d", t(WEEK), false));
    assert_eq!(plan.resumes, 0);
    assert_eq!(plan.expected_usd, None, "no cost readings");
    assert!(plan.text(&Utc).contains("Work is expected to stop at 02:30: the 7-day window runs out"));
}

#[test]
fn no_samples_says_so_and_nothing_armed_stops_now() {
    let plan = forecast(&[], 1, t(NOW), t(MORNING));
    assert_eq!(plan.samples, 0);
    assert_eq!((plan.five_hour.used_pct, plan.five_hour.burn_pct_per_hour), (None, None));
    assert!(plan.waits.is_empty());
    assert_eq!(plan.stops_at, t(MORNING));
    let text = plan.text(&Utc);
    assert!(text.contains("No usage readings in the last 3 hours"), "{text}");
    assert!(text.contains("5-hour window: unknown, burn unknown"), "{text}");

    let samples = vec![("a".to_string(), t(NOW), sample(99.0, "2026-12-02T01:00:00Z", 50.0, WEEK, None))];
    let idle = forecast(&samples, 0, t(NOW), t(MORNING));
    assert_eq!((idle.stops_at, idle.stops_why.as_str()), (t(NOW), "no session is armed"));
    assert!(idle.waits.is_empty());
}

#[test]
fn readings_of_an_earlier_window_or_too_close_together_make_no_burn() {
    let samples = vec![
        // The window before the last reset: not this one's burn.
        ("a".to_string(), t("2026-12-01T23:00:00Z"), sample(90.0, "2026-12-01T23:30:00Z", 40.0, WEEK, None)),
        ("a".to_string(), t("2026-12-02T00:25:00Z"), sample(5.0, "2026-12-02T04:30:00Z", 40.0, WEEK, None)),
        ("a".to_string(), t(NOW), sample(6.0, "2026-12-02T04:30:00Z", 40.0, WEEK, None)),
    ];
    let plan = forecast(&samples, 1, t(NOW), t(MORNING));
    assert_eq!(plan.five_hour.burn_pct_per_hour, None, "5 minutes of one window is too little");
    assert_eq!(plan.seven_day.burn_pct_per_hour, Some(0.0));
}

#[test]
fn the_plan_says_when_the_machine_sleeps_through_a_wait_and_wakes_for_its_reset() {
    let reset = "2026-12-02T04:00:00Z";
    let samples = vec![
        ("a".to_string(), t("2026-12-01T23:30:00Z"), sample(20.0, reset, 40.0, WEEK, None)),
        ("a".to_string(), t(NOW), sample(50.0, reset, 41.0, WEEK, None)),
    ];
    let wakes = crate::awake::SleepSettings { can_wake: true, ..Default::default() };
    let plan = forecast(&samples, 1, t(NOW), t(MORNING)).with_sleep(&wakes);
    let sleep = plan.sleep.as_ref().unwrap();
    assert_eq!(
        sleep.stretches,
        [
            Stretch { from: t("2026-12-02T02:10:00Z"), wakes_at: Some(t("2026-12-02T03:58:00Z")) },
            Stretch { from: t("2026-12-02T07:20:00Z"), wakes_at: None },
        ]
    );
    let text = plan.text(&Utc);
    assert!(
        text.contains(
            "The machine: sleeps 02:10–03:58, wakes for the reset; sleeps from 07:20 to the morning: nothing to wake for\n"
        ),
        "{text}"
    );
    // Without a wake alarm, the waits are held awake, and the plan says so.
    let held = forecast(&samples, 1, t(NOW), t(MORNING)).with_sleep(&crate::awake::SleepSettings::default());
    assert!(held.text(&Utc).contains("The machine: kept awake through the waits, as no wake alarm can be set here"));
    // A wait shorter than the threshold is held too.
    let long = crate::awake::SleepSettings { min_wait: Duration::hours(2), ..wakes };
    let short = forecast(&samples, 1, t(NOW), t(MORNING)).with_sleep(&long);
    assert!(short.text(&Utc).contains("kept awake through the waits, too short to sleep through"));
}

#[test]
fn with_codex_armed_too_the_machine_sleeps_only_where_both_wait() {
    let waits = [(t("2026-12-02T02:00:00Z"), t("2026-12-02T04:00:00Z"), true)];
    let codex = [(t("2026-12-02T03:00:00Z"), t("2026-12-02T05:00:00Z"), true)];
    assert_eq!(overlap(&waits, &codex), [(t("2026-12-02T03:00:00Z"), t("2026-12-02T04:00:00Z"), true)]);
    assert!(overlap(&waits, &[(t("2026-12-02T05:00:00Z"), t("2026-12-02T06:00:00Z"), true)]).is_empty());
}

#[test]
fn with_a_morning_reserve_the_plan_parks_where_the_backlog_would_drain_the_window() {
    // 40 %/h from 20 % at 03:30: the window that resets at 09:00 (and holds 08:30) would be empty
    // at 05:30. Keeping 20 % for 08:30, the work parks at 80 %, at 05:00, until the reset.
    let reset = "2026-12-05T09:00:00Z";
    let samples = vec![
        ("a".to_string(), t("2026-12-05T03:30:00Z"), sample(20.0, reset, 10.0, "2026-12-09T09:00:00Z", None)),
        ("a".to_string(), t("2026-12-05T04:30:00Z"), sample(60.0, reset, 11.0, "2026-12-09T09:00:00Z", None)),
    ];
    let (now, until) = (t("2026-12-05T04:30:00Z"), t("2026-12-05T10:00:00Z"));
    let plain = forecast(&samples, 1, now, until);
    assert_eq!(
        plain.waits.iter().map(|w| (w.from, w.parked.is_some())).collect::<Vec<_>>(),
        [(t("2026-12-05T05:30:00Z"), false)]
    );
    let pace =
        crate::limits::pace::PaceSettings { morning_reserve: Some("20% at 08:30".parse().unwrap()), weekly_pace: None };
    let plan = Plan { work_per_hour: Some(2.0), ..forecast(&samples, 1, now, until) }.with_pace(&pace, &Utc);
    let waits: Vec<(DateTime<Utc>, DateTime<Utc>, bool)> =
        plan.waits.iter().map(|w| (w.from, w.until, w.parked.is_some())).collect();
    assert_eq!(waits, [(t("2026-12-05T05:00:00Z"), t(reset), true)]);
    let text = plan.text(&Utc);
    assert!(text.contains("Limit waits: none expected"), "{text}");
    assert!(
        text.contains(
            "Pace: parked 05:00–09:00 to keep 20% of the 5-hour window for the morning (08:30) (about 4.0 h of work, \
             8 cycle(s) or task(s) at the last 3 hours' pace)"
        ),
        "{text}"
    );
    // The machine may sleep through the park, and is woken for its end.
    let wakes = crate::awake::SleepSettings { can_wake: true, ..Default::default() };
    let slept = plan.with_sleep(&wakes);
    assert!(slept.text(&Utc).contains("The machine: sleeps 05:00–08:58, wakes for the reset"), "{}", slept.text(&Utc));
}

#[test]
fn with_a_weekly_pace_a_week_ahead_of_it_parks_now_until_a_later_day() {
    let week = "2026-12-10T10:00:00Z";
    let samples = vec![
        ("a".to_string(), t("2026-12-04T12:00:00Z"), sample(10.0, "2026-12-04T16:00:00Z", 48.0, week, None)),
        ("a".to_string(), t("2026-12-04T13:00:00Z"), sample(20.0, "2026-12-04T16:00:00Z", 50.0, week, None)),
    ];
    let (now, until) = (t("2026-12-04T14:00:00Z"), t("2026-12-05T08:00:00Z"));
    let pace = crate::limits::pace::PaceSettings { morning_reserve: None, weekly_pace: Some(5.0) };
    let plan = forecast(&samples, 1, now, until).with_pace(&pace, &Utc);
    assert_eq!(plan.stops_at, now, "day 4 is past the morning");
    let text = plan.text(&Utc);
    assert!(
        text.contains("Pace: parked 14:00–Sun 10:00 to keep the weekly pace: day 2 of the week allows 34%"),
        "{text}"
    );
}

fn ev(at: &str, session: &str, kind: crate::event::EventKind) -> crate::event::Event {
    crate::event::Event { ts: t(at), session: crate::event::SessionId::from(session.to_string()), kind }
}

/// A Claude session paused at 00:59 on a 5-hour limit that resets at 04:00, its resume due at
/// 04:01, and Nightshift's sleep allowed at 01:00 with the wake alarm at 03:59.
fn paused_on_a_limit() -> Vec<crate::event::Event> {
    use crate::event::{EventKind, SessionState, SleepAction};
    let id = "p0000001";
    vec![
        ev("2026-12-02T00:40:00Z", id, EventKind::state(SessionState::Working, "the agent is in a turn")),
        ev(
            "2026-12-02T00:59:00Z",
            id,
            EventKind::LimitDetected {
                resets_at: Some(t("2026-12-02T04:00:00Z")),
                source: crate::limits::Source::Text,
                kind: crate::limits::LimitKind::FiveHour,
                line: "You've hit your session limit · resets 4am".into(),
            },
        ),
        ev("2026-12-02T00:59:00Z", id, EventKind::state(SessionState::LimitPaused, "usage limit")),
        ev(
            "2026-12-02T00:59:01Z",
            id,
            EventKind::ResumeArmed {
                resets_at: Some(t("2026-12-02T04:00:00Z")),
                due: t("2026-12-02T04:01:00Z"),
                settings: crate::limits::resume::Settings::default(),
                guard: crate::limits::WindowGuard::default(),
            },
        ),
        ev(
            "2026-12-02T01:00:00Z",
            id,
            EventKind::Sleep {
                action: SleepAction::Allowed,
                at: t("2026-12-02T03:59:00Z"),
                due: Some(t("2026-12-02T04:01:00Z")),
                reason: "every wait is long: p0000001: a resume after the usage limit is due".into(),
            },
        ),
    ]
}

#[test]
fn a_session_paused_on_a_limit_3_hours_out_is_a_wait_the_machine_sleeps_through_until_its_alarm() {
    let now = t("2026-12-02T01:00:30Z");
    let events = paused_on_a_limit();
    let waiting = waits::of_session("p0000001", "claude", &events, &[], false);
    let asleep = waits::asleep(&events, now);
    let wakes = crate::awake::SleepSettings { can_wake: true, ..Default::default() };
    // No usage readings: the burn alone would see no wait at all.
    let plan = forecast(&[], 1, now, t(MORNING)).with_waiting(waiting, asleep).with_sleep(&wakes);
    let text = plan.text(&Utc);
    assert!(!text.contains("Limit waits: none expected"), "{text}");
    assert!(text.contains("Limit waits: 00:59–04:00 (in progress, then a resume) → 1 resume(s)"), "{text}");
    assert!(
        text.contains("p0000001 (claude): paused on the 5-hour limit since 00:59, resets 04:00 → a resume at 04:01"),
        "{text}"
    );
    assert!(
        text.contains(
            "The machine: allowed to sleep since 01:00; its wake alarm is set for 03:59, for what is due at 04:01\n"
        ),
        "{text}"
    );
    assert!(!text.contains("sleeps 01:00–03:59"), "the sleep in progress is not forecast again: {text}");
    let json = serde_json::to_value(&plan).unwrap();
    assert_eq!(json["waiting"][0]["on"], "limit", "{json}");
    assert_eq!(json["waiting"][0]["window"], "5h");
    assert_eq!(json["waiting"][0]["until"], "2026-12-02T04:01:00.000Z");
    assert_eq!(json["waiting"][0]["resets_at"], "2026-12-02T04:00:00.000Z");
    assert_eq!(json["asleep"]["wakes_at"], "2026-12-02T03:59:00.000Z");
    assert_eq!(json["waits"][0]["in_progress"], true);
    // The wake alarm gone off (or taken back): no sleep stands.
    let mut woken = events.clone();
    woken.push(ev(
        "2026-12-02T03:59:00Z",
        "p0000001",
        crate::event::EventKind::Sleep {
            action: crate::event::SleepAction::Woken,
            at: t("2026-12-02T03:59:00Z"),
            due: None,
            reason: "the wake alarm went off".into(),
        },
    ));
    assert_eq!(waits::asleep(&woken, t("2026-12-02T03:59:30Z")), None);
}

#[test]
fn a_session_that_moves_at_the_limit_is_told_when_the_plan_expects_it() {
    let reset = "2026-12-02T04:00:00Z";
    let samples = vec![
        ("a".to_string(), t("2026-12-01T23:30:00Z"), sample(20.0, reset, 40.0, WEEK, Some(1.0))),
        ("a".to_string(), t(NOW), sample(50.0, reset, 41.0, WEEK, Some(1.6))),
    ];
    let moving = |session: &str, to: &str| Move {
        session: session.into(),
        agent: crate::agent::AgentKind::Claude,
        to: to.into(),
        at: None,
    };
    let plan = forecast(&samples, 2, t(NOW), t(MORNING))
        .with_moves(vec![moving("1a2b3c4d", "Codex, back at the reset"), moving("5e6f7a8b", "another Claude account")]);
    assert_eq!(plan.moves.iter().map(|m| m.at).collect::<Vec<_>>(), [Some(t("2026-12-02T02:10:00Z")); 2]);
    let text = plan.text(&Utc);
    assert!(
        text.contains(
            "Moves: 1a2b3c4d goes on with Codex, back at the reset at the limit expected 02:10, instead of waiting"
        ),
        "{text}"
    );
    assert!(text.contains("Moves: 5e6f7a8b goes on with another Claude account at the limit"), "{text}");
    // A window that lasts the night: no limit expected.
    let calm = vec![("a".to_string(), t(NOW), sample(10.0, reset, 10.0, WEEK, None))];
    let plan = forecast(&calm, 1, t(NOW), t(MORNING)).with_moves(vec![moving("1a2b3c4d", "Codex, back at the reset")]);
    assert_eq!(plan.moves[0].at, None);
    assert!(plan.text(&Utc).contains("Codex, back at the reset if a limit comes"), "{}", plan.text(&Utc));
}
