//! The control socket under abuse, against the real binary: silent clients, oversized and malformed
//! lines, a flood of connections, and the per-session tokens (another session's is refused, and no
//! token reaches the log, the events, the journal or an error).

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::{wait_for, Env};

/// A `nightshift run` of a fake `claude` (so it gets a statusLine token), with what the fake was
/// given: its session, socket and token.
struct Run {
    child: Child,
    session: String,
    socket: PathBuf,
    token: String,
    events: PathBuf,
}

impl Drop for Run {
    fn drop(&mut self) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let _ = self.child.wait();
    }
}

fn start(env: &Env, name: &str) -> Run {
    let dir = env.path(name);
    std::fs::create_dir_all(dir.join("bin")).unwrap();
    let script = dir.join("bin/claude");
    let record = dir.join("launch.env");
    std::fs::write(&script, format!("#!/bin/bash\nenv > {}.tmp && mv {0}.tmp {0}\nexec sleep 100\n", record.display()))
        .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let events = dir.join("events.jsonl");
    let child = env
        .cmd(&["run", "--agent", "claude", "--events", events.to_str().unwrap(), "--", script.to_str().unwrap()])
        .env("NIGHTSHIFT_LOG", "debug")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let launched =
        wait_for("the fake client to start", Duration::from_secs(10), || std::fs::read_to_string(&record).ok());
    let var = |k: &str| {
        launched.lines().find_map(|l| l.strip_prefix(&format!("{k}="))).unwrap_or_else(|| panic!("no {k}")).to_string()
    };
    Run {
        child,
        session: var("NIGHTSHIFT_SESSION"),
        socket: PathBuf::from(var("NIGHTSHIFT_CONTROL")),
        token: var("NIGHTSHIFT_TOKEN"),
        events,
    }
}

/// Sends `bytes` and reads the one-line answer (empty when the server closed without one).
fn exchange(socket: &Path, bytes: &[u8]) -> String {
    let mut stream = UnixStream::connect(socket).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let _ = stream.write_all(bytes);
    let mut answer = String::new();
    let _ = BufReader::new(stream).read_line(&mut answer);
    answer
}

fn ping_takes(socket: &Path) -> Duration {
    let start = Instant::now();
    let answer = exchange(socket, b"{\"op\":\"ping\"}\n");
    assert!(answer.contains("\"ok\":true"), "{answer}");
    start.elapsed()
}

#[test]
fn silent_oversized_malformed_and_flooding_clients_are_refused_and_others_served() {
    let env = Env::new();
    let run = start(&env, "a");

    // Forty clients that connect and say nothing: a send is not held up, and the server closes
    // them after its request timeout (3 s) instead of keeping them forever.
    let silent: Vec<UnixStream> = (0..40).map(|_| UnixStream::connect(&run.socket).unwrap()).collect();
    let start = Instant::now();
    let sent = env.output(&["send", &run.session, "hello"]);
    assert!(sent.status.success(), "{}", String::from_utf8_lossy(&sent.stderr));
    assert!(start.elapsed() < Duration::from_secs(2), "a send behind 40 silent clients took {:?}", start.elapsed());
    for mut s in silent {
        s.set_read_timeout(Some(Duration::from_secs(8))).unwrap();
        let mut buf = [0u8; 16];
        assert!(matches!(s.read(&mut buf), Ok(0)), "a silent client is closed by the server");
    }

    // A 2 MiB line, a line of invalid UTF-8, a JSON line of no known op, an unterminated line.
    let big = exchange(&run.socket, &vec![b'{'; 2 << 20]);
    assert!(big.contains("bad_request") && big.contains("at most"), "{big}");
    let invalid = exchange(&run.socket, b"\xff\xfe{\"op\":\"ping\"}\n");
    assert!(invalid.contains("bad_request"), "{invalid}");
    let unknown = exchange(&run.socket, b"{\"op\":\"format_disk\"}\n");
    assert!(unknown.contains("bad_request"), "{unknown}");
    let cut = exchange(&run.socket, b"{\"op\":\"pi");
    assert!(cut.is_empty() || cut.contains("bad_request"), "{cut}");
    assert!(ping_takes(&run.socket) < Duration::from_secs(1));

    // A flood: 400 connections held open at once. Those beyond what the server serves at once are
    // told `busy` straight away; once the flood is gone, clients are served at once.
    let flood: Vec<UnixStream> = (0..400).map(|_| UnixStream::connect(&run.socket).unwrap()).collect();
    let busy = exchange(&run.socket, b"{\"op\":\"ping\"}\n");
    assert!(busy.contains("\"busy\""), "a connection over the limit is refused, not queued: {busy}");
    drop(flood);
    let served = wait_for("the server to serve again", Duration::from_secs(8), || {
        let answer = exchange(&run.socket, b"{\"op\":\"ping\"}\n");
        answer.contains("\"ok\":true").then_some(answer)
    });
    assert!(served.contains("\"ok\":true"));
    let sent = env.output(&["send", &run.session, "still there"]);
    assert!(sent.status.success(), "{}", String::from_utf8_lossy(&sent.stderr));
}

#[test]
fn a_token_is_good_for_its_own_session_only_and_is_never_written_down() {
    let env = Env::new();
    let a = start(&env, "a");
    let b = start(&env, "b");
    assert_ne!(a.token, b.token, "tokens are per session");
    let status = r#"{"model":{"display_name":"Opus"},"context_window":{"used_percentage":12}}"#;
    let usage = |session: &str, token: &str| {
        format!(r#"{{"op":"usage","session":"{session}","token":"{token}","status":{status}}}"#) + "\n"
    };
    // A's token for B, at B's socket: refused, and the refusal does not repeat the token.
    let refused = exchange(&b.socket, usage(&b.session, &a.token).as_bytes());
    assert!(refused.contains("usage_refused") && refused.contains("token"), "{refused}");
    assert!(!refused.contains(&a.token) && !refused.contains(&b.token), "{refused}");
    // B's own token: taken.
    let taken = exchange(&b.socket, usage(&b.session, &b.token).as_bytes());
    assert!(taken.contains("\"ok\":true"), "{taken}");
    let hook = format!(
        r#"{{"op":"hook","session":"{}","token":"{}","payload":{{"hook_event_name":"Stop","session_id":"c1"}}}}"#,
        a.session, b.token
    ) + "\n";
    let refused = exchange(&a.socket, hook.as_bytes());
    assert!(refused.contains("hook_refused"), "{refused}");
    wait_for("B's sample in its events", Duration::from_secs(5), || {
        common::read_events(&b.events).into_iter().find(|e| e["event"] == "usage")
    });

    let (a_token, b_token) = (a.token.clone(), b.token.clone());
    let (a_events, b_events) = (a.events.clone(), b.events.clone());
    drop((a, b));
    let mut written = vec![
        ("the journal", env.stdout(&["journal", "--json"])),
        ("a's events", std::fs::read_to_string(a_events).unwrap()),
        ("b's events", std::fs::read_to_string(b_events).unwrap()),
        ("the sessions", env.stdout(&["sessions", "--json"])),
    ];
    let logs = env.state_dir().join("logs");
    for entry in std::fs::read_dir(&logs).unwrap_or_else(|e| panic!("{}: {e}", logs.display())) {
        let path = entry.unwrap().path();
        written.push(("a log", std::fs::read_to_string(&path).unwrap()));
    }
    assert!(written.iter().any(|(what, text)| *what == "a log" && text.contains("DEBUG")), "the logs were at debug");
    for (what, text) in &written {
        assert!(!text.contains(&a_token) && !text.contains(&b_token), "a token in {what}:\n{text}");
    }
}
