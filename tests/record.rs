//! Every life's output is recorded as an asciicast: the real `asciinema` player reads it, and
//! `nightshift log SESSION` prints what the screen showed, scrolled. What is typed is not recorded.

use crate::common;

use std::process::Command;

use common::Env;

#[test]
fn a_life_is_recorded_plays_in_asciinema_and_reads_back_as_text() {
    let env = Env::new();
    let out = env.output(&[
        "run",
        "--events",
        "-",
        "--cols",
        "80",
        "--rows",
        "10",
        "--",
        "bash",
        "-c",
        "printf '\\033[1mhello\\033[0m night\\n'; for i in $(seq 1 30); do echo line $i; done; printf 'caf\\303\\251\\n'",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let first = common::json_lines(&String::from_utf8(out.stdout).unwrap()).remove(0);
    let session = first["session"].as_str().unwrap().to_string();
    let recording = env.state_dir().join("recordings").join(&session).join("life-001.cast.gz");
    assert!(recording.exists(), "kept in the state directory");

    let text = env.stdout(&["log", &session]);
    assert!(text.starts_with(&format!("── life 1 — {}", recording.display())), "{text}");
    assert!(text.contains("\nhello night\nline 1\n"), "scrolled-off lines first: {text}");
    assert!(text.contains("line 30\ncafé\n"), "{text}");
    let one = env.stdout(&["log", &session, "--life", "1"]);
    assert_eq!(one, text);
    let none = env.output(&["log", &session, "--life", "2"]);
    assert!(!none.status.success());
    assert!(String::from_utf8_lossy(&none.stderr).contains("has no recorded life 2 (1 recorded)"));

    let digest = env.stdout(&["digest", "--range", "1h"]);
    assert!(digest.contains(&format!("recording: 1 life(s) recorded; see them: nightshift log {session}")), "{digest}");

    // The real player: `asciinema cat` replays the output (it reads plain files: unzip first).
    let Ok(which) = Command::new("sh").args(["-c", "command -v asciinema"]).output() else { return };
    if !which.status.success() {
        assert!(std::env::var_os("NIGHTSHIFT_REQUIRE_ASCIINEMA").is_none(), "asciinema is not installed");
        eprintln!("skipped the player: asciinema is not installed (make deps-test installs it)");
        return;
    }
    let plain = env.path("life.cast");
    let mut gz = flate2::read::GzDecoder::new(std::fs::File::open(&recording).unwrap());
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut gz, &mut bytes).unwrap();
    std::fs::write(&plain, &bytes).unwrap();
    // It wants a terminal of its own (it reads keys from /dev/tty).
    let mut player = portable_pty::CommandBuilder::new("asciinema");
    player.args(["cat", plain.to_str().unwrap()]);
    let shown = common::on_a_terminal(player);
    assert!(
        shown.contains("\x1b[1mhello\x1b[0m night") && shown.contains("line 30") && shown.contains("café"),
        "{shown}"
    );
}

#[test]
fn what_an_agent_wrote_before_it_went_quiet_is_on_disk_while_it_runs() {
    let env = Env::new();
    let (mut run, events, session) = env.start_background("echo written before the rest; exec sleep 60");
    common::wait_for("the session to go idle", std::time::Duration::from_secs(20), || {
        common::read_events(&events).iter().any(|e| e["event"] == "state" && e["state"] == "idle").then_some(())
    });
    // The session runs on (a killed Nightshift would leave the file as it is now).
    let text = env.stdout(&["log", &session]);
    let out = env.output(&["stop", &session]);
    run.wait().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("written before the rest"), "{text}");
}
