use super::super::AnsweredBy;
use super::*;
use crate::agent::{Dialog, DialogKind};
use crate::event::Answerer;
use chrono::TimeZone;

fn at(h: u32, m: u32) -> DateTime<Utc> {
    let (day, h) = if h >= 12 { (30, h) } else { (31, h) };
    Utc.with_ymd_and_hms(2026, 12, day, h, m, 0).unwrap()
}

fn ev(t: DateTime<Utc>, kind: EventKind) -> Event {
    Event { ts: t, session: String::from("s1").into(), kind }
}

fn state(t: DateTime<Utc>, s: SessionState) -> Event {
    ev(t, EventKind::state(s, "because"))
}

fn asking(t: DateTime<Utc>, kind: DialogKind, text: &str) -> Event {
    let mut e = EventKind::state(SessionState::WaitingInput, "a dialog");
    if let EventKind::State { dialog, .. } = &mut e {
        *dialog = Some(Dialog::new(kind, Some(text.into())));
    }
    ev(t, e)
}

fn answered(t: DateTime<Utc>, kind: DialogKind, by: Answerer, waited_secs: u64) -> Event {
    ev(t, EventKind::DialogAnswered { dialog: kind, text: None, by, waited_secs, replaced: false })
}

fn read(events: &[Event]) -> Ledger {
    Ledger::read("s1", events, at(22, 0), at(8, 0), true, &HashMap::new())
}

fn texts(l: &Ledger) -> Vec<&str> {
    l.happened.iter().map(|h| h.text.as_str()).collect()
}

#[test]
fn a_dialog_answered_is_met_whichever_comes_first_the_answer_or_the_state_after_it() {
    let answer_first = [
        state(at(22, 0), SessionState::Working),
        asking(at(2, 10), DialogKind::Question, "Which database?"),
        answered(at(2, 11), DialogKind::Question, Answerer::Phone, 60),
        state(at(2, 11), SessionState::Working),
    ];
    let state_first = [
        state(at(22, 0), SessionState::Working),
        asking(at(2, 10), DialogKind::Question, "Which database?"),
        state(at(2, 11), SessionState::Working),
        answered(at(2, 11), DialogKind::Question, Answerer::Phone, 60),
    ];
    for events in [&answer_first[..], &state_first[..]] {
        let l = read(events);
        assert_eq!(l.waiting, None);
        assert_eq!((l.counts.questions, l.counts.questions_answered, l.counts.answered_by.phone), (1, 1, 1));
        assert_eq!(
            texts(&l),
            [format!(
                "asked \"Which database?\" at {}, answered from the phone at {}",
                hhmm(at(2, 10)),
                hhmm(at(2, 11))
            )]
        );
    }
    // A journal from before `dialog_answered`: the session going on is the answer, by someone.
    let old = read(&answer_first.iter().filter(|e| e.kind.name() != "dialog_answered").cloned().collect::<Vec<_>>());
    assert_eq!((old.counts.questions_answered, old.counts.answered_by.phone), (1, 0));
    assert_eq!(
        texts(&old),
        [format!("asked \"Which database?\" at {}, answered at {}", hhmm(at(2, 10)), hhmm(at(2, 11)))]
    );
    // Still on screen at the end: waiting, and no line.
    let open = read(&answer_first[..2]);
    assert_eq!(open.waiting, Some(Some("Which database?".to_string())));
    assert!(open.happened.is_empty());
}

#[test]
fn routine_answers_are_counted_not_told_and_an_exit_leaves_a_dialog_unanswered() {
    let l = read(&[
        state(at(22, 0), SessionState::Working),
        asking(at(23, 0), DialogKind::Trust, "Trust this folder?"),
        answered(at(23, 0), DialogKind::Trust, Answerer::Nightshift, 0),
        // The limit menu, answered under `limit_paused`: never seen asked as a state.
        answered(at(1, 0), DialogKind::Menu, Answerer::Nightshift, 1),
        asking(at(3, 0), DialogKind::Permission, "Allow git push?"),
        state(at(3, 5), SessionState::Exited),
    ]);
    assert_eq!(l.counts.answered_by.nightshift, 2);
    assert_eq!((l.counts.permissions, l.counts.permissions_answered, l.counts.dialogs_unanswered), (1, 0, 1));
    assert_eq!(l.waiting, None);
    assert_eq!(
        texts(&l),
        [format!(
            "asked permission: \"Allow git push?\" at {}, unanswered when the agent exited at {}",
            hhmm(at(3, 0)),
            hhmm(at(3, 5))
        )]
    );
}

