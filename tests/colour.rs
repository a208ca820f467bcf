//! Colour only for a terminal, and never with `NO_COLOR` (<https://no-color.org>): every verb's
//! output through a pipe carries no escape sequence, and on a real terminal `NO_COLOR` turns off the
//! colour that is otherwise there.

use crate::common;

use std::process::Stdio;
use std::time::Duration;

use common::{on_a_terminal, read_events, wait_for, Env};

const ESC: char = '\x1b';

/// A journal with one ended session and a usage sample (the chip is the coloured output).
fn seeded() -> (Env, String) {
    let env = Env::new();
    let out = env.output(&["run", "--events", "-", "--", "bash", "-c", "printf '\\e[31mred\\e[0m\\n'"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let first = common::json_lines(&String::from_utf8(out.stdout).unwrap()).remove(0);
    let session = first["session"].as_str().unwrap().to_string();
    let mut store = nightshift::store::Store::open(&env.state_dir().join("journal.sqlite3")).unwrap();
    let sample =
        nightshift::usage::Sample { five_hour_pct: Some(35.0), seven_day_pct: Some(90.0), ..Default::default() };
    store.record_usage(&session, chrono::Utc::now(), &sample).unwrap();
    (env, session)
}

fn terminal_cmd(env: &Env, args: &[&str], no_color: Option<&str>) -> portable_pty::CommandBuilder {
    let mut cmd = portable_pty::CommandBuilder::new(common::bin());
    cmd.args(args);
    cmd.env("NIGHTSHIFT_STATE_DIR", env.state_dir());
    cmd.env("NIGHTSHIFT_RUNTIME_DIR", env.runtime_dir());
    cmd.env("NIGHTSHIFT_CONFIG_DIR", env.path("config"));
    cmd.cwd(env.dir.path());
    match no_color {
        Some(value) => cmd.env("NO_COLOR", value),
        None => cmd.env_remove("NO_COLOR"),
    }
    cmd
}

fn assert_plain(what: &str, text: &[u8]) {
    let text = String::from_utf8_lossy(text);
    assert!(!text.contains(ESC), "{what} printed an escape sequence through a pipe: {text:?}");
}

#[test]
fn through_a_pipe_no_verb_prints_an_escape_sequence() {
    let (env, ended) = seeded();
    // A live session for the verbs that reach one; it draws in colour itself.
    let events = env.path("live.jsonl");
    let mut live = env
        .cmd(&[
            "run",
            "--events",
            events.to_str().unwrap(),
            "--",
            "bash",
            "-c",
            "printf '\\e[32mgreen\\e[0m\\n'; sleep 30",
        ])
        .env_remove("NO_COLOR")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let session = wait_for("the live session", Duration::from_secs(10), || {
        read_events(&events)
            .iter()
            .find(|e| e["state"] == "running")
            .map(|e| e["session"].as_str().unwrap().to_string())
    });
    let verbs: Vec<Vec<&str>> = vec![
        vec!["--help"],
        vec!["--version"],
        vec!["run", "--help"],
        vec!["sessions"],
        vec!["sessions", "--json"],
        vec!["journal"],
        vec!["journal", "--session", &ended, "--json"],
        vec!["digest", "--range", "24h"],
        vec!["digest", "--range", "24h", "--format", "markdown"],
        vec!["usage"],
        vec!["usage", "--json"],
        vec!["presets", "list"],
        vec!["presets", "show", "overnight"],
        vec!["screen", &session],
        vec!["screen", &session, "--json"],
        vec!["send", &session, "hello", "--enter"],
        vec!["breaker", "reset", &session],
        vec!["stop", &session],
        vec!["restore"],
    ];
    for args in &verbs {
        let out = env.cmd(args).env_remove("NO_COLOR").stdin(Stdio::null()).output().unwrap();
        assert!(out.status.success(), "nightshift {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        assert_plain(&format!("nightshift {args:?} (stdout)"), &out.stdout);
        assert_plain(&format!("nightshift {args:?} (stderr)"), &out.stderr);
    }
    let text = env.stdout(&["usage"]);
    assert!(text.starts_with("5h 35% · 7d 90%"), "{text}");
    live.wait().unwrap();

    // Errors too: clap's usage error, and Nightshift's own.
    for args in [vec!["no-such-verb"], vec!["screen", "ffffffff"]] {
        let out = env.cmd(&args).env_remove("NO_COLOR").output().unwrap();
        assert!(!out.status.success());
        assert_plain(&format!("nightshift {args:?} (stderr)"), &out.stderr);
    }
}

#[test]
fn a_warning_logged_to_a_piped_stderr_is_plain() {
    let env = Env::new();
    // A log directory that cannot be made (a file is in its place): no log file, and a warning.
    std::fs::create_dir_all(env.state_dir()).unwrap();
    std::fs::write(env.state_dir().join("logs"), "").unwrap();
    let out = env.cmd(&["run", "--", "true"]).env_remove("NO_COLOR").stdin(Stdio::null()).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && stderr.contains("no log file"), "{stderr}");
    assert_plain("the warning", &out.stderr);
}

#[test]
fn on_a_terminal_the_chip_is_coloured_unless_no_color_is_set() {
    let (env, _) = seeded();
    let coloured = on_a_terminal(terminal_cmd(&env, &["usage"], None));
    assert!(coloured.contains("\x1b[32m5h 35%"), "{coloured:?}");
    assert!(coloured.contains("\x1b[31m7d 90%"), "{coloured:?}");
    // An empty NO_COLOR is as good as none (the convention says "present and not empty").
    assert!(on_a_terminal(terminal_cmd(&env, &["usage"], Some(""))).contains(ESC));
    let plain = on_a_terminal(terminal_cmd(&env, &["usage"], Some("1")));
    assert!(plain.contains("5h 35% · 7d 90%"), "{plain:?}");
    assert!(!plain.contains(ESC), "{plain:?}");
    // clap styles its help on a terminal, and NO_COLOR reaches it too.
    assert!(on_a_terminal(terminal_cmd(&env, &["--help"], None)).contains(ESC));
    let help = on_a_terminal(terminal_cmd(&env, &["--help"], Some("1")));
    assert!(help.contains("Usage:") && !help.contains(ESC), "{help:?}");
}

#[test]
fn the_statusline_exporter_leaves_colour_to_no_color() {
    // Its stdout is Claude Code's status bar (a pipe that shows colours): NO_COLOR alone decides.
    let status = include_str!("fixtures/claude-code/2.1.332/statusline/statusline-stdin-1796042093977595111.json");
    let line = |no_color: Option<&str>| {
        let env = Env::new();
        let mut cmd = env.cmd(&["statusline"]);
        cmd.env("HOME", env.path("home")).env_remove("NIGHTSHIFT_CONTROL").env_remove("NIGHTSHIFT_TOKEN");
        match no_color {
            Some(v) => cmd.env("NO_COLOR", v),
            None => cmd.env_remove("NO_COLOR"),
        };
        let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
        std::io::Write::write_all(child.stdin.as_mut().unwrap(), status.as_bytes()).unwrap();
        drop(child.stdin.take());
        String::from_utf8(child.wait_with_output().unwrap().stdout).unwrap()
    };
    assert!(line(None).contains("\x1b[32m5h 42%"), "{:?}", line(None));
    let plain = line(Some("1"));
    assert!(plain.contains("5h 42%") && !plain.contains(ESC), "{plain:?}");
}
