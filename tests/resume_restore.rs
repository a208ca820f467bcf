//! A pending resume survives Nightshift: the journal says a session waits for a limit's reset with
//! auto-resume on, its Nightshift died, and the next one starts the agent again (`--continue`),
//! paused on the limit, and resumes it — at once when the reset passed while Nightshift was down,
//! at the reset plus the margin otherwise. Virtual time: tokio's paused clock and a fake wall clock.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use nightshift::clock::FakeClock;
use nightshift::event::{Automation, StopKind};
use nightshift::limits::{resume, WindowGuard};
use nightshift::session::SessionHandle;
use nightshift::store::{NewSession, Store};
use nightshift::supervisor::Supervisor;
use nightshift::{Event, EventKind, SessionId, SessionState};
use tokio::sync::broadcast;

fn reset() -> DateTime<Utc> {
    "2026-11-30T23:00:00Z".parse().unwrap()
}

/// A pid that no process has now.
fn dead_pid() -> u32 {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

/// A session recorded by a Nightshift that died while it waited: `then` are the events after the
/// resume was armed.
fn seed(store: &mut Store, dir: &std::path::Path, id: &str, then: Vec<EventKind>) {
    // A script file, not `bash -c` (`-c` is also Claude's short `--continue`).
    let script = dir.join(format!("agent-{id}.sh"));
    std::fs::write(&script, "echo restarted with \"$@\"; exec cat\n").unwrap();
    let command = ["bash".to_string(), script.display().to_string()];
    store
        .create_session(&NewSession {
            id,
            kind: nightshift::store::SessionKind::Terminal,
            command: &command,
            cwd: &std::env::temp_dir().display().to_string(),
            agent: "claude",
            preset: None,
            created: reset() - chrono::Duration::hours(1),
            owner_pid: dead_pid(),
            control_socket: None,
        })
        .unwrap();
    let ts = reset() - chrono::Duration::minutes(30);
    let session = SessionId::from(id.to_string());
    let mut record = |kind| store.record(&Event { ts, session: session.clone(), kind }).unwrap();
    record(EventKind::state(SessionState::LimitPaused, "usage limit (text: You've hit your limit)"));
    let settings = resume::Settings { prompt: "go on".into(), ..resume::Settings::default() };
    let guard = WindowGuard { reserve_pct: Some(20.0), ..WindowGuard::default() };
    let due = reset() + chrono::Duration::minutes(1);
    record(EventKind::ResumeArmed { resets_at: Some(reset()), due, settings, guard });
    for kind in then {
        record(kind);
    }
}

fn supervisor(env: &common::Env, now: DateTime<Utc>, seeds: &[(&str, Vec<EventKind>)]) -> (Supervisor, Arc<FakeClock>) {
    std::fs::create_dir_all(env.state_dir()).unwrap();
    let mut store = Store::open(&env.state_dir().join("journal.sqlite3")).unwrap();
    for (id, then) in seeds {
        seed(&mut store, &env.state_dir(), id, then.clone());
    }
    let clock = Arc::new(FakeClock::new(now));
    (Supervisor::new(store, clock.clone()), clock)
}

/// The next resume sent, within `virtual_secs` of virtual time.
async fn resume_within(events: &mut broadcast::Receiver<Event>, virtual_secs: u64) -> Option<Event> {
    tokio::time::timeout(Duration::from_secs(virtual_secs), async {
        loop {
            let ev = events.recv().await.unwrap();
            if matches!(ev.kind, EventKind::ResumeSent { .. }) {
                return ev;
            }
        }
    })
    .await
    .ok()
}

/// Waits in real time (the child is a real process) for the screen to show `text`.
async fn screen_shows(handle: &SessionHandle, text: &str) -> bool {
    let started = std::time::Instant::now();
    let mut last = String::new();
    while started.elapsed() < Duration::from_secs(10) {
        last = handle.snapshot().await.unwrap().text();
        if last.contains(text) {
            return true;
        }
        tokio::task::spawn_blocking(|| std::thread::sleep(Duration::from_millis(50))).await.unwrap();
    }
    eprintln!("the screen, without {text:?}:\n{last}");
    false
}

#[tokio::test(start_paused = true)]
async fn a_reset_that_passed_while_nightshift_was_down_resumes_at_once() {
    let env = common::Env::new();
    let ended = vec![EventKind::LimitCleared { reason: "the agent is working again".into() }];
    let (sup, _clock) =
        supervisor(&env, reset() + chrono::Duration::hours(2), &[("pending1", vec![]), ("cleared1", ended)]);
    let mut events = sup.subscribe();
    let restored = sup.restore_all().handles();
    assert_eq!(restored.iter().map(|h| h.id().to_string()).collect::<Vec<_>>(), ["pending1"], "only the pending one");
    let handle = &restored[0];
    assert!(screen_shows(handle, "restarted with --continue").await, "Claude is started again with --continue");
    assert!(handle.status().options.limit.is_some(), "paused on the limit");
    assert_eq!(handle.status().options.window_guard.reserve_pct, Some(20.0), "the fresh-window guard kept");

    let sent = resume_within(&mut events, 10).await.expect("the resume, within one check of the start");
    assert_eq!(sent.session.as_str(), "pending1");
    assert!(screen_shows(handle, "go on").await, "the resume prompt reached the agent");
    let row = sup.with_store(|s| s.session("pending1")).unwrap().unwrap();
    assert_eq!(row.owner_pid, Some(i64::from(std::process::id())), "this process owns it now");
    handle.stop("test").await.unwrap();
    handle.wait().await;
}

#[tokio::test(start_paused = true)]
async fn a_reset_still_ahead_resumes_at_the_reset_plus_the_margin() {
    let env = common::Env::new();
    let (sup, clock) = supervisor(&env, reset() - chrono::Duration::minutes(10), &[("pending2", vec![])]);
    let mut events = sup.subscribe();
    let restored = sup.restore_all().handles();
    assert_eq!(restored.len(), 1);
    let handle = &restored[0];
    assert!(screen_shows(handle, "restarted with --continue").await);

    assert!(resume_within(&mut events, 60).await.is_none(), "nothing before the reset");
    // The journal has the reset to the minute only (a notice's): the minute is waited out.
    clock.set(reset() + chrono::Duration::seconds(30));
    assert!(resume_within(&mut events, 10).await.is_none(), "nothing within the notice's minute");
    clock.set(reset() + chrono::Duration::seconds(66));
    assert!(resume_within(&mut events, 10).await.is_some(), "the resume, after that minute plus the margin (5 s)");
    handle.stop("test").await.unwrap();
    handle.wait().await;
}

#[tokio::test]
async fn only_waits_still_pending_are_restored_and_a_hold_is_kept() {
    let env = common::Env::new();
    let automation = |change| EventKind::Automation { change, source: "the app".into(), detail: None };
    let seeds = [
        ("stopped", vec![EventKind::StopRequested { source: "nightshift stop".into(), kind: StopKind::User }]),
        ("failed", vec![EventKind::LimitFailed { reason: "still limited after 3 resumes".into() }]),
        ("off", vec![automation(Automation::AutoResumeOff)]),
        ("held", vec![automation(Automation::Held)]),
        ("released", vec![automation(Automation::Held), automation(Automation::Released)]),
        // Nightshift's own end (Quit, a logout) kept the resume.
        (
            "kept",
            vec![EventKind::StopRequested { source: "SIGTERM to nightshift".into(), kind: StopKind::Shutdown }, kept()],
        ),
    ];
    let (sup, _) = supervisor(&env, reset() - chrono::Duration::hours(1), &seeds);
    let handles = sup.restore_all().handles();
    // The actor publishes its options once it runs.
    for h in &handles {
        let started = std::time::Instant::now();
        while h.status().options.limit.is_none() && started.elapsed() < Duration::from_secs(5) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    let mut restored: Vec<(String, bool)> =
        handles.iter().map(|h| (h.id().to_string(), h.status().options.held)).collect();
    restored.sort();
    assert_eq!(restored, [("held".to_string(), true), ("kept".to_string(), false), ("released".to_string(), false)]);
    for id in ["held", "kept", "released"] {
        let handle = sup.session(id).unwrap();
        handle.stop("test").await.unwrap();
        handle.wait().await;
    }
}

fn kept() -> EventKind {
    EventKind::ResumeKept {
        due: reset() + chrono::Duration::minutes(1),
        reason: "Nightshift ended".into(),
        exit_code: None,
        signal: Some("SIGHUP".into()),
    }
}

/// A kept session shows as such, and the user's `nightshift stop` cancels it for good.
#[tokio::test]
async fn stopping_a_kept_session_cancels_its_resume() {
    let env = common::Env::new();
    let shutdown = EventKind::StopRequested { source: "quit from the tray".into(), kind: StopKind::Shutdown };
    let (sup, _) = supervisor(&env, reset() - chrono::Duration::hours(1), &[("kept2", vec![shutdown, kept()])]);
    let row = sup.with_store(|s| s.session("kept2")).unwrap().unwrap();
    assert_eq!(row.standing(), nightshift::store::Standing::Kept);
    assert_eq!(row.shown_state(), "resume kept");
    drop(sup);
    let stopped = env.stdout(&["stop", "kept2"]);
    assert!(stopped.contains("pending resume is cancelled"), "{stopped}");
    let (sup, _) = supervisor(&env, reset() - chrono::Duration::hours(1), &[]);
    assert!(sup.restore_all().handles().is_empty(), "the user's stop is never undone");
    let row = sup.with_store(|s| s.session("kept2")).unwrap().unwrap();
    assert_eq!(row.standing(), nightshift::store::Standing::Ended);
}

/// The window's Stop of a kept session is journalled through the app's one writer, so the window
/// and every `--events` follower hear it (it was written through a read connection, heard by none).
#[tokio::test]
async fn a_stop_of_a_session_no_nightshift_runs_is_heard_on_the_bus() {
    let env = common::Env::new();
    let shutdown = EventKind::StopRequested { source: "quit from the tray".into(), kind: StopKind::Shutdown };
    let (sup, _) = supervisor(&env, reset() - chrono::Duration::hours(1), &[("kept3", vec![shutdown, kept()])]);
    let mut heard = sup.subscribe();
    let row = sup.with_store(|s| s.session("kept3")).unwrap().unwrap();
    assert_eq!(sup.end_orphan(&row, "the app").unwrap(), Some(nightshift::store::Standing::Kept));
    let mut names = Vec::new();
    while let Ok(event) = heard.try_recv() {
        names.push((event.session.to_string(), event.kind.name()));
    }
    assert_eq!(names, [("kept3".to_string(), "stop_requested"), ("kept3".to_string(), "state")]);
    let row = sup.with_store(|s| s.session("kept3")).unwrap().unwrap();
    assert_eq!(row.standing(), nightshift::store::Standing::Ended);
}

#[tokio::test]
async fn a_session_whose_owner_still_runs_is_not_started_twice() {
    let env = common::Env::new();
    let (sup, _) = supervisor(&env, reset(), &[]);
    // Its owner is this very process; its socket is gone (a runtime directory removed at logout).
    sup.write_store(|s| seed(s, &env.state_dir(), "running", vec![]));
    sup.write_store(|s| s.adopt_session("running", std::process::id(), Some("/nonexistent/control.sock"))).unwrap();
    assert!(sup.restore_all().handles().is_empty(), "a live owner keeps its session");
}

#[tokio::test(start_paused = true)]
async fn a_restored_session_is_armed_again_for_the_rest_of_its_duration() {
    let env = common::Env::new();
    std::fs::create_dir_all(env.state_dir()).unwrap();
    let mut store = Store::open(&env.state_dir().join("journal.sqlite3")).unwrap();
    let script = env.state_dir().join("agent.sh");
    std::fs::write(&script, "echo restarted with \"$@\"; exec cat\n").unwrap();
    let command = ["bash".to_string(), script.display().to_string()];
    store
        .create_session(&NewSession {
            id: "overnight1",
            kind: nightshift::store::SessionKind::Terminal,
            command: &command,
            cwd: &std::env::temp_dir().display().to_string(),
            agent: "claude",
            preset: Some("overnight"),
            created: reset() - chrono::Duration::hours(1),
            owner_pid: dead_pid(),
            control_socket: None,
        })
        .unwrap();
    let session = SessionId::from("overnight1".to_string());
    let ts = reset() - chrono::Duration::minutes(30);
    let mut record = |kind| store.record(&Event { ts, session: session.clone(), kind }).unwrap();
    record(EventKind::Respawn {
        action: nightshift::respawn::Action::Armed,
        cycle: None,
        reason: Some("preset overnight: idle timeout 10 s, for 480 min".into()),
        cost_usd: None,
    });
    record(EventKind::state(SessionState::LimitPaused, "usage limit"));
    let due = reset() + chrono::Duration::minutes(1);
    record(EventKind::ResumeArmed {
        resets_at: Some(reset()),
        due,
        settings: resume::Settings::default(),
        guard: WindowGuard::default(),
    });
    let sup = Supervisor::new(store, Arc::new(FakeClock::new(reset() - chrono::Duration::minutes(10))));
    let restored = sup.restore_all().handles();
    assert_eq!(restored.len(), 1);
    let options = restored[0].status().options;
    assert!(options.respawn.is_some(), "the overnight preset's respawn is gone after the restore: {options:?}");
    assert_eq!(options.preset.as_deref(), Some("overnight"));
    // Armed 30 min before this 0.1.0-style journal's reset, for 8 h: 7 h 40 min are left.
    let left = options.respawn_until.unwrap() - (reset() - chrono::Duration::minutes(10));
    assert_eq!(left.num_minutes(), 7 * 60 + 40, "{options:?}");
    restored[0].stop("test").await.unwrap();
    restored[0].wait().await;
}

#[test]
fn stop_does_not_end_a_session_whose_owner_still_runs() {
    let env = common::Env::new();
    std::fs::create_dir_all(env.state_dir()).unwrap();
    let mut store = Store::open(&env.state_dir().join("journal.sqlite3")).unwrap();
    let command = ["claude".to_string()];
    // Its owner (this very process) runs; only its socket went with the runtime directory.
    store
        .create_session(&NewSession {
            id: "running1",
            kind: nightshift::store::SessionKind::Terminal,
            command: &command,
            cwd: "/tmp",
            agent: "claude",
            preset: None,
            created: reset(),
            owner_pid: std::process::id(),
            control_socket: Some("/run/user/1000/nightshift/gone.sock"),
        })
        .unwrap();
    let session = SessionId::from("running1".to_string());
    store.record(&Event { ts: reset(), session, kind: EventKind::state(SessionState::Working, "turn") }).unwrap();
    let row = store.session("running1").unwrap().unwrap();
    let ended = nightshift::supervisor::end_orphan(&mut store, &FakeClock::new(reset()), &row, "nightshift stop");
    let said = ended.unwrap_err().to_string();
    assert!(said.contains("still runs but cannot be reached") && said.contains("kill"), "{said}");
    let row = store.session("running1").unwrap().unwrap();
    assert!(!row.is_final(), "a running session marked {:?} in the journal", row.state);
}

#[tokio::test(start_paused = true)]
async fn a_restored_session_keeps_its_account() {
    let env = common::Env::new();
    let (sup, _clock) = supervisor(&env, reset() + chrono::Duration::hours(2), &[("account1", vec![])]);
    let dir = env.path("claude-work");
    std::fs::create_dir_all(&dir).unwrap();
    sup.write_store(|s| s.set_account("account1", "work", &dir.display().to_string())).unwrap();
    // The agent says which config directory it was given.
    std::fs::write(env.state_dir().join("agent-account1.sh"), "echo \"config=$CLAUDE_CONFIG_DIR\"; exec cat\n")
        .unwrap();
    let restored = sup.restore_all().handles();
    assert_eq!(restored.len(), 1);
    assert!(
        screen_shows(&restored[0], &format!("config={}", dir.display())).await,
        "the conversation lives in the account's directory: it is restarted there"
    );
    let row = sup.with_store(|s| s.session("account1")).unwrap().unwrap();
    assert_eq!((row.account.as_deref(), row.account_dir.as_deref()), (Some("work"), dir.to_str()));
    restored[0].stop("test").await.unwrap();
}