#[test]
fn a_dialog_gone_with_nothing_typed_is_no_answer_and_no_need() {
    let l = read(&[
        state(at(22, 0), SessionState::Working),
        asking(at(2, 10), DialogKind::Question, "Shall I go on?"),
        answered(at(2, 40), DialogKind::Question, Answerer::Nobody, 1800),
        state(at(2, 40), SessionState::Idle),
    ]);
    assert_eq!(l.waiting, None);
    assert_eq!((l.counts.questions, l.counts.questions_answered, l.counts.dialogs_unanswered), (1, 0, 1));
    assert_eq!(l.counts.answered_by, AnsweredBy::default());
    assert_eq!(
        texts(&l),
        [format!("asked \"Shall I go on?\" at {}, gone at {} with nothing typed", hhmm(at(2, 10)), hhmm(at(2, 40)))]
    );
}

#[test]
fn the_same_line_again_is_one_line_with_its_count_and_first_and_last_time() {
    let mut events = vec![state(at(22, 0), SessionState::Working)];
    for h in [1, 2, 3] {
        events.push(asking(at(h, 0), DialogKind::Question, "Go on?"));
        events.push(answered(at(h, 1), DialogKind::Question, Answerer::Terminal, 60));
        events.push(state(at(h, 1), SessionState::Working));
    }
    let l = read(&events);
    assert_eq!(l.happened.len(), 1);
    let h = &l.happened[0];
    assert_eq!((h.count, h.first, h.last), (3, at(1, 0), at(3, 0)));
    assert_eq!(
        h.text,
        format!("asked \"Go on?\", answered at the terminal: 3 times, {} to {}", hhmm(at(1, 0)), hhmm(at(3, 0)))
    );
    assert_eq!(l.counts.questions_answered, 3);
}

#[test]
fn a_breaker_closed_after_a_half_open_back_off_is_met_and_one_never_opened_is_not_counted() {
    let breaker = |t, state| {
        ev(t, EventKind::Breaker { breaker: BreakerKind::CrashLoop, state, reason: "5 lives in a row".into() })
    };
    let l = read(&[
        breaker(at(1, 0), BreakerState::Open),
        breaker(at(1, 30), BreakerState::HalfOpen),
        breaker(at(1, 31), BreakerState::Closed),
        // Closed from half-open without opening: nothing met.
        ev(
            at(2, 0),
            EventKind::Breaker {
                breaker: BreakerKind::NoProgress,
                state: BreakerState::HalfOpen,
                reason: "2 cycles".into(),
            },
        ),
        ev(
            at(2, 30),
            EventKind::Breaker {
                breaker: BreakerKind::NoProgress,
                state: BreakerState::Closed,
                reason: "progress".into(),
            },
        ),
        breaker(at(4, 0), BreakerState::Open),
    ]);
    assert_eq!((l.counts.breakers_opened, l.counts.breakers_closed), (2, 1));
    assert_eq!(l.breakers_open, [BreakerKind::CrashLoop], "open again at the end");
    assert_eq!(
        texts(&l),
        [format!(
            "the crash-loop breaker opened at {} (5 lives in a row), closed at {}",
            hhmm(at(1, 0)),
            hhmm(at(1, 31))
        )]
    );
    assert_eq!(l.unusual.len(), 1);
    assert_eq!((l.unusual[0].kind, l.unusual[0].count), (UnusualKind::BreakerReopened, 2));
}

#[test]
fn a_limit_that_ended_and_a_resume_that_failed_then_worked() {
    let limit = |t| {
        ev(
            t,
            EventKind::LimitDetected {
                resets_at: None,
                source: crate::limits::Source::Text,
                kind: crate::limits::LimitKind::Unspecified,
                line: "limit".into(),
            },
        )
    };
    let l = read(&[limit(at(1, 0)), ev(at(5, 0), EventKind::LimitFailed { reason: "no".into() })]);
    assert!(l.resume_failed);
    let l = read(&[
        limit(at(1, 0)),
        ev(at(5, 0), EventKind::LimitFailed { reason: "no".into() }),
        ev(at(6, 0), EventKind::LimitCleared { reason: "working".into() }),
    ]);
    assert!(!l.resume_failed, "met: the agent works again");
    assert_eq!(
        texts(&l),
        [format!("hit a usage limit at {}, working again after a resume failed at {}", hhmm(at(1, 0)), hhmm(at(6, 0)))]
    );
}

