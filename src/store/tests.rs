//! The journal's own tests: opening, migrating, refusing, and each kind of row.
use super::schema::{latest_version, migrations};
use super::*;
use crate::event::SessionId;
use chrono::TimeZone;

fn new_session<'a>(id: &'a str, command: &'a [String]) -> NewSession<'a> {
    NewSession {
        id,
        kind: crate::store::SessionKind::Terminal,
        command,
        cwd: "/tmp",
        agent: "generic",
        preset: None,
        created: Utc.with_ymd_and_hms(2026, 11, 30, 22, 0, 0).unwrap(),
        owner_pid: 42,
        control_socket: None,
    }
}

#[test]
fn migrations_are_valid() {
    migrations().validate().unwrap();
}

#[test]
fn old_usage_is_thinned_to_ten_minutes_keeping_cost_resets_and_the_last_day_whole() {
    let mut store = Store::open_in_memory().unwrap();
    let cmd = vec!["claude".to_string()];
    store.create_session(&new_session("0a0a0a0a", &cmd)).unwrap();
    let t0 = Utc.with_ymd_and_hms(2026, 11, 30, 22, 0, 0).unwrap();
    // An hour at one sample a minute; the cost starts again (a /clear) at minute 33.
    for m in 0..60 {
        let cost = if m < 33 { m as f64 } else { (m - 33) as f64 };
        let sample = Sample { cost_usd: Some(cost), context_pct: Some(m as f64), ..Sample::default() };
        let ts = t0 + chrono::Duration::minutes(m);
        store.record_usage("0a0a0a0a", ts, &sample).unwrap();
        let ev = Event { ts, session: SessionId::from("0a0a0a0a".to_string()), kind: EventKind::Usage { sample } };
        store.record(&ev).unwrap();
    }
    // Thin what is older than minute 40: its last ten minutes are 22:30–22:39.
    let (samples, events) = store.thin_usage(t0 + chrono::Duration::minutes(40)).unwrap();
    let kept: Vec<i64> =
        store.usage(None, None, None).unwrap().iter().map(|r| r.sample.context_pct.unwrap() as i64).collect();
    let mut expected = vec![9, 19, 29, 32, 39];
    expected.extend(40..60);
    assert_eq!(kept, expected, "the last of each ten minutes, the one before the cost's reset, the rest whole");
    assert_eq!(samples, 60 - expected.len());
    assert_eq!(events, 40 - 4, "usage events: the last of each ten minutes");
    assert_eq!(store.integrity_check().unwrap(), "ok");
}

#[test]
fn each_clients_windows_are_its_own() {
    use crate::agent::AgentKind;
    let mut store = Store::open_in_memory().unwrap();
    let (claude, codex) = (vec!["claude".to_string()], vec!["codex".to_string()]);
    store.create_session(&NewSession { agent: "claude", ..new_session("c1c1c1c1", &claude) }).unwrap();
    store.create_session(&NewSession { agent: "codex", ..new_session("d2d2d2d2", &codex) }).unwrap();
    let t0 = Utc.with_ymd_and_hms(2026, 12, 4, 22, 0, 0).unwrap();
    let at = |pct: f64| Sample { five_hour_pct: Some(pct), seven_day_pct: Some(pct / 2.0), ..Sample::default() };
    store.record_usage("c1c1c1c1", t0, &at(40.0)).unwrap();
    // Codex's limit, later: it must not show as Claude's.
    store.record_usage("d2d2d2d2", t0 + chrono::Duration::minutes(5), &at(100.0)).unwrap();
    let claude_latest = store.latest_limits(AgentKind::Claude).unwrap().unwrap();
    assert_eq!((claude_latest.agent.as_str(), claude_latest.sample.five_hour_pct), ("claude", Some(40.0)));
    let codex_latest = store.latest_limits(AgentKind::Codex).unwrap().unwrap();
    assert_eq!((codex_latest.agent.as_str(), codex_latest.sample.five_hour_pct), ("codex", Some(100.0)));
    assert_eq!(store.latest_limits_by_account(AgentKind::Claude).unwrap().len(), 1);
    assert_eq!(store.latest_limits_by_account(AgentKind::Codex).unwrap()[0].session, "d2d2d2d2");
    assert_eq!(store.usage(Some(AgentKind::Claude), None, None).unwrap().len(), 1);
    assert_eq!(store.usage(None, None, None).unwrap().len(), 2);
}

