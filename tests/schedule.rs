//! Scheduled starts on the real binary: `run --at` waits as `scheduled` and starts at its time (not
//! before); a schedule whose process was killed is started by `nightshift restore`; `nightshift
//! stop` cancels one and it never starts; one whose time passed while no Nightshift ran starts at
//! once or is skipped per `[schedule] missed`; `--after-reset` waits for the account's window.

use crate::common;

use std::process::{Child, Stdio};
use std::time::{Duration, SystemTime};

use common::{wait_for, Env};
use nightshift::schedule::{self, Due};
use nightshift::store::{NewSession, Store};

/// The local time `secs` from now, as `--at` takes it (with seconds).
fn local_in(secs: u64) -> (String, SystemTime) {
    let at = SystemTime::now() + Duration::from_secs(secs);
    let local: chrono::DateTime<chrono::Local> = at.into();
    (local.format("%H:%M:%S").to_string(), at)
}

/// `nightshift run --at AT --events FILE -- bash -c SCRIPT`, waiting in the background.
fn scheduled_run(env: &Env, at: &str, script: &str) -> (Child, String) {
    let events = env.path("events.jsonl");
    let child = env
        .cmd(&["run", "--at", at, "--events", events.to_str().unwrap(), "--", "bash", "-c", script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let id = wait_for("the schedule in the journal", Duration::from_secs(20), || {
        common::read_events(&events).first().and_then(|e| e["session"].as_str().map(String::from))
    });
    (child, id)
}

fn row(env: &Env, id: &str) -> serde_json::Value {
    let rows: Vec<serde_json::Value> = serde_json::from_str(&env.stdout(&["sessions", "--json"])).unwrap();
    rows.into_iter().find(|r| r["id"] == id).unwrap_or_else(|| panic!("session {id} listed"))
}

fn started_at(env: &Env, id: &str) -> Option<SystemTime> {
    env.journal()
        .into_iter()
        .find(|e| e["session"] == id && e["state"] == "running")
        .map(|e| SystemTime::from(chrono::DateTime::parse_from_rfc3339(e["ts"].as_str().unwrap()).unwrap()))
}

#[test]
fn a_run_at_a_time_waits_as_scheduled_and_starts_then() {
    let env = Env::new();
    let marker = env.path("ran");
    let (at, due) = local_in(8);
    let (mut child, id) = scheduled_run(&env, &at, &format!("touch {}", marker.display()));
    let listed = row(&env, &id);
    // (On a loaded machine the time may have come already: then it is no longer listed so.)
    if SystemTime::now() + Duration::from_secs(1) < due {
        assert_eq!((listed["state"].as_str(), listed["standing"].as_str()), (Some("scheduled"), Some("scheduled")));
        // The reason names the time as the user would write it: whole minutes without ":00".
        let label = at.strip_suffix(":00").unwrap_or(&at);
        assert!(listed["reason"].as_str().is_some_and(|r| r.contains(&format!("(at {label})"))), "{listed}");
    }
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
    assert!(marker.exists(), "the command ran");
    let started = started_at(&env, &id).expect("started");
    // `--at` has second precision here: not before it, and within a look of it.
    let due_second =
        due - Duration::from_nanos(u64::from(chrono::DateTime::<chrono::Utc>::from(due).timestamp_subsec_nanos()));
    assert!(started >= due_second, "started {started:?} before its time {due_second:?}");
    assert!(started <= due + schedule::CHECK + Duration::from_secs(3), "started {started:?}, due {due:?}");
    assert_eq!(row(&env, &id)["state"], "exited");
}

#[test]
fn a_schedule_whose_process_was_killed_is_started_by_restore() {
    let env = Env::new();
    let marker = env.path("ran");
    let (at, _) = local_in(5);
    let (mut child, id) = scheduled_run(&env, &at, &format!("touch {}", marker.display()));
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(row(&env, &id)["state"], "scheduled", "it stays in the journal");
    // What the journal keeps to start it by is its contract, not a command line to run again.
    let store = Store::open(&env.state_dir().join("journal.sqlite3")).unwrap();
    let launch: serde_json::Value =
        serde_json::from_str(&store.schedule_of(&id).unwrap().expect("its schedule").launch).unwrap();
    drop(store);
    assert_eq!((launch["by"].as_str(), launch["contract"]["kind"].as_str()), (Some("contract"), Some("terminal")));
    assert_eq!(launch["contract"]["program"], "bash", "{launch}");
    let out = env.cmd(&["restore"]).stdin(Stdio::null()).output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{said}{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        said.contains(&format!("Scheduled session {id}")) && said.contains(&format!("Started scheduled session {id}")),
        "{said}"
    );
    // Restore started it from that contract and supervised it to its end before it returned.
    assert!(marker.exists(), "the command ran");
    assert_eq!(row(&env, &id)["state"], "exited");
    let journal: Vec<_> = env.journal().into_iter().filter(|e| e["session"] == id.as_str()).collect();
    assert!(journal.iter().any(|e| e["reason"].as_str().is_some_and(|r| r.ends_with("as scheduled"))), "{journal:?}");
    assert_eq!(journal.iter().filter(|e| e["state"] == "running").count(), 1, "started once");
    // Its time counts from when it began, not from when it was scheduled.
    let begun = journal.iter().find(|e| e["event"] == "contract").expect("its contract, journalled as it began");
    let ts = |v: &serde_json::Value| chrono::DateTime::parse_from_rfc3339(v.as_str().unwrap()).unwrap();
    let scheduled = journal.iter().find(|e| e["event"] == "scheduled").expect("scheduled");
    assert!(ts(&begun["contract"]["started"]) > ts(&scheduled["ts"]), "{begun}");
}

#[test]
fn a_cancelled_schedule_never_starts() {
    let env = Env::new();
    let marker = env.path("never");
    let (at, _) = local_in(3600);
    let (child, id) = scheduled_run(&env, &at, &format!("touch {}", marker.display()));
    assert!(env.stdout(&["stop", &id]).contains("cancelled"), "the stop says so");
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("will not start"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed = row(&env, &id);
    assert_eq!(listed["state"], "exited");
    assert!(listed["reason"].as_str().is_some_and(|r| r.starts_with("cancelled before it started")), "{listed}");
    // Nothing takes it up later either.
    let restore = env.stdout(&["restore"]);
    assert!(restore.starts_with("Nothing to restore"), "{restore}");
    assert!(!marker.exists());
}

/// A schedule due `ago` in the past, of a process that is gone, recorded straight in the journal
/// (as a Nightshift from before scheduled contracts that died before its time would have left it:
/// old journals still start).
fn left_behind(env: &Env, id: &str, ago: chrono::Duration, marker: &std::path::Path) {
    std::fs::create_dir_all(env.state_dir()).unwrap();
    let mut store = Store::open(&env.state_dir().join("journal.sqlite3")).unwrap();
    let script = format!("touch {}", marker.display());
    let command: Vec<String> = ["bash", "-c", &script].map(String::from).to_vec();
    let cwd = env.dir.path().display().to_string();
    let new = NewSession {
        id,
        kind: nightshift::store::SessionKind::Terminal,
        command: &command,
        cwd: &cwd,
        agent: "generic",
        preset: None,
        created: chrono::Utc::now() - ago - chrono::Duration::minutes(5),
        owner_pid: u32::MAX - 1,
        control_socket: None,
    };
    let due = Due { at: chrono::Utc::now() - ago, why: "at 23:30".into() };
    // As a Nightshift before scheduled contracts journalled it: its command line, to run again.
    let launch = serde_json::json!({"by": "cli", "args": ["run", "--", "bash", "-c", script], "cwd": cwd});
    store.create_scheduled(&new, due.at, &due.why, &launch.to_string()).unwrap();
    for kind in schedule::events(&due) {
        let event =
            nightshift::Event { ts: chrono::Utc::now(), session: nightshift::SessionId::from(id.to_string()), kind };
        store.record(&event).unwrap();
    }
}

#[test]
fn a_time_missed_while_nightshift_was_down_starts_at_once_or_is_skipped_as_set() {
    let env = Env::new();
    let (started, skipped) = (env.path("started"), env.path("skipped"));
    left_behind(&env, "missed01", chrono::Duration::minutes(30), &started);
    env.stdout(&["restore"]);
    wait_for("the missed start to run", Duration::from_secs(20), || started.exists().then_some(()));

    std::fs::create_dir_all(env.path("config")).unwrap();
    std::fs::write(env.path("config").join("config.toml"), "[schedule]\nmissed = \"skip\"\n").unwrap();
    left_behind(&env, "missed02", chrono::Duration::minutes(30), &skipped);
    let said = env.stdout(&["restore"]);
    assert!(said.contains("Skipped scheduled session missed02"), "{said}");
    let listed = row(&env, "missed02");
    assert_eq!(listed["state"], "exited");
    assert!(listed["reason"].as_str().is_some_and(|r| r.contains("30 min ago")), "{listed}");
    assert!(env.journal().iter().any(|e| e["session"] == "missed02" && e["event"] == "schedule_skipped"));
    std::thread::sleep(Duration::from_secs(1));
    assert!(!skipped.exists(), "a skipped start never runs");
}

#[test]
fn after_reset_waits_for_the_accounts_window_and_bad_times_are_refused() {
    let env = Env::new();
    let out = env.output(&["run", "--after-reset", "--", "true"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("--after-reset") && err.contains("--at HH:MM"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    for bad in ["25:00", "noon"] {
        let out = env.output(&["run", "--at", bad, "--", "true"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains("HH:MM"), "{err}");
    }

    // A session reported the default account's window: it resets in an hour.
    let resets = chrono::Utc::now() + chrono::Duration::hours(1);
    {
        std::fs::create_dir_all(env.state_dir()).unwrap();
        let mut store = Store::open(&env.state_dir().join("journal.sqlite3")).unwrap();
        let new = NewSession {
            id: "earlier1",
            kind: nightshift::store::SessionKind::Terminal,
            command: &["claude".to_string()],
            cwd: "/",
            agent: "claude",
            preset: None,
            created: chrono::Utc::now(),
            owner_pid: 1,
            control_socket: None,
        };
        store.create_session(&new).unwrap();
        let sample = nightshift::usage::Sample {
            five_hour_pct: Some(97.0),
            five_hour_resets_at: Some(resets),
            ..Default::default()
        };
        store.record_usage("earlier1", chrono::Utc::now(), &sample).unwrap();
    }
    let events = env.path("after.jsonl");
    let mut child = env
        .cmd(&["run", "--after-reset", "--events", events.to_str().unwrap(), "--", "true"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let scheduled = wait_for("the schedule", Duration::from_secs(20), || {
        common::read_events(&events).into_iter().find(|e| e["event"] == "scheduled")
    });
    let due = chrono::DateTime::parse_from_rfc3339(scheduled["due"].as_str().unwrap()).unwrap();
    let expected = resets + schedule::RESET_MARGIN;
    assert!((due.timestamp_millis() - expected.timestamp_millis()).abs() < 1000, "{scheduled}");
    assert!(scheduled["why"].as_str().is_some_and(|w| w.starts_with("when the 5-hour window resets")), "{scheduled}");
    let id = scheduled["session"].as_str().unwrap().to_string();
    env.stdout(&["stop", &id]);
    assert!(child.wait().unwrap().success());
}

#[test]
fn a_loop_can_be_scheduled_too() {
    let env = Env::new();
    let (at, _) = local_in(3600);
    let events = env.path("loop.jsonl");
    let child = env
        .cmd(&["loop", "--at", &at, "--prompt", "tidy up", "--events", events.to_str().unwrap()])
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let id = wait_for("the loop's schedule", Duration::from_secs(20), || {
        common::read_events(&events).first().and_then(|e| e["session"].as_str().map(String::from))
    });
    let listed = row(&env, &id);
    assert_eq!((listed["kind"].as_str(), listed["state"].as_str()), (Some("loop"), Some("scheduled")));
    env.stdout(&["stop", &id]);
    assert!(child.wait_with_output().unwrap().status.success());
}

#[test]
fn a_scheduled_loop_whose_process_was_killed_is_started_by_restore() {
    let env = Env::new();
    // A harness that notes it ran and answers like `claude -p --output-format stream-json`.
    let stream = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/claude-code/2.1.332/headless/stream-json-fast.jsonl");
    let ran = env.path("ran");
    let harness = env.path("claude");
    std::fs::write(&harness, format!("#!/bin/sh\ntouch {}\ncat {}\n", ran.display(), stream.display())).unwrap();
    std::fs::set_permissions(&harness, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let (at, _) = local_in(5);
    let events = env.path("loop.jsonl");
    let mut child = env
        .cmd(&["loop", "--at", &at, "--program", harness.to_str().unwrap(), "--prompt", "tidy up"])
        .args(["--max-iterations", "1", "--events", events.to_str().unwrap()])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let id = wait_for("the loop's schedule", Duration::from_secs(20), || {
        common::read_events(&events).first().and_then(|e| e["session"].as_str().map(String::from))
    });
    child.kill().unwrap();
    child.wait().unwrap();
    let out = env.cmd(&["restore"]).stdin(Stdio::null()).output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains(&format!("Started scheduled session {id}")),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    wait_for("the loop to run and end", Duration::from_secs(30), || {
        (row(&env, &id)["state"] == "exited").then_some(())
    });
    assert!(ran.exists(), "its iteration ran");
    let listed = row(&env, &id);
    assert_eq!(listed["exit_code"], 0, "{listed}");
}
