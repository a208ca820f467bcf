//! A running session's options changed from outside (the app's Session Options, the tray's Pause
//! all): respawn armed and disarmed, auto-resume, the hold; in-process and over the control socket.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use nightshift::control::{self, ControlServer, Request, Response};
use nightshift::event::Automation;
use nightshift::limits::resume;
use nightshift::pty::{CommandSpec, PtySize};
use nightshift::respawn::{Action, Settings};
use nightshift::session::{Change, RespawnArm, SessionHandle, Switch};
use nightshift::store::Store;
use nightshift::supervisor::{SessionSpec, Supervisor};
use nightshift::{Event, EventKind};
use tokio::sync::broadcast;

/// A shell that answers each line it reads, so what the cycle types shows on the screen.
fn echo_agent() -> SessionSpec {
    SessionSpec::new(CommandSpec {
        program: "bash".into(),
        args: vec![
            "--norc".into(),
            "--noprofile".into(),
            "-c".into(),
            "echo ready; while read -r line; do echo \"got $line\"; done".into(),
        ],
        cwd: std::env::temp_dir(),
        env: vec![],
        size: PtySize::default(),
    })
}

/// Quick cycles that only kickstart.
fn quick() -> Settings {
    Settings {
        idle_timeout: Duration::from_millis(300),
        duration: Duration::from_secs(600),
        inter_step_delay: Duration::from_millis(100),
        clear_and_init: false,
        update_prompt: String::new(),
        kickstart_prompt: "kick".into(),
        user_quiet: Duration::ZERO,
        ..Settings::default()
    }
}

