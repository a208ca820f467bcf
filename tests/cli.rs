//! The real `nightshift` binary, as a user or a script runs it.

use crate::common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::process::{Child, Stdio};
use std::time::Duration;

use common::{read_events, wait_for, Env};
use serde_json::Value;

/// The lifecycle states (activity states — working, idle — come and go with timing).
fn states(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["event"] == "state")
        .map(|e| e["state"].as_str().unwrap().to_string())
        .filter(|s| !matches!(s.as_str(), "working" | "idle" | "waiting_input"))
        .collect()
}

fn is_activity(e: &Value) -> bool {
    matches!(e["state"].as_str(), Some("working" | "idle" | "waiting_input"))
}

fn wait_exit(child: &mut Child) -> std::process::ExitStatus {
    wait_for("nightshift run to exit", Duration::from_secs(10), || child.try_wait().unwrap())
}

#[test]
fn run_streams_states_and_exits_with_the_childs_code() {
    let env = Env::new();
    let out = env.output(&["run", "--events", "-", "--", "bash", "-c", r#"printf "hello\n"; sleep 1; exit 3"#]);
    assert_eq!(out.status.code(), Some(3), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let events = common::json_lines(&stdout);
    assert_eq!(states(&events), ["starting", "running", "exited"]);
    let session = events[0]["session"].as_str().unwrap();
    for e in &events {
        assert_eq!(e["session"], session);
        let ts = e["ts"].as_str().unwrap();
        assert!(ts.ends_with('Z') && ts.len() == 24, "RFC 3339 UTC with ms: {ts}");
        if e["event"] == "state" {
            assert!(e["reason"].as_str().is_some_and(|r| !r.is_empty()), "every state change says why: {e}");
        }
    }
    // What the run was armed with is journalled once, before its process starts.
    let contract: Vec<&Value> = events.iter().filter(|e| e["event"] == "contract").collect();
    assert_eq!(contract.len(), 1, "{events:?}");
    assert_eq!(contract[0]["contract"]["program"], "bash");
    assert_eq!(events[1]["event"], "contract", "right after starting, before running");
    let exited = events.iter().find(|e| e["state"] == "exited").unwrap();
    assert_eq!(exited["exit_code"], 3);
    assert_eq!(exited["last_screen"], serde_json::json!(["hello"]), "a failure keeps its last screen");

    let listed = env.stdout(&["sessions"]);
    let line = listed.lines().find(|l| l.starts_with(session)).expect("the session is listed");
    assert!(line.contains("exited (3)"), "{line}");
    let json: Value = serde_json::from_str(&env.stdout(&["sessions", "--json"])).unwrap();
    assert_eq!(json[0]["id"], session);
    assert_eq!(json[0]["state"], "exited");
    assert_eq!(json[0]["exit_code"], 3);

    // The journal holds exactly what the stream carried.
    assert_eq!(env.stdout(&["journal", "--json"]), stdout);
    assert_eq!(env.stdout(&["journal", "--json", "--session", &session[..4], "--since", "10m"]), stdout);
    assert_eq!(env.stdout(&["journal", "--json", "--since", "1ms"]).lines().count(), 0);
    let text = env.stdout(&["journal"]);
    assert!(text.contains("exited") && text.contains("process exited with code 3"), "{text}");
}

#[test]
fn a_missing_command_fails_with_its_name_and_is_journalled() {
    let env = Env::new();
    let out = env.output(&["run", "--", "/no/such/cmd"]);
    assert_eq!(out.status.code(), Some(127));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("/no/such/cmd"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one clear message, not a log dump: {stderr}");
    let events = env.journal();
    assert_eq!(states(&events), ["starting", "failed"]);
    let failed = events.iter().find(|e| e["state"] == "failed").unwrap();
    assert!(failed["error"].as_str().unwrap().contains("/no/such/cmd"));
    assert!(env.stdout(&["sessions"]).contains("failed"));
}

#[test]
fn send_types_into_another_processs_session_and_stop_ends_it() {
    let env = Env::new();
    let out = env.path("typed.txt");
    let script = format!(r#"read -r line; printf '%s' "$line" > {}; sleep 100"#, out.display());
    let (mut child, events, id) = env.start_background(&script);

    let sent = env.output(&["send", &id, "good night", "--enter"]);
    assert!(sent.status.success(), "{}", String::from_utf8_lossy(&sent.stderr));
    let typed = wait_for("the line to arrive", Duration::from_secs(10), || {
        std::fs::read_to_string(&out).ok().filter(|t| !t.is_empty())
    });
    assert_eq!(typed, "good night");

    let stopped = env.output(&["stop", &id[..5]]);
    assert!(stopped.status.success(), "{}", String::from_utf8_lossy(&stopped.stderr));
    let status = wait_exit(&mut child);
    assert_eq!(status.code(), Some(129), "bash ends on SIGHUP: 128 + 1");
    let events: Vec<Value> = read_events(&events).into_iter().filter(|e| !is_activity(e)).collect();
    let names: Vec<&str> = events.iter().map(|e| e["event"].as_str().unwrap()).collect();
    assert_eq!(names, ["state", "contract", "state", "input", "stop_requested", "state"]);
    assert_eq!(events[5]["signal"], "SIGHUP");

    // A finished session says so instead of failing obscurely.
    let late = env.output(&["send", &id, "anyone?"]);
    assert!(!late.status.success());
    assert!(String::from_utf8_lossy(&late.stderr).contains("has exited"), "{}", String::from_utf8_lossy(&late.stderr));
}

#[test]
fn the_control_socket_is_closed_to_other_users() {
    let env = Env::new();
    let (mut child, _, id) = env.start_background("sleep 100");
    let socket = wait_for("the socket", Duration::from_secs(5), || {
        std::fs::read_dir(env.runtime_dir())
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|x| x == "sock"))
    });
    assert_eq!(std::fs::metadata(&socket).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(std::fs::metadata(env.runtime_dir()).unwrap().permissions().mode() & 0o777, 0o700);

    if nix::unistd::geteuid().is_root() {
        // Another user (nobody) cannot connect: the directory and the socket keep it out.
        let probe = std::process::Command::new("/usr/bin/env")
            .args(["python3", "-c", "import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])"])
            .arg(&socket)
            .uid(65534)
            .gid(65534)
            .output()
            .unwrap();
        assert!(!probe.status.success(), "nobody connected to the control socket");
        let err = String::from_utf8_lossy(&probe.stderr);
        assert!(err.contains("Permission denied"), "{err}");
    }
    env.output(&["stop", &id]);
    wait_exit(&mut child);
}

#[test]
fn the_server_refuses_peers_of_another_uid() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: needs root to run a server as another user");
        return;
    }
    // Run the server as nobody; root (who can open any file) connects and must be refused by the
    // peer-credential check.
    let env = Env::new();
    let base = env.dir.path();
    std::fs::set_permissions(base, std::fs::Permissions::from_mode(0o755)).unwrap();
    for dir in [env.state_dir(), env.runtime_dir()] {
        std::fs::create_dir_all(&dir).unwrap();
        nix::unistd::chown(&dir, Some(65534.into()), Some(65534.into())).unwrap();
    }
    let events = env.state_dir().join("events.jsonl");
    let mut child = env
        .cmd(&["run", "--events", events.to_str().unwrap(), "--", "sleep", "100"])
        .uid(65534)
        .gid(65534)
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let socket = wait_for("nobody's socket", Duration::from_secs(10), || {
        std::fs::read_dir(env.runtime_dir())
            .ok()?
            .flatten()
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|x| x == "sock"))
    });
    assert_eq!(std::fs::metadata(&socket).unwrap().uid(), 65534);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let result = rt.block_on(nightshift::control::request(&socket, &nightshift::control::Request::Ping));
    assert!(result.is_err(), "root was answered by nobody's control socket");
    let attached = rt.block_on(nightshift::control::attach::Viewer::attach(&socket, "any", None));
    assert!(attached.is_err(), "root attached to a session of nobody's");
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGTERM).unwrap();
    wait_exit(&mut child);
}

