//! Real PTYs under the supervisor: sizes, resizes, input, stopping, the screen model, failures.

use crate::common;

use std::time::{Duration, Instant};

use nightshift::pty::{CommandSpec, Exit, PtySize};
use nightshift::screen::{Color, Snapshot};
use nightshift::session::SessionHandle;
use nightshift::store::EventQuery;
use nightshift::supervisor::{SessionSpec, StartError};
use nightshift::SessionState;

fn bash(script: &str, size: PtySize) -> SessionSpec {
    SessionSpec::new(CommandSpec {
        program: "bash".into(),
        args: vec!["--norc".into(), "--noprofile".into(), "-c".into(), script.into()],
        cwd: std::env::temp_dir(),
        env: vec![],
        size,
    })
}

/// Waits (in real time, bounded) until the session's screen satisfies `ok`.
async fn screen_until(handle: &SessionHandle, what: &str, ok: impl Fn(&Snapshot) -> bool) -> Snapshot {
    let start = Instant::now();
    loop {
        let snap = handle.snapshot().await.expect("session alive");
        if ok(&snap) {
            return snap;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "timed out waiting for {what}; screen:\n{}", snap.text());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn has_line(snap: &Snapshot, line: &str) -> bool {
    snap.rows.iter().any(|r| r == line)
}

#[tokio::test]
async fn child_sees_the_requested_size_and_resizes() {
    let env = common::Env::new();
    let sup = env.supervisor();
    let script = r#"trap 'echo "winch $(tput cols)x$(tput lines)"' WINCH; echo "size $(tput cols)x$(tput lines)"; while :; do sleep 0.05; done"#;
    let handle = sup.start(bash(script, PtySize::new(93, 31))).unwrap();
    screen_until(&handle, "the initial size", |s| has_line(s, "size 93x31")).await;
    handle.resize(PtySize::new(101, 27)).await.unwrap();
    let snap = screen_until(&handle, "SIGWINCH with the new size", |s| has_line(s, "winch 101x27")).await;
    assert_eq!(snap.size, (101, 27), "the screen model follows the resize");
    handle.stop("test").await.unwrap();
    handle.wait().await;
}

#[tokio::test]
async fn text_sent_arrives_on_stdin() {
    let env = common::Env::new();
    let sup = env.supervisor();
    let handle = sup.start(bash(r#"echo ready; read -r line; echo "got:$line"; sleep 5"#, PtySize::default())).unwrap();
    screen_until(&handle, "ready", |s| has_line(s, "ready")).await;
    handle.send_text("hello night", true, nightshift::event::Answerer::Cli).await.unwrap();
    screen_until(&handle, "the echo of the line read", |s| has_line(s, "got:hello night")).await;
    handle.stop("test").await.unwrap();
    handle.wait().await;
    let events = sup.with_store(|s| s.events(&EventQuery::default())).unwrap();
    let input = events.iter().find(|e| e.event == "input").expect("an input event");
    assert!(input.body.contains(r#""chars":11"#) && !input.body.contains("hello night"), "{}", input.body);
}

#[tokio::test]
async fn a_child_that_ignores_sighup_is_killed_after_the_grace_period() {
    let env = common::Env::new();
    let sup = env.supervisor();
    let mut spec = bash("trap '' HUP; echo ready; while :; do sleep 0.05; done", PtySize::default());
    spec.terminal_mut().stop_grace = Duration::from_millis(700);
    let handle = sup.start(spec).unwrap();
    screen_until(&handle, "ready", |s| has_line(s, "ready")).await;
    let asked = Instant::now();
    handle.stop("test").await.unwrap();
    let exit =
        tokio::time::timeout(Duration::from_secs(5), handle.wait()).await.expect("stopped within the grace period");
    assert!(asked.elapsed() >= Duration::from_millis(700), "SIGHUP was ignored, so only SIGKILL ended it");
    assert_eq!(exit, Exit::Signal { number: 9, name: "SIGKILL".into() });
    let row = sup.with_store(|s| s.find_session(handle.id().as_str())).unwrap();
    assert_eq!(row.state, nightshift::SessionState::Exited);
    assert_eq!(row.exit_signal.as_deref(), Some("SIGKILL"));
    assert!(row.reason.unwrap().contains("stopped on request"));
}

#[tokio::test]
async fn a_child_that_honours_sighup_ends_at_once() {
    let env = common::Env::new();
    let sup = env.supervisor();
    let mut spec = bash("echo ready; sleep 100", PtySize::default());
    spec.terminal_mut().stop_grace = Duration::from_secs(30);
    let handle = sup.start(spec).unwrap();
    screen_until(&handle, "ready", |s| has_line(s, "ready")).await;
    handle.stop("test").await.unwrap();
    let exit = tokio::time::timeout(Duration::from_secs(5), handle.wait()).await.expect("SIGHUP ends it");
    assert_eq!(exit.signal(), Some("SIGHUP"));
    assert_eq!(exit.shell_code(), 129);
}

#[tokio::test]
async fn the_screen_shows_what_the_child_drew() {
    let env = common::Env::new();
    let sup = env.supervisor();
    // Draw, jump the cursor around, overwrite, colour, set the title, then park the cursor.
    let script =
        r#"printf 'first line\r\nsecond\033[1;7HLINE\033[5;10Hgreen rgb\033]0;night title\007\033[3;3H'; sleep 5"#;
    let handle = sup.start(bash(script, PtySize::new(40, 8))).unwrap();
    let snap = screen_until(&handle, "the drawing", |s| s.title == "night title").await;
    assert_eq!(snap.rows[0], "first LINE");
    assert_eq!(snap.rows[1], "second");
    assert_eq!(snap.rows[4], "         green rgb");
    assert_eq!(snap.cursor, (2, 2));
    handle.stop("test").await.unwrap();
    handle.wait().await;
}

#[tokio::test]
async fn colours_are_in_the_snapshot() {
    let env = common::Env::new();
    let sup = env.supervisor();
    let script = r#"printf '\033[1;32mgreen\033[0m \033[2mdim\033[0m \033[38;2;255;100;0mrgb\033[0m\n'; sleep 5"#;
    let handle = sup.start(bash(script, PtySize::new(40, 4))).unwrap();
    let snap = screen_until(&handle, "the coloured line", |s| s.rows[0] == "green dim rgb").await;
    let spans: Vec<(&str, Color, bool, bool)> =
        snap.styled[0].iter().map(|s| (s.text.as_str(), s.style.fg, s.style.bold, s.style.dim)).collect();
    assert_eq!(
        spans,
        [
            ("green", Color::Indexed(2), true, false),
            (" ", Color::Default, false, false),
            ("dim", Color::Default, false, true),
            (" ", Color::Default, false, false),
            ("rgb", Color::Rgb(255, 100, 0), false, false),
        ]
    );
    handle.stop("test").await.unwrap();
    handle.wait().await;
}

#[tokio::test]
async fn exit_codes_and_signals_are_captured() {
    let env = common::Env::new();
    let sup = env.supervisor();
    let handle = sup.start(bash("exit 7", PtySize::default())).unwrap();
    assert_eq!(handle.wait().await, Exit::Code(7));
    let handle = sup.start(bash("kill -TERM $$", PtySize::default())).unwrap();
    assert_eq!(handle.wait().await.signal(), Some("SIGTERM"));
    assert_eq!(handle.status().state, SessionState::Exited);
}

#[tokio::test]
async fn a_command_that_cannot_start_is_a_recorded_failure() {
    let env = common::Env::new();
    let sup = env.supervisor();
    let spec = SessionSpec::new(CommandSpec {
        program: "/no/such/cmd".into(),
        args: vec![],
        cwd: std::env::temp_dir(),
        env: vec![],
        size: PtySize::default(),
    });
    let Err(StartError::Spawn { session, error }) = sup.start(spec) else { panic!("started a missing command") };
    assert!(error.to_string().contains("/no/such/cmd"));
    let row = sup.with_store(|s| s.find_session(session.as_str())).unwrap();
    assert_eq!(row.state, nightshift::SessionState::Failed);
    assert_eq!(row.exit_code, Some(127));
    assert!(row.error.unwrap().contains("/no/such/cmd"));
}

#[tokio::test]
async fn generic_is_working_while_a_command_prints_and_idle_once_quiet() {
    let env = common::Env::new();
    let sup = env.supervisor();
    let mut events = sup.subscribe();
    let handle =
        sup.start(bash("for i in $(seq 1 15); do echo line $i; sleep 0.1; done; sleep 4", PtySize::default())).unwrap();
    let mut seen = Vec::new();
    let started = Instant::now();
    while seen.last().map(String::as_str) != Some("idle") {
        let ev = tokio::time::timeout(Duration::from_secs(10), events.recv()).await.expect("a state change").unwrap();
        if let nightshift::EventKind::State { state, reason, .. } = ev.kind {
            if matches!(state, SessionState::Working | SessionState::Idle) {
                seen.push(state.to_string());
                assert!(!reason.is_empty());
            }
        }
    }
    assert_eq!(seen, ["working", "idle"]);
    assert!(started.elapsed() >= Duration::from_secs(3), "idle only after 2 s of quiet following 1.5 s of output");
    handle.stop("test").await.unwrap();
    handle.wait().await;
}