#[test]
fn a_session_whose_work_moved_to_the_other_agent_counts_each_sample_against_its_own_plan() {
    use crate::agent::AgentKind;
    let mut store = Store::open_in_memory().unwrap();
    let claude = vec!["claude".to_string()];
    store.create_session(&NewSession { agent: "claude", ..new_session("e3e3e3e3", &claude) }).unwrap();
    let t0 = Utc.with_ymd_and_hms(2026, 12, 4, 22, 0, 0).unwrap();
    let at = |pct: f64| Sample { five_hour_pct: Some(pct), ..Sample::default() };
    store.record_usage("e3e3e3e3", t0, &at(100.0)).unwrap();
    let codex = vec!["codex".to_string(), "--no-daemon".to_string()];
    store.set_agent("e3e3e3e3", AgentKind::Codex, &codex, Some(("work", "/home/u/.codex-work"))).unwrap();
    store.record_usage("e3e3e3e3", t0 + chrono::Duration::minutes(5), &at(20.0)).unwrap();
    let claude_latest = store.latest_limits(AgentKind::Claude).unwrap().unwrap();
    assert_eq!(claude_latest.sample.five_hour_pct, Some(100.0), "Claude's limit stays Claude's");
    let codex_latest = store.latest_limits(AgentKind::Codex).unwrap().unwrap();
    assert_eq!(codex_latest.sample.five_hour_pct, Some(20.0));
    assert_eq!(codex_latest.account.as_deref(), Some("work"));
    let row = store.session("e3e3e3e3").unwrap().unwrap();
    assert_eq!((row.agent.as_str(), row.command.clone()), ("codex", codex));
}

