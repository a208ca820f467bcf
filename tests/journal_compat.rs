//! A journal written by Nightshift 0.1.0 (tests/fixtures/journal/0.1.0.sqlite3, made by the script
//! beside it) still opens, lists, digests and restores with this build: the schema migrates, the
//! old vocabulary is read, and the session 0.1.0 left waiting for a usage limit's reset — held by
//! the user, its Nightshift killed — is started again held, with its resume and guard.

use crate::common;

use std::sync::Arc;

use chrono::{DateTime, Utc};
use nightshift::clock::FakeClock;
use nightshift::store::{Standing, Store};
use nightshift::supervisor::Supervisor;

/// The fixture's Claude session, paused on a 5-hour limit with auto-resume on.
const WAITING: &str = "1f6d9690";

fn journal(env: &common::Env) -> std::path::PathBuf {
    std::fs::create_dir_all(env.state_dir()).unwrap();
    let path = env.state_dir().join("journal.sqlite3");
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/journal/0.1.0.sqlite3");
    std::fs::copy(fixture, &path).unwrap();
    path
}

#[test]
fn it_lists_and_digests() {
    let env = common::Env::new();
    journal(&env);
    let sessions: Vec<serde_json::Value> = serde_json::from_str(&env.stdout(&["sessions", "--json"])).unwrap();
    let shown: Vec<(&str, &str)> =
        sessions.iter().map(|s| (s["id"].as_str().unwrap(), s["shown_state"].as_str().unwrap())).collect();
    assert_eq!(
        shown,
        [("1f6d9690", "lost"), ("db64776d", "lost"), ("7d0b23de", "exited (SIGHUP)"), ("4898d44c", "exited (3)")]
    );
    let digest: serde_json::Value = serde_json::from_str(&env.stdout(&[
        "digest",
        "--range",
        "2026-12-01T09:00:00Z..2026-12-01T10:00:00Z",
        "--format",
        "json",
    ]))
    .unwrap();
    let by_id = |id: &str| digest["sessions"].as_array().unwrap().iter().find(|s| s["id"] == id).cloned().unwrap();
    assert_eq!(by_id("4898d44c")["needs_you"][0], "exited with code 3");
    assert_eq!(by_id("7d0b23de")["section"], "done", "a session the user stopped is done, not crashed");
    assert_eq!(by_id("7d0b23de")["respawn_cycles"], 1);
    assert_eq!(by_id("db64776d")["breaker_trips"], 1);
    assert_eq!(by_id("db64776d")["restarts"], 4);
    assert_eq!(by_id(WAITING)["limits_hit"], 1);
    let journal = env.stdout(&["journal", "--session", WAITING]);
    assert!(journal.contains("held"), "the old automation event reads as a hold:\n{journal}");
}

#[tokio::test]
async fn the_session_it_left_waiting_is_restored_held_with_its_resume() {
    let env = common::Env::new();
    let path = journal(&env);
    // The fake client that wrote the fixture lived in a temporary directory: a shell stands in.
    let script = env.path("claude");
    std::fs::write(&script, "#!/bin/sh\nexec cat\n").unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let command = serde_json::to_string(&[script.display().to_string()]).unwrap();
    let cwd = env.dir.path().display().to_string();
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute("UPDATE sessions SET command = ?1, cwd = ?2 WHERE id = ?3", [&command, &cwd, WAITING])
        .unwrap();
    let store = Store::open(&path).unwrap();
    assert_eq!(store.integrity_check().unwrap(), "ok");
    let row = store.session(WAITING).unwrap().unwrap();
    assert_eq!(row.standing(), Standing::Lost);

    let then: DateTime<Utc> = "2026-12-01T10:00:00Z".parse().unwrap();
    let sup = Supervisor::new(store, Arc::new(FakeClock::new(then)));
    let done = sup.restore_all();
    let restored = done.handles();
    assert_eq!(restored.iter().map(|h| h.id().to_string()).collect::<Vec<_>>(), [WAITING]);
    // The one whose agent kept dying is left to its user, with why.
    let lost: Vec<(&str, &str)> = done.lost.iter().map(|(row, why)| (row.id.as_str(), why.as_str())).collect();
    assert_eq!(lost, [("db64776d", "its crash-loop breaker was open: its agent kept dying")]);
    let options = restored[0].status().options;
    assert!(options.held, "the hold 0.1.0 journalled as a sentence comes back");
    let resume = options.auto_resume.expect("auto-resume is on");
    assert_eq!(resume.prompt, "go on");
    assert_eq!(options.window_guard.reserve_pct, Some(20.0));
    assert!(options.resume_due.is_some_and(|due| due > then), "{:?}", options.resume_due);
    restored[0].stop("test").await.unwrap();
    restored[0].wait().await;
}

