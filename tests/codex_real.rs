//! The real Codex CLI under `nightshift run --agent codex`, against the project's mock Responses
//! API (`tests/mock_responses`): its turns read from the screen alone and with its notify (idle
//! right after a turn, the conversation named), a restart and a restore that resume the same
//! conversation, and that it leaves the user's Codex home as it found it and no Codex process
//! behind.

mod common;
#[path = "mock_responses/mod.rs"]
mod mock_responses;

use std::time::Duration;

use common::codex::{argv, client, CodexRun, Options};
use common::wait_for;
use mock_responses::MockResponses;

/// How long after the mock's last byte of the last turn the session was journalled idle.
fn idle_after_stream(run: &CodexRun, mock: &MockResponses, after: usize) -> (Duration, serde_json::Value) {
    let (_, idle_at, idle) = run.wait_state("idle", after, Duration::from_secs(20));
    let done = mock.turns().last().and_then(|r| r.done_at).expect("the answer's end");
    (idle_at.duration_since(done).unwrap_or_default(), idle)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_from_its_screen_alone_a_turn_is_working_then_idle_after_the_quiet_window() {
    let Some(codex) = client() else { return };
    let mock = MockResponses::start().await;
    let mut run =
        CodexRun::start(&codex, &mock.base_url(), Options { run_args: &["--no-hooks"], ..Default::default() });
    let before = std::fs::read(run.config_path()).unwrap();
    let (i, _, _) = run.wait_state("idle", 0, Duration::from_secs(30));
    run.send("say hi mock:slow:3", true);
    let (w, _, working) = run.wait_state("working", i + 1, Duration::from_secs(15));
    assert!(working["reason"].as_str().unwrap().contains("Working"), "{working}");
    let (latency, idle) = idle_after_stream(&run, &mock, w + 1);
    eprintln!("screen alone: idle {latency:?} after the stream ended ({})", idle["reason"]);
    assert!(idle["reason"].as_str().unwrap().contains("quiet for"), "{idle}");
    assert!(latency >= Duration::from_secs(2), "the quiet window decides: {latency:?}");
    assert!(run.conversations().is_empty(), "nothing names the conversation without notify");
    run.stop();
    assert_eq!(run.survivors(), vec![], "no Codex process outlives the session");
    assert_eq!(std::fs::read(run.config_path()).unwrap(), before, "the user's config.toml is byte-identical");
}

/// A program that appends its last argument to `<itself>.log`, one a line.
fn recorder(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("their-notify");
    std::fs::write(&path, "#!/bin/sh\nfor last; do :; done\nprintf '%s\\n' \"$last\" >> \"$0.log\"\n").unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_its_notify_a_turn_is_idle_right_after_its_stream_and_names_its_conversation() {
    let Some(codex) = client() else { return };
    let mock = MockResponses::start().await;
    let scripts = tempfile::tempdir().unwrap();
    let theirs = recorder(scripts.path());
    let config = format!("notify = [\"{}\"]\n", theirs.display());
    let mut run = CodexRun::start(&codex, &mock.base_url(), Options { config_extra: &config, ..Default::default() });
    let before = std::fs::read(run.config_path()).unwrap();
    let (i, _, _) = run.wait_state("idle", 0, Duration::from_secs(30));
    run.send("say hi mock:slow:3", true);
    let (w, _, _) = run.wait_state("working", i + 1, Duration::from_secs(15));
    let (latency, idle) = idle_after_stream(&run, &mock, w + 1);
    eprintln!("with notify: idle {latency:?} after the stream ended ({})", idle["reason"]);
    assert!(idle["reason"].as_str().unwrap().contains("Codex's notify"), "{idle}");
    assert!(latency <= Duration::from_millis(500), "idle {latency:?} after the stream");

    // The conversation is the thread Codex keeps a rollout of, not the one that named it.
    let conversations =
        wait_for("the conversation", Duration::from_secs(5), || Some(run.conversations()).filter(|c| !c.is_empty()));
    let rollouts = run.rollouts();
    assert_eq!(rollouts.len(), 1, "{rollouts:?}");
    assert_eq!(conversations.len(), 1, "{conversations:?}");
    assert!(rollouts[0].to_str().unwrap().ends_with(&format!("-{}.jsonl", conversations[0])), "{rollouts:?}");
    let threads: std::collections::BTreeSet<_> = mock.requests().into_iter().filter_map(|r| r.thread).collect();
    assert!(threads.len() == 2 && threads.contains(&conversations[0]), "a title thread beside it: {threads:?}");
    // The user's own notify still ran, for both threads, with Codex's payload.
    let log = theirs.with_extension("log");
    let payloads = wait_for("the user's notify", Duration::from_secs(5), || {
        let text = std::fs::read_to_string(&log).ok()?;
        let lines: Vec<serde_json::Value> = text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
        (lines.len() == 2).then_some(lines)
    });
    assert!(payloads.iter().all(|p| p["type"] == "agent-turn-complete"), "{payloads:?}");
    run.stop();
    assert_eq!(run.survivors(), vec![], "no Codex process outlives the session");
    assert_eq!(std::fs::read(run.config_path()).unwrap(), before, "the user's config.toml is byte-identical");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_resumes_the_same_conversation() {
    let Some(codex) = client() else { return };
    let mock = MockResponses::start().await;
    let mut run = CodexRun::start(
        &codex,
        &mock.base_url(),
        Options {
            run_args: &["--respawn", "--restart-backoff", "0.5", "--idle-timeout", "600"],
            args: &["opening prompt mock:fast"],
            ..Default::default()
        },
    );
    let conversation =
        wait_for("the first turn's conversation", Duration::from_secs(30), || run.conversations().into_iter().next());
    let first = run.events().into_iter().find(|e| e["state"] == "running").unwrap()["pid"].as_u64().unwrap();
    let (i, _, _) = run.wait_state("idle", 0, Duration::from_secs(20));
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(first as i32), nix::sys::signal::Signal::SIGKILL).unwrap();
    let restarted = wait_for("the restart", Duration::from_secs(20), || {
        run.events()
            .into_iter()
            .find(|e| e["state"] == "running" && e["reason"].as_str().unwrap().contains("restarted"))
    });
    let args = argv(restarted["pid"].as_u64().unwrap());
    let at = args.iter().position(|a| a == "resume").unwrap_or_else(|| panic!("resume on the restart: {args:?}"));
    assert_eq!(args[at + 1..], [conversation.as_str()], "{args:?}");
    assert!(!args.iter().any(|a| a.contains("opening prompt")), "the opening prompt is not sent again: {args:?}");
    assert!(args.iter().any(|a| a.starts_with("notify=")), "the restarted client notifies too: {args:?}");

    let (j, _, _) = run.wait_state("idle", i + 1, Duration::from_secs(30));
    run.send("and now mock:slow:2", true);
    let next = wait_for("the next turn", Duration::from_secs(20), || {
        mock.turns().into_iter().find(|r| r.last_user.contains("and now"))
    });
    assert_eq!(next.thread.as_deref(), Some(conversation.as_str()), "the same thread");
    assert!(
        next.messages.iter().any(|(role, text)| role == "user" && text.contains("opening prompt")),
        "the model gets the earlier turn: {:?}",
        next.messages
    );
    assert_eq!(mock.turns().iter().filter(|r| r.last_user.contains("opening prompt")).count(), 1);
    let (w, _, _) = run.wait_state("working", j + 1, Duration::from_secs(20));
    let (_, _, idle) = run.wait_state("idle", w + 1, Duration::from_secs(20));
    assert!(idle["reason"].as_str().unwrap().contains("Codex's notify"), "the resumed client notifies: {idle}");
    assert_eq!(run.conversations(), [conversation.as_str()], "one conversation all along");
    run.stop();
    assert_eq!(run.survivors(), vec![]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_restored_after_its_nightshift_ended_resumes_the_same_conversation() {
    let Some(codex) = client() else { return };
    let mock = MockResponses::start().await;
    let mut run = CodexRun::start(
        &codex,
        &mock.base_url(),
        Options { run_args: &["--auto-resume"], args: &["opening prompt mock:fast"], ..Default::default() },
    );
    let conversation =
        wait_for("the first turn's conversation", Duration::from_secs(30), || run.conversations().into_iter().next());
    let (i, _, _) = run.wait_state("idle", 0, Duration::from_secs(20));
    run.send("go on mock:limit", true);
    run.wait_state("limit_paused", i + 1, Duration::from_secs(20));
    // Nightshift ends while the session waits for the reset: it keeps the resume for the next one.
    run.stop();
    assert_eq!(run.events().last().map(|e| e["event"].clone()), Some("resume_kept".into()), "{:?}", run.events());
    assert_eq!(run.survivors(), vec![]);

    let events = run.env.path("restored.jsonl");
    let mut restore = run.nightshift(&["restore", "--events", events.to_str().unwrap()]).spawn().unwrap();
    let started = wait_for("the restored client", Duration::from_secs(20), || {
        common::read_events(&events).into_iter().find(|e| e["state"] == "running")
    });
    let args = argv(started["pid"].as_u64().unwrap());
    let at = args.iter().position(|a| a == "resume").unwrap_or_else(|| panic!("resume on the restore: {args:?}"));
    assert_eq!(args[at + 1..], [conversation.as_str()], "{args:?}");
    assert!(args.iter().any(|a| a.starts_with("notify=")), "{args:?}");
    let session = run.session();
    wait_for("the conversation on the restored client's screen", Duration::from_secs(20), || {
        let out = run.nightshift(&["screen", &session]).stdout(std::process::Stdio::piped()).output().ok()?;
        String::from_utf8_lossy(&out.stdout).contains("opening prompt mock:fast").then_some(())
    });
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(restore.id() as i32), nix::sys::signal::Signal::SIGTERM).unwrap();
    let status = restore.wait().unwrap();
    assert!(status.success(), "{status:?}");
    assert_eq!(run.survivors(), vec![], "no Codex process outlives the restored session");
}