#[test]
fn threads_opening_a_fresh_journal_together_all_get_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite3");
    let barrier = std::sync::Barrier::new(16);
    let results: Vec<Result<(), String>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..16)
            .map(|i| {
                let (path, barrier) = (&path, &barrier);
                s.spawn(move || {
                    barrier.wait();
                    let mut store = Store::open(path).map_err(|e| e.to_string())?;
                    let id = format!("{i:08x}");
                    store.create_session(&new_session(&id, &["true".to_string()])).map_err(|e| e.to_string())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    assert_eq!(Store::open(&path).unwrap().sessions().unwrap().len(), 16);
}

/// The file's bytes and its WAL's, to show a refused journal was not written.
fn contents(path: &Path) -> (Vec<u8>, Option<Vec<u8>>) {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    (std::fs::read(path).unwrap(), std::fs::read(PathBuf::from(wal)).ok())
}

#[test]
fn a_journal_from_a_newer_nightshift_is_refused_and_left_as_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite3");
    drop(Store::open(&path).unwrap());
    let newer = latest_version() + 1;
    let conn = Connection::open(&path).unwrap();
    conn.pragma_update(None, "user_version", newer).unwrap();
    conn.execute_batch("CREATE TABLE from_the_future (x TEXT)").unwrap();
    drop(conn);
    let before = contents(&path);
    let err = Store::open(&path).unwrap_err();
    assert!(matches!(err, StoreError::TooNew { found, .. } if found == newer), "{err:?}");
    let shown = err.to_string();
    assert!(!shown.contains('\n') && shown.contains(&path.display().to_string()), "{shown}");
    assert!(shown.contains("newer Nightshift") && shown.contains("left as it is"), "{shown}");
    assert_eq!(contents(&path), before, "a journal this version cannot read is never written");
}

#[test]
fn a_file_that_is_not_sqlite_is_refused_and_left_as_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite3");
    let text = "these are someone's notes, not a journal\n".repeat(200);
    std::fs::write(&path, &text).unwrap();
    let err = Store::open(&path).unwrap_err();
    assert!(matches!(err, StoreError::NotAJournal { .. }), "{err:?}");
    let shown = err.to_string();
    assert!(!shown.contains('\n') && shown.contains("move it aside"), "{shown}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
}

#[test]
fn a_failed_migration_names_the_file_without_its_sql() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite3");
    // A version-0 file that already has a table of the first migration's: it cannot migrate.
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch("CREATE TABLE sessions (id TEXT)").unwrap();
    drop(conn);
    let shown = Store::open(&path).unwrap_err().to_string();
    assert!(shown.contains("table sessions already exists"), "{shown}");
    assert!(!shown.contains("CREATE") && !shown.contains('\n'), "no SQL dumped: {shown}");
    assert!(shown.contains(&path.display().to_string()), "{shown}");
}

#[test]
fn events_update_the_session_summary() {
    let mut store = Store::open_in_memory().unwrap();
    let cmd = vec!["bash".to_string(), "-c".to_string(), "exit 3".to_string()];
    store.create_session(&new_session("0a0a0a0a", &cmd)).unwrap();
    let at = Utc.with_ymd_and_hms(2026, 11, 30, 22, 0, 1).unwrap();
    let ev = |kind| Event { ts: at, session: SessionId::from("0a0a0a0a".to_string()), kind };
    store.record(&ev(EventKind::state(SessionState::Running, "process started"))).unwrap();
    store
        .record(&ev(EventKind::State {
            state: SessionState::Exited,
            reason: "process exited with code 3".into(),
            pid: None,
            exit_code: Some(3),
            signal: None,
            error: None,
            dialog: None,
            last_screen: None,
        }))
        .unwrap();
    let row = store.find_session("0a0a").unwrap();
    assert_eq!(row.state, SessionState::Exited);
    assert_eq!(row.exit_code, Some(3));
    assert_eq!(row.command, cmd);
    assert_eq!(row.ended.as_deref(), Some("2026-11-30T22:00:01.000Z"));
    let events = store.events(&EventQuery { session: Some(row.id.clone()), ..Default::default() }).unwrap();
    assert_eq!(events.iter().map(|e| e.event.as_str()).collect::<Vec<_>>(), ["state", "state"]);
    let last: Event = serde_json::from_str(&events[1].body).unwrap();
    assert_eq!(last.kind.new_state(), Some(SessionState::Exited));
    assert_eq!(store.last_event_id().unwrap(), events[1].id);
    let recent = store.recent_events("0a0a0a0a", 1).unwrap();
    assert_eq!(recent, events[1..]);
    // Started again after that exit (a respawn restart): not ended, and a restore can claim it.
    store.record(&ev(EventKind::state(SessionState::Running, "process 7 restarted"))).unwrap();
    let row = store.find_session("0a0a").unwrap();
    assert_eq!(row.ended, None, "a session that runs again has not ended");
    assert!(store.claim_session("0a0a0a0a", row.owner_pid, 4242, None).unwrap());
}

#[test]
fn prefixes_resolve_or_say_why_not() {
    let mut store = Store::open_in_memory().unwrap();
    let cmd = vec!["true".to_string()];
    store.create_session(&new_session("abc11111", &cmd)).unwrap();
    store.create_session(&new_session("abc22222", &cmd)).unwrap();
    assert_eq!(store.find_session("abc1").unwrap().id, "abc11111");
    let err = store.find_session("abc").unwrap_err().to_string();
    assert!(err.contains("abc11111") && err.contains("abc22222"), "{err}");
    let err = store.find_session("ffff").unwrap_err().to_string();
    assert!(err.contains("nightshift sessions"), "{err}");
}

#[test]
fn a_reader_connection_cannot_write() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite3");
    let mut writer = Store::open(&path).unwrap();
    writer.set_meta("k", "written").unwrap();
    let mut reader = Store::open_reader(&path).unwrap();
    assert_eq!(reader.meta("k").unwrap().as_deref(), Some("written"));
    let refused = reader.set_meta("k", "by a reader").unwrap_err().to_string();
    assert!(refused.contains("readonly"), "{refused}");
    assert_eq!(writer.meta("k").unwrap().as_deref(), Some("written"));
}

