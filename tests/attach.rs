//! `nightshift attach` from real terminals (PTYs) to a headless `nightshift run` (a shell, and the real
//! Claude client against the mock API): the screen at once,
//! keys to the agent, two viewers alike, the detach key leaves the session running, and a viewer
//! sees the session end.

use crate::{common, mock_api};

use std::io::{Read, Write};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{read_events, wait_for, Env};

/// `nightshift attach` in a terminal of its own; what it printed so far, and its keyboard.
struct Viewer {
    out: Arc<Mutex<Vec<u8>>>,
    keys: Box<dyn Write + Send>,
    child: Box<dyn portable_pty::Child + Send + Sync>,
    /// The reader, which ends when the terminal has no writer left (all the viewer said is in `out`).
    reader: Option<std::thread::JoinHandle<()>>,
    _master: Box<dyn portable_pty::MasterPty + Send>,
}

impl Viewer {
    fn attach(env: &Env, session: &str) -> Self {
        let pair = portable_pty::native_pty_system()
            .openpty(portable_pty::PtySize { rows: 30, cols: 100, ..Default::default() })
            .unwrap();
        let mut cmd = portable_pty::CommandBuilder::new(common::bin());
        cmd.args(["attach", session]);
        cmd.env("NIGHTSHIFT_STATE_DIR", env.state_dir());
        cmd.env("NIGHTSHIFT_RUNTIME_DIR", env.runtime_dir());
        cmd.env("NIGHTSHIFT_CONFIG_DIR", env.path("config"));
        cmd.env("TERM", "xterm-256color");
        let child = pair.slave.spawn_command(cmd).unwrap();
        drop(pair.slave);
        let mut reader = pair.master.try_clone_reader().unwrap();
        let out = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&out);
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = reader.read(&mut buf) {
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        let keys = pair.master.take_writer().unwrap();
        Self { out, keys, child, reader: Some(reader), _master: pair.master }
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.out.lock().unwrap()).into_owned()
    }

    fn sees(&self, what: &str) {
        wait_for(&format!("the viewer to show {what:?}"), Duration::from_secs(15), || {
            self.text().contains(what).then_some(())
        });
    }

    fn ends(&mut self) -> String {
        wait_for("the viewer to exit", Duration::from_secs(15), || self.child.try_wait().unwrap());
        // Its exit can come before its last words are read: read to the end of its terminal first
        // (bounded, should a process forked meanwhile still hold the terminal open).
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while self.reader.as_ref().is_some_and(|r| !r.is_finished()) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        self.text()
    }
}