#[test]
fn the_journal_survives_a_kill_9_of_the_supervisor() {
    let env = Env::new();
    let (mut child, _, id) = env.start_background("echo working; sleep 100");
    child.kill().unwrap(); // SIGKILL: no chance to write anything more
    child.wait().unwrap();

    let events = env.journal();
    assert_eq!(states(&events), ["starting", "running"], "what was written before the kill is all there");
    let store = nightshift::store::Store::open(&env.state_dir().join("journal.sqlite3")).unwrap();
    assert_eq!(store.integrity_check().unwrap(), "ok");
    let journal = env.state_dir().join("journal.sqlite3");
    assert_eq!(std::fs::metadata(&journal).unwrap().permissions().mode() & 0o777, 0o600, "the journal is private");
    let listed = env.stdout(&["sessions"]);
    let line = listed.lines().find(|l| l.starts_with(&id)).unwrap();
    assert!(line.contains("lost"), "a session whose supervisor died is shown as lost: {line}");
    // Nothing runs it: stopping it ends it in the journal, so no Nightshift starts it again.
    let stop = env.stdout(&["stop", &id]);
    assert!(stop.contains("marked stopped"), "{stop}");
    let listed = env.stdout(&["sessions"]);
    assert!(listed.lines().find(|l| l.starts_with(&id)).unwrap().contains("exited"), "{listed}");
    let again = env.output(&["stop", &id]);
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("has exited"),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
}

