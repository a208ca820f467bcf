//! Respawn through the CLI: restarts, the crash-loop breaker and its reset, presets.

use crate::common;

use std::process::Stdio;
use std::time::Duration;

use common::{read_events, wait_for, Env};
use serde_json::Value;

fn count(events: &[Value], pred: impl Fn(&Value) -> bool) -> usize {
    events.iter().filter(|e| pred(e)).count()
}

#[test]
fn a_command_that_keeps_failing_trips_the_crash_loop_breaker_until_reset() {
    let env = Env::new();
    let events_path = env.path("events.jsonl");
    let mut child = env
        .cmd(&[
            "run",
            "--respawn",
            "--preset",
            "solo",
            // Short waits between restarts so the test runs in seconds (2 s, 10 s, 30 s, … by default).
            "--restart-backoff",
            "0.2,0.4",
            "--events",
            events_path.to_str().unwrap(),
            "--",
            "bash",
            "-c",
            "exit 1",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let events = || read_events(&events_path);
    let open = wait_for("the crash-loop breaker to open", Duration::from_secs(30), || {
        events().into_iter().find(|e| e["event"] == "breaker" && e["breaker"] == "crash_loop" && e["state"] == "open")
    });
    assert!(open["reason"].as_str().unwrap().contains("5 lives in a row ended within a minute"), "{open}");
    // The session's state follows the breaker's event, a line later in the stream.
    wait_for("the session's state to say so", Duration::from_secs(10), || {
        events().iter().any(|e| e["state"] == "breaker_open").then_some(())
    });
    let evs = events();
    assert_eq!(count(&evs, |e| e["state"] == "exited"), 5, "five exits, then no more restarts");
    std::thread::sleep(Duration::from_secs(5));
    let evs = events();
    assert_eq!(count(&evs, |e| e["state"] == "exited"), 5, "no restart while the breaker is open");
    assert!(child.try_wait().unwrap().is_none(), "the session waits for a reset");

    let id = evs[0]["session"].as_str().unwrap().to_string();
    let reset = env.output(&["breaker", "reset", &id]);
    assert!(reset.status.success(), "{}", String::from_utf8_lossy(&reset.stderr));
    assert!(String::from_utf8_lossy(&reset.stdout).contains("crash_loop"));
    wait_for("a start after the reset", Duration::from_secs(10), || {
        (count(&events(), |e| e["state"] == "running") > 5).then_some(())
    });
    assert!(events().iter().any(|e| e["event"] == "breaker" && e["state"] == "closed"));

    // The user's stop is never undone.
    let stop = env.output(&["stop", &id]);
    assert!(stop.status.success(), "{}", String::from_utf8_lossy(&stop.stderr));
    let status = wait_for("nightshift run to end", Duration::from_secs(15), || child.try_wait().unwrap());
    assert_eq!(status.code(), Some(1), "the last exit's code");
    let after = count(&events(), |e| e["state"] == "running");
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(count(&events(), |e| e["state"] == "running"), after);
}

#[test]
fn a_clean_exit_ends_the_session_unless_the_settings_restart_clean_exits() {
    let env = Env::new();
    let events_path = env.path("events.jsonl");
    let marker = env.path("starts");
    let script = format!("echo start >> {}; sleep 1; exit 0", marker.display());
    let status = env
        .cmd(&["run", "--preset", "overnight", "--events", events_path.to_str().unwrap(), "--", "bash", "-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(0), "the agent's own end ends the run");
    assert_eq!(std::fs::read_to_string(&marker).unwrap().lines().count(), 1, "and is not undone");
    assert!(!read_events(&events_path).iter().any(|e| e["action"] == "restart"));
}

#[test]
fn an_agent_that_exits_is_restarted_while_respawn_is_armed_and_not_after_a_stop() {
    let env = Env::new();
    let events_path = env.path("events.jsonl");
    let marker = env.path("starts");
    let script = format!("echo start >> {}; sleep 1; exit 0", marker.display());
    let mut child = env
        .cmd(&[
            "run",
            "--preset",
            "overnight",
            "--restart-clean-exits",
            "true",
            "--restart-backoff",
            "0.5",
            "--events",
            events_path.to_str().unwrap(),
            "--",
            "bash",
            "-c",
            &script,
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    wait_for("three starts", Duration::from_secs(20), || {
        (std::fs::read_to_string(&marker).unwrap_or_default().lines().count() >= 3).then_some(())
    });
    let evs = read_events(&events_path);
    assert!(evs.iter().any(|e| e["event"] == "respawn" && e["action"] == "restart"));
    assert!(!evs.iter().any(|e| e["event"] == "breaker"), "clean exits never trip the breaker");
    let id = evs[0]["session"].as_str().unwrap().to_string();
    env.output(&["stop", &id]);
    wait_for("the run to end", Duration::from_secs(15), || child.try_wait().unwrap());
}

#[test]
fn presets_are_listed_saved_shown_and_protected() {
    let env = Env::new();
    let list = env.stdout(&["presets"]);
    for line in [
        "solo         idle 3 s · 1h",
        "subagents    idle 45 s · 4h",
        "team         idle 90 s · 8h",
        "ralph        idle 8 s · 8h",
        "overnight    idle 10 s · 8h",
    ] {
        assert!(list.contains(line), "{line:?} in\n{list}");
    }
    let saved =
        env.output(&["presets", "save", "late", "--from", "team", "--idle-timeout", "120", "--clear-init", "false"]);
    assert!(saved.status.success(), "{}", String::from_utf8_lossy(&saved.stderr));
    let shown = env.stdout(&["presets", "show", "late"]);
    assert!(shown.contains("idle_timeout = 120.0") && shown.contains("clear_and_init = false"), "{shown}");
    assert!(env.stdout(&["presets"]).contains("late         idle 120 s · 8h · steps update → kickstart (yours)"));
    let refused = env.output(&["presets", "save", "overnight"]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("built-in"));
    let unknown = env.output(&["run", "--preset", "nope", "--", "true"]);
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("no preset `nope`"));
    assert!(env.output(&["presets", "delete", "late"]).status.success());
    assert!(!env.stdout(&["presets"]).contains("late"));
}