#[test]
fn two_viewers_see_the_screen_type_to_the_agent_and_detach_while_it_goes_on() {
    let env = Env::new();
    let events = env.path("events.jsonl");
    let mut run = env
        .cmd(&["run", "--events", events.to_str().unwrap(), "--", "bash", "-c", "printf 'agent ready\\n'; exec cat"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let session = wait_for("the session", Duration::from_secs(10), || {
        read_events(&events).first().and_then(|e| e["session"].as_str().map(String::from))
    });
    wait_for("the agent", Duration::from_secs(10), || {
        env.stdout(&["screen", &session]).contains("agent ready").then_some(())
    });

    let mut first = Viewer::attach(&env, &session);
    first.sees("agent ready");
    first.keys.write_all(b"hello from the viewer\r").unwrap();
    // cat echoes the line back: the keys reached the agent.
    wait_for("the keys at the agent", Duration::from_secs(10), || {
        let screen = env.stdout(&["screen", &session]);
        (screen.matches("hello from the viewer").count() >= 2).then_some(())
    });

    let mut second = Viewer::attach(&env, &session);
    second.sees("hello from the viewer");
    first.keys.write_all(b"seen by both\r").unwrap();
    second.sees("seen by both");

    first.keys.write_all(&[0x1d]).unwrap();
    let said = first.ends();
    assert!(said.contains("detached from session") && said.contains("it goes on"), "{said}");
    assert!(run.try_wait().unwrap().is_none(), "the session goes on after a detach");
    let listed = env.stdout(&["sessions"]);
    assert!(listed.lines().any(|l| l.starts_with(&session) && !l.contains("exited")), "{listed}");

    let out = env.output(&["stop", &session]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let said = second.ends();
    assert!(said.contains(&format!("nightshift: session {session}: the session ended")), "{said}");
    run.wait().unwrap();

    // A loop has no terminal, and a pipe is no terminal.
    let piped = env.output(&["attach", &session]);
    assert!(!piped.status.success());
}

#[test]
fn a_detached_session_outlives_the_terminal_it_was_started_from_and_its_host_ends_with_it() {
    let env = Env::new();
    // A shell in a terminal of its own runs `nightshift run --detach`, then the terminal goes away.
    let pair = portable_pty::native_pty_system().openpty(portable_pty::PtySize::default()).unwrap();
    let mut cmd = portable_pty::CommandBuilder::new("bash");
    cmd.args(["--norc", "-i"]);
    for (k, v) in [
        ("NIGHTSHIFT_STATE_DIR", env.state_dir()),
        ("NIGHTSHIFT_RUNTIME_DIR", env.runtime_dir()),
        ("NIGHTSHIFT_CONFIG_DIR", env.path("config")),
    ] {
        cmd.env(k, v);
    }
    let id_file = env.path("id.txt");
    let mut shell = pair.slave.spawn_command(cmd).unwrap();
    drop(pair.slave);
    let mut reader = pair.master.try_clone_reader().unwrap();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(1..) = reader.read(&mut buf) {}
    });
    let mut keys = pair.master.take_writer().unwrap();
    writeln!(
        keys,
        "{} run --detach -- bash -c 'echo detached agent; exec sleep 600' > {}",
        common::bin().display(),
        id_file.display()
    )
    .unwrap();
    let session = wait_for("the printed id", Duration::from_secs(20), || {
        std::fs::read_to_string(&id_file).ok().map(|t| t.trim().to_string()).filter(|t| t.len() >= 8)
    });
    // The terminal goes: its shell gets SIGHUP, as from a closed window or an ssh logout.
    drop(keys);
    drop(pair.master);
    let _ = shell.kill();
    let _ = shell.wait();
    std::thread::sleep(Duration::from_millis(500));
    let listed = env.stdout(&["sessions", "--json"]);
    let rows: Vec<serde_json::Value> = serde_json::from_str(&listed).unwrap();
    let row = rows.iter().find(|r| r["id"] == session.as_str()).unwrap_or_else(|| panic!("{listed}"));
    assert_eq!(row["standing"], "live", "{row}");
    let host = row["owner_pid"].as_i64().unwrap();
    assert!(env.stdout(&["screen", &session]).contains("detached agent"));

    // Its agent ends: the session ends, and the background host with it.
    let out = env.output(&["stop", &session]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    wait_for("the host to exit", Duration::from_secs(15), || {
        (nix::sys::signal::kill(nix::unistd::Pid::from_raw(host as i32), None).is_err()).then_some(())
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_clients_screen_appears_attached_and_its_composer_takes_the_keys() {
    use common::claude::{client, ClaudeRun, Options};
    let Some(claude) = client() else { return };
    let mock = mock_api::MockApi::start().await.expect("the stand-in API starts");
    let run = ClaudeRun::start(&claude, &mock.base_url(), Options { cols: 100, rows: 30, ..Default::default() });
    let session = run.session();
    run.wait_state("idle", 0, Duration::from_secs(30));
    let mut viewer = Viewer::attach(&run.env, &session);
    // (Drawn cell by cell in its colours: the words, not the row, are in the stream.)
    viewer.sees("Claude");
    viewer.sees("v2.1.332");
    viewer.keys.write_all(b"typed while attached").unwrap();
    wait_for("the keys in the client's composer", Duration::from_secs(15), || {
        let screen = run.env.stdout(&["screen", &session]);
        screen.lines().any(|l| l.starts_with('❯') && l.contains("typed while attached")).then_some(())
    });
    viewer.keys.write_all(&[0x1d]).unwrap();
    let said = viewer.ends();
    assert!(said.contains("detached from session"), "{said}");
    assert!(mock.messages().iter().all(|m| !m.last_user.contains("typed while attached")), "no Enter was typed");
}

/// The session's control socket, from the journal.
fn control_socket(env: &Env, session: &str) -> std::path::PathBuf {
    let listed = env.stdout(&["sessions", "--json"]);
    let rows: Vec<serde_json::Value> = serde_json::from_str(&listed).unwrap();
    let row = rows.iter().find(|r| r["id"] == session).unwrap_or_else(|| panic!("{listed}"));
    row["control_socket"].as_str().unwrap_or_else(|| panic!("{row}")).into()
}

#[test]
fn a_ten_megabyte_burst_never_waits_for_a_slow_viewer_which_is_drawn_afresh() {
    use nightshift::control::attach::{Heard, Viewer};
    const BURST: usize = 10_000_000;
    let env = Env::new();
    let events = env.path("events.jsonl");
    let script = format!(
        "printf 'agent ready\\n'; read go; yes 'a line of agent output, as long as many of them are' | head -c {BURST}; \
         printf '\\nburst done\\n'; exec cat"
    );
    let mut run = common::KillOnDrop(
        env.cmd(&["run", "--events", events.to_str().unwrap(), "--", "bash", "-c", &script])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let session = wait_for("the session", Duration::from_secs(10), || {
        read_events(&events).first().and_then(|e| e["session"].as_str().map(String::from))
    });
    wait_for("the agent", Duration::from_secs(10), || {
        env.stdout(&["screen", &session]).contains("agent ready").then_some(())
    });
    let socket = control_socket(&env, &session);
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        // One viewer reads nothing until the burst is over; another reads as fast as it can.
        let mut slow = Viewer::attach(&socket, &session, None).await.unwrap();
        let mut fast = Viewer::attach(&socket, &session, None).await.unwrap();
        let mut keyboard = fast.keyboard().unwrap();
        let fast_reader = tokio::spawn(async move {
            let (mut bytes, mut screens, mut tail) = (0usize, 0usize, Vec::<u8>::new());
            while let Ok(Some(heard)) = fast.next().await {
                match heard {
                    Heard::Size(_) => screens += 1,
                    Heard::Output(chunk) => {
                        bytes += chunk.len();
                        tail.extend_from_slice(&chunk);
                        let keep = tail.len().saturating_sub(4096);
                        tail.drain(..keep);
                        if String::from_utf8_lossy(&tail).contains("burst done") {
                            return (bytes, screens);
                        }
                    }
                    Heard::Ended(how) => panic!("the session ended: {how}"),
                }
            }
            panic!("the fast viewer's connection closed before the burst was done");
        });
        keyboard.keys(b"go\r").await.unwrap();

        // The session gets through the burst while the slow viewer takes nothing from it.
        tokio::task::block_in_place(|| {
            wait_for("the burst's end on the screen", Duration::from_secs(120), || {
                env.stdout(&["screen", &session]).contains("burst done").then_some(())
            })
        });
        let (fast_bytes, fast_screens) = tokio::time::timeout(Duration::from_secs(60), fast_reader)
            .await
            .expect("the fast viewer finishes")
            .unwrap();
        assert!(fast_bytes > 0 && fast_screens >= 1, "{fast_bytes} {fast_screens}");

        // The slow viewer is sent what was queued for it (bounded), then a fresh screen with the end.
        let (mut before_redraw, mut screens, mut redrawn) = (0usize, 0usize, Vec::<u8>::new());
        while let Ok(Ok(Some(heard))) = tokio::time::timeout(Duration::from_secs(20), slow.next()).await {
            match heard {
                Heard::Size(_) => screens += 1,
                Heard::Output(chunk) if screens < 2 => before_redraw += chunk.len(),
                Heard::Output(chunk) => {
                    redrawn.extend_from_slice(&chunk);
                    if String::from_utf8_lossy(&redrawn).contains("burst done") {
                        break;
                    }
                }
                Heard::Ended(how) => panic!("the session ended: {how}"),
            }
        }
        assert!(screens >= 2, "the slow viewer was never drawn afresh ({before_redraw} bytes)");
        assert!(String::from_utf8_lossy(&redrawn).contains("burst done"), "the fresh screen shows the end");
        assert!(before_redraw < BURST / 3, "the slow viewer was sent {before_redraw} bytes of backlog");
        // A viewer that brings a size of its own resizes the session: every viewer is drawn afresh at it.
        let _typist = Viewer::attach(&socket, &session, Some(nightshift::pty::PtySize::new(132, 43))).await.unwrap();
        let resized = tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                match slow.next().await {
                    Ok(Some(Heard::Size(size))) => return size,
                    Ok(Some(_)) => {}
                    other => panic!("{other:?}"),
                }
            }
        })
        .await
        .expect("the watching viewer hears the new size");
        assert_eq!((resized.cols, resized.rows), (132, 43));
        eprintln!(
            "10 MB burst: the fast viewer took {fast_bytes} bytes over {fast_screens} screen(s); the slow one \
             {before_redraw} bytes before its fresh screen"
        );
    });
    // What a slow viewer costs is bounded: the run's peak memory stays well under the burst.
    let peak_kb = common::peak_rss_kb(run.0.id()).unwrap();
    eprintln!("the run's peak RSS over the burst: {} MB", peak_kb / 1024);
    assert!(peak_kb < 64 * 1024, "peak RSS {peak_kb} kB");
    let out = env.output(&["stop", &session]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    run.0.wait().unwrap();
}
