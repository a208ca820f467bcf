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

#[test]
fn the_helper_takes_no_time_further_than_a_week() {
    let far = (chrono::Utc::now() + chrono::Duration::days(8)).to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let mut child =
        helper().arg(&far).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    let began = Instant::now();
    while child.try_wait().unwrap().is_none() && began.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stdout));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("more than a week ahead"), "{err}");
}

/// Whoever armed the alarm holds the helper's stdin: when it dies (a SIGKILL leaves no time to
/// clean up), the helper and its alarm go with it, never left armed behind it.
#[test]
fn the_helper_and_its_alarm_end_with_whoever_armed_it() {
    if !has_wake_alarm() {
        return;
    }
    let at = (chrono::Utc::now() + chrono::Duration::hours(1)).to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    // A parent that starts the helper on a pipe of its own and is then killed.
    let script =
        format!("exec 3>&1; sleep 600 | {{ '{}' '{at}' >&3; }} & echo $!; wait", env!("CARGO_BIN_EXE_nightshift-wake"));
    let mut parent = Command::new("bash")
        .args(["-c", &script])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(parent.stdout.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut out, &mut line).unwrap();
    std::io::BufRead::read_line(&mut out, &mut line).unwrap();
    assert!(line.contains("armed a wake alarm"), "{line}");
    let pids = || -> Vec<i32> {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter(|e| {
                std::fs::read(e.path().join("cmdline"))
                    .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&format!("nightshift-wake\0{at}")))
            })
            .filter_map(|e| e.file_name().to_str()?.parse().ok())
            .collect()
    };
    let helpers = || pids().len();
    assert_eq!(helpers(), 1, "the helper runs");
    // The writer of its stdin (`sleep`, the parent's side of the pipe) dies with no warning.
    Command::new("pkill").args(["-KILL", "-P", &parent.id().to_string(), "sleep"]).status().unwrap();
    let began = Instant::now();
    while helpers() > 0 && began.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let left = helpers();
    for pid in pids() {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
    }
    let _ = parent.kill();
    let _ = parent.wait();
    assert_eq!(left, 0, "the helper outlived whoever armed it");
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
