//! `nightshift attach` from real terminals (PTYs) to a headless `nightshift run`: the screen at once,
//! keys to the agent, two viewers alike, the detach key leaves the session running, and a viewer
//! sees the session end.

mod common;

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
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n @ 1..) = reader.read(&mut buf) {
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        let keys = pair.master.take_writer().unwrap();
        Self { out, keys, child, _master: pair.master }
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