#[test]
fn pushes_are_counted_per_message_and_an_old_journals_outage_as_one() {
    use crate::notice::Kind;
    let sent = |t| ev(t, EventKind::PushSent { target: "ntfy".into(), kind: Kind::Question });
    let not_sent = |t| ev(t, EventKind::PushNotSent { target: "ntfy".into(), kind: Kind::Finished });
    let outage = |t| ev(t, EventKind::PushFailed { target: "ntfy".into(), reason: "the server answered 503".into() });
    let l = read(&[sent(at(1, 0)), outage(at(2, 0)), not_sent(at(2, 0)), not_sent(at(3, 0)), sent(at(4, 0))]);
    assert_eq!((l.counts.pushes_sent, l.counts.pushes_failed), (2, 2));
    assert_eq!(
        texts(&l),
        [format!("push notifications to ntfy failed at {}: the server answered 503", hhmm(at(2, 0)))]
    );
    let old = read(&[outage(at(2, 0)), outage(at(4, 0))]);
    assert_eq!(old.counts.pushes_failed, 2);
}

#[test]
fn the_phones_buttons_are_counted_and_each_told_once_with_why_a_refusal() {
    let action = |t, applied: bool, refused: Option<&str>| {
        let kind = EventKind::RemoteAction {
            action: "answer 'PostgreSQL'".into(),
            choice: "option-2".into(),
            applied,
            refused: refused.map(str::to_string),
        };
        ev(t, kind)
    };
    let down = ev(at(2, 30), EventKind::PhoneListen { working: false, reason: "the server answered 503".into() });
    let l = read(&[
        action(at(2, 10), true, None),
        action(at(2, 11), false, Some("it was used already")),
        action(at(2, 12), false, Some("it was used already")),
        down,
    ]);
    assert_eq!((l.counts.phone_applied, l.counts.phone_refused), (1, 2));
    assert_eq!(
        texts(&l),
        [
            format!("from the phone at {}: answer 'PostgreSQL'", hhmm(at(2, 10))),
            format!(
                "from the phone, refused: answer 'PostgreSQL' (it was used already): 2 times, {} to {}",
                hhmm(at(2, 11)),
                hhmm(at(2, 12))
            ),
            format!("the phone's answers could not be heard from {}: the server answered 503", hhmm(at(2, 30))),
        ]
    );
    assert!(l.counts.phrases().iter().any(|p| p == "phone: 1 applied, 2 refused"), "{:?}", l.counts.phrases());
}

#[test]
fn only_what_is_in_the_range_is_counted_and_restarts_in_a_burst_are_unusual() {
    let restart =
        |t| ev(t, EventKind::Respawn { action: respawn::Action::Restart, cycle: None, reason: None, cost_usd: None });
    let mut events = vec![restart(at(21, 0)), restart(at(21, 10))];
    events.extend((0..4).map(|i| restart(at(3, 10 * i))));
    events.push(restart(at(9, 0)));
    let l = read(&events);
    assert_eq!(l.counts.restarts, 4, "before and after the range are left out");
    assert_eq!(l.unusual.len(), 1);
    assert_eq!((l.unusual[0].kind, l.unusual[0].count), (UnusualKind::Restarts, 4));
    assert!(l.unusual[0].text.starts_with("4 restarts, 4 of them within an hour"), "{}", l.unusual[0].text);
    let calm = read(&events[..5]);
    assert!(calm.unusual.is_empty(), "3 in an hour is not unusual");
}