async fn next_matching(events: &mut broadcast::Receiver<Event>, what: &str, ok: impl Fn(&EventKind) -> bool) -> Event {
    tokio::time::timeout(Duration::from_secs(15), async {
        loop {
            let ev = events.recv().await.expect("the bus is open");
            if ok(&ev.kind) {
                return ev;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no {what} within 15 s"))
}

/// An agent that exits soon after it starts (`script` ends non-zero: a clean exit would end the
/// session), with quick respawn cycles armed.
fn short_lived(script: &str) -> SessionSpec {
    let mut spec = echo_agent();
    spec.terminal_mut().args = vec!["--norc".into(), "-c".into(), script.into()];
    spec.terminal_mut().respawn = Some(quick());
    spec
}

/// How many times the session's agent was started again.
fn restarts(sup: &Supervisor, handle: &SessionHandle) -> usize {
    let events = sup.with_store(|s| s.recent_events(handle.id().as_str(), 200)).unwrap();
    events.iter().filter(|e| e.body.contains(r#""action":"restart""#)).count()
}

async fn stop(handle: &SessionHandle) {
    handle.stop("test").await.unwrap();
    handle.wait().await;
}

#[tokio::test]
async fn respawn_armed_on_a_running_session_runs_cycles_and_can_be_held_and_disarmed() {
    let env = common::Env::new();
    let sup = env.supervisor();
    let mut events = sup.subscribe();
    let handle = sup.start(echo_agent()).unwrap();
    assert!(!handle.status().options.keeps_awake(), "nothing armed at start");

    let arm = Change {
        respawn: Some(Switch::On(RespawnArm { preset: Some("quick".into()), settings: quick() })),
        source: "the test".into(),
        ..Change::default()
    };
    let options = handle.configure(arm).await.unwrap();
    assert!(options.respawn_active && options.keeps_awake(), "{options:?}");
    assert_eq!(options.preset.as_deref(), Some("quick"));
    let armed = next_matching(
        &mut events,
        "armed",
        |k| matches!(k, EventKind::Respawn { action, .. } if *action == Action::Armed),
    )
    .await;
    let EventKind::Respawn { reason, .. } = armed.kind else { unreachable!() };
    assert!(reason.unwrap().contains("preset quick"));
    next_matching(
        &mut events,
        "a cycle",
        |k| matches!(k, EventKind::Respawn { action, .. } if *action == Action::CycleStarted),
    )
    .await;
    let typed = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let snap = handle.snapshot().await.unwrap();
            // The kickstart as typed: marked as Nightshift's (the line may wrap on the screen).
            let flat: String = snap.text().split_whitespace().collect();
            if flat.contains("got[Automatedkickstart") && flat.contains("]kick") {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(typed.is_ok(), "the kickstart reached the agent");

    // Held: the settings stay, nothing runs, the machine may sleep.
    let held = handle.configure(Change { held: Some(true), ..Change::default() }).await.unwrap();
    assert!(held.held && held.respawn.is_some() && !held.keeps_awake(), "{held:?}");
    next_matching(&mut events, "the hold", |k| matches!(k, EventKind::Automation { change: Automation::Held, .. }))
        .await;
    assert_eq!(handle.status().options, held, "the status shows the options as configure returned them");
    // Idle well past the idle timeout: no cycle while held.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    while let Ok(ev) = events.try_recv() {
        assert!(
            !matches!(&ev.kind, EventKind::Respawn { action, .. } if *action == Action::CycleStarted),
            "a cycle started while held: {ev:?}"
        );
    }

    let off =
        handle.configure(Change { held: Some(false), respawn: Some(Switch::Off), ..Change::default() }).await.unwrap();
    assert!(off.respawn.is_none() && !off.respawn_active && !off.held && !off.keeps_awake(), "{off:?}");
    next_matching(
        &mut events,
        "disarmed",
        |k| matches!(k, EventKind::Respawn { action, .. } if *action == Action::Disarmed),
    )
    .await;
    stop(&handle).await;
}

/// Respawn switched off while the agent is down (between its exit and the restart): the session
/// ends instead of starting the agent again.
#[tokio::test]
async fn respawn_switched_off_while_the_agent_is_down_ends_the_session() {
    let env = common::Env::new();
    let sup = env.supervisor();
    let mut events = sup.subscribe();
    let handle = sup.start(short_lived("echo bye; sleep 0.3; exit 1")).unwrap();
    next_matching(&mut events, "the exit", |k| {
        matches!(k, EventKind::State { state: nightshift::SessionState::Exited, .. })
    })
    .await;
    let off = handle.configure(Change { respawn: Some(Switch::Off), ..Change::default() }).await.unwrap();
    assert!(!off.respawn_active);
    tokio::time::timeout(Duration::from_secs(5), handle.wait()).await.expect("the session ends");
    assert_eq!(restarts(&sup, &handle), 0, "not started again");
}

/// Held, an agent that exits is not started again until the hold is released.
#[tokio::test]
async fn a_held_session_restarts_its_agent_only_once_released() {
    let env = common::Env::new();
    let sup = env.supervisor();
    let mut events = sup.subscribe();
    let handle = sup.start(short_lived("echo bye; sleep 0.5; exit 1")).unwrap();
    handle.configure(Change { held: Some(true), ..Change::default() }).await.unwrap();
    next_matching(&mut events, "the exit", |k| {
        matches!(k, EventKind::State { state: nightshift::SessionState::Exited, .. })
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(restarts(&sup, &handle), 0, "held past the back-off: not started again");
    handle.configure(Change { held: Some(false), ..Change::default() }).await.unwrap();
    next_matching(
        &mut events,
        "the restart",
        |k| matches!(k, EventKind::Respawn { action, .. } if *action == Action::Restart),
    )
    .await;
    // Its second life is short: it may be over already, and with respawn off the session ends.
    let _ = handle.configure(Change { respawn: Some(Switch::Off), ..Change::default() }).await;
    let _ = handle.stop("test").await;
    handle.wait().await;
}

#[tokio::test]
async fn options_are_read_and_changed_over_the_control_socket() {
    let env = common::Env::new();
    let sup = env.supervisor();
    std::fs::create_dir_all(env.runtime_dir()).unwrap();
    let socket = env.runtime_dir().join("control-test.sock");
    let _server = ControlServer::bind(&socket, sup.clone()).unwrap();
    let handle = sup.start(echo_agent()).unwrap();
    let id = handle.id().to_string();

    let Response::Options(before) = control::request(&socket, &Request::Options { session: id.clone() }).await.unwrap()
    else {
        panic!("options are answered with the options")
    };
    assert!(before.auto_resume.is_none());

    // What the window sends: JSON with durations in seconds.
    let change: Change = serde_json::from_value(serde_json::json!({
        "auto_resume": {"on": {"policy": "own", "margin": 90, "prompt": "go on", "retries": 2, "fallback": 600, "verify": 120}},
        "source": "the app"
    }))
    .unwrap();
    let Response::Options(after) =
        control::request(&socket, &Request::Configure { session: id.clone(), change: Box::new(change) }).await.unwrap()
    else {
        panic!("a change is answered with the options")
    };
    let resume = after.auto_resume.clone().expect("auto-resume on");
    assert_eq!(resume.policy, resume::Policy::Own);
    assert_eq!(resume.margin, Duration::from_secs(90));
    let awake = after.awake;
    assert!(!awake.hold, "auto-resume alone, with no limit met, keeps nothing awake: {}", awake.reason);

    let bad =
        serde_json::from_value::<Change>(serde_json::json!({"respawn": {"on": {"settings": {"idle_timeout": -1}}}}));
    assert!(bad.unwrap_err().to_string().contains("not a number of seconds"));
    let unknown = control::request(&socket, &Request::Options { session: "nope".into() }).await;
    assert!(matches!(unknown, Err(control::ControlError::Refused(body)) if body.code == control::Code::NoSession));
    stop(&handle).await;
}

/// Virtual time: the monotonic clock moves 10 s while the wall clock moves two hours, as it does
/// across a suspend; the live session's journal gets the gap.
#[tokio::test(start_paused = true)]
async fn a_suspend_is_journalled_in_live_sessions() {
    let env = common::Env::new();
    std::fs::create_dir_all(env.state_dir()).unwrap();
    let store = Store::open(&env.state_dir().join("journal.sqlite3")).unwrap();
    let clock = Arc::new(nightshift::clock::FakeClock::new("2026-11-30T23:00:00Z".parse().unwrap()));
    let sup = Supervisor::new(store, clock.clone());
    let mut events = sup.subscribe();
    let handle = sup.start(echo_agent()).unwrap();
    let _watch = sup.watch_suspends();
    tokio::task::yield_now().await;

    clock.advance(chrono::Duration::seconds(10));
    tokio::time::sleep(nightshift::power::CHECK_EVERY).await;
    clock.advance(chrono::Duration::hours(2));
    tokio::time::sleep(nightshift::power::CHECK_EVERY).await;
    let ev = next_matching(&mut events, "a suspend", |k| matches!(k, EventKind::Suspended { .. })).await;
    let EventKind::Suspended { from, to } = ev.kind else { unreachable!() };
    assert_eq!(ev.session, *handle.id());
    assert_eq!(to, clock.now_utc(), "awake again now");
    let asleep = to - from;
    assert!(asleep > chrono::Duration::minutes(119) && asleep <= chrono::Duration::hours(2), "{asleep}");
    handle.stop("test").await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_on_a_client_whose_canary_failed_says_so_in_its_options() {
    let env = common::Env::new();
    let sup = env.supervisor();
    let bin = env.path("claude");
    std::fs::write(&bin, "#!/bin/sh\necho ready\nexec cat\n").unwrap();
    std::fs::set_permissions(&bin, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let spec_of = |bin: &std::path::Path| {
        SessionSpec::of(
            nightshift::AgentKind::Claude,
            CommandSpec {
                program: bin.display().to_string(),
                args: vec![],
                cwd: std::env::temp_dir(),
                env: vec![],
                size: PtySize::default(),
            },
        )
    };
    let unchecked = sup.start(spec_of(&bin)).unwrap();
    let said = unchecked.status().options.canary.expect("said");
    assert!(said.starts_with(&format!("not run on {} yet", bin.display())), "{said}");
    stop(&unchecked).await;

    let (size, modified) = nightshift::agent::canary::fingerprint(&bin).unwrap();
    let mut results = nightshift::agent::canary::Results::default();
    let verdict = nightshift::agent::canary::Verdict {
        at: chrono::Utc::now(),
        ok: false,
        failed: vec!["working.spinner".into()],
        kept: None,
        bin: bin.clone(),
        size,
        modified,
    };
    results.record(nightshift::AgentKind::Claude, "2.1.333", verdict);
    results.save(&env.state_dir()).unwrap();
    let failed = sup.start(spec_of(&bin)).unwrap();
    let said = failed.status().options.canary.expect("said");
    assert!(said.starts_with("FAILED on 2.1.333 (working.spinner)"), "{said}");
    assert!(said.ends_with("Nightshift may misread this client tonight"), "{said}");
    stop(&failed).await;
}
