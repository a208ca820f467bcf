//! A journal written by Nightshift 0.1.0 (tests/fixtures/journal/0.1.0.sqlite3, made by the script
//! beside it) still opens, lists, digests and restores with this build: the schema migrates, the
//! old vocabulary is read, and the session 0.1.0 left waiting for a usage limit's reset — held by
//! the user, its Nightshift killed — is started again held, with its resume and guard.

mod common;

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
    let restored = sup.restore_pending();
    assert_eq!(restored.iter().map(|h| h.id().to_string()).collect::<Vec<_>>(), [WAITING]);
    let options = restored[0].status().options;
    assert!(options.held, "the hold 0.1.0 journalled as a sentence comes back");
    let resume = options.auto_resume.expect("auto-resume is on");
    assert_eq!(resume.prompt, "go on");
    assert_eq!(options.window_guard.reserve_pct, Some(20.0));
    assert!(options.resume_due.is_some_and(|due| due > then), "{:?}", options.resume_due);
    restored[0].stop("test").await.unwrap();
    restored[0].wait().await;
}