#[test]
fn a_snapshot_followed_through_unchanged_salvages_and_one_of_the_users_files_alone() {
    let salvaged = |t, n: u32, commit: &str, preexisting: Vec<String>| {
        ev(
            t,
            EventKind::Salvaged {
                repo: "/r".into(),
                reference: format!("refs/nightshift/salvage/s1/{n}"),
                commit: commit.into(),
                files: 1,
                bytes: 10,
                reason: "the agent exited with code 1".into(),
                preexisting,
                users: Vec::new(),
                too_big: Vec::new(),
            },
        )
    };
    let unchanged = |t, n: u32, reason: &str| {
        ev(
            t,
            EventKind::SalvageUnchanged {
                repo: "/r".into(),
                reference: format!("refs/nightshift/salvage/s1/{n}"),
                reason: reason.into(),
            },
        )
    };
    let cycle = "before respawn cycle 2's /clear";
    let l = read(&[salvaged(at(1, 0), 1, "c1", vec![]), unchanged(at(2, 0), 1, cycle), unchanged(at(3, 0), 1, cycle)]);
    assert_eq!((l.counts.salvages, l.counts.salvages_unchanged), (1, 2));
    assert_eq!(l.salvaged.len(), 1);
    assert_eq!((l.salvaged[0].0.unchanged, l.salvaged[0].0.last), (2, at(3, 0)));
    assert!(l.salvaged[0].1.contains(", unchanged through 2 later cycles;"), "{}", l.salvaged[0].1);
    let stop = "stopped (the app)";
    let l = read(&[salvaged(at(1, 0), 1, "c1", vec![]), unchanged(at(2, 0), 1, cycle), unchanged(at(3, 0), 1, stop)]);
    assert!(l.salvaged[0].1.contains(", unchanged at 2 later salvages;"), "{}", l.salvaged[0].1);
    // Two commits of one tree (a journal from before salvage skipped them): one snapshot.
    let trees = HashMap::from([("c1".to_string(), "t".to_string()), ("c2".to_string(), "t".to_string())]);
    let events = [salvaged(at(1, 0), 1, "c1", vec![]), salvaged(at(2, 0), 2, "c2", vec![])];
    let l = Ledger::read("s1", &events, at(22, 0), at(8, 0), true, &trees);
    assert_eq!((l.counts.salvages, l.counts.salvages_unchanged, l.salvaged.len()), (1, 1, 1));
    // Only the user's own file: a line of what happened, not a need.
    let l = read(&[salvaged(at(1, 0), 1, "c1", vec!["mine.txt".into()])]);
    assert!(l.salvaged.is_empty());
    assert_eq!(l.happened[0].kind, HappeningKind::SalvagePreexisting);
    assert!(l.happened[0].text.contains("mine.txt") && l.happened[0].text.contains("not the agent's work"));
}

#[test]
fn a_stretch_the_pace_parked_is_one_line_with_its_reason_and_counted_in_minutes() {
    use crate::limits::pace::PaceKind;
    let reason = "to keep 20% of the 5-hour window for the morning (08:30): it is at 80%".to_string();
    let paced = |t, until| ev(t, EventKind::Paced { until, kind: PaceKind::MorningReserve, reason: reason.clone() });
    let events = vec![
        state(at(23, 0), SessionState::Working),
        paced(at(5, 40), Some(at(6, 20))),
        paced(at(6, 20), None),
        paced(at(7, 50), Some(at(9, 0))),
    ];
    let l = read(&events);
    assert_eq!((l.counts.parked, l.counts.parked_minutes), (2, 50));
    let lines = texts(&l);
    assert!(
        lines.contains(
            &"parked 05:40–06:20 (40 min) to keep 20% of the 5-hour window for the morning (08:30): it is at 80%"
        ),
        "{lines:?}"
    );
    assert!(
        lines.iter().any(|t| t.starts_with("parked since 07:50 to keep 20%")),
        "still parked at the end: {lines:?}"
    );
}

#[test]
fn the_morning_lists_each_automated_input_by_kind_with_its_times() {
    use crate::automated::Automated;
    let sent = |t, what| ev(t, EventKind::AutomatedInput { what, chars: 180 });
    let l = read(&[
        state(at(22, 0), SessionState::Working),
        sent(at(23, 10), Automated::Resume),
        sent(at(1, 0), Automated::Kickstart),
        sent(at(2, 0), Automated::Kickstart),
        sent(at(3, 0), Automated::Kickstart),
        sent(at(9, 0), Automated::Resume),
    ]);
    assert_eq!(l.counts.automated, 4, "the one after the range is not counted");
    assert_eq!(
        texts(&l),
        [
            "sent an automated resume at 23:10, marked as not the user's",
            "sent an automated kickstart, marked as not the user's: 3 times, 01:00 to 03:00",
        ]
    );
    assert!(l.counts.phrases().contains(&"4 automated inputs".to_string()), "{:?}", l.counts.phrases());
}

#[test]
fn a_move_at_the_limit_says_the_handoff_was_built_and_whether_it_arrived() {
    let switched = EventKind::AccountSwitch {
        action: crate::event::SwitchAction::Switched,
        from: Some("a".into()),
        to: Some("b".into()),
        until: None,
        reason: "from account a to account b, with a fresh conversation".into(),
    };
    let why = "account a met its 7-day limit".to_string();
    let l = read(&[
        state(at(22, 0), SessionState::Working),
        ev(at(1, 0), EventKind::HandoffBuilt { chars: 900, why }),
        ev(at(1, 0), switched),
        ev(at(1, 1), EventKind::HandoffChecked { received: false }),
    ]);
    let t = texts(&l);
    assert!(t.contains(&"Nightshift built the handoff at 01:00: account a met its 7-day limit"), "{t:?}");
    assert!(t.contains(&"the first turn after the move at 01:01 did not carry the handoff"), "{t:?}");
    assert_eq!(l.counts.account_switches, 1);
}