#[test]
fn a_phone_token_is_claimed_once_however_many_processes_race_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.sqlite3");
    Store::open(&path).unwrap();
    let now = Utc.with_ymd_and_hms(2026, 12, 5, 2, 0, 0).unwrap();
    let barrier = std::sync::Barrier::new(8);
    let taken: Vec<bool> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|pid| {
                let (path, barrier) = (&path, &barrier);
                s.spawn(move || {
                    let mut store = Store::open(path).unwrap();
                    barrier.wait();
                    store.claim_phone("nonce:5f1e", pid, now).unwrap()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(taken.iter().filter(|t| **t).count(), 1, "{taken:?}");
    let mut store = Store::open(&path).unwrap();
    assert!(!store.claim_phone("nonce:5f1e", 1, now).unwrap(), "a replay");
    assert!(store.phone_claimed("nonce:5f1e").unwrap() && !store.phone_claimed("nonce:0000").unwrap(), "a look");
    assert!(store.claim_phone("message:abc", 1, now).unwrap());
    let later = now + chrono::Duration::hours(13);
    assert!(store.claim_phone("message:new", 1, later).unwrap());
    assert_eq!(store.prune_phone_claims(later - chrono::Duration::hours(1)).unwrap(), 2, "the old ones only");
    assert!(!store.claim_phone("message:new", 1, later).unwrap());
}

#[test]
fn a_claim_renewed_at_most_once_in_a_while_whatever_the_clocks_slot() {
    let mut store = Store::open_in_memory().unwrap();
    let every = chrono::Duration::minutes(10);
    // Across a round ten minutes: a fixed slot would let both through.
    let t = Utc.with_ymd_and_hms(2026, 12, 4, 22, 19, 59).unwrap();
    assert!(store.claim_phone_every("stranger-reply", every, 1, t).unwrap());
    assert!(!store.claim_phone_every("stranger-reply", every, 2, t + chrono::Duration::seconds(2)).unwrap());
    assert!(!store.claim_phone_every("stranger-reply", every, 2, t + chrono::Duration::minutes(9)).unwrap());
    assert!(store.claim_phone_every("stranger-reply", every, 2, t + every).unwrap());
}

#[test]
fn the_listen_cursor_moves_forward_only() {
    let mut store = Store::open_in_memory().unwrap();
    assert_eq!(store.phone_cursor("t1").unwrap(), None);
    store.set_phone_cursor("t1", "m2", 200).unwrap();
    store.set_phone_cursor("t1", "m1", 100).unwrap();
    assert_eq!(store.phone_cursor("t1").unwrap(), Some(("m2".to_string(), 200)), "an older message moves nothing");
    store.set_phone_cursor("t1", "m3", 200).unwrap();
    assert_eq!(store.phone_cursor("t1").unwrap(), Some(("m3".to_string(), 200)));
}

#[test]
fn what_belongs_to_no_session_is_journalled_and_no_list_shows_its_row() {
    let mut store = Store::open_in_memory().unwrap();
    let reason = "the server answered 503".to_string();
    let event = crate::Event {
        ts: Utc.with_ymd_and_hms(2026, 12, 5, 2, 0, 0).unwrap(),
        session: SessionId::from(String::new()),
        kind: crate::EventKind::PhoneListen { working: false, reason },
    };
    store.record(&event).unwrap();
    let q = EventQuery { session: Some(String::new()), ..Default::default() };
    assert_eq!(store.events(&q).unwrap().len(), 1);
    assert!(store.sessions().unwrap().is_empty());
    assert_eq!(store.session("").unwrap(), None);
}

#[test]
fn leases_are_renewed_on_what_a_process_owns_and_an_adopter_reads_only_unended_sessions() {
    let mut store = Store::open_in_memory().unwrap();
    let cmd = vec!["claude".to_string()];
    for id in ["a1a1a1a1", "b2b2b2b2"] {
        store.create_session(&new_session(id, &cmd)).unwrap();
    }
    let t0 = Utc.with_ymd_and_hms(2026, 11, 30, 22, 0, 0).unwrap();
    let ended = EventKind::state(SessionState::Exited, "process exited with code 0");
    store.record(&Event { ts: t0, session: SessionId::from("b2b2b2b2".to_string()), kind: ended }).unwrap();
    let unended: Vec<String> = store.unended_sessions().unwrap().into_iter().map(|r| r.id).collect();
    assert_eq!(unended, ["a1a1a1a1"], "the ended one is no adopter's business");
    // The owner renews; another process claims the session; the owner's next renewal no longer owns it.
    assert_eq!(store.renew_leases(42, t0).unwrap().len(), 2);
    assert_eq!(store.owner_of("a1a1a1a1").unwrap(), (Some(42), Some("2026-11-30T22:00:00.000Z".to_string())));
    assert!(store.claim_session("a1a1a1a1", Some(42), 43, None).unwrap());
    assert!(!store.claim_session("a1a1a1a1", Some(42), 44, None).unwrap(), "claimed once");
    assert_eq!(store.owner_of("a1a1a1a1").unwrap(), (Some(43), None), "a claim clears the lease");
    assert_eq!(store.renew_leases(42, t0).unwrap(), ["b2b2b2b2"]);
}
