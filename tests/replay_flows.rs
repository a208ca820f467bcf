//! Night-time flows through real PTYs in seconds: a fake agent (`examples/replay_agent.rs`) plays
//! back what the real Claude Code client drew — its usage-limit screens, its limit menu, its idle
//! screen before it dies — and Nightshift reacts as it does to the client itself. The wall clock is
//! a `FakeClock` where a reset must pass; everything else runs in real time, briefly.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use common::{read_events, replay_agent, wait_for, Env};
use nightshift::clock::FakeClock;
use nightshift::event::Automation;
use nightshift::limits::resume;
use nightshift::pty::{CommandSpec, PtySize};
use nightshift::store::Store;
use nightshift::supervisor::{SessionSpec, Supervisor};
use nightshift::{AgentKind, Event, EventKind, SessionState};
use tokio::sync::broadcast;

fn capture(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-code/2.1.332").join(path)
}

/// The reset times the captures show (`resets 2:33pm`) are read in local time: the tests use UTC.
fn utc() {
    // Every test of this file sets the same value, so it does not matter which sets it first.
    std::env::set_var("TZ", "UTC");
}

fn spec(args: &[&str], cwd: &Path) -> SessionSpec {
    SessionSpec::of(
        AgentKind::Claude,
        CommandSpec {
            program: replay_agent().display().to_string(),
            args: args.iter().map(|a| a.to_string()).collect(),
            cwd: cwd.to_path_buf(),
            env: vec![("TZ".into(), "UTC".into())],
            size: PtySize::new(120, 40),
        },
    )
}

