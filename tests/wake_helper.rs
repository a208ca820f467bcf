//! `nightshift-wake`, the wake alarm's helper: it arms a real `CLOCK_REALTIME_ALARM` timer for the
//! one time it is given and reports it, and refuses anything but a time. (Run as root here, it has
//! `CAP_WAKE_ALARM`; installed, `setcap` gives it that alone.)

use std::process::Command;
use std::time::{Duration, Instant};

fn helper() -> Command {
    Command::new(env!("CARGO_BIN_EXE_nightshift-wake"))
}

fn has_wake_alarm() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let eff = status.lines().find_map(|l| l.strip_prefix("CapEff:")).map(str::trim).unwrap_or("0");
    u64::from_str_radix(eff, 16).is_ok_and(|caps| caps >> 35 & 1 == 1)
}

#[test]
fn the_helper_arms_a_real_alarm_reports_it_and_ends_when_it_fires() {
    let at = chrono::Utc::now() + chrono::Duration::seconds(2);
    let at = chrono::SubsecRound::trunc_subsecs(at, 0);
    let shown = at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let began = Instant::now();
    let out = helper().arg(&shown).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    if !has_wake_alarm() {
        assert_eq!(out.status.code(), Some(1), "{text}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("lacks CAP_WAKE_ALARM; run `sudo setcap cap_wake_alarm+ep"), "{err}");
        return;
    }
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.starts_with(&format!("armed a wake alarm (CLOCK_REALTIME_ALARM) for {shown}\n")), "{text}");
    assert!(text.contains("the alarm fired at "), "{text}");
    assert!(began.elapsed() >= Duration::from_millis(900), "it waited for the alarm: {:?}", began.elapsed());
}

#[test]
fn the_helper_takes_a_time_and_nothing_else() {
    for args in [&[][..], &["sh", "-c"][..], &["reboot"][..], &["2020-01-01T00:00:00Z"][..]] {
        let out = helper().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.starts_with("nightshift-wake: ") && err.lines().count() == 1, "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "nothing armed for {args:?}");
    }
}

/// A session parked until `due` (a limit's resume).
fn parked(due: chrono::DateTime<chrono::Utc>) -> (String, nightshift::awake::Want) {
    let want = nightshift::awake::Want {
        hold: true,
        reason: "a resume after the usage limit".into(),
        next_action: None,
        parked_until: Some(due),
    };
    ("a".to_string(), want)
}

#[tokio::test]
async fn the_keeper_sleeps_through_a_long_wait_on_a_real_alarm_and_takes_it_back_when_needed() {
    use nightshift::awake::{Change, Keeper, SleepSettings};
    let settings = SleepSettings {
        min_wait: chrono::Duration::seconds(3),
        battery_min_wait: chrono::Duration::seconds(3),
        lead: chrono::Duration::seconds(1),
        can_wake: true,
    };
    let helper = std::path::PathBuf::from(env!("CARGO_BIN_EXE_nightshift-wake"));
    let mut keeper = Keeper::sleeping_with(settings, Some(helper));
    let now = chrono::SubsecRound::trunc_subsecs(chrono::Utc::now(), 0) + chrono::Duration::seconds(1);
    let due = now + chrono::Duration::seconds(4);
    let changes = keeper.apply(&[parked(due)], now, false, "test").await;
    if !has_wake_alarm() {
        let [Change::AlarmFailed(e), ..] = &changes[..] else { panic!("{changes:?}") };
        assert!(e.contains("lacks CAP_WAKE_ALARM"), "{e}");
        assert!(!keeper.settings(false).can_wake, "every wait is held from now on");
        return;
    }
    let wake_at = due - chrono::Duration::seconds(1);
    assert_eq!(changes, [Change::Sleeping { wake_at, due }]);
    assert_eq!(keeper.alarm(), Some(wake_at));
    assert!(!keeper.holding());
    // Asked again, nothing changes: the same alarm stands.
    assert_eq!(keeper.apply(&[parked(due)], now, false, "test").await, []);

    // A session that starts working takes the machine back: the alarm is taken back.
    let working =
        ("b".to_string(), nightshift::awake::Want { hold: true, reason: "working".into(), ..Default::default() });
    let changes = keeper.apply(&[parked(due), working], now, false, "test").await;
    assert_eq!(changes.first(), Some(&Change::AlarmCancelled { at: wake_at }), "{changes:?}");
    assert_eq!(keeper.alarm(), None);

    // Alone again, it sleeps; the real alarm goes off at its time, and the wait is held to its end.
    let changes = keeper.apply(&[parked(due)], now, false, "test").await;
    assert_eq!(changes, [Change::Sleeping { wake_at, due }]);
    tokio::time::sleep((wake_at - chrono::Utc::now()).to_std().unwrap_or_default() + Duration::from_millis(300)).await;
    let changes = keeper.apply(&[parked(due)], chrono::Utc::now(), false, "test").await;
    assert_eq!(changes.first(), Some(&Change::AlarmFired { at: wake_at }), "{changes:?}");
    assert_eq!(keeper.alarm(), None);
}