#[test]
fn unknown_sessions_and_bad_arguments_get_clear_errors() {
    let env = Env::new();
    let out = env.output(&["send", "deadbeef", "hi"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no session matches `deadbeef`"));
    let out = env.output(&["run", "--agent", "gpt", "--", "true"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("claude, codex, generic"));
    let out = env.output(&["run"]);
    assert!(!out.status.success());
    let out = env.output(&["journal", "--since", "yesterday-ish"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--since"));
    // The overnight preset guards, and the guard needs the hooks.
    let out = env.output(&["run", "--no-hooks", "--preset", "overnight", "--", "true"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--no-hooks") && stderr.contains("--guard false"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    let out = env.output(&["run", "--no-hooks", "--preset", "overnight", "--guard", "false", "--", "true"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn the_digest_in_three_formats_and_since_last_viewed() {
    let env = Env::new();
    let out = env.output(&["run", "--", "bash", "-c", "echo oops; exit 3"]);
    assert_eq!(out.status.code(), Some(3));
    let id = env.journal()[0]["session"].as_str().unwrap().to_string();
    let text = env.stdout(&["digest", "--range", "1h"]);
    assert!(text.contains("NEEDS YOU") && text.contains(&id) && text.contains("exited with code 3"), "{text}");
    let md = env.stdout(&["digest", "--range", "24h", "--format", "markdown"]);
    assert!(md.starts_with("# Nightshift digest") && md.contains("## Needs you"), "{md}");
    let json: Value = serde_json::from_str(&env.stdout(&["digest", "--range", "today", "--format", "json"])).unwrap();
    assert_eq!(json["totals"]["needs_you"], 1);
    env.stdout(&["digest", "--mark-viewed"]);
    let since = env.stdout(&["digest"]);
    assert!(since.contains("Nothing ran in this range"), "{since}");
    let bad = env.output(&["digest", "--range", "last-tuesday"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("since-last-viewed, 1h, today, 24h or FROM..TO"));
    let none = env.stdout(&["digest", "--morning"]);
    assert!(none.contains("No morning run summary yet"), "{none}");
}

/// `nightshift service enable` writes a user unit that runs this binary's `restore` and enables it
/// with `systemctl --user`; `disable` undoes both. systemd cannot run here: a stand-in `systemctl`
/// and `loginctl` on PATH note what they were asked.
#[test]
fn the_restore_service_is_enabled_and_disabled_with_systemctl() {
    let env = Env::new();
    let bin = env.path("fakebin");
    std::fs::create_dir_all(&bin).unwrap();
    let calls = env.path("calls.txt");
    for (name, out) in [("systemctl", "enabled"), ("loginctl", "no")] {
        let script = format!("#!/bin/sh\necho \"{name} $*\" >> {}\necho {out}\n", calls.display());
        std::fs::write(bin.join(name), script).unwrap();
        std::fs::set_permissions(bin.join(name), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    }
    let config = env.path("xdg-config");
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let service = |action: &str| {
        let out = env
            .cmd(&["service", action])
            .env("PATH", &path)
            .env("XDG_CONFIG_HOME", &config)
            .env("USER", "night")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let said = service("enable");
    assert!(said.contains("runs at every login"), "{said}");
    assert!(said.contains("sudo loginctl enable-linger night"), "how to start it at boot too: {said}");
    let unit = config.join("systemd/user/nightshift-restore.service");
    let text = std::fs::read_to_string(&unit).unwrap();
    let exec = text.lines().find(|l| l.starts_with("ExecStart=")).unwrap();
    assert!(exec.contains(common::bin().to_str().unwrap()) && exec.ends_with(" restore --keep"), "{exec}");
    assert!(text.contains("Restart=on-failure") && text.contains("WantedBy=default.target"), "{text}");
    let logged = std::fs::read_to_string(&calls).unwrap();
    assert!(
        logged.contains("systemctl --user daemon-reload\nsystemctl --user enable nightshift-restore.service"),
        "{logged}"
    );
    assert!(service("status").contains("nightshift-restore.service: enabled"));
    service("disable");
    assert!(!unit.exists(), "the unit it wrote is removed");
    assert!(std::fs::read_to_string(&calls).unwrap().contains("systemctl --user disable nightshift-restore.service"));
    // Without systemd's user manager: one line that says what to do.
    std::fs::write(bin.join("systemctl"), "#!/bin/sh\necho 'Failed to connect to bus: No medium found' >&2\nexit 1\n")
        .unwrap();
    let out = env.cmd(&["service", "enable"]).env("PATH", &path).env("XDG_CONFIG_HOME", &config).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("Failed to connect to bus") && err.contains("run it yourself"), "{err}");
}

/// Twenty `presets save` at once, as the app and the CLI may write config.toml together: each
/// one's preset is there after, and the file is whole and its owner's alone.
#[test]
fn config_saves_at_the_same_time_lose_nothing() {
    let env = Env::new();
    let children: Vec<Child> = (0..20)
        .map(|i| {
            env.cmd(&["presets", "save", &format!("mine-{i}"), "--from", "overnight"])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let path = env.path("config").join("config.toml");
    let config: toml::Value = toml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let mut saved: Vec<&String> = config["presets"].as_table().unwrap().keys().collect();
    saved.sort();
    assert_eq!(saved.len(), 20, "every save kept: {saved:?}");
    assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    let left: Vec<_> = std::fs::read_dir(env.path("config")).unwrap().flatten().map(|e| e.file_name()).collect();
    assert!(left.iter().all(|n| !n.to_string_lossy().contains(".tmp")), "no temporary file left: {left:?}");
}

#[test]
fn agent_text_reaches_the_terminal_without_its_escape_sequences() {
    // A loop's agent that writes escape sequences in its answer: a clipboard write (OSC 52), a
    // screen clear (CSI), the 8-bit CSI (C1) and a carriage return that would hide what came before.
    let env = Env::new();
    let dir = env.path("project");
    std::fs::create_dir_all(&dir).unwrap();
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/claude-code/2.1.332/headless/stream-json-fast.jsonl");
    let hostile = "done \u{1b}]52;c;cm0gLXJmIH4=\u{7} \u{1b}[2J\u{9b}31mred\rhidden";
    let lines: Vec<String> = std::fs::read_to_string(fixture)
        .unwrap()
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            if v["type"] == "assistant" {
                v["message"]["content"][0]["text"] = hostile.into();
            }
            v.to_string()
        })
        .collect();
    let stream = env.path("stream.jsonl");
    std::fs::write(&stream, lines.join("\n") + "\n").unwrap();
    let harness = env.path("fake-claude");
    std::fs::write(&harness, format!("#!/bin/sh\ncat {}\n", stream.display())).unwrap();
    std::fs::set_permissions(&harness, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let events = env.path("loop.jsonl");
    let args =
        ["loop", "--no-sandbox", "--program", harness.to_str().unwrap(), "--prompt", "go", "--max-iterations", "1"];
    let out =
        env.output(&[&args[..], &["--cwd", dir.to_str().unwrap(), "--events", events.to_str().unwrap()]].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let session = read_events(&events)[0]["session"].as_str().unwrap().to_string();
    let shown = env.stdout(&["log", &session]);
    assert!(shown.contains("done"), "{shown}");
    let controls: Vec<char> = shown
        .chars()
        .filter(|c| (c.is_control() && *c != '\n' && *c != '\t') || ('\u{80}'..='\u{9f}').contains(c))
        .collect();
    assert!(controls.is_empty(), "no escape reaches the terminal: {controls:?} in {shown:?}");
    assert!(shown.contains("52;c;cm0gLXJmIH4=") && shown.contains("hidden"), "neutralised, not hidden: {shown}");
}