async fn next(
    events: &mut broadcast::Receiver<Event>,
    what: &str,
    secs: u64,
    ok: impl Fn(&EventKind) -> bool,
) -> Event {
    tokio::time::timeout(Duration::from_secs(secs), async {
        loop {
            let ev = events.recv().await.expect("the bus is open");
            if ok(&ev.kind) {
                return ev;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no {what} within {secs} s"))
}

fn log_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path).unwrap_or_default().lines().map(str::to_string).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_usage_limit_is_waited_out_resumed_and_retried_until_a_turn_starts() {
    utc();
    let env = Env::new();
    std::fs::create_dir_all(env.state_dir()).unwrap();
    let store = Store::open(&env.state_dir().join("journal.sqlite3")).unwrap();
    let clock = Arc::new(FakeClock::new("2026-12-01T14:00:00Z".parse().unwrap()));
    let sup = Supervisor::new(store, clock.clone());
    let mut events = sup.subscribe();
    let log = env.path("agent.log");
    let dir = capture("limit").display().to_string();
    let mut spec = spec(&["stream", &dir, "--speed", "4", "--log", log.to_str().unwrap()], env.dir.path());
    spec.terminal_mut().auto_resume =
        Some(resume::Settings { margin: Duration::from_secs(5), ..resume::Settings::default() });
    let handle = sup.start(spec).unwrap();

    next(&mut events, "idle", 15, |k| k.new_state() == Some(SessionState::Idle)).await;
    handle.send_text("hit the limit mock:limit", true, nightshift::event::Answerer::Cli).await.unwrap();
    let limit = next(&mut events, "the limit", 15, |k| matches!(k, EventKind::LimitDetected { .. })).await;
    let EventKind::LimitDetected { resets_at, .. } = limit.kind else { unreachable!() };
    assert_eq!(resets_at, Some("2026-12-01T14:33:00Z".parse().unwrap()), "the client's reset, read off its screen");
    next(&mut events, "the pause", 5, |k| k.new_state() == Some(SessionState::LimitPaused)).await;

    // The agent goes quiet under its limit notice: still paused, and nothing is typed before the reset.
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert_eq!(handle.status().state, SessionState::LimitPaused, "idle under the notice is still paused");
    assert!(!log_lines(&log).iter().any(|l| l.contains("continue")), "nothing typed before the reset");

    // The notice gives the minute (its seconds dropped): the resume waits out the minute, plus
    // the margin.
    clock.set("2026-12-01T14:33:30Z".parse().unwrap());
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert!(!log_lines(&log).iter().any(|l| l.contains("continue")), "nothing typed within the notice's minute");
    clock.set("2026-12-01T14:34:06Z".parse().unwrap());
    next(&mut events, "the resume", 15, |k| matches!(k, EventKind::ResumeSent { attempt: 1 })).await;
    // The capture goes on with the client limited again, under the same notice (`resets 2:33pm`,
    // just past): with no turn within the verify time (3 min), the next try is the fallback's
    // half hour on, journalled for a restore; the agent's answer to it ends the limit.
    clock.set("2026-12-01T14:37:10Z".parse().unwrap());
    let again = next(&mut events, "the retry armed", 15, |k| matches!(k, EventKind::ResumeArmed { .. })).await;
    let EventKind::ResumeArmed { due, .. } = again.kind else { unreachable!() };
    assert_eq!(due, "2026-12-01T15:07:10Z".parse::<chrono::DateTime<chrono::Utc>>().unwrap());
    clock.set("2026-12-01T15:07:15Z".parse().unwrap());
    next(&mut events, "the second resume", 15, |k| matches!(k, EventKind::ResumeSent { attempt: 2 })).await;
    next(&mut events, "the limit's end", 30, |k| matches!(k, EventKind::LimitCleared { .. })).await;
    let typed = log_lines(&log).iter().filter(|l| l.starts_with("input") && l.contains("continue")).count();
    assert_eq!(typed, 2, "two resumes reached the agent: {:?}", log_lines(&log));
    handle.stop("the test").await.unwrap();
    handle.wait().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_limit_menu_is_answered_per_policy() {
    utc();
    for (policy, key) in [(resume::Policy::Watch, "2"), (resume::Policy::Own, "1")] {
        let env = Env::new();
        let sup = env.supervisor();
        let mut events = sup.subscribe();
        let log = env.path("agent.log");
        let menu = capture("nightshift/weekly-menu.screen.ansi.txt").display().to_string();
        let wait = format!("2:{}", capture("nightshift/weekly-menu-wait.ansi.txt").display());
        let stop = format!("1:{}", capture("nightshift/weekly-menu-stop.ansi.txt").display());
        let args = ["screens", &menu, "--then", &wait, "--then", &stop, "--log", log.to_str().unwrap()];
        let mut spec = spec(&args, env.dir.path());
        spec.terminal_mut().auto_resume = Some(resume::Settings { policy, ..resume::Settings::default() });
        let handle = sup.start(spec).unwrap();
        let mut states = sup.subscribe();
        let answered = next(&mut events, "the menu answered", 15, |k| {
            matches!(k, EventKind::Automation { change: Automation::MenuAnswered, .. })
        })
        .await;
        let EventKind::Automation { detail, .. } = answered.kind else { unreachable!() };
        assert!(detail.unwrap().starts_with(&format!("with {key}")), "{policy:?}");
        let started = std::time::Instant::now();
        while !log_lines(&log).iter().any(|l| *l == format!("input {key}")) {
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "{policy:?}: no {key} at the agent: {:?}",
                log_lines(&log)
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        next(&mut states, "the pause", 5, |k| k.new_state() == Some(SessionState::LimitPaused)).await;
        handle.stop("the test").await.unwrap();
        handle.wait().await;
    }
}

#[test]
fn a_dying_agent_is_started_again_with_its_conversation_then_the_breaker_opens() {
    let env = Env::new();
    let events = env.path("events.jsonl");
    let log = env.path("agent.log");
    let idle = capture("idle").display().to_string();
    let agent = replay_agent().display().to_string();
    let status = env
        .cmd(&["run", "--agent", "claude", "--respawn", "--restart-backoff", "0.2", "--events"])
        .arg(&events)
        .args(["--", &agent, "stream", &idle, "--speed", "8", "--exit", "1", "--log"])
        .arg(&log)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut child = status;
    let open = wait_for("the crash-loop breaker", Duration::from_secs(60), || {
        read_events(&events).into_iter().find(|e| e["event"] == "breaker" && e["state"] == "open")
    });
    assert!(open["reason"].as_str().unwrap().contains("5 lives in a row"), "{open}");
    let lives: Vec<String> = log_lines(&log).into_iter().filter(|l| l.starts_with("argv")).collect();
    assert_eq!(lives.len(), 5, "{lives:?}");
    assert!(!lives[0].contains("--continue"), "the first start is as given");
    // Restarts carry the conversation on, once each, and go on with the kickstart.
    let resumed = format!("--log {} --continue [Automated restart by Nightshift", log.display());
    let kickstart = format!("] {}", nightshift::respawn::DEFAULT_KICKSTART_PROMPT);
    assert!(
        lives[1..].iter().all(|l| l.contains(&resumed) && l.ends_with(&kickstart)),
        "restarts carry the conversation on, with the kickstart marked as Nightshift's: {lives:?}"
    );
    let id = read_events(&events)[0]["session"].as_str().unwrap().to_string();
    env.stdout(&["stop", &id]);
    let status = wait_for("the run to end", Duration::from_secs(15), || child.try_wait().unwrap());
    assert_eq!(status.code(), Some(1));
    let last = read_events(&events).into_iter().rfind(|e| e["event"] == "state").unwrap();
    assert_eq!(last["state"], "exited", "the stop is the end, in the journal too: {last}");
}

#[test]
fn a_run_ended_by_sigterm_keeps_its_resume_and_restore_picks_it_up() {
    let env = Env::new();
    let events = env.path("events.jsonl");
    let agent = replay_agent().display().to_string();
    let dir = capture("limit").display().to_string();
    let mut run = env
        .cmd(&["run", "--agent", "claude", "--auto-resume", "--events"])
        .arg(&events)
        .args(["--", &agent, "stream", &dir, "--speed", "4"])
        .env("TZ", "UTC")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for("idle", Duration::from_secs(15), || {
        read_events(&events).iter().any(|e| e["state"] == "idle").then_some(())
    });
    let id = read_events(&events)[0]["session"].as_str().unwrap().to_string();
    env.stdout(&["send", &id, "hit the limit mock:limit", "--enter"]);
    wait_for("the resume armed", Duration::from_secs(15), || {
        read_events(&events).iter().any(|e| e["event"] == "resume_armed").then_some(())
    });
    // A logout or a reboot: SIGTERM to nightshift.
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(run.id() as i32), nix::sys::signal::Signal::SIGTERM).unwrap();
    wait_for("the run to end", Duration::from_secs(15), || run.try_wait().unwrap());
    let kept = read_events(&events).into_iter().find(|e| e["event"] == "resume_kept");
    assert!(kept.is_some(), "the pending resume is kept: {:?}", read_events(&events));
    let listed = env.stdout(&["sessions"]);
    assert!(listed.lines().any(|l| l.starts_with(&id) && l.contains("resume kept")), "{listed}");

    // No app on this machine: `nightshift restore` takes it up again, paused on its limit.
    let mut restore = env
        .cmd(&["restore", "--events"])
        .arg(env.path("restore.jsonl"))
        .env("TZ", "UTC")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let restored = env.path("restore.jsonl");
    let armed = wait_for("the resume re-armed", Duration::from_secs(15), || {
        read_events(&restored).into_iter().find(|e| e["event"] == "resume_armed")
    });
    assert_eq!(armed["session"], id.as_str(), "the same session, under its own id");
    assert!(read_events(&restored).iter().any(|e| e["event"] == "limit_detected" && e["source"] == "journal"));
    let started = read_events(&restored).into_iter().find(|e| e["state"] == "starting").unwrap();
    assert!(started["reason"].as_str().unwrap().ends_with("--continue to resume after the limit"), "{started}");
    env.stdout(&["stop", &id]);
    let status = wait_for("restore to end", Duration::from_secs(15), || restore.try_wait().unwrap());
    assert!(status.success());
    let mut out = String::new();
    std::io::Read::read_to_string(restore.stdout.as_mut().unwrap(), &mut out).unwrap();
    assert!(out.contains(&format!("Restored session {id}")), "{out}");
}