/// Today's journal (tests/fixtures/journal/contract-1.sqlite3, made by the script beside it): an
/// overnight session and an attended one, their Nightshift killed mid-work.
const ARMED: &str = "5e551011";
const ATTENDED: &str = "5e551022";
const CONVERSATION: &str = "0b2c6f3e-1111-4a5b-9c8d-000000000001";

/// Waits in real time (the child is a real process) for the screen to show `text`; the screen.
async fn screen_with(handle: &nightshift::session::SessionHandle, text: &str) -> String {
    let started = std::time::Instant::now();
    loop {
        let screen = handle.snapshot().await.unwrap().text();
        if screen.contains(text) || started.elapsed() > std::time::Duration::from_secs(10) {
            return screen;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn todays_journal_brings_the_armed_session_back_from_its_contract_and_lists_the_attended_one() {
    let env = common::Env::new();
    std::fs::create_dir_all(env.state_dir()).unwrap();
    let path = env.state_dir().join("journal.sqlite3");
    std::fs::copy(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/journal/contract-1.sqlite3"), &path).unwrap();
    // The fake client that wrote it lived in a temporary directory: a stand-in says how it was started.
    let dir = env.path("bin");
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("claude");
    std::fs::write(&script, "#!/bin/sh\necho \"restarted with $*\"; exec cat\n").unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let cwd = env.dir.path().display().to_string();
    let db = rusqlite::Connection::open(&path).unwrap();
    db.execute(
        "UPDATE events SET body = json_set(body, '$.contract.program', ?1, '$.contract.cwd', ?2) WHERE event = 'contract'",
        [script.display().to_string(), cwd.clone()],
    )
    .unwrap();
    let started: String = db
        .query_row(
            "SELECT json_extract(body, '$.contract.started') FROM events WHERE session = ?1 AND event = 'contract'",
            [ARMED],
            |r| r.get(0),
        )
        .unwrap();
    drop(db);
    // An hour into its eight armed hours, a handoff written five minutes ago.
    let now = DateTime::parse_from_rfc3339(&started).unwrap().with_timezone(&Utc) + chrono::Duration::hours(1);
    let handoffs = env.state_dir().join("handoffs").join(ARMED);
    std::fs::create_dir_all(&handoffs).unwrap();
    let handoff = handoffs.join("latest.md");
    std::fs::write(&handoff, "Handoff: the parser is done; wire it into the CLI next.").unwrap();
    let written = std::time::SystemTime::from(now - chrono::Duration::minutes(5));
    std::fs::File::options().write(true).open(&handoff).unwrap().set_modified(written).unwrap();

    let store = Store::open(&path).unwrap();
    let sup = Supervisor::new(store, Arc::new(FakeClock::new(now)));
    let done = sup.restore_all();
    let restored = done.handles();
    assert_eq!(restored.iter().map(|h| h.id().to_string()).collect::<Vec<_>>(), [ARMED]);
    let lost: Vec<(&str, &str)> = done.lost.iter().map(|(row, why)| (row.id.as_str(), why.as_str())).collect();
    assert_eq!(lost, [(ATTENDED, "it was attended: nothing was armed to run it without you")]);

    let handle = &restored[0];
    let screen = screen_with(handle, "restarted with").await;
    let flat: String = screen.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains(&format!("--resume {CONVERSATION} [Automated restart by Nightshift"))
            && flat.contains("] Continue the work."),
        "its conversation, the kickstart, marked as Nightshift's: {flat}"
    );
    assert!(flat.contains("the parser is done"), "the kickstart names the fresh handoff: {flat}");
    assert!(!flat.contains("TASKS.md"), "never the opening prompt again: {flat}");
    let options = handle.status().options;
    assert_eq!(options.preset.as_deref(), Some("overnight"));
    let until = DateTime::parse_from_rfc3339(&started).unwrap().with_timezone(&Utc) + chrono::Duration::hours(8);
    assert_eq!(options.respawn_until, Some(until), "the same armed hours: 7 of 8 left");
    assert_eq!(options.budget.max_cost_usd, Some(4.0));
    assert_eq!(options.spent_usd, Some(0.85), "what it spent before counts against its budget");
    let restored_event = sup
        .with_store(|s| s.events_named(ARMED, &["restored"]))
        .unwrap()
        .pop()
        .map(|e| serde_json::from_str::<serde_json::Value>(&e.body).unwrap())
        .expect("the restore is journalled");
    assert!(restored_event["reason"].as_str().unwrap().contains("respawn was armed"), "{restored_event}");
    assert!(restored_event["down_secs"].as_u64().unwrap() >= 3590, "{restored_event}");
    handle.stop("test").await.unwrap();
    handle.wait().await;
}
